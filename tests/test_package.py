"""The project as a package: `pip install .` gives a `subtitle-generator` command that works from any folder (issue
50, item 4: `python -m pipeline` worked only inside the clone, and pyproject.toml declared nothing to run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_installed_command_subtitles_a_clip_from_an_empty_folder(ov_model, tmp_path):
    """Installed non-editable into a fresh venv, without its dependencies (those of this environment stand in for
    them), the command runs from a folder with nothing of the project in it; --help answers at once."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__")
    for part in ("pipeline", "convert"):
        shutil.copytree(ROOT / part, source / part, ignore=ignore)
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(site) / "requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", str(source)], check=True, cwd=tmp_path)  # fmt: skip
    command = venv / "bin" / "subtitle-generator"
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = time.monotonic()
    helped = subprocess.run([command, "--help"], cwd=empty, capture_output=True, text=True, env=env, check=True)
    took = time.monotonic() - started
    assert helped.stdout.startswith("usage: subtitle-generator ") and "--font-size PERCENT" in helped.stdout
    print(f"--help as a whole process: {took:.2f} s")
    clip = shutil.copy(ROOT / "tests" / "data" / "en_jfk.flac", empty / "talk.flac")
    done = subprocess.run([command, clip, "-o", "subs", "--precision", "f32", "--quiet"], cwd=empty, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "fellow americans" in (empty / "subs" / "talk.srt").read_text(encoding="utf-8").lower()
    imported = subprocess.run([python, "-c", "import pipeline; print(pipeline.__file__)"], cwd=empty, env=env,
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert imported.startswith(site)  # the installed copy, not the clone
