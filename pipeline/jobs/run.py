"""Jobs: one path from what a person asks for to the files they get, for the CLI and the web app alike.

A `JobSpec` says what to do (inputs, model, transcription options, cue rules, formats, burn or soft subtitles); a
`Policy` says what the server allows (limits, private links). `run_job(spec, out_dir, models, policy)` is a generator
of typed events: `Progress`, `SourceFound`, `CueDecoded`, `FileWritten`, `FileFailed`; its last item is the
`JobResult`. The CLI prints the events; the web app shows them. The work runs in a thread of its own, so a consumer
that stops reading (a closed page, Ctrl-C) stops the job at its next event; closing the generator returns once the
work has stopped.

An input that fails (unreadable, no audio, over a limit, a dead link) fails alone: a `FileFailed` event, none of its
files left behind, and the other inputs go on. Options are checked where they are built (each dataclass checks
itself), so a bad option fails before any work. `pipeline.jobs.plan` checks the inputs and the disk budget before the
work; `pipeline.jobs.outputs` names and writes the files.
"""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pipeline.asr.model import ModelCache, ModelOptions, OVWhisper
from pipeline.asr.results import Segment, TranscriptionInfo, Word
from pipeline.asr.transcribe import TranscribeOptions, transcribe
from pipeline.errors import Cancelled, OptionError, SubtitleError
from pipeline.jobs.outputs import title_stem, unique_stem, write_outputs
from pipeline.jobs.plan import check_disk, check_job, plan_job, video_room
from pipeline.media.audio import SAMPLE_RATE, Limits, MediaInfo, check_limits, hms, load_audio, require_audio
from pipeline.media.download import download
from pipeline.media.video import PREVIEW_SECONDS, BurnOptions, burn, can_mux_mp4, mux_soft, preview
from pipeline.speakers.turns import Turn, TurnOptions, speaker_encoder, speaker_turns, speakers_of
from pipeline.subtitles.ass import DEFAULT_SIZE, Style, ass_file, read_ass, style_of
from pipeline.subtitles.cues import CJK_LANGUAGES, Cue, CueRules, in_time_order
from pipeline.subtitles.cues import segment as segment_words
from pipeline.subtitles.formats import FORMATS, Labels, clean_cues, is_ass, parse, read_subtitles
from pipeline.timings import stage, timed

# Share of one input's progress bar given to each stage (the rest, up to 1, is writing the files).
# Seconds of work per second of audio, before this process has timed a model (beam 5, 2 cores, from the speed
# benchmark: base 22 s for 381 s); each transcription then records its own rate (_RATES) for the next estimates.
_PRIOR_RATE = {"tiny": 0.03, "base": 0.06, "small": 0.2, "medium": 0.6, "turbo": 0.5, "large": 1.2}
_RATES: dict[tuple, float] = {}
_STAGES = {"download": 0.0, "audio": 0.15, "model": 0.2, "transcribe": 0.25, "write": 0.97, "render": 0.98}
# With a burned-in or soft-subtitled video to make, encoding takes the last part of each input's bar (a preview,
# remuxed, the last 2 %).
_STAGES_RENDERING = {"download": 0.0, "audio": 0.1, "model": 0.15, "transcribe": 0.2, "write": 0.7, "render": 0.72}


@dataclass(frozen=True)
class JobSpec:
    inputs: tuple[Path | str, ...]  # local files (Path) and links (str)
    model: ModelOptions = ModelOptions()
    transcribe: TranscribeOptions = TranscribeOptions()
    rules: CueRules | None = CueRules()  # readability rules for the cues; None: whisper's segments as they are
    formats: tuple[str, ...] = ("srt",)  # subtitle files to write, from FORMATS
    burn: BurnOptions | None = None  # also <stem>.subtitled.mp4 with the cues burned in (inputs with a picture)
    soft: bool = False  # also <stem>.subs.mkv (and .subs.mp4 when the codecs allow) with a subtitle track
    subtitles: Path | None = None  # an SRT, WebVTT or ASS file: the cues, instead of transcribing (one input)
    # also <stem>.preview.mp4 (or .webm) that a browser plays, made by our ffmpeg (render.preview): when no video is
    # burned in, the page plays it with the subtitles as a track
    preview: bool = False
    overwrite: bool = True  # False: a local input whose outputs are all there, newer than it, is skipped (a resume)
    speakers: TurnOptions | None = None  # find who speaks when, and cut cues where the speaker changes; None: off
    labels: str = "dashes"  # how a change of speaker shows in the cues' text (pipeline.subtitles.formats.LABELS)
    # the look of the subtitles: of .ass files, and of the burned-in video (burn.style is made the same); with
    # style.highlight_words, the words light up as they are spoken (.ass karaoke, burn-in, WebVTT word times)
    style: Style = Style()

    def __post_init__(self):
        Labels(self.labels)  # (checks it)
        if self.burn is not None and self.style == Style():
            object.__setattr__(self, "style", self.burn.style)
        elif self.burn is not None and self.burn.style != self.style:
            object.__setattr__(self, "burn", replace(self.burn, style=self.style))
        if self.style.highlight_words and not self.transcribe.word_timestamps:  # (the words' own times)
            object.__setattr__(self, "transcribe", replace(self.transcribe, word_timestamps=True))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        if not self.inputs:
            raise OptionError("inputs", "Upload a video or audio file, or paste a link, first")
        formats = tuple(dict.fromkeys(f.strip().lower() for f in self.formats if f.strip()))
        unknown = [f for f in formats if f not in FORMATS]
        if not formats or unknown:
            raise OptionError("formats", f"Choose at least one output format from {', '.join(FORMATS)}")
        object.__setattr__(self, "formats", formats)
        if "json" in formats and not self.transcribe.word_timestamps:  # JSON carries every word's timing
            object.__setattr__(self, "transcribe", replace(self.transcribe, word_timestamps=True))
        if self.subtitles is not None and len(self.inputs) != 1:
            raise OptionError("subtitles", "Existing subtitles go with exactly one video")

    @property
    def shown_labels(self) -> Labels:
        """How the files show speakers: the labels asked for, dialogue cues within the job's cue rules."""
        return Labels(self.labels, self.rules or CueRules())


@dataclass(frozen=True)
class Policy:
    """What the server allows the people who use it. The CLI trusts its user: no limits, links anywhere."""

    limits: Limits | None = None  # None: no limits
    allow_private_urls: bool = True  # links to localhost / LAN addresses (safe only when the server is private)
    models: tuple[str, ...] | None = None  # the models a job may ask for; None: any
    extractors: tuple[str, ...] | None = (
        None  # yt-dlp extractors links may use (pipeline.media.download.SITES); None: any
    )
    threads: int = 0  # CPU threads one job's video encoding may use (a server's cores / its concurrency); 0: all
    # copies of each output that the server keeps beside the job's own (the web app: 1, Gradio's cache): they count
    # in the job's disk budget too
    kept_copies: int = 0
    # Jobs that may work at once, shared by every job of a server. A job holds its slot until its work has really
    # stopped (a cancelled job's ffmpeg killed, its window finished), not until its consumer went away.
    slots: threading.Semaphore | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Source:
    name: str  # what the person gave: a file name or a link
    title: str  # the page title for links, the file name for files
    media: Path  # the local media file (the input, or what was downloaded)
    info: MediaInfo

    @property
    def duration(self) -> float | None:
        return self.info.duration


@dataclass(frozen=True)
class SubtitleResult:
    cues: tuple[Cue, ...]  # cleaned: ordered, non-overlapping, within the media
    info: TranscriptionInfo
    media: MediaInfo


@dataclass(frozen=True)
class FileResult:
    source: Source
    result: SubtitleResult
    outputs: tuple[Path, ...]  # one per format, then the videos made, in out_dir
    burned: Path | None = None  # the video with the cues burned in, when asked for
    seconds: float = 0.0  # wall time this input took
    preview: Path | None = None  # a video a browser plays (JobSpec.preview), in out_dir, not among the outputs


@dataclass(frozen=True)
class Progress:
    fraction: float | None  # of the whole job, 0..1; None when not known (an indeterminate bar)
    message: str  # the stage: "Transcribing talk.mp4"
    left: float | None = None  # seconds the job is expected to take still; None: no estimate yet

    def line(self) -> str:
        """One line for a person: "Transcribing talk.mp4 · 42% · about 1:10 left"."""
        parts = [self.message]
        if self.fraction is not None:
            parts.append(f"{100 * self.fraction:.0f}%")
        if self.left is not None:
            parts.append(f"about {hms(max(self.left, 1.0))} left")
        return " · ".join(parts)


@dataclass(frozen=True)
class SourceFound:
    index: int  # of the input in spec.inputs
    source: Source


@dataclass(frozen=True)
class CueDecoded:
    index: int
    cue: Cue  # a segment as decoded (the final cues, cut by the rules, are in the FileResult)
    duration: float  # of the input's audio


@dataclass(frozen=True)
class FileWritten:
    index: int
    path: Path


@dataclass(frozen=True)
class FileFailed:
    index: int
    name: str  # the input as given
    message: str  # one line that says what to do


@dataclass(frozen=True)
class FileDone:
    index: int
    file: FileResult  # every file of the input is written


@dataclass(frozen=True)
class FileSkipped:
    index: int
    name: str  # the input as given
    outputs: tuple[Path, ...]  # its outputs, complete from an earlier run


@dataclass(frozen=True)
class JobResult:
    files: tuple[FileResult, ...]  # the inputs that succeeded, in input order
    failed: tuple[FileFailed, ...] = ()
    skipped: tuple[FileSkipped, ...] = ()


Event = Progress | SourceFound | CueDecoded | FileWritten | FileDone | FileFailed | FileSkipped


def run_job(
    spec: JobSpec,
    out_dir: Path,
    models: ModelCache,
    policy: Policy = Policy(),
    work_dir: Path | None = None,
    heartbeat: float | None = None,
) -> Iterator[Event | JobResult]:
    """Subtitle every input of `spec` into `out_dir`: the job's events, then its JobResult.

    `models` compiles the model on first use and shares it with other jobs. `work_dir` holds downloads (default:
    out_dir). With `heartbeat`, the last Progress is repeated when nothing else happened for that many seconds (a web
    page can only notice a closed tab while it is handed something). Job-wide problems (too many inputs, a model
    that is not offered or does not exist) raise SubtitleError before any event.
    """
    check_job(spec, policy)

    def work(emit: Callable[[Event], None], stop: threading.Event) -> JobResult:
        return _Job(spec, Path(out_dir), Path(work_dir or out_dir), models, policy, emit, stop).run()

    yield from stream(work, policy, heartbeat)


def stream(
    work: Callable[[Callable[[Event], None], threading.Event], JobResult],
    policy: Policy = Policy(),
    heartbeat: float | None = None,
) -> Iterator[Event | JobResult]:
    """`work(emit, stop)` in a thread of its own, once it holds one of the policy's slots: the events it emits, then
    the JobResult it returns (or what it raises). Closing the generator sets `stop` (emit raises Cancelled from then
    on) and returns once the work has stopped. Both executors run their jobs through this."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def emit(event: Event) -> None:
        if stop.is_set():
            raise Cancelled
        events.put(event)

    def worker() -> None:
        slot = False
        try:
            if policy.slots is not None and not (slot := policy.slots.acquire(blocking=False)):
                emit(Progress(0.0, "Waiting for a free slot on the server"))
                while not (slot := policy.slots.acquire(timeout=0.2)):
                    if stop.is_set():
                        raise Cancelled
            threading.current_thread().name = "subtitle-job (working)"  # (how a test counts the work going on)
            events.put(work(emit, stop))
        except BaseException as e:  # handed to the consumer's thread, which raises it there
            events.put(_Raised(e))
        finally:
            if slot:
                policy.slots.release()

    thread = threading.Thread(target=worker, name="subtitle-job", daemon=True)
    thread.start()
    last = Progress(0.0, "Starting")
    try:
        while True:
            try:
                event = events.get(timeout=heartbeat)
            except queue.Empty:
                yield last
                continue
            if isinstance(event, _Raised):
                raise event.error
            if isinstance(event, Progress):
                last = event
            yield event
            if isinstance(event, JobResult):
                return
    finally:
        stop.set()
        thread.join()  # a stopped job has stopped working (at its next event: a window, a download chunk, ...)


@dataclass(frozen=True)
class _Raised:
    error: BaseException


class _Job:
    def __init__(self, spec, out_dir: Path, work_dir: Path, models: ModelCache, policy: Policy, emit, stop=None):
        self.spec, self.out_dir, self.work_dir, self.models, self.policy = spec, out_dir, work_dir, models, policy
        self.emit: Callable[[Event], None] = emit
        self.stop: threading.Event = stop or threading.Event()  # set: every ffmpeg of the job is killed at once
        self.stems: set[str] = set()
        self.audio: dict[int, Future] = {}
        self.durations: dict[int, float] = {}  # of the inputs whose length is known
        self.pending: list[int] = []  # inputs still to be transcribed, in order
        self.done = 0.0  # of the current input's audio
        self.spent = 0  # bytes of video this job has written (each counted 1 + policy.kept_copies times)
        size = next((k for k in _PRIOR_RATE if Path(spec.model.model).name.startswith(k)), None)
        self.rate_key = (spec.model.model, spec.model.precision, spec.transcribe.beam_size, spec.transcribe.batch_size)
        self.rate = _RATES.get(self.rate_key, _PRIOR_RATE.get(size, 0.2))  # seconds of work per second of audio
        self.script: str | None = None  # an ASS file brought as the cues: burned (and muxed) as it is

    def run(self) -> JobResult:
        spec = self.spec
        self.out_dir.mkdir(parents=True, exist_ok=True)
        plan = plan_job(spec, self.out_dir, self.policy, self.stems, self.stop)
        failed = [self._failed(i, SubtitleError(message)) for i, message in plan.failed]
        for s in plan.skipped:
            self.emit(s)
        cues = None
        if spec.subtitles is not None:
            text = read_subtitles(Path(spec.subtitles))
            if is_ass(text):  # burned in as it is, its own styles; its Default style is the look of our .ass
                cues, self.script = read_ass(text, Path(spec.subtitles).name)
                if spec.style in (Style(), Style(highlight_words=True)):
                    look = style_of(self.script)  # (karaoke in it: lit words in ours too)
                    look = replace(look, highlight_words=look.highlight_words or spec.style.highlight_words)
                    self.spec = spec = replace(spec, style=look)
            else:
                cues = parse(text)
        files: list[FileResult] = []
        checked, todo = plan.checked, list(plan.todo)
        self.durations = {i: m.duration for i, m in checked.items() if m.duration}
        self.pending = list(todo) if cues is None else []
        with ThreadPoolExecutor(1) as self.pool:  # ffmpeg decodes the next file's audio during the current one's work
            for k, i in enumerate(todo):
                written: list[Path] = []
                try:
                    files.append(self._one(i, checked.get(i), cues, todo[k + 1 :], written))
                    self.emit(FileDone(i, files[-1]))
                except SubtitleError as e:
                    if i in self.pending:
                        self.pending.remove(i)
                    for path in written:  # an input that fails leaves none of its files
                        path.unlink(missing_ok=True)
                    shutil.rmtree(self.work_dir / f"download-{i}", ignore_errors=True)  # (nor its download)
                    failed.append(self._failed(i, e))
        return JobResult(tuple(files), tuple(sorted(failed, key=lambda f: f.index)), plan.skipped)

    def _failed(self, i: int, error: SubtitleError) -> FileFailed:
        item = self.spec.inputs[i]
        event = FileFailed(i, item.name if isinstance(item, Path) else str(item), str(error))
        self.emit(event)
        return event

    def _report(self, i: int, stage: str, within: float | None, message: str) -> None:
        spec = self.spec
        stages = _STAGES_RENDERING if spec.burn or spec.soft else _STAGES
        start = stages[stage]
        end = min([v for v in stages.values() if v > start], default=1.0)
        fraction = (i + start + (end - start) * (within or 0.0)) / len(spec.inputs)
        self.emit(Progress(fraction, message, self._left(i)))

    def _left(self, i: int) -> float | None:
        """Seconds of transcription still to come: the audio not yet decoded times the rate (measured on this input
        once it has run a little, else the last job's with this model, else a prior). None: nothing known yet."""
        if not any(j in self.durations for j in self.pending):
            return None
        audio = sum(self.durations.get(j, 0.0) * (1 - self.done if j == i else 1) for j in self.pending)
        return audio * self.rate  # (0 at the end of the last window: "about 0:01 left", until the stage changes)

    def _load_audio(self, i: int, media: Path) -> Future:
        if i not in self.audio:
            self.audio[i] = self.pool.submit(load_audio, media, SAMPLE_RATE, self.policy.limits, self.stop)
        return self.audio[i]

    def _one(self, i: int, media: MediaInfo | None, cues, later: list[int], written: list[Path]) -> FileResult:
        spec, policy = self.spec, self.policy
        started = time.monotonic()
        item = spec.inputs[i]
        if isinstance(item, Path):
            source = Source(item.name, item.name, item, media)
        else:
            got = download(
                item,
                self.work_dir / f"download-{i}",
                policy.limits or _NO_LIMITS,
                lambda f, m: self._report(i, "download", f, m),
                policy.allow_private_urls,
                policy.extractors,
            )
            media = require_audio(got.path, self.stop)
            if media.duration is None and got.duration:  # (the site said; decoding stops at the limit anyway)
                media = replace(media, duration=got.duration)
            size = got.path.stat().st_size
            if policy.limits is not None:
                check_limits(got.title, policy.limits, size=size, duration=media.duration, known=True)
            check_disk(spec, [(size, media)], self.out_dir, policy, self.spent)  # (its size is known only now)
            source = Source(item, got.title, got.path, media)
        self.emit(SourceFound(i, source))
        if cues is None:
            result = self._transcribe(i, source, later)
        else:
            duration = media.duration or max((c.end for c in cues), default=0.0)
            info = TranscriptionInfo(spec.transcribe.language or "und", 1.0, duration, spec.transcribe.task)
            result = SubtitleResult(tuple(clean_cues(cues, duration)), info, media)
        self._report(i, "write", None, f"Writing the subtitles of {source.title}")
        # a file's own name is kept as it is (it is a name on this file system already); a page title is made one
        stem = unique_stem(Path(source.title).stem if isinstance(item, Path) else title_stem(source.title), self.stems)
        outputs = []
        labels = spec.shown_labels
        for path in write_outputs(result, spec.formats, self.out_dir, stem, labels, spec.style):
            written.append(path)
            outputs.append(path)
            self.emit(FileWritten(i, path))
        burned = None
        if spec.burn and not media.has_video:
            self._report(i, "render", None, f"{source.title} has no picture: its subtitles are not burned in")
        if spec.burn and media.has_video:
            self._report(i, "render", 0.0, f"Burning the subtitles into {source.title}")
            burned = burn(
                source.media,
                result.cues,
                self.out_dir / f"{stem}.subtitled.mp4",
                result.info.language,
                spec.burn,
                lambda f: self._report(i, "render", f, f"Burning the subtitles into {source.title}"),
                result.info.duration,
                media,
                self.stop,
                self.policy.threads,
                video_room(self.out_dir, self.policy, self.spent),
                labels,
                self.script,
            )
            self._spend(burned, written)
            outputs.append(burned)
            self.emit(FileWritten(i, burned))
        if spec.soft:
            self._report(i, "render", None, f"Adding a subtitle track to {source.title}")
            styled = self.script  # (a style of its own: the MKV's track is ASS, styled; SRT otherwise)
            if styled is None and spec.style != Style():
                size = (media.width, media.height) if media.width and media.height else DEFAULT_SIZE
                styled = ass_file(result.cues, *size, spec.style, result.info.language, labels)
            for suffix in (".subs.mkv", ".subs.mp4") if can_mux_mp4(media) else (".subs.mkv",):
                path = mux_soft(source.media, result.cues, self.out_dir / f"{stem}{suffix}", result.info.language,
                                media, self.stop, video_room(self.out_dir, self.policy, self.spent),
                                labels, styled)  # fmt: skip
                self._spend(path, written)
                outputs.append(path)
                self.emit(FileWritten(i, path))
        shown = None
        if spec.preview and burned is None:
            self._report(i, "render", None, f"Making the preview of {source.title}")
            shown = preview(source.media, self.out_dir / f"{stem}.preview", media, PREVIEW_SECONDS, self.stop,
                            self.policy.threads, video_room(self.out_dir, self.policy, self.spent))  # fmt: skip
            self._spend(shown, written)
        return FileResult(source, result, tuple(outputs), burned, time.monotonic() - started, shown)

    def _spend(self, path: Path, written: list[Path]) -> None:
        written.append(path)
        self.spent += path.stat().st_size

    def _transcribe(self, i: int, source: Source, later: list[int]) -> SubtitleResult:
        spec = self.spec
        self._report(i, "audio", None, f"Extracting the audio of {source.title}")
        audio = self._load_audio(i, source.media)  # ffmpeg decodes the audio while the model loads
        if not self.models.is_loaded(spec.model.model, spec.model.precision):
            self._report(i, "model", None, "Preparing the model (first time only)")
        model = self.models.get(  # (a Cancel returns at once; the load goes on, once, for the next job)
            spec.model.model, lambda message: self._report(i, "model", None, message), spec.model.precision, self.stop
        )
        audio = audio.result()
        self.audio.pop(i, None)
        following = next((j for j in later if isinstance(spec.inputs[j], Path)), None)
        if following is not None:
            self._load_audio(following, spec.inputs[following])
        started = time.monotonic()

        duration = len(audio) / SAMPLE_RATE
        self.durations[i] = duration

        def transcribing(done: float) -> None:
            elapsed = time.monotonic() - started
            self.done = done
            if done >= 0.02 and elapsed >= 2:
                self.rate = elapsed / (done * duration)
            turns = spec.speakers is not None and done >= 1.0  # (speaker turns come after the last window)
            self._report(
                i, "transcribe", done, f"{'Finding who speaks in' if turns else 'Transcribing'} {source.title}"
            )

        transcribing(0.0)
        result = subtitle_audio(
            audio,
            model,
            spec.transcribe,
            spec.rules,
            lambda s, duration: self.emit(CueDecoded(i, Cue(s.start, s.end, s.text, s.words), duration)),
            transcribing,
            source.info,
            spec.speakers,
        )
        if duration >= 10:
            _RATES[self.rate_key] = (time.monotonic() - started) / duration
        self.pending.remove(i)
        self.done = 0.0
        return result


_NO_LIMITS = Limits(max_bytes=1 << 62, max_duration=float("inf"), max_files=1 << 30)


def subtitle_audio(
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    rules: CueRules | None = CueRules(),
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
    media: MediaInfo | None = None,
    speakers: TurnOptions | None = None,
) -> SubtitleResult:
    """The cues of 16 kHz mono audio: whisper's segments, re-cut by `rules` (None: as whisper gives them) and
    cleaned. `on_segment(segment, duration)` sees each segment as soon as it is decoded. With `speakers`, each word
    and cue carries its speaker, and cues are cut where the speaker changes (pipeline/speakers/turns.py)."""
    if rules is not None:  # cues are cut from timed words
        options = replace(options, word_timestamps=True)
    segments, info = transcribe(audio, model, options, progress)
    turns: Future | None = None
    stop = threading.Event()  # set when the decoding fails or is cancelled: the turns are not finished for nothing
    if speakers is not None:  # found while whisper decodes: its decoder leaves part of the cores idle
        regions = info.speech if info.speech is not None else ((0.0, info.duration),)
        finder = ThreadPoolExecutor(1, thread_name_prefix="speaker-turns")
        turns = finder.submit(_turns_beside, audio, regions, model.threads, speakers, stop)
        finder.shutdown(wait=False)  # (the thread ends with its work)
    collected = []
    try:
        for segment in segments:
            collected.append(segment)
            if on_segment is not None:
                on_segment(segment, info.duration)
    except BaseException:
        stop.set()
        raise
    if turns is not None:
        if progress is not None:
            progress(1.0)
        with stage("speakers"):  # (what is left of them when the decoding is done)
            collected = with_speakers(collected, turns.result())
    if rules is not None:
        cues = to_cues(collected, rules, cjk=info.language in CJK_LANGUAGES)
    else:
        cues = [Cue(s.start, s.end, s.text, s.words, s.speaker) for s in collected]
    media = media or MediaInfo(info.duration, True, False)
    return SubtitleResult(tuple(clean_cues(cues, info.duration)), info, media)


def subtitle_file(
    path: Path,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
    rules: CueRules | None = CueRules(),
    speakers: TurnOptions | None = None,
) -> SubtitleResult:
    """subtitle_audio for one local media file."""
    media = require_audio(Path(path))
    return subtitle_audio(load_audio(Path(path)), model, options, rules, on_segment, progress, media, speakers)


@timed("speakers beside decoding")
def _turns_beside(audio: np.ndarray, regions, threads: int, speakers: TurnOptions, stop: threading.Event) -> list[Turn]:
    """speaker_turns on a thread of its own, the encoder loaded there too (its time shows beside the decoding's);
    it gives up between two encoder calls once `stop` is set."""
    return speaker_turns(audio, regions, speaker_encoder(threads), speakers, stop)


def with_speakers(segments: Sequence[Segment], turns: Sequence[Turn]) -> list[Segment]:
    """The segments with each word's speaker, and each segment's (the one that says most of it)."""
    words = [(w.start, w.end) for seg in segments for w in seg.words or ()]
    names = speakers_of(turns, words + [(seg.start, seg.end) for seg in segments])  # (one search of the turns)
    of_words, out = iter(names[: len(words)]), []
    for seg, name in zip(segments, names[len(words) :]):
        said = tuple(replace(w, speaker=next(of_words)) for w in seg.words) if seg.words else seg.words
        out.append(replace(seg, words=said, speaker=name))
    return out


@timed("cues")
def to_cues(segments: Sequence[Segment], rules: CueRules, cjk: bool) -> list[Cue]:
    """Whisper's segments re-cut into cues that keep the readability rules (pipeline.subtitles.cues), from their words.
    A segment without word timings (rare: alignment found none) keeps its own timing and text."""
    out: list[Cue] = []
    pending: list[tuple[Word, ...]] = []

    def flush() -> None:
        out.extend(segment_words(in_time_order(pending), rules, cjk))
        pending.clear()

    for seg in segments:
        if seg.words:
            pending.append(seg.words)
        else:
            flush()
            out.append(Cue(seg.start, seg.end, seg.text, seg.words, seg.speaker))
    flush()
    return out


__all__ = [
    "Cancelled",
    "CueDecoded",
    "Event",
    "FileDone",
    "FileFailed",
    "FileSkipped",
    "FileResult",
    "FileWritten",
    "JobResult",
    "JobSpec",
    "Policy",
    "Progress",
    "Source",
    "SourceFound",
    "SubtitleResult",
    "run_job",
    "stream",
    "subtitle_audio",
    "subtitle_file",
    "to_cues",
]
