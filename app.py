"""Web app: upload videos or paste a link, get subtitle files, a preview playing with them and a table of cues.

    python app.py [--host 127.0.0.1] [--port 7860] [--model base] [--concurrency 1] ...   (--help lists all)

The UI knows nothing about models or ffmpeg: `build_ui(app)` wraps `SubtitleApp.subtitle`, a generator that runs
a job on its executor (pipeline.jobs.executors: in this process, or on a Ray cluster with --ray) and turns its progress,
sources and cues into page updates. The same function is the API endpoint `/subtitle` (see the README for a gradio_client example).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import itertools
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gradio as gr

from convert.checkpoints import DEFAULT_MODEL, available_models
from pipeline import FORMATS, SubtitleError, TranscribeOptions
from pipeline.asr.model import ModelOptions
from pipeline.asr.precision import resolve_precision
from pipeline.asr.results import Word
from pipeline.asr.transcribe import LANGUAGES
from pipeline.cpu import usable_cores
from pipeline.errors import OptionError
from pipeline.files import sweep
from pipeline.jobs.build import build_spec
from pipeline.jobs.executors import Executor, add_arguments, executor
from pipeline.jobs.outputs import write_outputs, zip_outputs
from pipeline.jobs.spec import CueDecoded, FileFailed, JobResult, JobSpec, Policy, Progress, Source, SourceFound
from pipeline.media.audio import Limits, hms, probe
from pipeline.media.download import SITES
from pipeline.media.video import PREVIEW_SECONDS, Style
from pipeline.subtitles.ass import read_ass, style_of
from pipeline.subtitles.check import check, parse_srt
from pipeline.subtitles.cues import Cue, CueRules
from pipeline.subtitles.formats import Labels, format_timestamp, to_vtt
from pipeline.subtitles.read import is_ass, parse, read_subtitles
from pipeline.subtitles.table import cue_table, rename_speaker, table_cells, table_to_subtitles

log = logging.getLogger("subtitle-generator")
KEEP_OUTPUTS = 300  # seconds a finished job's folder stays: Gradio copies outputs to its cache after the last yield
HEARTBEAT = 1.0  # seconds between yields when nothing happens, so Gradio can close a cancelled job
# The cue checker runs beside the queue on every edit: one address gets this many checks in CHECK_WINDOW seconds
# (a person edits a cell a second at most; a script sending more only gets a message)
CHECKS_PER_WINDOW, CHECK_WINDOW = 20, 10.0
UPDATE_EVERY = 0.5  # seconds between page updates while cues stream in (each update resends the cue table)
# Word times of the cues the last jobs gave, so that a cue left unchanged in the table keeps them when the files are
# made again (an edited cue's words are spread over it by length). About 300 bytes a cue: at most ~30 MB.
MAX_TIMED_CUES = 100_000
FORMAT_CHOICES = [
    ("SRT", "srt"),
    ("WebVTT", "vtt"),
    ("Plain text", "txt"),
    ("JSON (with timings)", "json"),
    ("ASS (styled, for Aegisub)", "ass"),
]
TASK_CHOICES = [("Transcribe", "transcribe"), ("Translate to English", "translate")]
BURN_CHOICES = [("No", "none"), (f"First {PREVIEW_SECONDS:.0f} s (fast preview)", "preview"), ("Whole video", "full")]
PRECISION_CHOICES = [
    (f"Auto ({resolve_precision('auto').name} on this CPU)", "auto"),
    ("int8 weights", "int8"),
    ("bf16", "bf16"),
    ("f32 (reference, slowest)", "f32"),
]
SPEAKER_CHOICES = [("Off", "off"), ("Auto", "auto")] + [(str(n), str(n)) for n in range(2, 11)]
LABEL_CHOICES = [("New cue only", "none"), ("Dialogue dashes", "dashes"), ("Names", "names")]
LANGUAGE_CHOICES = [("Auto-detect", "auto")] + sorted(((n.title(), c) for c, n in LANGUAGES.items()))


@dataclass(frozen=True)
class Field:
    """One input of the page's form: its name (form_to_spec's and the API's), its default (read from the options
    dataclasses) and how to draw it."""

    name: str
    default: Any
    widget: Callable[[Any, SubtitleApp], gr.Component]  # (default, app) -> the component
    group: str = "main"  # where it sits: main, advanced, video
    row: int | None = None  # fields with the same row sit side by side


_T, _S, _R = TranscribeOptions(), Style(), CueRules()
FORM: tuple[Field, ...] = (  # the form, in the API's order
    Field("files", None, lambda v, app: gr.File(
        label="Videos or audio files (drop one or several)", file_count="multiple", type="filepath",
        elem_id="files")),
    Field("url", "", lambda v, app: gr.Textbox(
        v, label="…or paste a link", placeholder="https://www.youtube.com/watch?v=… or a link to a .mp4 file",
        elem_id="url")),
    Field("model", DEFAULT_MODEL, lambda v, app: gr.Dropdown(
        app.model_choices, value=app.model_choices[0][1], label="Model",
        info="More: start the app with --model small (a name, a .pt file or a faster-whisper folder)"), row=1),
    Field("language", _T.language or "auto", lambda v, app: gr.Dropdown(
        LANGUAGE_CHOICES, value=v, label="Spoken language"), row=1),
    Field("task", _T.task, lambda v, app: gr.Radio(TASK_CHOICES, value=v, label="Task"), row=2),
    Field("formats", list(JobSpec.formats), lambda v, app: gr.CheckboxGroup(
        FORMAT_CHOICES, value=v, label="Subtitle files"), row=2),
    Field("beam_size", _T.beam_size or 1, lambda v, app: gr.Slider(
        1, 10, value=v, step=1, label="Beam size (1 = greedy: faster, less exact)"), "advanced"),
    Field("initial_prompt", "", lambda v, app: gr.Textbox(
        v, label="Initial prompt (names, terms or style to expect)", lines=2), "advanced"),
    Field("condition_on_previous_text", _T.condition_on_previous_text, lambda v, app: gr.Checkbox(
        v, label="Use the previous text as context (off: fewer repetitions)"), "advanced"),
    Field("vad", _T.vad, lambda v, app: gr.Checkbox(
        v, label="Voice activity detection: no text where nobody speaks, exact starts"), "advanced"),
    Field("precision", ModelOptions.precision, lambda v, app: gr.Dropdown(
        PRECISION_CHOICES, value=v, label="Precision (auto: the fastest for this CPU)"), "advanced"),
    Field("batch_size", _T.batch_size, lambda v, app: gr.Slider(
        1, 16, value=v, step=1,
        label="Batch size (windows decoded at once; long videos are cut at pauses into parts)"), "advanced"),
    Field("speakers", "off", lambda v, app: gr.Dropdown(
        SPEAKER_CHOICES, value=v, label="Speakers: a new cue when the speaker changes (auto finds how many)",
        elem_id="speakers"),
        "advanced", row=6),
    Field("speaker_labels", JobSpec.labels, lambda v, app: gr.Radio(
        LABEL_CHOICES, value=v, label="Show a change of speaker"), "advanced", row=6),
    Field("cue_rules", JobSpec.rules is not None, lambda v, app: gr.Checkbox(
        v, label="Readable cues: broadcast rules for lines, reading speed, timing"), "advanced"),
    Field("max_line_chars", _R.max_line_chars, lambda v, app: gr.Slider(
        20, 60, value=v, step=1, label="Characters per line"), "advanced", row=3),
    Field("max_cps", _R.max_cps, lambda v, app: gr.Slider(
        10, 30, value=v, step=1, label="Characters per second"), "advanced", row=3),
    Field("burn_in", "none", lambda v, app: gr.Radio(
        BURN_CHOICES, value=v, label="Burn the subtitles into the picture"), "video"),
    Field("font_size", 100 * _S.font_size, lambda v, app: gr.Slider(
        2, 12, value=v, step=0.5, label="Text size (% of the shorter side)"), "video", row=4),
    Field("position", _S.position, lambda v, app: gr.Radio(
        [("Bottom", "bottom"), ("Top", "top")], value=v, label="Position"), "video", row=4),
    Field("text_colour", _S.text_colour, lambda v, app: gr.ColorPicker(v, label="Text colour"), "video", row=5),
    Field("outline_colour", _S.outline_colour, lambda v, app: gr.ColorPicker(
        v, label="Outline / box colour"), "video", row=5),
    Field("box", _S.box, lambda v, app: gr.Checkbox(v, label="Box behind the text"), "video", row=5),
    Field("speaker_colours", _S.speaker_colours, lambda v, app: gr.Checkbox(
        v, label="A colour per speaker"), "video", row=5),
    Field("highlight_words", _S.highlight_words, lambda v, app: gr.Checkbox(
        v, label="Light up each word as it is spoken (burn-in, ASS, WebVTT)", elem_id="highlight"), "video", row=7),
    Field("highlight_colour", _S.highlight_colour, lambda v, app: gr.ColorPicker(
        v, label="Highlight colour"), "video", row=7),
    Field("margin", 100 * (_S.margin or 0), lambda v, app: gr.Slider(
        0, 30, value=v, step=1, label="Margin (% of the height; 0 = automatic)"), "video"),
    Field("soft", JobSpec.soft, lambda v, app: gr.Checkbox(
        v, label="Also a video with a subtitle track (MKV and MP4, not re-encoded)"), "video"),
    Field("subtitles", None, lambda v, app: gr.File(
        label="Your own subtitles (SRT, WebVTT or ASS): used instead of transcribing; ASS burns in with its styles",
        file_types=[".srt", ".vtt", ".ass", ".ssa"],
        type="filepath", elem_id="subtitles"), "video"),
)  # fmt: skip
DEFAULTS = {f.name: f.default for f in FORM}


@dataclass(frozen=True)
class ServerOptions:
    limits: Limits = Limits()
    allow_private_urls: bool = False  # let links point at localhost/LAN (only for a server on a private machine)
    sites: tuple[str, ...] | None = SITES  # yt-dlp extractors links may use; None: every one yt-dlp has
    jobs_dir: Path = Path(tempfile.gettempdir()) / "subtitle-generator-jobs"  # per-job working folders, removed after
    concurrency: int = 1  # jobs working at once (a cancelled job's slot is free only once its work has stopped)
    queue_size: int = 20  # jobs that may wait for a slot; more are turned away
    per_client: int = 2  # jobs one client (address) may have working or waiting


class SubtitleApp:
    """Holds the shared models; `subtitle` is one request from the page or the API."""

    def __init__(self, runner: Executor, model_choices: list[tuple[str, str]], options: ServerOptions):
        self.runner = runner  # in this process, or on a Ray cluster (--ray)
        # the page offers models by an id, not by where they are on the server: a name stays itself ("base"), a
        # path becomes its last part ("whisper-small-ct2")
        self.model_ids: dict[str, str] = {}
        for _, spec in model_choices:
            base = Path(spec).name if ("/" in spec or os.sep in spec) else spec
            name, n = base, 2
            while name in self.model_ids:
                name, n = f"{base} ({n})", n + 1
            self.model_ids[name] = spec
        ids = {spec: name for name, spec in self.model_ids.items()}
        self.model_choices = [(label, ids[spec]) for label, spec in model_choices]
        self.options = options
        # (client, start ms, end ms, text) -> the cue's measured words, oldest first (MAX_TIMED_CUES at most)
        self._timed: OrderedDict[tuple, tuple[Word, ...]] = OrderedDict()
        self.policy = Policy(
            options.limits,
            options.allow_private_urls,
            tuple(spec for _, spec in model_choices),
            options.sites,
            # jobs working side by side share the cores: each burn-in encodes with its share
            threads=core_share(options.concurrency),
            slots=threading.BoundedSemaphore(options.concurrency),
            kept_copies=1,  # Gradio's cache keeps a copy of every file a job hands the page, for up to 2 hours
        )
        self._clients: Counter[str] = Counter()  # jobs working or waiting, by client address
        self._checks: dict[str, deque[float]] = {}  # when each client's last cue checks came, for CHECKS_PER_MINUTE
        self._lock = threading.Lock()
        sweep(options.jobs_dir)  # the job folders of a server that was killed (their names carry its process id)

    def subtitle(self, client: str = "", **form) -> Iterator[tuple]:
        """One job from the page's form (FORM's names; what is not given is its default), for `client` (its
        address). Yields (about, status, cue table, preview video, files to download) as the job goes; the last is
        complete."""
        yield "", "", cue_table([], False), None, None  # a new job starts from a clean page: no old results beside it
        admitted = False
        try:
            model = form.get("model") or self.model_choices[0][1]
            spec = form_to_spec(**{**form, "model": self.model_ids.get(model, model)})
            self._admit(client)
            admitted = True
            yield from self._run(spec, client)
        except SubtitleError as e:
            # the reason stays in the status line (the pop-up goes after a few seconds)
            yield gr.skip(), f"**Error:** {_escape(str(e))}", gr.skip(), gr.skip(), gr.skip()
            raise gr.Error(str(e), print_exception=False) from None
        finally:
            if admitted:
                with self._lock:
                    self._clients[client] -= 1

    def _admit(self, client: str) -> None:
        """Count the job in, or refuse it: one client may have `per_client` jobs working or waiting, and the server
        `concurrency + queue_size` in all."""
        o = self.options
        with self._lock:
            if self._clients[client] >= o.per_client:
                raise SubtitleError(
                    f"You have {self._clients[client]} jobs working or waiting on this server: wait for one to finish"
                )
            if sum(self._clients.values()) >= o.concurrency + o.queue_size:
                raise SubtitleError("The server is busy: try again in a few minutes")
            self._clients[client] += 1

    def apply_edits(self, table, client: str = "", **form) -> Iterator[tuple]:
        """The job again with the cue table as its subtitles (and the form's formats, burn-in and style): nothing is
        transcribed. The table's edits are what the files, the preview and the burned video show."""
        self.options.jobs_dir.mkdir(parents=True, exist_ok=True)
        edited = Path(tempfile.mkdtemp(prefix=f"edits-{os.getpid()}-", dir=self.options.jobs_dir)) / "edited"
        try:
            try:
                cells = table_cells(table)
                if not cells:
                    raise SubtitleError("There are no cues to make files from: generate the subtitles first")
                text = self._with_word_times(table_to_subtitles(cells), client)
                edited = edited.with_suffix(".vtt" if text.startswith("WEBVTT") else ".srt")
                edited.write_text(text, encoding="utf-8")
            except SubtitleError as e:
                yield gr.skip(), f"**Error:** {_escape(str(e))}", gr.skip(), gr.skip(), gr.skip()
                raise gr.Error(str(e), print_exception=False) from None
            yield from self.subtitle(client, **{**form, "subtitles": str(edited)})
        finally:
            shutil.rmtree(edited.parent, ignore_errors=True)

    def rename(self, table, old: str, new: str) -> dict:
        """rename_speaker for the page: a message instead of a traceback."""
        try:
            return rename_speaker(table, old, new)
        except SubtitleError as e:
            raise gr.Error(str(e), print_exception=False) from None

    def check_cues(self, table, client: str = "") -> str:
        """cue_problems for the page, at most CHECKS_PER_WINDOW times in CHECK_WINDOW seconds for one client."""
        now = time.monotonic()
        with self._lock:
            recent = self._checks.setdefault(client, deque())
            while recent and now - recent[0] > CHECK_WINDOW:
                recent.popleft()
            if len(recent) >= CHECKS_PER_WINDOW:
                return "**Too many checks from your address: wait a few seconds, then edit again**"
            recent.append(now)
            for other in [c for c, times in self._checks.items() if now - times[-1] > CHECK_WINDOW]:
                del self._checks[other]  # (the map holds only the clients of the last CHECK_WINDOW)
        return cue_problems(table)

    def describe(self, files: list[str] | None, seen: list[str] | None = None) -> tuple[list[str], str, list[str]]:
        """On upload: the files of this upload replace the ones before (the file box would add them to the list),
        and the media line shows their titles and durations, before any job. Returns (files, media line, files)."""
        files = [f for f in files or [] if f not in set(seen or [])] or list(files or [])
        sources = []
        for name in files:
            try:
                sources.append(Source(Path(name).name, Path(name).name, Path(name), probe(Path(name))))
            except SubtitleError as e:
                return files, f"**Error:** {_escape(str(e))}", files
        return files, _about(sources), files

    def _remember(self, result: JobResult, client: str) -> None:
        """Keep the word times of the job's cues (the oldest go past MAX_TIMED_CUES)."""
        with self._lock:
            for f in result.files:
                for cue in f.result.cues:
                    if cue.words:
                        key = _cue_key(client, cue)
                        self._timed[key] = cue.words
                        self._timed.move_to_end(key)
            while len(self._timed) > MAX_TIMED_CUES:
                self._timed.popitem(last=False)

    def _with_word_times(self, text: str, client: str) -> str:
        """The table's subtitles, as WebVTT with word times when some cues are as one of this client's jobs gave
        them (same times, same words): those keep their measured word times. Otherwise the text as it is."""
        cues = parse(text)
        with self._lock:
            known = [self._timed.get(_cue_key(client, cue)) for cue in cues]
        if not any(known):
            return text
        cues = [replace(c, words=w) if w else c for c, w in zip(cues, known)]
        return to_vtt(cues, None, "none", words=True, spread=False)  # (edited cues: no times made up in the file)

    def _run(self, spec: JobSpec, client: str = "") -> Iterator[tuple]:
        """The job's events as page updates: the status line (stage, %, elapsed, time left) at least every second,
        the cues in bursts (each update resends the whole table), the results at the end."""
        self.options.jobs_dir.mkdir(parents=True, exist_ok=True)
        job_dir = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=self.options.jobs_dir))
        several = len(spec.inputs) > 1
        sources: dict[int, Source] = {}
        rows: list[list[str]] = []
        line, last, unseen, finished = "Starting", 0.0, False, False
        started = time.monotonic()
        log.info("job %s: %d input(s), model %s", job_dir.name, len(spec.inputs), spec.model.model)
        events = self.runner.run(spec, job_dir, self.policy, heartbeat=HEARTBEAT)
        try:
            yield gr.skip(), status_line(line, 0.0), gr.skip(), gr.skip(), gr.skip()
            for event in events:
                if isinstance(event, Progress):
                    line = event.line()
                elif isinstance(event, SourceFound):
                    sources[event.index] = event.source
                    unseen = True
                elif isinstance(event, CueDecoded):
                    name = [sources[event.index].title] if several else []
                    rows.append([*name, _time(event.cue.start), _time(event.cue.end), "", event.cue.text.strip()])
                    unseen = True
                elif isinstance(event, FileFailed):
                    log.info("job %s: %s failed: %s", job_dir.name, event.name, event.message)
                elif isinstance(event, JobResult):
                    took = time.monotonic() - started
                    if not event.files:
                        raise SubtitleError(event.failed[0].message)
                    log.info("job %s: done in %.1f s (%d failed)", job_dir.name, took, len(event.failed))
                    self._remember(event, client)
                    final = self._final(event, job_dir, several, took, spec.shown_labels)
                    # Gradio reads the last yield's files again after the generator returns, then serves its copies
                    timer = threading.Timer(KEEP_OUTPUTS, shutil.rmtree, (job_dir,), {"ignore_errors": True})
                    timer.daemon = True
                    timer.start()
                    finished = True
                    yield final
                    return
                # (a closed page can stop this generator only at a yield: run_job's heartbeat brings one each second)
                # cues come in bursts (a 30-second window at a time): a burst is shown once the progress after it comes
                burst_over = unseen and isinstance(event, Progress)
                if burst_over or time.monotonic() - last >= UPDATE_EVERY:
                    last = time.monotonic()
                    status = status_line(line, last - started)
                    if unseen:
                        unseen = False
                        yield _about(list(sources.values())), status, cue_table(rows, several), gr.skip(), gr.skip()
                    else:
                        yield gr.skip(), status, gr.skip(), gr.skip(), gr.skip()
        except SubtitleError:
            log.info("job %s: failed after %.1f s", job_dir.name, time.monotonic() - started)
            raise
        except Exception as e:
            log.error("job %s failed", job_dir.name, exc_info=e)
            raise SubtitleError("Something went wrong on the server; it is in the server's log. Try again") from None
        finally:
            # A job still running stops at its next event, or at once in ffmpeg; closing returns when the work has
            # stopped, and a failed or cancelled job's folder goes then. That happens beside the page's request, so
            # Cancel answers at once (the job's slot stays taken until its work has stopped).
            def close() -> None:
                events.close()
                if not finished:
                    shutil.rmtree(job_dir, ignore_errors=True)

            threading.Thread(target=close, name="subtitle-job-close").start()

    def _final(self, result: JobResult, job_dir: Path, several: bool, took: float, labels: Labels) -> tuple:
        first = result.files[0]
        languages = [LANGUAGES.get(f.result.info.language, "").title() for f in result.files]  # ("und": given cues)
        about = _about([f.source for f in result.files], languages)
        # Only files our ffmpeg wrote reach the player: never an upload or a download, which Gradio would hand to the
        # system's ffmpeg when it judges them unplayable (with no whitelist, no timeout, outside the job's slot)
        if first.burned is not None:  # the burned-in video is the preview (a track on top would draw the text twice)
            preview = gr.Video(value=str(first.burned), subtitles=None)
        elif first.preview is not None:
            vtt = write_outputs(first.result, ["vtt"], job_dir / "preview", "preview", labels)[0]
            preview = gr.Video(value=str(first.preview), subtitles=str(vtt))
        else:
            preview = None
        audio = sum(f.result.info.duration for f in result.files)
        status = f"Done: {hms(audio)} of audio in {hms(took)}."
        if result.failed:
            status += " Failed: " + "; ".join(f.message for f in result.failed)
        rows = [  # the final cues (re-cut by the readability rules), not the raw segments streamed while decoding
            [*([f.source.title] if several else []), _time(c.start), _time(c.end), c.speaker or "",
             c.text.replace("\n", " / ")]
            for f in result.files
            for c in f.result.cues
        ]  # fmt: skip
        outputs = [p for f in result.files for p in f.outputs]
        subtitles = [p for p in outputs if p.suffix.lstrip(".") in FORMATS]  # (the videos are not zipped again)
        several_files = len(result.files) > 1 or several
        downloads = (
            [zip_outputs(subtitles, job_dir), *(p for p in outputs if p not in subtitles)] if several_files else outputs
        )
        return about, status, cue_table(rows, several), preview, [str(p) for p in downloads]


STYLE_FIELDS = ("font_size", "position", "text_colour", "outline_colour", "box", "margin", "highlight_words",
                "highlight_colour")  # fmt: skip


def style_fields(path: str | None) -> dict[str, Any]:
    """The page's style fields (STYLE_FIELDS, in the page's units) from an ASS file's Default style
    (pipeline.subtitles.ass.style_of); empty for another file, or one that cannot be read (the job says why)."""
    try:
        text = read_subtitles(Path(path)) if path else ""
        if not is_ass(text):
            return {}
        style = style_of(read_ass(text, Path(path).name)[1])
    except SubtitleError:
        return {}
    values = {name: getattr(style, name) for name in STYLE_FIELDS}
    # (in the page's steps: 0.5 % of text size, 1 % of margin)
    return values | {"font_size": round(200 * style.font_size) / 2, "margin": round(100 * (style.margin or 0))}


def form_to_spec(**form) -> JobSpec:
    """The JobSpec the page's form asks for (pure: no Gradio), by FORM's names; a name not given takes its default.
    Sizes and margins are in % on the page. With `subtitles` (an SRT, WebVTT or ASS file), those are the cues:
    nothing is transcribed."""
    unknown = set(form) - set(DEFAULTS)
    if unknown:
        raise OptionError(sorted(unknown)[0], f"Unknown option {sorted(unknown)[0]!r}")
    f = {**DEFAULTS, **{k: v for k, v in form.items() if v is not None}}
    url = (f.pop("url") or "").strip()
    files, subtitles = f.pop("files") or [], f.pop("subtitles")
    converted = {k: _hex(f[k]) for k in ("text_colour", "outline_colour", "highlight_colour")} | {
        "beam_size": int(f["beam_size"]),
        "batch_size": int(f["batch_size"]),
        "max_line_chars": int(f["max_line_chars"]),
        "max_cps": float(f["max_cps"]),
        "formats": f["formats"] or ("srt",),
        "font_size": float(f["font_size"]) / 100,  # (a % on the page)
        "margin": float(f["margin"]) / 100 if f["margin"] else None,
    }
    return build_spec(
        **f | converted,
        inputs=(*(Path(name) for name in files), *([url] if url else [])),
        subtitles=Path(subtitles) if subtitles else None,
        preview=True,  # the page plays the video with its subtitles
    )


def status_line(line: str, elapsed: float) -> str:
    """The page's one progress line: the job's own (stage · % · time left) and the time since it started."""
    return f"{_escape(line)} · {hms(elapsed)} elapsed"


def cue_problems(table) -> str:
    """What in the (edited) cue table breaks the readability rules, one line per cue; empty when nothing does. The
    work is linear in the table, which cues_to_srt bounds."""
    try:
        cells = table_cells(table)
        if not cells:
            return ""
        problems = check(parse_srt(table_to_subtitles(cells)))
    except SubtitleError as e:
        return f"**{_escape(str(e))}**"
    lines = [f"- cue {p.index}: {p.rule}: {_escape(p.detail)}" for p in problems]
    return (
        ("**Breaks the readability rules:**\n" + "\n".join(lines)) if lines else "All cues pass the readability rules."
    )


def _about(sources: list[Source], languages: list[str] = ()) -> str:
    """One line per input: title · duration · language (once known)."""
    lines = []
    for i, s in enumerate(sources):
        facts = [hms(s.duration)] if s.duration else []
        facts += [languages[i]] if i < len(languages) and languages[i] else []
        lines.append(" · ".join([f"**{_escape(s.title)}**", *facts]))
    return "\n\n".join(lines)


def _cue_key(client: str, cue: Cue) -> tuple:
    """A cue as the cue table shows it (times to the millisecond, text without its line breaks), for one client."""
    return client, round(cue.start * 1000), round(cue.end * 1000), " ".join(cue.text.split())


def _hex(colour: str) -> str:
    """Gradio's colour picker gives #rrggbb, or rgba(r, g, b, a) in some browsers."""
    if m := re.match(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)", colour or ""):
        return "#" + "".join(f"{round(float(v)):02X}" for v in m.groups())
    return colour


def _escape(text: str) -> str:
    """Titles come from files and web pages: show them as text, never as Markdown or HTML."""
    return "".join("\\" + c if c in "\\`*_[]<>!|~" else c for c in text)


def _time(seconds: float) -> str:
    return format_timestamp(seconds, ".")


def endpoint(method: Callable[..., Iterator[tuple]], before: tuple[str, ...] = ()) -> Callable[..., Iterator[tuple]]:
    """`method(*before, **form)` as a Gradio function of positional values (`before`, then FORM's fields). Its
    signature names the fields with their defaults: Gradio reads it for the API's parameter names."""
    names = [*before, *DEFAULTS]

    def call(*values) -> Iterator[tuple]:
        *values, request = values  # (Gradio hands the request to a parameter annotated gr.Request)
        client = request.client.host if request is not None and request.client else ""
        fields = dict(zip(names[len(before) :], values[len(before) :]))
        yield from method(*values[: len(before)], client=client, **fields)

    parameter = inspect.Parameter.POSITIONAL_OR_KEYWORD
    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, parameter, default=DEFAULTS.get(n)) for n in names]
        + [inspect.Parameter("request", parameter, default=None, annotation=gr.Request)]
    )
    call.__annotations__ = {"request": gr.Request}
    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def build_ui(app: SubtitleApp) -> gr.Blocks:
    widgets: dict[str, gr.Component] = {}

    def place(group: str) -> None:
        for row, fields in itertools.groupby((f for f in FORM if f.group == group), key=lambda f: f.row):
            with gr.Row() if row is not None else contextlib.nullcontext():
                for f in fields:
                    widgets[f.name] = f.widget(f.default, app)

    with gr.Blocks(title="Subtitle generator", delete_cache=(3600, 3600)) as demo:
        gr.Markdown("# Subtitle generator\nVideo in, subtitles out: Whisper on your CPU with OpenVINO.")
        seen = gr.State([])  # the files of the last upload: a new upload replaces them
        with gr.Row():
            with gr.Column(scale=1):
                place("main")
                with gr.Accordion("Advanced options", open=False):
                    place("advanced")
                with gr.Accordion("Video with subtitles", open=False):
                    place("video")
                with gr.Row():
                    button = gr.Button("Generate subtitles", variant="primary", elem_id="generate", scale=3)
                    cancel = gr.Button("Cancel", elem_id="cancel", scale=1)
                status = gr.Markdown(min_height=70, elem_id="status")  # one line: stage, %, elapsed, time left
            with gr.Column(scale=1):
                about = gr.Markdown(label="Media", min_height=60, elem_id="about")
                preview = gr.Video(label="Preview with subtitles", interactive=False, elem_id="preview")
                downloads = gr.File(label="Download", file_count="multiple", interactive=False, elem_id="downloads")
        cues = gr.Dataframe(
            headers=["Start", "End", "Text"],
            label="Cues (edit a time, a speaker or a text, then make the files again: nothing is transcribed again)",
            interactive=True,
            wrap=True,
            column_widths=["12%", "12%"],
            elem_id="cues",
        )
        with gr.Row():
            apply = gr.Button("Make the files from these cues", elem_id="apply", scale=1)
            problems = gr.Markdown(elem_id="problems")
        with gr.Row(equal_height=True):
            old_name = gr.Textbox(label="Rename the speaker…", placeholder="Speaker 1", elem_id="old-speaker")
            new_name = gr.Textbox(label="…to", placeholder="Alice", elem_id="new-speaker")
            rename = gr.Button("Rename in every cue", elem_id="rename")
        files = widgets["files"]
        files.upload(app.describe, [files, seen], [files, about, seen], show_progress="hidden")
        styled = [widgets[name] for name in STYLE_FIELDS]  # an ASS file brought: its look in the style fields
        widgets["subtitles"].upload(
            lambda path: [style_fields(path).get(name, gr.skip()) for name in STYLE_FIELDS], widgets["subtitles"],
            styled, show_progress="hidden",
        )  # fmt: skip
        form = [widgets[name] for name in DEFAULTS]
        results = [about, status, cues, preview, downloads]
        job = button.click(endpoint(app.subtitle), form, results, api_name="subtitle", show_progress="hidden")
        edits = apply.click(
            endpoint(app.apply_edits, ("table",)), [cues, *form], results, api_name="apply_edits",
            show_progress="hidden",
        )  # fmt: skip

        # the rules, checked as the person edits (quick and bounded: not queued behind jobs, rate-limited per client)
        def check_cues(table, request: gr.Request):
            return app.check_cues(table, request.client.host if request is not None and request.client else "")

        check_cues.__annotations__ = {"request": gr.Request}  # (Gradio passes the request by this annotation)
        cues.input(check_cues, cues, problems, show_progress="hidden", queue=False, trigger_mode="always_last",
                   api_name="check_cues")  # fmt: skip
        rename.click(app.rename, [cues, old_name, new_name], cues, api_name="rename_speaker", show_progress="hidden")
        cancel.click(None, None, None, cancels=[job, edits])  # the job stops at its next event and removes its folder
    return demo


# Memory a job takes beyond the shared model, from the speed benchmark's hour (1.53 GB peak with 0.45 GB of libraries
# and model): about 1.1 GB per hour of audio (its samples, mel windows, decoder caches), plus 0.25 GB of working room.
JOB_BASE_BYTES, JOB_BYTES_PER_HOUR = 0.25e9, 1.1e9


def memory_problem(concurrency: int, max_duration: float, available: float) -> str | None:
    """Why --concurrency jobs of --max-duration seconds would not fit in `available` bytes; None when they do."""
    need = 0.5e9 + concurrency * (JOB_BASE_BYTES + JOB_BYTES_PER_HOUR * max_duration / 3600)
    if need <= available:
        return None
    return (
        f"--concurrency {concurrency} with --max-duration {max_duration / 60:.0f} needs about {need / 1e9:.1f} GB of "
        f"memory; this machine has {available / 1e9:.1f} GB available: lower one of them"
    )


def core_share(concurrency: int) -> int:
    """Threads for each of `concurrency` jobs working side by side (0: one job, every core)."""
    return 0 if concurrency == 1 else max(1, usable_cores() // concurrency)


def _available_memory() -> float:
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return float("inf")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Subtitle generator web app (Gradio).", formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    env = os.environ.get
    p.add_argument("--host", default=env("GRADIO_SERVER_NAME", "127.0.0.1"), help="address to listen on")
    p.add_argument("--port", type=int, default=int(env("GRADIO_SERVER_PORT", "7860")), help="port to listen on")
    p.add_argument(
        "--model",
        action="append",
        help="model to offer (repeatable; the first is the default): a name, a .pt file or a faster-whisper "
        "directory. The embedded base and any models found on this machine are always offered",
    )
    p.add_argument("--share", action="store_true", help="also serve on a public gradio.live link")
    p.add_argument("--max-file-size", type=float, default=2048, metavar="MB", help="largest upload or download")
    p.add_argument(
        "--max-job-size",
        type=float,
        default=Limits.max_job_bytes / 1e6,
        metavar="MB",
        help="video one job may write (burned-in, soft-subtitled and preview copies, with Gradio's cached copy of "
        "each; a burn counts at its 8 Mbit/s cap: about an hour of whole-video burn-in per 8 GB)",
    )
    p.add_argument("--max-duration", type=float, default=180, metavar="MINUTES", help="longest media accepted")
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="jobs transcribed at once, the rest wait in the queue (default: 1; with --ray, one per worker)",
    )
    p.add_argument("--queue-size", type=int, default=20, help="jobs allowed to wait; more are turned away")
    p.add_argument("--jobs-per-client", type=int, default=2, help="jobs one address may have working or waiting")
    p.add_argument(
        "--allow-private-urls",
        action="store_true",
        help="accept links to localhost/LAN addresses (off by default, also on loopback: behind a reverse proxy, "
        "loopback is the whole network)",
    )
    p.add_argument(
        "--sites",
        default=",".join(SITES),
        help="yt-dlp extractors links may use, comma-separated regular expressions ('all': every one yt-dlp has)",
    )
    add_arguments(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parse_args(argv)
    try:
        choices = available_models(args.model or ())
    except SubtitleError as e:
        raise SystemExit(f"error: {e}") from None
    if args.model:  # the first --model is the default
        first = [c for c in choices if c[1] == args.model[0]]
        choices = first + [c for c in choices if c[1] != args.model[0]]
    if not choices:
        raise SystemExit("error: no model found: pip install -r requirements.txt (it brings the embedded one)")
    if args.workers is not None and (args.ray is None or args.workers < 1):
        raise SystemExit("error: --workers is a number of Ray workers, 1 or more, and goes with --ray")
    concurrency = args.concurrency or 1
    if args.ray is None and (problem := memory_problem(concurrency, args.max_duration * 60, _available_memory())):
        raise SystemExit(f"error: {problem}")
    # jobs working side by side share the cores instead of each asking OpenVINO for all of them
    threads = core_share(concurrency)
    try:
        runner = executor(args.ray, args.workers, ModelOptions(threads=threads))
    except SubtitleError as e:
        raise SystemExit(f"error: {e}") from None
    if args.ray is not None and args.concurrency is None:
        concurrency = len(runner.workers)
    options = ServerOptions(
        Limits(int(args.max_file_size * 1e6), args.max_duration * 60, max_job_bytes=int(args.max_job_size * 1e6)),
        args.allow_private_urls,
        sites=None if args.sites.strip() == "all" else tuple(x.strip() for x in args.sites.split(",") if x.strip()),
        concurrency=concurrency,
        queue_size=args.queue_size,
        per_client=args.jobs_per_client,
    )
    app = SubtitleApp(runner, choices, options)
    # compile the default model while the page loads, so the first job does not wait for it
    threading.Thread(target=runner.prepare, args=(choices[0][1],), daemon=True).start()
    # Every admitted job enters at once and waits for one of the --concurrency slots inside (SubtitleApp._admit
    # counts them per client; a cancelled job's slot frees only when its work has stopped)
    limit = concurrency + args.queue_size
    build_ui(app).queue(default_concurrency_limit=limit, max_size=limit).launch(
        server_name=args.host,
        server_port=args.port,
        share=args.share,
        max_file_size=options.limits.max_bytes,
        show_error=False,  # only our own one-line messages reach the page (gr.Error); the rest is in the log
    )


if __name__ == "__main__":
    main()
