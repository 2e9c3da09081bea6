"""Web app: upload videos or paste a link, get subtitle files, a preview playing with them and a table of cues.

    python app.py [--host 127.0.0.1] [--port 7860] [--model base] [--concurrency 1] ...   (--help lists all)

The UI knows nothing about models or ffmpeg: `build_ui(app)` wraps `SubtitleApp.subtitle`, which runs a job through
pipeline.jobs.service and shows its updates; it is also the API endpoint `/subtitle` (README: a gradio_client example).
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from convert.checkpoints import DEFAULT_MODEL, available_models
from pipeline import SubtitleError, TranscribeOptions
from pipeline.asr.options import ModelOptions
from pipeline.errors import OptionError
from pipeline.jobs.body_limit import SESSION_BYTES, SESSION_MEMORY, BodyLimit
from pipeline.jobs.build import build_spec
from pipeline.jobs.executors import executor
from pipeline.jobs.page import (
    BURN_CHOICES,
    FORMAT_CHOICES,
    LABEL_CHOICES,
    LANGUAGE_CHOICES,
    PRECISION_CHOICES,
    SPEAKER_CHOICES,
    STYLE_FIELDS,
    TASK_CHOICES,
    cue_problems,
    escape_markdown,
    inputs_named,
    origin_problem,
    picker_colour,
)
from pipeline.jobs.server_args import parse_args
from pipeline.jobs.service import SKIP, ServerOptions, Service, Shown, available_memory, core_share, memory_problem
from pipeline.jobs.spec import JobSpec, SubtitleText
from pipeline.media.audio import Limits
from pipeline.subtitles.ass import Style
from pipeline.subtitles.cues import CueRules
from pipeline.subtitles.table import cue_table, rename_speaker, table_cells, table_to_subtitles


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
        info="Bigger models are more exact, and slower"), row=1),
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
        2, 12, value=v, step=0.5, label="Text size, %", info="of the picture's shorter side"), "video", row=4),
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
        0, 30, value=v, step=1, label="Margin, %", info="of the height; 0: automatic"), "video", row=10),
    Field("soft", JobSpec.soft, lambda v, app: gr.Checkbox(
        v, label="Also a video with a subtitle track (MKV and MP4, not re-encoded)"), "video", row=9),
    Field("subtitles", None, lambda v, app: gr.File(
        label="Your own subtitles (SRT, WebVTT or ASS): used instead of transcribing; ASS burns in with its styles",
        file_types=[".srt", ".vtt", ".ass", ".ssa"],
        type="filepath", elem_id="subtitles"), "video"),
)  # fmt: skip
DEFAULTS = {f.name: f.default for f in FORM}


class SubtitleApp(Service):
    """The page's requests, on the shared Service: each a generator of page updates, errors as gr.Error."""

    def subtitle(self, client: str = "", **form) -> Iterator[tuple]:
        """One job from the page's form (FORM's names; defaults for the rest), for `client` (its address). Yields
        (about, status, cue table, preview video, files to download) as the job goes; the last is complete."""
        yield "", "", cue_table([], False), None, None  # a new job starts from a clean page: no old results beside it
        admitted = False
        try:
            model = form.get("model") or self.model_choices[0][1]
            spec = form_to_spec(**{**form, "model": self.model_ids.get(model, model)})
            self.admit(client)
            admitted = True
            yield from map(_page, self.updates(spec, client))
        except SubtitleError as e:
            yield from _fail(e)
        finally:
            if admitted:
                self.release(client)

    def apply_edits(self, table, client: str = "", **form) -> Iterator[tuple]:
        """The job again with the cue table as its subtitles (and the form's formats, burn-in and style): nothing is
        transcribed. The table's edits are what the files, the preview and the burned video show."""
        try:
            cells = table_cells(table)
            if not cells:
                raise SubtitleError("There are no cues to make files from: generate the subtitles first")
            edited = SubtitleText(self.with_word_times(table_to_subtitles(cells), client), "The edited cues")
        except SubtitleError as e:
            yield from _fail(e)
        yield from self.subtitle(client, **{**form, "subtitles": edited})

    def rename(self, table, old: str, new: str) -> dict:
        """rename_speaker for the page: a message instead of a traceback."""
        try:
            return rename_speaker(table, old, new)
        except SubtitleError as e:
            raise gr.Error(str(e), duration=5, print_exception=False) from None

    def check_cues(self, table, client: str = "") -> str:
        """cue_problems for the page, at most CHECKS_PER_WINDOW times in CHECK_WINDOW seconds for one client."""
        if not self.allow_check(client):
            return "**Too many checks from your address: wait a few seconds, then edit again**"
        return cue_problems(table)


def _fail(error: SubtitleError) -> Iterator[tuple]:
    """The reason in the status line, where it stays (the pop-up goes after a few seconds), then the pop-up."""
    yield gr.skip(), f"**Error:** {escape_markdown(str(error))}", gr.skip(), gr.skip(), gr.skip()
    raise gr.Error(str(error), duration=5, print_exception=False) from None


def _page(update: tuple) -> tuple:
    """A Service update as Gradio's: SKIP as gr.skip(), the preview as a video with its subtitle track."""
    shown = update[3]
    if isinstance(shown, Shown):
        shown = gr.Video(value=str(shown.video), subtitles=shown.subtitles and str(shown.subtitles))
    return tuple(gr.skip() if part is SKIP else part for part in (*update[:3], shown, *update[4:]))


WIDTHS = {"File": 18, "Start": 19, "End": 19, "Speaker": 16}  # % of the cue table; Text takes the rest, and wraps


def _widths(table) -> gr.Dataframe:
    """The cue table's column widths for its shape (a Speaker or File column or not): set beside its value, which
    the API returns as it is."""
    headers = table.get("headers") if isinstance(table, dict) else getattr(table, "columns", None)
    widths = [WIDTHS.get(name, 0) for name in headers if isinstance(name, str)] if headers is not None else []
    return gr.Dataframe(column_widths=[f"{w or 100 - sum(widths)}%" for w in widths]) if widths else gr.skip()


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
    converted = {k: picker_colour(f[k]) for k in ("text_colour", "outline_colour", "highlight_colour")}
    converted |= {k: int(f[k]) for k in ("beam_size", "batch_size", "max_line_chars")}
    percent = {"font_size": float(f["font_size"]) / 100, "margin": float(f["margin"] or 0) / 100 or None}
    converted |= percent | {"max_cps": float(f["max_cps"]), "formats": f["formats"] or ("srt",)}
    return build_spec(
        **f | converted,
        inputs=(*(Path(name) for name in files), *([url] if url else [])),
        subtitles=Path(subtitles) if isinstance(subtitles, str) and subtitles else subtitles or None,
        preview=True,  # the page plays the video with its subtitles
    )


def _client(request: gr.Request | None) -> str:
    return request.client.host if request is not None and request.client else ""


HANDLER_THREADS = 40  # threads for the page's handlers besides the jobs' (describe, style, check, downloads)
_HOLD = "() => { const b = document.querySelector('#generate'); if (b) b.disabled = true; }"  # (at once, in the page)


def endpoint(method: Callable[..., Iterator[tuple]], before: tuple[str, ...] = ()) -> Callable[..., Iterator[tuple]]:
    """`method(*before, **form)` as a Gradio function of positional values (`before`, then FORM's fields). Its
    signature names the fields with their defaults: Gradio reads it for the API's parameter names."""
    names = [*before, *DEFAULTS]

    def call(*values) -> Iterator[tuple]:
        *values, request = values  # (Gradio hands the request to a parameter annotated gr.Request)
        client = _client(request)
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
        made_from = gr.State(None)  # the inputs the cue table's cues came from (inputs_named)
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
            with gr.Column(scale=1):  # the results: the cues come in here, in view while a job runs
                about = gr.Markdown(label="Media", min_height=60, elem_id="about")
                cues = gr.Dataframe(
                    headers=["Start", "End", "Text"], label="Cues (edit a time, a speaker or a text, then make the "
                    "files again: nothing is transcribed again)", interactive=True, wrap=True, max_height=420,
                    column_widths=["20%", "20%", "60%"], elem_id="cues",
                )  # fmt: skip
                with gr.Row(visible=False) as editing:  # (once there are cues)
                    apply = gr.Button("Make the files from these cues", elem_id="apply", size="sm", scale=0,
                                      min_width=240)  # fmt: skip
                    problems = gr.Markdown(elem_id="problems")
                with gr.Row(equal_height=True, visible=False) as renaming:  # (once there are speakers)
                    old_name = gr.Textbox(label="Rename the speaker…", placeholder="Speaker 1", elem_id="old-speaker")
                    new_name = gr.Textbox(label="…to", placeholder="Alice", elem_id="new-speaker")
                    rename = gr.Button("Rename", elem_id="rename", size="sm", scale=0, min_width=90)
                preview = gr.Video(label="Preview with subtitles", interactive=False, elem_id="preview")
                downloads = gr.File(label="Download", file_count="multiple", interactive=False, elem_id="downloads")

        # uploads read at once (Service.reading: one a client, READ_SLOTS for all); an ASS file's look goes in the
        # style fields
        def describe(files, seen, request: gr.Request):  # a new page: no old cues, files or status beside the new
            files, line = app.describe(files, seen, _client(request))  # (its files replace the ones before)
            return files, line, files, *cleared()

        def style(path, request: gr.Request):
            return [app.style(path, _client(request)).get(name, gr.skip()) for name in STYLE_FIELDS]

        def check_cues(table, request: gr.Request):
            return app.check_cues(table, _client(request))

        for handler in (describe, style, check_cues):  # (Gradio passes the request by this annotation)
            handler.__annotations__ = {"request": gr.Request}

        def cleared() -> tuple:  # (the cue table, downloads, status, preview, where the cues came from, the edit rows)
            return cue_table([], False), None, "", None, None, gr.Row(visible=False), gr.Row(visible=False)

        def made(files, url, speakers) -> tuple:  # a job done: its cues are of the inputs on the page now
            return inputs_named(files, url), gr.Row(visible=True), gr.Row(visible=speakers != "off")

        def same_origin(files, url, made):  # Make the files: only on the cues of the inputs they came from
            if problem := origin_problem(made, files, url):
                yield f"**Error:** {escape_markdown(problem)}"
                raise gr.Error(problem, duration=5, print_exception=False)
            yield gr.skip()

        files, url = widgets["files"], widgets["url"]
        fresh = [cues, downloads, status, preview, made_from, editing, renaming]
        # (the box adds an upload to the files before; describe keeps the new ones: no job starts in between)
        hidden = {"queue": False, "show_progress": "hidden", "api_visibility": "private"}
        files.upload(lambda: gr.Button(interactive=False), None, button, **hidden, js=_HOLD).then(
            describe, [files, seen], [files, about, seen, *fresh], show_progress="hidden"
        ).then(lambda: gr.Button(interactive=True), None, button, **hidden)
        files.clear(cleared, None, fresh, show_progress="hidden")
        styled = [widgets[name] for name in STYLE_FIELDS]
        widgets["subtitles"].upload(style, widgets["subtitles"], styled, show_progress="hidden")
        form = [widgets[name] for name in DEFAULTS]
        results = [about, status, cues, preview, downloads]
        job = button.click(endpoint(app.subtitle), form, results, api_name="subtitle", show_progress="hidden")
        edits = apply.click(same_origin, [files, url, made_from], status, show_progress="hidden").success(
            endpoint(app.apply_edits, ("table",)), [cues, *form], results, api_name="apply_edits",
            show_progress="hidden",
        )  # fmt: skip
        for done in (job, edits):
            done.success(made, [files, url, widgets["speakers"]], [made_from, editing, renaming], queue=False,
                         show_progress="hidden")  # fmt: skip

        cues.change(
            _widths,
            cues,
            cues,
            queue=False,
            show_progress="hidden",
            api_visibility="private",
            js="(t) => [{headers: t.headers, data: [], metadata: null}]",
        )  # (only its headers are sent)
        # the rules, checked as the person edits (quick and bounded: not queued behind jobs, rate-limited per client)
        cues.input(check_cues, cues, problems, show_progress="hidden", queue=False, trigger_mode="always_last",
                   api_name="check_cues")  # fmt: skip
        rename.click(app.rename, [cues, old_name, new_name], cues, api_name="rename_speaker", show_progress="hidden")
        cancel.click(None, None, None, cancels=[job, edits])  # the job stops at its next event and removes its folder
    return demo


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
    if args.ray is None and (problem := memory_problem(concurrency, args.max_duration * 60, available_memory())):
        raise SystemExit(f"error: {problem}")
    threads = core_share(concurrency)
    try:
        runner = executor(args.ray, args.workers, ModelOptions(threads=threads))
    except SubtitleError as e:
        raise SystemExit(f"error: {e}") from None
    if args.ray is not None and args.concurrency is None:
        concurrency = len(runner.workers)
    limits = Limits(max_bytes=int(args.max_file_size * 1e6), max_duration=args.max_duration * 60,
                    max_job_bytes=int(args.max_job_size * 1e6))  # fmt: skip
    sites = None if args.sites.strip() == "all" else tuple(x.strip() for x in args.sites.split(",") if x.strip())
    options = ServerOptions(limits=limits, allow_private_urls=args.allow_private_urls, sites=sites,
                            concurrency=concurrency, queue_size=args.queue_size, per_client=args.jobs_per_client)  # fmt: skip
    app = SubtitleApp(runner, choices, options)
    # compile the default model while the page loads, so the first job does not wait for it
    threading.Thread(target=runner.prepare, args=(choices[0][1],), daemon=True).start()
    launch(build_ui(app), options, server_name=args.host, server_port=args.port, share=args.share)


def launch(demo: gr.Blocks, options: ServerOptions, **kwargs) -> None:
    """Serve the page with the server's bounds: uploads up to the file limit; other requests refused (413) past
    MAX_REQUEST_BYTES, or with a value past MAX_VALUE_BYTES that is not its event's cue table, before Gradio parses
    them; SESSION_MEMORY for the sessions Gradio keeps (each keeps its last values); threads for every job that may
    wait inside and HANDLER_THREADS more for the page's other handlers. Every admitted job enters Gradio's queue at
    once and waits inside for one of the `concurrency` slots (Service.admit)."""
    limit = options.concurrency + options.queue_size
    demo.queue(default_concurrency_limit=limit, max_size=limit)
    tables: dict[int | str, set[int | str]] = {}
    names = {k.lstrip("/"): [p["parameter_name"] for p in v["parameters"]]
             for k, v in demo.get_api_info()["named_endpoints"].items()}  # fmt: skip
    for index, fn in demo.fns.items():
        at = {i for i, block in enumerate(fn.inputs) if isinstance(block, gr.Dataframe)}
        named = names.get(fn.api_name, [])
        tables[index] = tables[fn.api_name] = at | {named[i] for i in at if i < len(named)}
    demo.launch(
        max_file_size=options.limits.max_bytes,
        # a job's handler holds a thread while it waits inside (Service.admit): one for each job let in, and
        # HANDLER_THREADS for the rest (any size but Starlette's 40 gives Gradio's handlers a pool of their own)
        max_threads=options.concurrency + options.queue_size + HANDLER_THREADS,
        app_kwargs={"middleware": [Middleware(BodyLimit, tables=tables)]},
        state_session_capacity=SESSION_MEMORY // SESSION_BYTES,
        show_error=False,  # only our own one-line messages reach the page (gr.Error); the rest is in the log
        **kwargs,
    )


if __name__ == "__main__":
    main()
