"""Writing output files so that no reader ever sees half of one: `atomic_path`."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside `target` to write; renamed onto `target` when the block ends without an exception, and
    removed when it does not. The file gets the permissions of a file the user creates (0666 less the umask), not
    mkstemp's private 0600."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.stem[:60]}.", suffix=f"{target.suffix}.tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _umask() -> int:
    try:  # Linux says it without changing it (os.umask can only be read by setting it, which races other threads)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
