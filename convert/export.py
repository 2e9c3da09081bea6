"""openai-whisper's model exported to OpenVINO IR (convert/ir_layout.py says what the files hold), kept in an on-disk
cache under SUBTITLE_CACHE_DIR, one folder per checkpoint identity and export settings; the tracing itself is
convert/whisper_ir.py, imported only to export.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from convert.ir_layout import EXPORT_VERSION, F16_ENCODER, FILES, ExportOptions

if TYPE_CHECKING:
    from torch import nn

    from convert.checkpoints import Checkpoint


def cache_root() -> Path:
    """SUBTITLE_CACHE_DIR, else $XDG_CACHE_HOME/subtitle-generator, else ~/.cache/subtitle-generator."""
    if env := os.environ.get("SUBTITLE_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "subtitle-generator"


def ensure_ir(
    checkpoint: Checkpoint,
    options: ExportOptions = ExportOptions(),
    progress: Callable[[str], None] = lambda message: None,
) -> Path:
    """Return the cache folder holding the IR for `checkpoint`, exporting it first if it is not there yet."""

    def write(folder: Path) -> None:
        from convert.whisper_ir import export  # (torch: only to export)

        progress(f"Preparing {checkpoint.description} for OpenVINO (first run only)")
        export(checkpoint.load(), folder, options)

    files = FILES + (F16_ENCODER if options.weights == "int8" else ())  # (an int8 entry without it: written again)
    return cached_entry(f"{checkpoint.identity}-v{EXPORT_VERSION}-{options.weights}", files, write)


def weights_entry(
    name: str,
    weights: Path,
    version: int,
    *,
    xml: str,
    output: str,
    module: Callable[[], nn.Module],
    example: tuple[int, ...],
    shape: tuple[int, ...],
) -> Path:
    """The cache folder of a small network's IR, keyed by its weights' digest and `version`, holding `xml` (and its
    .bin): `module()` traced on zeros of shape `example` with a float32 input of `shape` (-1: any size), its output
    named `output`, written on first use. torch, and whatever `module` imports, only then."""
    import hashlib

    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]

    def write(out: Path) -> None:
        import openvino as ov
        import torch

        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (tracing's warnings are not actionable here)
            model = ov.convert_model(module(), example_input=torch.zeros(example), input=[(shape, ov.Type.f32)])
        model.outputs[0].get_tensor().set_names({output})
        ov.save_model(model, out / xml, compress_to_fp16=False)

    return cached_entry(f"{name}-{digest}-v{version}", (xml, xml.replace(".xml", ".bin")), write)


def cached_entry(key: str, files: Sequence[str], write: Callable[[Path], None]) -> Path:
    """The cache folder `key`, holding `files`; written by `write(folder)` first if it is not there yet.

    One process writes an entry at a time (a lock file); an entry is written to a temporary folder and renamed into
    place, so an interrupted write never leaves a broken entry, and the next write sweeps its leftovers."""
    target = cache_root() / key

    def complete() -> bool:
        return all((target / name).is_file() for name in files)

    if complete():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes, also when the process dies)
        if complete():  # written by another process while this one waited
            return target
        for stale in target.parent.glob(f".{key}.*"):  # a killed write's leftovers (the lock is ours)
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
        try:
            write(tmp)
            if target.exists():  # an incomplete entry (files missing): replaced
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
