"""The IR cache (convert/export.py) from a process's side: once a checkpoint's IR is cached, finding it imports neither
torch, whisper nor numba (issue 52: their start-up is only the export's)."""

from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convert.checkpoints import resolve_checkpoint
from convert.export import ensure_ir
from convert.ir_layout import FILES, ExportOptions

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "whisper", "numba")


def run_fresh(code: str, cache: Path) -> tuple[str, list[str]]:
    """Run `code` in a new Python process whose model cache is `cache`: what it printed, and which of HEAVY it
    imported."""
    script = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    *printed, heavy = proc.stdout.strip().split("\n")
    return "\n".join(printed), ast.literal_eval(heavy)


def _find_ir(spec: str, weights: str) -> str:
    """The code that resolves `spec` and finds its IR as pipeline.asr.cache.load_model does, printing the folder."""
    return (
        "from convert.checkpoints import resolve_checkpoint\n"
        "from convert.export import ensure_ir\n"
        "from convert.ir_layout import ExportOptions\n"
        f"print(ensure_ir(resolve_checkpoint({spec!r}), ExportOptions(weights={weights!r})))"
    )


def _pt_file(d: Path) -> str:
    (d / "mine.pt").write_bytes(os.urandom(4096))  # (never read as a checkpoint: its IR is cached)
    return str(d / "mine.pt")


def _faster_whisper_dir(d: Path) -> str:
    (d / "fw").mkdir()
    (d / "fw" / "model.bin").write_bytes(os.urandom(4096))
    return str(d / "fw")


def _ct2_bin(d: Path) -> str:
    return str(Path(_faster_whisper_dir(d)) / "model.bin")


@pytest.mark.parametrize("make", [lambda d: "tiny.en", _pt_file, _faster_whisper_dir, _ct2_bin],
                         ids=["openai-name", "pt-file", "faster-whisper-dir", "ct2-model.bin"])  # fmt: skip
def test_every_form_of_checkpoint_finds_its_cached_ir_without_torch(tmp_path, monkeypatch, make):
    """Named openai-whisper models, .pt files and CTranslate2 models are told apart by name, size and first bytes,
    so a cached IR is found without reading the checkpoint (the entry here: empty files, as an export would name
    them)."""
    import convert.whisper_ir

    def placeholder(model, out: Path, options: ExportOptions) -> None:
        for name in FILES:
            (out / name).touch()

    monkeypatch.setattr(convert.whisper_ir, "export", placeholder)
    monkeypatch.setenv("SUBTITLE_CACHE_DIR", str(tmp_path / "cache"))
    spec = make(tmp_path)
    ir = ensure_ir(dataclasses.replace(resolve_checkpoint(spec), load=lambda: None))
    assert run_fresh(_find_ir(spec, "f16"), tmp_path / "cache") == (str(ir), [])
