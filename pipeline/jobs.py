"""Jobs: media files or links in, segments and subtitle files out. The CLI and the web app both call this.

`subtitle_file` does one local file. `run_job` does what a person asks for in the web app: several files and links,
checked against the limits before any work starts, with progress by stage (downloading, extracting audio,
preparing the model, transcribing with time left, writing) and every cue as soon as it is decoded.
"""

from __future__ import annotations

import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pipeline.download import download
from pipeline.errors import SubtitleError
from pipeline.media import Limits, MediaInfo, check_limits, hms, load_audio, require_audio
from pipeline.model import ModelCache, OVWhisper, resolve_precision
from pipeline.render import CJK_LANGUAGES, BurnOptions, burn, can_mux_mp4, mux_soft, to_ass
from pipeline.segment import CueRules, TimedWord
from pipeline.segment import segment as segment_words
from pipeline.subtitles import FORMATS, clean_cues, render
from pipeline.transcribe import Segment, TranscribeOptions, TranscriptionInfo, Word, check_options, transcribe

# Share of one input's progress bar given to each stage (the rest, up to 1, is writing the files).
_STAGES = {"download": 0.0, "audio": 0.15, "model": 0.2, "transcribe": 0.25, "write": 0.97}
# With a burned-in or soft-subtitled video to make, encoding takes the last part of each input's bar.
_STAGES_RENDERING = {"download": 0.0, "audio": 0.1, "model": 0.15, "transcribe": 0.2, "write": 0.7, "render": 0.72}


@dataclass(frozen=True)
class SubtitleResult:
    segments: tuple[Segment, ...]  # cleaned: ordered, non-overlapping, within the media
    info: TranscriptionInfo
    media: MediaInfo


def subtitle_file(
    path: Path,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
    rules: CueRules | None = CueRules(),
    audio: np.ndarray | None = None,
) -> SubtitleResult:
    """Transcribe one media file. `on_segment(segment, duration)` sees each segment as soon as it is decoded; the
    result's segments are cues cut by `rules` (None: whisper's segments as they are). `audio`: the file's audio
    when it was already decoded (load_audio), so ffmpeg can run while the model loads or another file is transcribed."""
    media = require_audio(Path(path))
    audio = load_audio(Path(path)) if audio is None else audio
    return _transcribe(audio, media, model, options, on_segment, progress, rules)


def _transcribe(
    audio: np.ndarray,
    media: MediaInfo,
    model: OVWhisper,
    options: TranscribeOptions,
    on_segment: Callable[[Segment, float], None] | None,
    progress: Callable[[float], None] | None,
    rules: CueRules | None = CueRules(),
) -> SubtitleResult:
    if rules is not None:  # cues are cut from timed words
        options = replace(options, word_timestamps=True)
    segments, info = transcribe(audio, model, options, progress)
    collected = []
    for segment in segments:
        collected.append(segment)
        if on_segment is not None:
            on_segment(segment, info.duration)
    if rules is not None:
        collected = to_cues(collected, rules, cjk=info.language in CJK_LANGUAGES)
    return SubtitleResult(tuple(clean_cues(collected, info.duration)), info, media)


def to_cues(segments: Sequence[Segment], rules: CueRules, cjk: bool) -> list[Segment]:
    """Whisper's segments re-cut into cues that keep the readability rules (pipeline.segment), from their words.
    A segment without word timings (rare: alignment found none) keeps its own timing and text."""
    out: list[Segment] = []
    pending: list[TimedWord] = []

    def flush() -> None:
        for cue in segment_words(pending, rules, cjk):
            words = tuple(Word(w.start, w.end, w.text, w.probability) for w in cue.words)
            out.append(Segment(cue.start, cue.end, cue.text, words=words))
        pending.clear()

    for seg in segments:
        if seg.words:
            pending.extend(TimedWord(w.word, w.start, w.end, w.probability) for w in seg.words)
        else:
            flush()
            out.append(seg)
    flush()
    return out


def write_outputs(result: SubtitleResult, formats: Iterable[str], out_dir: Path, stem: str) -> list[Path]:
    """Write `out_dir/stem.<fmt>` for each format, each to a temporary name first and renamed into place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise SubtitleError(f"Unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
        text = render(fmt, result.segments, result.info.language, result.info.duration)
        target = out_dir / f"{stem}.{fmt}"
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".{fmt}.tmp", dir=out_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written


@dataclass(frozen=True)
class JobOptions:
    model: str = "base"  # a name the model cache knows
    precision: str = "auto"  # auto, f32, bf16, int8 (pipeline.cpu)
    transcribe: TranscribeOptions = field(default_factory=TranscribeOptions)
    formats: tuple[str, ...] = ("srt",)  # which subtitle files to write, from FORMATS
    limits: Limits = Limits()
    allow_private_urls: bool = False  # links to localhost / LAN addresses (safe only when the server is private)
    burn: BurnOptions | None = None  # also write <stem>.subtitled.mp4 with the cues burned in (inputs with a picture)
    soft: bool = False  # also write <stem>.subs.mkv and <stem>.subs.mp4 with a subtitle track, streams copied
    rules: CueRules | None = field(default_factory=CueRules)  # readability rules for the cues; None: whisper's segments

    def __post_init__(self):
        resolve_precision(self.precision)  # an unknown precision, or bf16 on a CPU without it, fails here


@dataclass(frozen=True)
class Progress:
    fraction: float | None  # of the whole job, 0..1; None when not known (an indeterminate bar)
    message: str  # "Transcribing talk.mp4: 42% of the audio, about 1:10 left"


@dataclass(frozen=True)
class Source:
    name: str  # what the person gave: a file name or a link
    title: str  # the page title for links, the file name for uploads
    media: Path  # the local media file (the upload, or what was downloaded)
    duration: float | None


@dataclass(frozen=True)
class FileResult:
    source: Source
    result: SubtitleResult
    outputs: tuple[Path, ...]  # one per format, then the videos made, in out_dir
    burned: Path | None = None  # the video with the cues burned in, when asked for


@dataclass(frozen=True)
class JobResult:
    files: tuple[FileResult, ...]
    downloads: tuple[Path, ...]  # what to hand to the person: the subtitle files, or one zip of all for several inputs


def run_job(
    inputs: Sequence[Path | str],
    out_dir: Path,
    models: ModelCache,
    options: JobOptions = JobOptions(),
    on_progress: Callable[[Progress], None] = lambda p: None,
    on_source: Callable[[int, Source], None] = lambda i, s: None,
    on_segment: Callable[[int, Segment], None] = lambda i, s: None,
) -> JobResult:
    """Subtitle every input (a `Path` is a local file, a `str` a link) into `out_dir`.

    `models` compiles `options.model` on first use and shares it with other jobs. Local files are all checked
    (readable, has audio, within the limits) before any is transcribed; links are checked before their download.
    Callbacks run in this thread; an exception raised by one (a cancelled job) stops the job.
    """
    if not inputs:
        raise SubtitleError("Upload a video or audio file, or paste a link, first")
    if len(inputs) > options.limits.max_files:
        raise SubtitleError(
            f"{len(inputs)} files is too many for one job; this server takes up to {options.limits.max_files}"
        )
    formats = tuple(dict.fromkeys(options.formats))
    if not formats or any(f not in FORMATS for f in formats):
        raise SubtitleError(f"Choose at least one output format from {', '.join(FORMATS)}")
    check_options(options.transcribe)  # a wrong language or task fails now, not after a download
    if options.burn is not None:
        to_ass([], 640, 360, options.burn.style)  # a bad colour or position fails now, not after transcribing
        if options.burn.preview_seconds is not None and options.burn.preview_seconds <= 0:
            raise SubtitleError("The preview length must be a positive number of seconds")
    if "json" in formats and not options.transcribe.word_timestamps:  # JSON carries every word's timing
        options = replace(options, transcribe=replace(options.transcribe, word_timestamps=True))
    checked = {i: _check_file(Path(x), options.limits) for i, x in enumerate(inputs) if isinstance(x, Path)}
    out_dir.mkdir(parents=True, exist_ok=True)
    stems: set[str] = set()
    results = []
    for i, item in enumerate(inputs):

        def report(stage: str, within: float | None, message: str, i=i) -> None:
            stages = _STAGES_RENDERING if options.burn or options.soft else _STAGES
            start = stages[stage]
            end = min([v for v in stages.values() if v > start], default=1.0)
            local = start + (end - start) * (within or 0.0)
            on_progress(Progress((i + local) / len(inputs), message))

        if not isinstance(item, Path):
            got = download(
                str(item),
                out_dir / f"download-{i}",
                options.limits,
                lambda f, m: report("download", f, m),
                options.allow_private_urls,
            )
            media = _check_file(got.path, options.limits)
            source = Source(str(item), got.title, got.path, media.duration or got.duration)
        else:
            media = checked[i]
            source = Source(Path(item).name, Path(item).name, Path(item), media.duration)
        on_source(i, source)
        report("audio", None, f"Extracting the audio of {source.title}")
        with ThreadPoolExecutor(1) as pool:  # ffmpeg decodes the audio while the model loads
            audio = pool.submit(load_audio, source.media)
            if not models.is_loaded(options.model, options.precision):
                report("model", None, "Preparing the model (first time only)")
            model = models.get(options.model, lambda message: report("model", None, message), options.precision)
            audio = audio.result()
        started = time.monotonic()

        def transcribing(done: float, title=source.title, started=started) -> None:
            message = f"Transcribing {title}: {100 * done:.0f}% of the audio"
            elapsed = time.monotonic() - started
            if done >= 0.02 and elapsed >= 2:
                message += f", about {hms(elapsed * (1 - done) / done)} left"
            report("transcribe", done, message)

        transcribing(0.0)
        result = _transcribe(
            audio, media, model, options.transcribe, lambda s, d, i=i: on_segment(i, s), transcribing, options.rules
        )
        report("write", None, f"Writing the subtitles of {source.title}")
        stem = _unique_stem(Path(source.title).stem if isinstance(item, Path) else source.title, stems)
        outputs = write_outputs(result, formats, out_dir, stem)
        burned = None
        if options.burn and media.has_video:
            report("render", 0.0, f"Burning the subtitles into {source.title}")
            burned = burn(
                source.media,
                result.segments,
                out_dir / f"{stem}.subtitled.mp4",
                result.info.language,
                options.burn,
                lambda f, title=source.title: report(
                    "render", f, f"Burning the subtitles into {title}: {100 * f:.0f}%"
                ),
                result.info.duration,
            )
            outputs.append(burned)
        if options.soft:
            report("render", None, f"Adding a subtitle track to {source.title}")
            for suffix in (".subs.mkv", ".subs.mp4") if can_mux_mp4(media) else (".subs.mkv",):
                outputs.append(
                    mux_soft(source.media, result.segments, out_dir / f"{stem}{suffix}", result.info.language)
                )
        results.append(FileResult(source, result, tuple(outputs), burned))
    downloads = results[0].outputs if len(results) == 1 else (_zip([p for r in results for p in r.outputs], out_dir),)
    on_progress(Progress(1.0, "Done"))
    return JobResult(tuple(results), downloads)


def _check_file(path: Path, limits: Limits) -> MediaInfo:
    info = require_audio(path)
    check_limits(path.name, limits, size=path.stat().st_size, duration=info.duration)
    return info


def _unique_stem(title: str, taken: set[str]) -> str:
    """A file name stem from a title: no path separators or control characters, short, unique within the job."""
    stem = (
        "".join(c if c.isprintable() and c not in '/\\:*?"<>|' else "_" for c in title).strip(" .")[:80] or "subtitles"
    )
    unique, n = stem, 2
    while unique.lower() in taken:
        unique, n = f"{stem} ({n})", n + 1
    taken.add(unique.lower())
    return unique


def _zip(files: Sequence[Path], out_dir: Path) -> Path:
    target = out_dir / "subtitles.zip"
    fd, tmp = tempfile.mkstemp(prefix=".subtitles.", suffix=".zip.tmp", dir=out_dir)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for f in files:
                z.write(f, f.name)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
