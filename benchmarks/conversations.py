"""Real conversations with who speaks when, as packages on PyPI ship them, for benchmarks/speakers.py (--real).

- Seven AMI Meeting Corpus excerpts (CC BY 4.0, the AMI Consortium): the first 30 s of meetings recorded in one
  room, with overlapped speech, as pyannote.audio 4.0.7 ships them as test data (its sdist's tests/data: the RTTM
  reference, the UEM of the part scored). Left out: dev01, trn01, trn07 and tst01 (much speech with no label), trn00
  (file trñ00.wav), trn02 (one speaker), trn03 (no turn under 1 s).
- A 30-s telephone call between two women (pyannote.audio's own sample, src/pyannote/audio/sample/, MIT): one line,
  both voices through the same channel, the case a threshold chosen on voices of different recordings merges.
- A 42-s radio phone-in (pyAudioAnalysis 0.1.3's data/diarizationExample.wav, Apache-2.0 as its package; no
  separate statement for the data): a presenter in the studio and three callers on phone lines, each turn labelled
  whole, pauses included (data/diarizationExample.segments, 0.1-s steps), so its DER counts our pauses as missed
  speech; the count and the speech given to its speaker are what it checks. Held out: found and looked at once
  (2026-11-29), used for no choice.
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
RADIO = "radio"  # the phone-in, from pyAudioAnalysis's sdist
RADIO_SDIST = (  # (pip cannot download it: building its metadata fails)
    "https://files.pythonhosted.org/packages/e4/92/c3d26ceeef8f9f960224a8286114988db2cec6f342ad98a0031285ec364d/"
    "pyAudioAnalysis-0.1.3.tar.gz",
    "58333557990b4503493fa2d2806591699f5651034086b241e170d2a2e75bac98",
)
RADIO_FILES = "pyAudioAnalysis-0.1.3/pyAudioAnalysis/data/diarizationExample"  # .wav and .segments
REAL = (*AMI, CALL, RADIO)
REAL_HELD_OUT = ("trn08", "trn09", "tst00", RADIO)


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
    if not (folder / f"{RADIO}.wav").is_file():
        fetch_radio(folder)
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


def fetch_radio(folder: Path) -> None:
    """The phone-in from pyAudioAnalysis's sdist on PyPI into `folder` as radio.wav and radio.rttm (its segments
    "start,end,speaker" as RTTM turns), checked against RADIO_SDIST's SHA-256; each file written beside, renamed."""
    import hashlib
    import io
    import urllib.request

    url, digest = RADIO_SDIST
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read(64 << 20)
    if hashlib.sha256(data).hexdigest() != digest:
        raise RuntimeError(f"{url} is not the archive this benchmark was written for (SHA-256 differs)")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        wav = tar.extractfile(f"{RADIO_FILES}.wav").read()
        segments = tar.extractfile(f"{RADIO_FILES}.segments").read().decode("utf-8")
    turns = [line.split(",") for line in segments.split() if line.strip()]
    rttm = "".join(
        f"SPEAKER {RADIO} 1 {float(a):.3f} {float(b) - float(a):.3f} <NA> <NA> {who} <NA> <NA>\n" for a, b, who in turns
    )
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in ((f"{RADIO}.rttm", rttm.encode()), (f"{RADIO}.wav", wav)):  # (the WAV last: it says done)
        partial = folder / f".{name}.partial"
        partial.write_bytes(content)
        partial.replace(folder / name)
