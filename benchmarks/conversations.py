"""Real conversations with who speaks when, as packages on PyPI ship them, for benchmarks/speakers.py (--real).

- Seven AMI Meeting Corpus excerpts (CC BY 4.0, the AMI Consortium): the first 30 s of meetings recorded in one
  room, with overlapped speech, as pyannote.audio 4.0.7 ships them as test data (its sdist's tests/data: the RTTM
  reference, the UEM of the part scored). Left out: dev01, trn01, trn07 and tst01 (much speech with no label), trn00
  (file trñ00.wav), trn02 (one speaker), trn03 (no turn under 1 s).
- A 30-s telephone call between two women (pyannote.audio's own sample, src/pyannote/audio/sample/, MIT): one line,
  both voices through the same channel, the case a threshold chosen on voices of different recordings merges.
- Any folder of WAV files with an RTTM of the same name beside each (--real-dir): a user's own recordings,
  VoxConverse or AMI meetings, scored whole.

REAL_HELD_OUT are never used to choose anything; the others are the real development set.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from pipeline.media.audio import SAMPLE_RATE, load_audio

SDIST = "pyannote.audio==4.0.7"
PACKAGED = {  # folder in the sdist -> files taken from it (by base name: no path traversal)
    "pyannote_audio-4.0.7/tests/data": (".wav", ".rttm", ".uem"),
    "pyannote_audio-4.0.7/src/pyannote/audio/sample": (".wav", ".rttm"),
}
AMI = ("dev00", "trn04", "trn05", "trn06", "trn08", "trn09", "tst00")
CALL = "sample"  # the RTTM uri of the call
REAL = (*AMI, CALL)
REAL_HELD_OUT = ("trn08", "trn09", "tst00")


@dataclass(frozen=True)
class Recording:
    """Audio and who speaks when in it."""

    name: str  # the seed, the voice (--single), the uri
    audio: np.ndarray
    speech: tuple[tuple[float, float, str], ...]  # (start, end, voice) in seconds: the reference of the DER
    turns: tuple[tuple[float, float, str], ...]  # (start, end, voice): each turn, first to last speech
    scored: tuple[tuple[float, float], ...]  # the part scored (a UEM)
    rare: str | None = None  # the voice that says little

    @property
    def voices(self) -> list[str]:
        return list(dict.fromkeys(v for _, _, v in self.speech))

    @property
    def duration(self) -> float:
        return self.audio.size / SAMPLE_RATE


def real_recordings(folder: Path, extra: Path | None = None) -> list[Recording]:
    """REAL from `folder` (fetched into it first when a file is missing), then every WAV + RTTM pair of `extra`."""
    if not (folder / f"{CALL}.wav").is_file():
        fetch(folder)
    recs = _read(folder, REAL, whole=False)
    if extra is not None:
        recs += _read(extra, sorted(p.stem for p in extra.glob("*.wav") if p.with_suffix(".rttm").is_file()), True)
    return recs


def _read(folder: Path, uris, whole: bool) -> list[Recording]:
    plain = {p: unicodedata.normalize("NFKD", p.stem).encode("ascii", "ignore").decode() for p in folder.glob("*.wav")}
    wavs = {uri: p for p, uri in plain.items()}  # trñ00.wav is uri trn00
    text = "\n".join(f.read_text("utf-8") for suffix in ("rttm", "uem") for f in folder.glob(f"*.{suffix}"))
    speech, scored = defaultdict(list), defaultdict(list)
    for f in map(str.split, text.splitlines()):
        if f and f[0] == "SPEAKER":  # SPEAKER uri channel onset duration <NA> <NA> speaker <NA> <NA>
            speech[f[1]].append((float(f[3]), float(f[3]) + float(f[4]), f[7]))
        elif len(f) == 4:  # uri channel start end
            scored[f[0]].append((float(f[2]), float(f[3])))
    out = []
    for uri in uris:
        assert uri in wavs and speech[uri], f"{uri} is not in {folder}: empty it to fetch it again"
        audio = load_audio(wavs[uri])
        said = tuple(sorted(speech[uri]))
        out.append(Recording(uri, audio, said, said, tuple(scored[uri]) or ((0.0, audio.size / SAMPLE_RATE),)))
    return out


def fetch(folder: Path) -> None:
    """The PACKAGED files of pyannote.audio's sdist on PyPI into `folder`: written beside it, renamed into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir=folder.parent) as partial:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST, "-d", tmp]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"Failed to download {SDIST}: {done.stderr}")
        (sdist,) = Path(tmp).glob("pyannote_audio-*.tar.gz")
        files = Path(partial) / "real"
        files.mkdir()
        with tarfile.open(sdist) as tar:
            for member in tar:
                path = PurePosixPath(member.name)
                if member.isfile() and path.suffix in PACKAGED.get(str(path.parent), ()):
                    (files / path.name).write_bytes(tar.extractfile(member).read())
        if folder.is_dir():
            import shutil

            shutil.rmtree(folder)
        files.replace(folder)
