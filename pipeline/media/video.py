"""Subtitles into video: burned in with libass (the `ass` filter), or muxed as a soft track without re-encoding.

Burn-in writes our own ASS file (the style in video pixels) and renders it with the fonts that ship with the
project's dependencies, passed to libass as `fontsdir`, so no system font is ever needed or used: DejaVu Sans
(Latin, Greek, Cyrillic, Arabic, Hebrew; from matplotlib) and Noto Sans CJK SC (Chinese, Japanese, Korean; from
mplfonts). Both are under free licences (Bitstream Vera / DejaVu licence, SIL OFL 1.1).

Safety: ffmpeg runs in a private working folder holding `subs.ass` and `fonts/`, so the filter graph is a fixed
string (`ass=subs.ass:fontsdir=fonts`) that never contains a user's text or file name. Outputs are written to a
temporary name and renamed; ffmpeg is killed with its whole process group when it overruns its timeout.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from pipeline.errors import Cancelled, OptionError, SubtitleError
from pipeline.files import atomic_path, work_folder
from pipeline.media.audio import (
    WRITE_MEMORY,
    MediaInfo,
    ffmpeg_input,
    ffmpeg_popen,
    human_size,
    kill_group,
    last_line,
    out_of_memory,
    probe,
)
from pipeline.subtitles.ass import (  # (the look of subtitles: pipeline/subtitles/ass.py)
    CJK_FONT,
    LATIN_FONT,
    Style,
    to_ass,
)
from pipeline.subtitles.cues import Cue
from pipeline.subtitles.formats import Labels, to_srt

# HDR (PQ or HLG) to SDR BT.709, as ffmpeg's tonemap filter documents it: to linear light with HDR reference white
# (203 cd/m2, ITU-R BT.2408) as 1.0, BT.709 primaries, the curve, back to BT.709. Mobius keeps in-range colours and
# contrast and rolls off only the highlights (Hable darkens all of it). Without this, a phone's HLG video burned into
# 8-bit H.264 came out grey and washed out.
TONE_MAP = ("zscale=w={w}:h={h}:t=linear:npl=203,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=mobius,"
            "zscale=t=bt709:m=bt709:r=tv,format=yuv420p")  # fmt: skip
SDR_TAGS = ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709"]
MAX_PIXELS = 1920 * 1080  # burned-in video is at most this big (4K and 8K are scaled down: the encode stays bounded)
BROWSER_AUDIO = {"aac", "mp3"}  # audio codecs an MP4 can carry and every browser plays: copied, not re-encoded
WEBM_AUDIO = {"opus", "vorbis"}  # the same for WebM
# Video a browser plays as it is, by codec, and the container its preview is remuxed into (Gradio's own list)
BROWSER_VIDEO = {"h264": ".mp4", "av1": ".mp4", "vp8": ".webm", "vp9": ".webm"}
# The burn's H.264 bitrate cap (x264's VBV with CRF): a burned video's size is bounded by its duration, whatever the
# picture. 8 Mbit/s is above what CRF 23 needs for 1080p talk or film, so the cap bites only on noise and confetti.
BURN_MAX_RATE = 8_000_000  # bits per second of video
AUDIO_RATE = 160_000  # bits per second of the AAC we encode when the audio cannot be copied
PREVIEW_SECONDS = 60.0  # of a video browsers cannot play, re-encoded for the preview (the rest is not shown)
# A burn that has made less than MIN_SPEED seconds of video a second of its run, GRACE seconds in or later, is
# stopped: a script made to be slow to draw runs at 0.01-0.1x, and gives the job slot back within GRACE seconds.
MIN_SPEED, GRACE = 0.1, 8.0
MP4_VIDEO = {"h264", "hevc", "av1", "vp9", "mpeg4", "mpeg2video", "mjpeg"}  # copied into a soft-subtitle MP4
MP4_AUDIO = {"aac", "mp3", "opus", "flac", "ac3", "eac3", "alac"}  # others are re-encoded to AAC for the MP4
MPEG1_RATES = {32000, 44100, 48000}  # MP3 an MP4 takes: MPEG-1 Layer III (phones' 8-kHz MP3 is MPEG-2.5)


@dataclass(frozen=True)
class BurnOptions:
    preview_seconds: float | None = None  # only the first N seconds (fast); None: the whole video
    crf: int = 23  # x264 quality (lower is better and bigger)
    # x264 speed/size trade-off. None: veryfast for a preview; ultrafast for the whole video, which keeps burning in
    # well under the transcription time (benchmarks/burn.py, 10 min of 720p30 on 2 cores: ultrafast 52 s, superfast
    # 79 s, veryfast 111 s; transcription 82 s) at the price of a bigger file.
    preset: str | None = None
    timeout_factor: float = (
        3.0  # ffmpeg may run this many times the media's duration (plus a minute) before it is killed
    )

    def __post_init__(self):
        if self.preview_seconds is not None and not self.preview_seconds > 0:
            raise OptionError("preview_seconds", "The preview length must be a positive number of seconds")


def font_files() -> dict[str, Path]:
    """The shipped fonts by family name. Raises SubtitleError when the packages that carry them are missing."""
    try:
        import matplotlib
        import mplfonts
    except ImportError:
        raise SubtitleError("The subtitle fonts are not installed: pip install -r requirements.txt") from None
    return {
        LATIN_FONT: Path(matplotlib.__file__).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf",
        CJK_FONT: Path(mplfonts.__file__).parent / "fonts" / "NotoSansCJKsc-Regular.otf",
    }


def burn(
    video: Path,
    cues: Sequence[Cue],
    out: Path,
    *,
    language: str = "en",
    options: BurnOptions = BurnOptions(),
    style: Style = Style(),
    progress: Callable[[float], None] = lambda fraction: None,
    duration: float | None = None,
    media: MediaInfo | None = None,
    stop: threading.Event | None = None,
    threads: int = 0,
    max_bytes: int | None = None,
    labels: Labels | str = Labels(),
    script: str | None = None,
) -> Path:
    """Render the cues into `video`'s picture: H.264 + AAC MP4 that plays in browsers, the original audio kept.
    `threads`: the encoder's threads (0: x264's own choice, every core; a server shares its cores among its jobs).
    `max_bytes`: the most the file may take (SubtitleError past it, nothing left behind).

    `duration` is the media's length when known otherwise (the decoded audio): some containers (live or browser
    recordings) do not say, and the timeout and the progress bar depend on it. `media`: the video's probe, when the
    caller has it already. `script`: an ASS script to burn as it is (subtitles someone brought, with their styles)
    instead of the cues."""
    media = media or probe(video)
    if not media.has_video or not media.width or not media.height:
        raise SubtitleError(
            f"{Path(video).name} has no picture to burn subtitles into: use its subtitle files, or a video"
        )
    duration = media.duration or duration or 0.0
    if options.preview_seconds:
        duration = min(duration, options.preview_seconds) if duration else options.preview_seconds
    # (the work folder sits beside the output: a server's job folder, swept when a killed server restarts)
    with work_folder("burn", Path(out).resolve().parent) as work:
        width, height = media.shown_size  # (drawn in square pixels: on an anamorphic picture the text would stretch)
        script = script or to_ass(cues, width, height, style=style, language=language, labels=labels)
        (work / "subs.ass").write_text(script, encoding="utf-8")
        if max_bytes is not None:  # the script counts in what the job may write
            if (size := (work / "subs.ass").stat().st_size) >= max_bytes:
                raise SubtitleError(
                    f"The subtitles to burn into {Path(out).name} would be over the {human_size(max(0, max_bytes))} "
                    "this server lets a job write: burn fewer cues, or without lit words"
                )
            max_bytes -= size
        _private_fonts(work)
        vf = picture_filters(media)
        preset = options.preset or ("veryfast" if options.preview_seconds else "ultrafast")
        audio = ["-c:a", "copy"] if _copies(media, BROWSER_AUDIO) else ["-c:a", "aac", "-b:a", "160k"]
        args = [*ffmpeg_input(video), *(["-t", f"{duration:.3f}"] if options.preview_seconds else []),
                "-map", "0:V:0", "-map", f"0:a:{media.audio_track}?", "-vf", vf, "-c:v", "libx264", "-threads", str(threads), "-preset", preset,
                "-crf", str(options.crf), "-maxrate", str(BURN_MAX_RATE), "-bufsize", str(2 * BURN_MAX_RATE), *audio,
                *(SDR_TAGS if media.hdr else []),
                "-movflags", "+faststart", "-sn", "-dn"]  # fmt: skip
        timeout = 60 + options.timeout_factor * duration
        return _write(
            out,
            args,
            work,
            duration=duration,
            timeout=timeout,
            progress=progress,
            env=_fontconfig_env(work),
            stop=stop,
            max_bytes=max_bytes,
            paced=True,
        )


def _private_fonts(work: Path) -> None:
    """work/fonts holds the shipped fonts, and work/fonts.conf is a fontconfig setup that knows only those: libass
    finds fallback glyphs through fontconfig, so with this it falls back among our fonts and never to the system's."""
    fonts = work / "fonts"
    fonts.mkdir()
    for path in font_files().values():
        os.symlink(path, fonts / path.name)
    (work / "fonts.conf").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
        f"<fontconfig><dir>{escape(str(fonts))}</dir><cachedir>{escape(str(work / 'fc-cache'))}</cachedir></fontconfig>\n",
        encoding="utf-8",
    )


def _fontconfig_env(work: Path) -> dict[str, str]:
    return {**os.environ, "FONTCONFIG_FILE": str(work / "fonts.conf")}


def _copies(media: MediaInfo, codecs: set[str]) -> bool:
    """Whether the audio is copied into a container that takes `codecs`: MP3 only at MPEG-1's rates."""
    return media.audio_codec in codecs and (media.audio_codec != "mp3" or media.sample_rate in MPEG1_RATES)


def can_mux_mp4(media: MediaInfo) -> bool:
    """Whether the video stream can be copied into an MP4 (audio that can't is re-encoded to AAC instead)."""
    return media.video_codec is None or media.video_codec in MP4_VIDEO


def mux_soft(
    video: Path,
    cues: Sequence[Cue],
    out: Path,
    *,
    language: str = "en",
    media: MediaInfo | None = None,
    stop: threading.Event | None = None,
    max_bytes: int | None = None,
    labels: Labels | str = Labels(),
    script: str | None = None,
) -> Path:
    """Add the cues as a subtitle track, copying audio and video as they are: `.mp4` gets mov_text, `.mkv` SRT, or
    with `script` (an ASS script: a style, words lit up, subtitles brought as ASS) that script, styled as it is.
    `media`: the video's probe, when the caller has it already. `max_bytes`: as for burn."""
    media = media or probe(video)
    codec = {".mp4": "mov_text", ".m4v": "mov_text", ".mov": "mov_text", ".mkv": "srt"}.get(out.suffix.lower())
    if codec is None:
        raise SubtitleError(f"Soft subtitles go into .mp4 or .mkv, not {out.suffix or 'a file without extension'}")
    with work_folder("mux", Path(out).resolve().parent) as work:
        if codec == "srt" and script is not None:
            codec, subs = "ass", "subs.ass"
            (work / subs).write_text(script, encoding="utf-8")
        else:
            subs = "subs.srt"
            (work / subs).write_text(to_srt(cues, media.duration, labels), encoding="utf-8")
        mp4 = codec == "mov_text"
        if mp4 and not can_mux_mp4(media):
            raise SubtitleError(f"{media.video_codec} video can't go into an MP4 without re-encoding: use .mkv")
        audio = "copy" if not mp4 or media.audio_codec is None or _copies(media, MP4_AUDIO) else "aac"
        args = [*ffmpeg_input(video), "-i", subs, "-map", "0:v?", "-map", "0:a?", "-map", "1:0",
                "-c:v", "copy", "-c:a", audio, "-c:s", codec,
                "-metadata:s:s:0", f"language={iso639_2(language, terminology=mp4)}",
                "-disposition:s:0", "default"]  # fmt: skip
        if mp4:
            args += ["-movflags", "+faststart"]
        timeout = 60 + 3 * (media.duration or 0.0)
        return _write(out, args, work, duration=media.duration or 0.0, timeout=timeout, stop=stop, max_bytes=max_bytes)


def picture_filters(media: MediaInfo) -> str:
    """The filter graph a burn draws the text with (`subs.ass`, on the picture's shown size): the picture made
    progressive, square-pixelled and SDR first, where it is not, so that the text is drawn on what a player shows; then
    at most MAX_PIXELS, in even sizes (x264 with yuv420p needs them)."""
    width, height = media.shown_size
    f = min(1.0, (MAX_PIXELS / (width * height)) ** 0.5)
    size = f"trunc(iw*{f:.6f}/2)*2:trunc(ih*{f:.6f}/2)*2"
    # (the text is drawn before the scaling, on the source's pixels; an HDR picture is scaled as it is tone-mapped:
    # the float maths costs per pixel)
    steps = ["ass=subs.ass:fontsdir=fonts", f"scale={size}", "format=yuv420p"]
    if media.hdr:
        w, h = size.split(":")
        steps = [TONE_MAP.format(w=w, h=h), "ass=subs.ass:fontsdir=fonts"]
    if media.pixel_aspect != 1:
        steps.insert(0, f"scale={width}:{height},setsar=1")
    if media.interlaced:  # (a frame of two fields from two instants: combs on anything that moves, once progressive)
        steps.insert(0, "bwdif=mode=send_frame:deint=interlaced")
    return ",".join(steps)


def preview_reencodes(media: MediaInfo) -> bool:
    """Whether `preview` re-encodes the picture (a codec browsers do not play) rather than copying it."""
    return media.has_video and media.video_codec not in BROWSER_VIDEO


def preview_suffix(media: MediaInfo) -> str:
    """The container of `preview`'s file: WebM for VP8/VP9, else MP4."""
    return BROWSER_VIDEO.get(media.video_codec or "", ".mp4") if media.has_video else ".mp4"


def preview(
    source: Path,
    out_stem: Path,
    media: MediaInfo,
    *,
    seconds: float,
    stop: threading.Event | None = None,
    threads: int = 0,
    max_bytes: int | None = None,
) -> Path:
    """A file a browser plays, for the page's preview, written by our ffmpeg under its whitelist and timeout: nothing
    from outside is handed to a player or to another program that might run its own ffmpeg on it. Video a browser
    plays is remuxed whole (its picture and audio copied; audio it can't play re-encoded); other video is re-encoded
    to H.264 for its first `seconds`; audio alone goes into an MP4. Returns `out_stem` + preview_suffix(media)."""
    out = Path(out_stem).with_name(Path(out_stem).name + preview_suffix(media))
    if preview_reencodes(media):
        return burn(source, [], out, options=BurnOptions(preview_seconds=seconds), media=media, stop=stop,
                    threads=threads, max_bytes=max_bytes)  # fmt: skip
    webm = out.suffix == ".webm"
    playable = WEBM_AUDIO if webm else BROWSER_AUDIO
    audio = ["-c:a", "copy"] if _copies(media, playable) else (
        ["-c:a", "libopus", "-b:a", "128k"] if webm else ["-c:a", "aac", "-b:a", str(AUDIO_RATE)])  # fmt: skip
    picture = ["-map", "0:V:0", "-c:v", "copy"] if media.has_video else ["-vn"]  # (V: never a cover picture)
    args = [*ffmpeg_input(source), *picture, "-map", f"0:a:{media.audio_track}?", *audio, "-sn", "-dn",
            *([] if webm else ["-movflags", "+faststart"])]  # fmt: skip
    with work_folder("preview", out.resolve().parent) as work:
        duration = media.duration or 0.0
        return _write(out, args, work, duration=duration, timeout=60 + 3 * duration, stop=stop, max_bytes=max_bytes)


def iso639_2(language: str, terminology: bool = False) -> str:
    """Whisper's language code -> the three-letter code containers carry: ISO 639-2/B for Matroska ("de" -> "ger"),
    ISO 639-2/T for MP4 (`terminology`: "de" -> "deu")."""
    import pycountry

    code = {"jw": "jv"}.get(language, language)  # whisper's old code for Javanese
    found = pycountry.languages.get(alpha_2=code) if len(code) == 2 else pycountry.languages.get(alpha_3=code)
    if found is None:
        return "und"
    return found.alpha_3 if terminology else getattr(found, "bibliographic", None) or found.alpha_3


def _write(
    out: Path,
    args: list[str],
    cwd: Path,
    *,
    duration: float,
    timeout: float,
    progress: Callable[[float], None] = lambda fraction: None,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
    max_bytes: int | None = None,
    paced: bool = False,
) -> Path:
    """Run ffmpeg writing to a temporary name beside `out`, then rename; kill its process group after `timeout` s
    (SubtitleError) or when `stop` is set (Cancelled). With `max_bytes`, ffmpeg stops writing past that size (-fs)
    and the file is refused (SubtitleError): what a job writes is bounded by what it really writes. `paced`: also
    stopped when it falls below MIN_SPEED (SubtitleError)."""
    out = Path(out).resolve()
    with atomic_path(out) as tmp:
        # (the temporary name ends in .tmp: ffmpeg is told the container, from the real name's extension)
        muxer = {".mkv": "matroska", ".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".webm": "webm"}.get(
            out.suffix.lower(), "mp4"
        )
        cap = [] if max_bytes is None else ["-fs", str(max(0, max_bytes))]
        cmd, bounds = ffmpeg_popen("-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-progress", "pipe:1",
                                   "-nostats", *args, *cap, "-f", muxer, str(tmp), memory=WRITE_MEMORY)  # fmt: skip
        with subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **bounds
        ) as proc:  # (closes the pipes on every path)
            try:
                stderr = _follow(proc, duration, progress, timeout, stop, paced=paced)
            finally:
                kill_group(proc)  # ffmpeg and anything it started, on every way out
        if proc.returncode != 0:
            if error := out_of_memory(stderr, f"Writing {out.name}", WRITE_MEMORY):
                raise error
            last = last_line(stderr, f"exit code {proc.returncode}")
            raise SubtitleError(f"ffmpeg could not write {out.name} ({last})")
        if max_bytes is not None and tmp.stat().st_size >= max_bytes:
            raise SubtitleError(
                f"{out.name} would be over the {human_size(max(0, max_bytes))} of video this server lets a job write:"
                " fewer or shorter files, or no burned-in or soft-subtitled video"
            )
    return out


def _follow(
    proc: subprocess.Popen,
    duration: float,
    progress: Callable[[float], None],
    timeout: float,
    stop: threading.Event | None = None,
    *,
    paced: bool = False,
) -> str:
    """Read ffmpeg's -progress lines until it exits; return its stderr. A watcher kills it after `timeout` s, when
    `stop` is set, or (`paced`) when it has made less than MIN_SPEED s of video a second, GRACE s in or later."""
    started = time.monotonic()
    made, stopped, slow, done = [0.0], threading.Event(), threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            elapsed = time.monotonic() - started
            if stop is not None and stop.is_set():
                stopped.set()
            if paced and elapsed >= GRACE and made[0] < min(duration or math.inf, MIN_SPEED * elapsed):
                slow.set()
            if stopped.is_set() or slow.is_set() or elapsed > timeout:
                kill_group(proc)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        for line in proc.stdout:
            if line.startswith("out_time_us=") and line.strip()[12:].isdigit():
                made[0] = int(line.strip()[12:]) / 1e6
                if duration > 0:
                    progress(min(made[0] / duration, 1.0))
        proc.wait()
    finally:
        done.set()
    reader.join()
    if stopped.is_set():
        raise Cancelled
    if slow.is_set():
        raise SubtitleError(
            f"Burning in was too slow ({made[0]:.1f} s of video in {time.monotonic() - started:.0f} s) and was stopped:"
            " the subtitles are too heavy to draw here; use soft subtitles, or a subtitle file with fewer effects"
        )
    if proc.returncode == -signal.SIGKILL:
        raise SubtitleError(f"ffmpeg took longer than {timeout:.0f} s and was stopped")
    return errors[0] if errors else ""
