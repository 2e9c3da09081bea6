"""Media in: probing a file and decoding its audio to 16 kHz mono float32 with the ffmpeg from imageio-ffmpeg.

imageio-ffmpeg (a moviepy dependency) ships a static ffmpeg built with libass, so no system ffmpeg is needed.
It ships no ffprobe, so probing reads ffmpeg's own stream listing.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from pipeline.errors import SubtitleError

SAMPLE_RATE = 16000  # Whisper's input rate
_DURATION = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_STREAM = re.compile(r"Stream #\d+:\d+.*?: (Audio|Video|Subtitle): (\w+)([^\n]*)")
_SIZE = re.compile(r", (\d{2,5})x(\d{2,5})[ ,]")
_ROTATION = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees")


def ffmpeg_exe() -> str:
    return imageio_ffmpeg.get_ffmpeg_exe()


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 2 * 1024**3  # per file, uploaded or downloaded (2 GiB)
    max_duration: float = 3 * 3600.0  # seconds of media per file (3 h: ~25 min of work for Whisper base on 2 cores)
    max_files: int = 20  # files and links in one job


@dataclass(frozen=True)
class MediaInfo:
    duration: float | None  # seconds, None when the container does not say
    has_audio: bool
    has_video: bool
    video_codec: str | None = None  # ffmpeg's names: h264, hevc, vp9, ...
    audio_codec: str | None = None  # aac, mp3, opus, ...
    width: int | None = None  # as displayed: phone videos stored sideways with a rotation are swapped back
    height: int | None = None


def probe(path: Path) -> MediaInfo:
    """What is in a media file, from `ffmpeg -i` (which exits non-zero because no output is given)."""
    path = _existing(path)
    proc = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path)], capture_output=True, timeout=60)
    stderr = proc.stderr.decode("utf-8", "replace")
    streams = [(m.group(1), m.group(2), m.group(3)) for m in _STREAM.finditer(stderr)]
    if not streams:
        raise SubtitleError(f"{path.name} is not a media file ffmpeg can read ({_last_line(stderr)})")
    duration = None
    if m := _DURATION.search(stderr):
        h, mi, s = m.groups()
        duration = int(h) * 3600 + int(mi) * 60 + float(s)
    video = next((s for s in streams if s[0] == "Video" and "attached pic" not in s[2]), None)
    audio = next((s for s in streams if s[0] == "Audio"), None)
    width = height = None
    if video and (size := _SIZE.search(video[2])):
        width, height = int(size.group(1)), int(size.group(2))
        if (rotation := _ROTATION.search(stderr)) and round(float(rotation.group(1))) % 180 == 90:
            width, height = height, width
    return MediaInfo(
        duration, audio is not None, video is not None, video and video[1], audio and audio[1], width, height
    )


def require_audio(path: Path) -> MediaInfo:
    """probe(), plus a clear error when the file has no audio stream to transcribe."""
    info = probe(path)
    if not info.has_audio:
        raise _no_audio(Path(path))
    return info


def check_limits(what: str, limits: Limits, size: float | None = None, duration: float | None = None) -> None:
    """Refuse media over the server's limits, saying by how much and what to do."""
    if size is not None and size > limits.max_bytes:
        raise SubtitleError(
            f"{what} is {human_size(size)}; this server takes up to {human_size(limits.max_bytes)}: use a smaller file"
        )
    if duration is not None and duration > limits.max_duration:
        raise SubtitleError(
            f"{what} is {hms(duration)} long; this server takes up to {hms(limits.max_duration)}: use a shorter one"
        )


def human_size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} bytes"


def hms(seconds: float) -> str:
    """1:05 or 1:02:05."""
    seconds = round(seconds)
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def load_audio(path: Path, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Decode the first audio stream to mono float32 in [-1, 1] at `sample_rate`.

    ffmpeg skips the video stream entirely (-vn) and writes raw PCM to a pipe, so video frames are never decoded
    and never held in memory.
    """
    path = _existing(path)
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-threads", "0", "-i", str(path),
           "-map", "0:a:0", "-vn", "-sn", "-dn", "-f", "s16le", "-ac", "1", "-ar", str(sample_rate), "-"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True)
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        if "matches no streams" in stderr:
            raise _no_audio(path)
        raise SubtitleError(f"ffmpeg cannot read {path.name} ({_last_line(stderr)}): is it a video or audio file?")
    audio = np.frombuffer(proc.stdout, np.int16).astype(np.float32)
    del proc  # the PCM bytes: 115 MB an hour
    audio /= 32768.0  # in place: no second float copy of the whole recording
    return audio


def _existing(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise SubtitleError(f"{path} does not exist or is not a file")
    return path


def _no_audio(path: Path) -> SubtitleError:
    return SubtitleError(f"{path.name} has no audio track: choose a file with sound")


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
