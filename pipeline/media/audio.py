"""Media in: probing a file and decoding its audio to 16 kHz mono float32 with the ffmpeg from imageio-ffmpeg.

imageio-ffmpeg (a moviepy dependency) ships a static ffmpeg built with libass, so no system ffmpeg is needed.
It ships no ffprobe, so probing reads ffmpeg's own stream listing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from pipeline.errors import Cancelled, SubtitleError
from pipeline.timings import timed

log = logging.getLogger("subtitle-generator")
_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1  # <sys/prctl.h>
SAMPLE_RATE = 16000  # Whisper's input rate
_DURATION = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_HDR = re.compile(r"/(smpte2084|arib-std-b67)\b")  # the transfer in "yuv420p10le(tv, bt2020nc/bt2020/arib-std-b67)"
_SAR = re.compile(r"\[SAR (\d+):(\d+) DAR")  # "720x576 [SAR 64:45 DAR 16:9]": pixels 64/45 as wide as high
_FIELDS = re.compile(r"\b(top|bottom) (coded )?first")  # "yuv420p(tv, bt709, top first)": interlaced
_STREAM = re.compile(r"Stream #\d+:\d+.*?: (Audio|Video|Subtitle): (\w+)([^\n]*)")
_SIZE = re.compile(r", (\d{2,5})x(\d{2,5})[ ,]")
_RATE = re.compile(r", (\d{3,6}) Hz")
_ROTATION = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees")
_START = re.compile(r"Duration: [^,\n]*, start: (-?\d+(?:\.\d+)?)")  # where the file's timeline starts, s
_AUDIO = re.compile(r"Stream #\d+:\d+[^\n]*?: Audio: [^\n]*")
_STREAM_START = re.compile(r", start (-?\d+(?:\.\d+)?)")  # a stream's, where it is not the file's


# The demuxers an input may be read with: plain containers and audio files. Not playlists or anything else that
# opens other files or URLs (hls, dash, concat, imf, image2, tee, ...): a file from a stranger could name local
# files or internal hosts there, or be endless.
DEMUXERS = ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "avi", "flv", "mpegts", "mpeg", "asf", "mxf", "nut", "dv",
            "mp3", "wav", "w64", "ogg", "flac", "aac", "ac3", "eac3", "aiff", "amr", "caf", "wv", "ape")  # fmt: skip
PROBE_TIMEOUT = 60.0  # seconds
# What a folder given as input is searched for (by extension; each file is still probed before any work).
MEDIA_SUFFIXES = frozenset(
    ".mp4 .m4v .mkv .webm .mov .avi .flv .ts .mts .m2ts .mpg .mpeg .wmv .asf .mxf .3gp .nut .dv "
    ".mp3 .wav .m4a .aac .flac .ogg .oga .opus .wma .aiff .aif .amr .caf .wv .ape .ac3".split()
)


def media_files(folder: Path) -> list[Path]:
    """The media files under `folder`, recursively, in a stable order (hidden files and folders left out)."""
    found = [
        p
        for p in Path(folder).rglob("*")
        if p.suffix.lower() in MEDIA_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    return sorted(found)


def ffmpeg_exe() -> str:
    return imageio_ffmpeg.get_ffmpeg_exe()


def ffmpeg_input(path: Path) -> list[str]:
    """ffmpeg's arguments that open `path` as an input, for every run on media from outside: only the file itself
    (protocol `file`, named with `file:` so a name such as `concat:a|b` or `http:x` is a name) and only the DEMUXERS."""
    return ["-protocol_whitelist", "file", "-format_whitelist", ",".join(DEMUXERS),
            "-i", "file:" + str(Path(path).resolve())]  # fmt: skip


def _die_with_parent(libc=_LIBC) -> None:
    """In the child before ffmpeg starts: killed when the thread that started it ends, even by SIGKILL of the
    server (Linux's parent-death signal), so no ffmpeg outlives a killed server."""
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# the data (RLIMIT_DATA) one ffmpeg may hold: a file made to need more (a 400-MB MKV of attachments took 1.8 GB to
# probe) fails alone; a 4K HEVC burn takes about 600 MB
PROBE_MEMORY, DECODE_MEMORY, WRITE_MEMORY = 256 * 2**20, 512 * 2**20, 2 * 2**30


def ffmpeg_popen(*args: str, memory: int) -> tuple[list[str], dict]:
    """ffmpeg's command line and Popen's arguments for it, which bound it together: it dies with the server (Linux's
    parent-death signal), holds at most `memory` bytes of data, and has a process group of its own (killed whole).
    util-linux's setpriv and prlimit set the bounds and exec ffmpeg, so no Python runs in the child (a preexec_fn in
    a threaded server can deadlock between fork and exec: the subprocess docs); without them, a preexec_fn does."""
    if (guards := _guards()) is not None:
        setpriv, prlimit = guards
        command = [setpriv, "--pdeathsig", "KILL", "--", prlimit, f"--data={memory}:{memory}", "--", ffmpeg_exe()]
        return [*command, *args], {"start_new_session": True}

    def start() -> None:
        _die_with_parent()
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))

    return [ffmpeg_exe(), *args], {"start_new_session": True, "preexec_fn": start}


@functools.cache
def _guards() -> tuple[str, str] | None:
    """setpriv and prlimit (util-linux), or None where they are missing or cannot run as ffmpeg_popen runs them
    (an old setpriv without --pdeathsig, a prlimit refused): tried once."""
    setpriv, prlimit = shutil.which("setpriv"), shutil.which("prlimit")
    if _LIBC is None or not setpriv or not prlimit:
        return None
    trial = [setpriv, "--pdeathsig", "KILL", "--", prlimit, f"--data={DECODE_MEMORY}:{DECODE_MEMORY}", "--", setpriv]
    try:
        ok = subprocess.run([*trial, "--version"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return (setpriv, prlimit) if ok else None


def out_of_memory(stderr: str, what: str, memory: int) -> SubtitleError | None:
    """The error for an ffmpeg stopped at its memory bound, else None."""
    if "Cannot allocate memory" not in stderr:
        return None
    return SubtitleError(
        f"{what} needs more than the {memory >> 20} MB of memory this server gives it: use another file"
    )


def run_ffmpeg(
    args: list[str], timeout: float | None, stop: threading.Event | None = None, what: str = "ffmpeg",
    *, memory: int = DECODE_MEMORY,
) -> tuple[int, bytes, str]:  # fmt: skip
    """Run ffmpeg in its own process group with at most `memory` bytes of data; return (exit code, stdout, stderr).
    The group is killed when `timeout` seconds pass (SubtitleError) or `stop` is set (Cancelled), and on any other way
    out: nothing outlives the call."""
    command, bounds = ffmpeg_popen("-hide_banner", "-nostdin", *args, memory=memory)
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **bounds
    ) as proc:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = proc.communicate(timeout=0.2)  # (a retry after a timeout loses no output)
                    return proc.returncode, out, err.decode("utf-8", "replace")
                except subprocess.TimeoutExpired:
                    if stop is not None and stop.is_set():
                        raise Cancelled from None
                    if deadline is not None and time.monotonic() > deadline:
                        raise SubtitleError(f"{what} took longer than {timeout:.0f} s and was stopped") from None
        finally:
            kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a process started with start_new_session=True, and everything it started; wait for it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_bytes: int = 2 * 1024**3  # per file, uploaded or downloaded (2 GiB)
    max_duration: float = 3 * 3600.0  # seconds of media per file (3 h: ~25 min of work for Whisper base on 2 cores)
    max_files: int = 20  # files and links in one job
    max_job_bytes: int = 8 * 10**9  # video one job may write (burned-in, soft-subtitled and preview copies)
    download_seconds: float = 1800.0  # wall time a link's download may take
    min_download_rate: float = 32_000.0  # bytes per second a download must average after its first 30 s


@dataclass(frozen=True)
class MediaInfo:
    duration: float | None  # seconds, None when the container does not say
    has_audio: bool
    has_video: bool
    video_codec: str | None = None  # ffmpeg's names: h264, hevc, vp9, ...
    audio_codec: str | None = None  # aac, mp3, opus, ...
    width: int | None = None  # as displayed: phone videos stored sideways with a rotation are swapped back
    height: int | None = None
    sample_rate: int | None = None  # of the audio stream transcribed (audio_track), Hz
    audio_track: int = 0  # which audio stream a player plays, and we transcribe: the one marked default, else the first
    hdr: bool = False  # the picture is HDR (PQ or HLG: phones record HLG): burned in, it is tone-mapped to SDR
    pixel_aspect: float = 1.0  # a pixel's width over its height as shown: not 1 on DVDs, HDV and broadcast (anamorphic)
    interlaced: bool = False  # two fields a frame (broadcast, camcorders): burned in, it is deinterlaced

    @property
    def shown_size(self) -> tuple[int, int] | None:
        """(width, height) of the picture in square pixels, as a player shows it (even: what burning draws on)."""
        if not self.width or not self.height:
            return None
        return max(2, round(self.width * self.pixel_aspect / 2) * 2), self.height


def probe(path: Path, stop: threading.Event | None = None) -> MediaInfo:
    """What is in a media file, from `ffmpeg -i` (which exits non-zero because no output is given)."""
    path = _existing(path)
    stderr = _listing(path, stop)
    streams = [(m.group(1), m.group(2), m.group(3)) for m in _STREAM.finditer(stderr)]
    if not streams and (error := out_of_memory(stderr, f"Reading {path.name}", PROBE_MEMORY)):
        raise error
    if not streams and "moov atom not found" in stderr and _mp4_start(path):  # (an MP4 whose index never was written)
        raise SubtitleError(
            f"{path.name} is cut short: its index (the MP4 'moov atom', written when a recording stops) is missing, "
            "as when a recording or download is interrupted: copy or download it again whole, or repair it first"
        )
    if not streams:  # (playlists, image sequences and other files that open more files are not read at all)
        log.info("%s: ffmpeg found no streams: %s", path.name, last_line(stderr))  # (ffmpeg's words: for the log)
        raise SubtitleError(f"{path.name} is not a video or audio file: use MP4, MKV, WebM, MOV, MP3, WAV, …")
    duration = _duration(stderr)
    video = next((s for s in streams if s[0] == "Video" and "attached pic" not in s[2]), None)
    track = audio_track(stderr)
    audio = ([s for s in streams if s[0] == "Audio"][track:] or [None])[0]
    width = height = None
    pixel_aspect = 1.0
    if video and (size := _SIZE.search(video[2])):
        width, height = int(size.group(1)), int(size.group(2))
        if (sar := _SAR.search(video[2])) and int(sar.group(1)) and int(sar.group(2)):
            pixel_aspect = int(sar.group(1)) / int(sar.group(2))
        if (rotation := _ROTATION.search(stderr)) and round(float(rotation.group(1))) % 180 == 90:
            width, height, pixel_aspect = height, width, 1 / pixel_aspect
    rate = audio and _RATE.search(audio[2])
    return MediaInfo(
        duration, audio is not None, video is not None, video and video[1], audio and audio[1], width, height,
        int(rate.group(1)) if rate else None, track, bool(video and _HDR.search(video[2])), pixel_aspect,
        bool(video and _FIELDS.search(video[2])),
    )  # fmt: skip


def require_audio(path: Path, stop: threading.Event | None = None) -> MediaInfo:
    """probe(), plus a clear error when the file has no audio stream to transcribe."""
    info = probe(path, stop)
    if not info.has_audio:
        raise _no_audio(Path(path))
    return info


def check_limits(
    what: str, limits: Limits, size: float | None = None, duration: float | None = None, known: bool = False
) -> None:
    """Refuse media over the server's limits, saying by how much and what to do. `known`: the duration must be
    known (a local file whose container does not say how long it is could decode to any length)."""
    if known and duration is None:
        raise SubtitleError(
            f"{what} does not say how long it is, so this server does not take it: remux it (ffmpeg -i IN -c copy "
            "OUT.mp4) or use another file"
        )
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


@timed("audio")
def load_audio(
    path: Path, sample_rate: int = SAMPLE_RATE, limits: Limits | None = None, stop: threading.Event | None = None
) -> np.ndarray:
    """Decode the audio stream a player plays (audio_track) to mono float32 in [-1, 1] at `sample_rate`.

    ffmpeg skips the video stream entirely (-vn) and writes raw PCM to a pipe, so video frames are never decoded
    and never held in memory. The samples lie on the file's timeline, as a player plays them against the picture:
    from the file's start (audio_offset) and with the gaps in the audio stream filled with silence (a screen
    recording that dropped audio; only where the file says how long it is, not by estimate, and the decode stops at
    twice that and a minute: a file can claim any gap). Two channels that cancel out as mono (one inverted: a
    miswired microphone) give their difference instead.
    With `limits`, ffmpeg stops 1 s past the longest duration allowed (whatever the container claimed), the decoded
    length is checked again, and decoding may take 1 minute plus a tenth of that duration. `stop` kills ffmpeg at
    once (Cancelled).
    """
    path = _existing(path)
    listing = _listing(path, stop)
    audio = _decoded(path, listing, sample_rate, limits, stop)
    level = _dbfs(audio) if _channels(listing) > 1 else 0.0
    if level < CANCEL_CHECK_DBFS:  # (near silent as mono: two channels may cancel out)
        side = _decoded(path, listing, sample_rate, limits, stop, mix=SIDE)
        if _dbfs(side) - level >= CANCELLED_DB:
            log.info("%s: its two channels cancel out as mono (one is inverted): their difference is used", path.name)
            return side
    return audio


CANCEL_CHECK_DBFS = -50.0  # a mono mix under this RMS level is checked for channels that cancel (speech: -15 to -40)
SIDE = "pan=mono|c0=0.5*c0-0.5*c1"  # the channels' difference: speech where one channel is the other inverted
CANCELLED_DB = 30.0  # dB the difference must stand over the mono mix to be taken for it


def _decoded(
    path: Path, listing: str, sample_rate: int, limits: Limits | None, stop: threading.Event | None, mix: str = ""
) -> np.ndarray:
    """load_audio's decode of the listed file, its channels mixed to mono by ffmpeg (or by the `mix` filter)."""
    said = None if "Estimating duration" in listing else _duration(listing)  # (an estimate can be far off)
    longest = [d for d in (limits and limits.max_duration + 1, said and 2 * said + 60) if d]
    cap = ["-t", f"{min(longest):.3f}"] if longest else []
    # timestamps' gaps as silence, up to twice its length
    filters = ",".join([*(["aresample=async=1000"] if said else []), *([mix] if mix else [])])
    timeout = None if limits is None else 60 + limits.max_duration / 10
    args = ["-threads", "0", *ffmpeg_input(path), "-map", f"0:a:{audio_track(listing)}", "-vn", "-sn", "-dn", *cap,
            *(["-af", filters] if filters else []), "-f", "s16le", "-ac", "1", "-ar", str(sample_rate), "-"]  # fmt: skip
    code, pcm, stderr = run_ffmpeg(args, timeout, stop, f"Decoding the audio of {path.name}")
    if code != 0:
        if "matches no streams" in stderr:
            raise _no_audio(path)
        if error := out_of_memory(stderr, f"Decoding the audio of {path.name}", DECODE_MEMORY):
            raise error
        raise SubtitleError(f"ffmpeg cannot read {path.name} ({last_line(stderr)}): is it a video or audio file?")
    lead = int(round(audio_offset(listing) * sample_rate))
    if limits is not None:  # (an offset past the limit is refused below, without a buffer of its length)
        lead = min(lead, int((limits.max_duration + 1) * sample_rate))
    audio = np.zeros(lead + len(pcm) // 2, np.float32)
    audio[lead:] = np.frombuffer(pcm, np.int16)
    del pcm  # the PCM bytes: 115 MB an hour
    audio[lead:] /= 32768.0  # in place: no second float copy of the whole recording
    if limits is not None:
        check_limits(path.name, limits, duration=len(audio) / sample_rate)  # what it really was, not what it said
    return audio


def _channels(listing: str) -> int:
    """How many channels the decoded audio stream has: as listed ("4 channels"), 1 for mono or no stream listed, else
    2 (a named layout, stereo or more: what the inverted-channel check needs to know)."""
    stream = _audio_line(listing)
    if m := re.search(r", (\d+) channels", stream):
        return int(m.group(1))
    return 1 if ", mono" in stream or not stream else 2


def _dbfs(audio: np.ndarray) -> float:
    """The RMS level of samples in [-1, 1], in dB below full scale (-inf for none or digital silence)."""
    if not audio.size:
        return float("-inf")
    power = float(np.dot(audio, audio)) / audio.size  # (no squared copy of an hour of audio)
    return 10 * np.log10(power) if power > 0 else float("-inf")


def audio_offset(listing: str) -> float:
    """Seconds from the start of a file's timeline to its first audio sample, from ffmpeg's listing of the input:
    an audio stream that starts after the video (a screen recording, a trimmed or joined video, a broadcast capture)
    is decoded from its first sample, and its cues must start that much later to meet the picture. Never more than
    the file says it lasts; 0 when it does not say."""
    start, length = _START.search(listing), _duration(listing)
    own = _STREAM_START.search(_audio_line(listing))  # (the stream decoded)
    if not (start and own) or length is None:
        return 0.0
    return min(max(float(own.group(1)) - float(start.group(1)), 0.0), length)


def audio_track(listing: str) -> int:
    """Which of a file's audio streams a player plays, from ffmpeg's listing: the first marked default (a film's
    dubbed or commentary track may come before the one it plays), else the first."""
    streams = _AUDIO.findall(listing)
    return next((i for i, line in enumerate(streams) if "(default)" in line), 0)


def _audio_line(listing: str) -> str:
    """The listing's line of the audio stream decoded (audio_track); "" when it lists none."""
    streams = _AUDIO.findall(listing)
    return streams[audio_track(listing)] if streams else ""


def _listing(path: Path, stop: threading.Event | None) -> str:
    """ffmpeg's listing of a file's streams (`ffmpeg -i`, which exits non-zero because no output is given)."""
    return run_ffmpeg(ffmpeg_input(path), PROBE_TIMEOUT, stop, f"Reading {path.name}", memory=PROBE_MEMORY)[2]


def _duration(listing: str) -> float | None:
    """How long the file says it is, in seconds; None when it does not say."""
    if not (m := _DURATION.search(listing)):
        return None
    h, mi, s = m.groups()
    return int(h) * 3600 + int(mi) * 60 + float(s)


def _mp4_start(path: Path) -> bool:
    """Whether the file begins as an MP4 or MOV does (a box of one of these types first), not a text file so named."""
    with open(path, "rb") as f:
        return f.read(8)[4:] in (b"ftyp", b"mdat", b"wide", b"free", b"skip")


def _existing(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise SubtitleError(f"{path.name} does not exist or is not a file")
    return path


def _no_audio(path: Path) -> SubtitleError:
    return SubtitleError(f"{path.name} has no audio track: choose a file with sound")


_CONTEXT = re.compile(r"\[[^\[\]]* @ 0x[0-9a-f]+\] ?")  # ffmpeg's "[out#0/mp4 @ 0x55…] ": a heap address


def last_line(stderr: str, empty: str = "no output") -> str:
    """ffmpeg's last line of errors for a message, without the heap addresses it prefixes them with."""
    lines = [line.strip() for line in _CONTEXT.sub("", stderr).splitlines() if line.strip()]
    return lines[-1] if lines else empty
