"""Writing output files so that no reader ever sees half of one (`atomic_path`), and work folders (`work_folder`).

Both names carry the process id, and both sweep what a killed process of this machine left beside them (a SIGKILL
runs no cleanup): a temporary output or work folder whose process is gone is removed when the next one is made in the
same folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
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
    sweep(target.parent)
    fd, name = tempfile.mkstemp(prefix=f".{os.getpid()}.{target.stem[:60]}.", suffix=f"{target.suffix}.tmp",
                                dir=target.parent)  # fmt: skip
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def work_folder(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A new folder `parent/<prefix>-<pid>-XXXX` (parent: the system's temporary folder) for the block, removed
    after it on every way out."""
    parent = Path(parent or tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    sweep(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}-{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# what atomic_path and work_folder name their temporary files and folders: the process id is the first number
_OURS = re.compile(
    r"^(?:\.(\d+)\..*\.tmp"
    r"|(?:burn|mux|preview|subtitle-worker|subtitle-downloads|job|edits|egress-ffmpeg)-(\d+)-[^/]*)$"
)


_SWEPT: set[str] = set()  # folders this process has swept (once each: an output folder may hold an archive's files)


def sweep(folder: Path) -> None:
    """Remove the temporary files and work folders in `folder` whose process (on this machine) is gone. Once per
    folder and process: what it finds was left before this process started writing there."""
    key = os.path.realpath(folder)
    if key in _SWEPT:
        return
    _SWEPT.add(key)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    left = [e for e in entries if (m := _OURS.match(e.name)) and not os.path.exists(f"/proc/{m[1] or m[2]}")]
    if not left or not os.path.exists("/proc/self"):
        return
    _kill_working_in([os.path.realpath(e.path) for e in left if e.is_dir(follow_symlinks=False)])
    for entry in left:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _kill_working_in(folders: list[str]) -> None:
    """SIGKILL the processes of this user (an ffmpeg a killed server left) that work in one of `folders`, or name
    something in it: their folder is about to go."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:  # gone, or not ours to read
            continue
        if any(cwd == f or cwd.startswith(f + os.sep) or any(f + os.sep in a for a in args) for f in folders):
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


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
