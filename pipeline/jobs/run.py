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

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from pipeline.asr.cache import ModelCache
from pipeline.asr.results import TranscriptionInfo
from pipeline.errors import SubtitleError
from pipeline.jobs.estimate import Countdown, Rates, time_left
from pipeline.jobs.outputs import title_stem, unique_stem, write_outputs
from pipeline.jobs.plan import check_disk, check_job, input_name, start_job, video_room
from pipeline.jobs.spec import (
    CueDecoded,
    Event,
    FileDone,
    FileFailed,
    FileResult,
    FileWritten,
    JobResult,
    JobSpec,
    Policy,
    Progress,
    Source,
    SourceFound,
    SubtitleResult,
    SubtitleText,
)
from pipeline.jobs.stream import stream
from pipeline.media.audio import SAMPLE_RATE, Limits, MediaInfo, check_limits, hms, load_audio, require_audio
from pipeline.media.download import download
from pipeline.media.video import PREVIEW_SECONDS, burn, can_mux_mp4, mux_soft, preview
from pipeline.subtitles.ass import DEFAULT_SIZE, Style, ass_file, read_ass, style_of
from pipeline.subtitles.cues import Cue
from pipeline.subtitles.formats import clean_cues
from pipeline.subtitles.read import is_ass, parse, read_subtitles

# Share of one input's progress bar given to each stage (the rest, up to 1, is writing the files)
_STAGES = {"download": 0.0, "audio": 0.15, "model": 0.2, "transcribe": 0.25, "write": 0.97, "render": 0.98}
# With a burned-in or soft-subtitled video to make, encoding takes the last part of each input's bar (a preview,
# remuxed, the last 2 %).
_STAGES_RENDERING = {"download": 0.0, "audio": 0.1, "model": 0.15, "transcribe": 0.2, "write": 0.7, "render": 0.72}


def run_job(
    spec: JobSpec,
    out_dir: Path,
    models: ModelCache,
    policy: Policy = Policy(),
    *,
    work_dir: Path | None = None,
    heartbeat: float | None = None,
    rates: Rates | None = None,
) -> Iterator[Event | JobResult]:
    """Subtitle every input of `spec` into `out_dir`: the job's events, then its JobResult.

    `models` compiles the model on first use and shares it with other jobs. `work_dir` holds downloads (default:
    out_dir). With `heartbeat`, the last Progress is repeated when nothing else happened for that many seconds (a web
    page can only notice a closed tab while it is handed something). `rates`: what earlier jobs measured, for the
    time left. Job-wide problems (too many inputs, a model that is not offered or does not exist) raise
    SubtitleError before any event.
    """
    check_job(spec, policy)
    rates = rates or Rates()

    def work(emit: Callable[[Event], None], stop: threading.Event) -> JobResult:
        job = _Job(spec, out_dir=Path(out_dir), work_dir=Path(work_dir or out_dir), models=models, policy=policy,
                   rates=rates, emit=emit, stop=stop)  # fmt: skip
        return job.run()

    yield from stream(work, policy, heartbeat)


def brought_subtitles(subtitles: Path | SubtitleText) -> tuple[str, str]:
    """The text and name of subtitles a job was given instead of transcribing."""
    if isinstance(subtitles, SubtitleText):
        return subtitles.text, subtitles.name
    return read_subtitles(Path(subtitles)), Path(subtitles).name


class _Job:
    def __init__(self, spec: JobSpec, *, out_dir, work_dir, models, policy, rates: Rates, emit, stop=None):
        self.spec, self.out_dir, self.work_dir, self.models, self.policy = spec, out_dir, work_dir, models, policy
        self.rates = rates
        self.emit: Callable[[Event], None] = emit
        self.stop: threading.Event = stop or threading.Event()  # set: every ffmpeg of the job is killed at once
        self.stems: set[str] = set()
        self.audio: dict[int, Future] = {}
        self.durations: dict[int, float] = {}  # of the inputs whose length is known
        self.pending: list[int] = []  # inputs still to be transcribed, in order
        self.done = 0.0  # of the current input's audio
        self.spent = 0  # bytes of video this job has written (each counted 1 + policy.kept_copies times)
        self.rate = rates.rate(spec)  # seconds of work per second of audio, measured as the job goes
        self.countdown = Countdown()  # the time left as reported: it counts down, and rises only a little
        self.script: str | None = None  # an ASS file brought as the cues: burned (and muxed) as it is

    def run(self) -> JobResult:
        spec = self.spec
        plan, failed = start_job(spec, self.out_dir, self.policy, self.stems, self.emit, self.stop)
        cues = None
        if spec.subtitles is not None:
            text, name = brought_subtitles(spec.subtitles)
            if is_ass(text):  # burned in as it is, its own styles; its Default style is the look of our .ass
                cues, self.script = read_ass(text, name)
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
                    failed.append(FileFailed(i, input_name(spec.inputs[i]), str(e)))
                    self.emit(failed[-1])
        return JobResult(tuple(files), tuple(sorted(failed, key=lambda f: f.index)), plan.skipped)

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
        return self.countdown(time_left(audio, self.rate), time.monotonic())

    def _load_audio(self, i: int, media: Path) -> Future:
        if i not in self.audio:
            self.audio[i] = self.pool.submit(load_audio, media, SAMPLE_RATE, self.policy.limits, self.stop)
        return self.audio[i]

    def _one(self, i: int, media: MediaInfo | None, cues, later: list[int], written: list[Path]) -> FileResult:
        started = time.monotonic()
        source = self._source(i, media)
        self.emit(SourceFound(i, source))
        if cues is None:
            result = self._transcribe(i, source, later)
        else:
            duration = source.info.duration or max((c.end for c in cues), default=0.0)
            info = TranscriptionInfo(
                language=self.spec.transcribe.language or "und",
                language_probability=1.0,
                duration=duration,
                task=self.spec.transcribe.task,
            )
            result = SubtitleResult(tuple(clean_cues(cues, duration)), info, source.info)
        self._report(i, "write", None, f"Writing the subtitles of {source.title}")
        # a file's own name is kept as it is (it is a name on this file system already); a page title is made one
        named = Path(source.title).stem if isinstance(self.spec.inputs[i], Path) else title_stem(source.title)
        stem = unique_stem(named, self.stems)
        outputs = []
        for path in write_outputs(
            result, self.spec.formats, self.out_dir, stem, self.spec.shown_labels, self.spec.style
        ):
            written.append(path)
            outputs.append(path)
            self.emit(FileWritten(i, path))
        # the videos are extras: one that cannot be made is a note, and the subtitles are delivered
        notes: list[str] = []
        if cues is None and (short := cut_short(source.title, result)):  # (transcribed: the sound may end early)
            notes.append(short)
        burned = _or_note(lambda: self._burn(i, source, result, stem, written), "burned-in video", notes, None)
        outputs += [burned] if burned else []
        outputs += _or_note(lambda: self._soft(i, source, result, stem, written), "subtitle tracks", notes, [])
        shown = None
        if self.spec.preview and burned is None:
            shown = _or_note(lambda: self._preview(i, source, stem, written), "preview", notes, None)
        took = time.monotonic() - started
        return FileResult(source, result, tuple(outputs), burned, took, shown, notes=tuple(notes))

    def _source(self, i: int, media: MediaInfo | None) -> Source:
        """Input i as a local media file: the file itself, or what its link downloads to (checked as a file is)."""
        spec, policy, item = self.spec, self.policy, self.spec.inputs[i]
        if isinstance(item, Path):
            return Source(item.name, item.name, item, media)
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
        return Source(item, got.title, got.path, media)

    def _burn(self, i: int, source: Source, result: SubtitleResult, stem: str, written: list[Path]) -> Path | None:
        if not self.spec.burn:
            return None
        if not source.info.has_video:
            self._report(i, "render", None, f"{source.title} has no picture: its subtitles are not burned in")
            return None
        message = f"Burning the subtitles into {source.title}"
        self._report(i, "render", 0.0, message)
        burned = burn(
            source.media,
            result.cues,
            self.out_dir / f"{stem}.subtitled.mp4",
            language=result.info.language,
            options=self.spec.burn,
            style=self.spec.style,
            progress=lambda f: self._report(i, "render", f, message),
            duration=result.info.duration,
            media=source.info,
            stop=self.stop,
            threads=self.policy.threads,
            max_bytes=video_room(self.out_dir, self.policy, self.spent),
            labels=self.spec.shown_labels,
            script=self.script,
        )
        self._spend(burned, written)
        self.emit(FileWritten(i, burned))
        return burned

    def _soft(self, i: int, source: Source, result: SubtitleResult, stem: str, written: list[Path]) -> list[Path]:
        spec, media, made = self.spec, source.info, []
        if not spec.soft:
            return made
        self._report(i, "render", None, f"Adding a subtitle track to {source.title}")
        styled = self.script  # (a style of its own: the MKV's track is ASS, styled; SRT otherwise)
        if styled is None and spec.style != Style():
            size = (media.width, media.height) if media.width and media.height else DEFAULT_SIZE
            styled = ass_file(
                result.cues, *size, style=spec.style, language=result.info.language, labels=spec.shown_labels
            )
        for suffix in (".subs.mkv", ".subs.mp4") if can_mux_mp4(media) else (".subs.mkv",):
            path = mux_soft(
                source.media,
                result.cues,
                self.out_dir / f"{stem}{suffix}",
                language=result.info.language,
                media=media,
                stop=self.stop,
                max_bytes=video_room(self.out_dir, self.policy, self.spent),
                labels=spec.shown_labels,
                script=styled,
            )
            self._spend(path, written)
            made.append(path)
            self.emit(FileWritten(i, path))
        return made

    def _preview(self, i: int, source: Source, stem: str, written: list[Path]) -> Path:
        self._report(i, "render", None, f"Making the preview of {source.title}")
        shown = preview(
            source.media,
            self.out_dir / f"{stem}.preview",
            source.info,
            seconds=PREVIEW_SECONDS,
            stop=self.stop,
            threads=self.policy.threads,
            max_bytes=video_room(self.out_dir, self.policy, self.spent),
        )
        self._spend(shown, written)
        return shown

    def _spend(self, path: Path, written: list[Path]) -> None:
        written.append(path)
        self.spent += path.stat().st_size

    def _transcribe(self, i: int, source: Source, later: list[int]) -> SubtitleResult:
        spec = self.spec
        self._report(i, "audio", None, f"Extracting the audio of {source.title}")
        audio = self._load_audio(i, source.media)  # ffmpeg decodes the audio while the model loads
        if not self.models.is_loaded(spec.model.model, spec.model.precision):
            self._report(i, "model", None, "Loading the model")  # (ensure_ir says when it prepares one, once)
        model = self.models.get(  # (a Cancel returns at once; the load goes on, once, for the next job)
            spec.model.model,
            lambda message: self._report(i, "model", None, message),
            precision=spec.model.precision,
            stop=self.stop,
        )
        # (the engine, torch and whisper, is imported by the model's first load: while ffmpeg decodes the audio)
        from pipeline.jobs.subtitling import subtitle_audio

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
            spec.decoding,
            rules=spec.rules,
            on_segment=lambda s, duration: self.emit(CueDecoded(i, Cue(s.start, s.end, s.text, s.words), duration)),
            progress=transcribing,
            media=source.info,
            speakers=spec.speakers,
        )
        self.rates.record(spec, time.monotonic() - started, duration)
        self.pending.remove(i)
        self.done = 0.0
        return result


CUT_SHORT = 0.9  # share of its stated length under which a file's sound is said to end early


def cut_short(title: str, result: SubtitleResult) -> str | None:
    """A note when the sound ends well before the length the file states (under CUT_SHORT of it, and 2 s or more
    short): an interrupted recording or download is read as far as it goes, and the user should know."""
    stated, heard = result.media.duration, result.info.duration
    if not stated or heard >= CUT_SHORT * stated or stated - heard < 2.0:
        return None
    return (
        f"{title}: its sound ends at {hms(heard)} of the {hms(stated)} the file says it lasts (a recording or download "
        "cut short?): the subtitles cover what is there."
    )


def _or_note(make, what: str, notes: list[str], instead):
    """make(), or `instead` with a note when it fails (SubtitleError; a Cancel still stops the job)."""
    try:
        return make()
    except SubtitleError as e:
        notes.append(f"No {what}: {str(e).rstrip('.')}. The subtitles are ready.")
        return instead


_NO_LIMITS = Limits(max_bytes=1 << 62, max_duration=float("inf"), max_files=1 << 30)
