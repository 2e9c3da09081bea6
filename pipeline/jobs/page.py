"""What the page shows, without Gradio: its status and media lines, the cue checker's report, the style fields of an
ASS file, and whether cues belong to the inputs on the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pipeline.asr.languages import LANGUAGES
from pipeline.asr.precision import resolve_precision
from pipeline.errors import SubtitleError
from pipeline.jobs.spec import JobResult, JobSpec, Source, SubtitleText, voices_found
from pipeline.media.audio import hms
from pipeline.media.video import PREVIEW_SECONDS
from pipeline.subtitles.ass import read_ass, style_of
from pipeline.subtitles.check import check, parse_srt
from pipeline.subtitles.formats import format_timestamp
from pipeline.subtitles.read import is_ass, read_subtitles
from pipeline.subtitles.table import table_cells, table_to_subtitles

# the choices of the page's form: (label, value)
FORMAT_CHOICES = [
    ("SRT", "srt"),
    ("WebVTT", "vtt"),
    ("Plain text", "txt"),
    ("JSON (with timings)", "json"),
    ("ASS (styled, for Aegisub)", "ass"),
    ("RTTM (who speaks when)", "rttm"),
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


def status_line(line: str, elapsed: float) -> str:
    """The page's one progress line: the job's own (stage · % · time left) and the time since it started."""
    return f"{escape_markdown(line)} · {hms(elapsed)} elapsed"


def cue_problems(table) -> str:
    """What in the (edited) cue table breaks the readability rules, one line per cue; empty when nothing does. The
    work is linear in the table, which cues_to_srt bounds."""
    try:
        cells = table_cells(table)
        if not cells:
            return ""
        problems = check(parse_srt(table_to_subtitles(cells)))
    except SubtitleError as e:
        return f"**{escape_markdown(str(e))}**"
    lines = [f"- cue {p.index}: {p.rule}: {escape_markdown(p.detail)}" for p in problems]
    return (
        ("**Breaks the readability rules:**\n" + "\n".join(lines)) if lines else "All cues pass the readability rules."
    )


def media_lines(sources: list[Source], languages: list[str] = ()) -> str:
    """One line per input: title · duration · language (once known)."""
    lines = []
    for i, s in enumerate(sources):
        facts = [hms(s.duration)] if s.duration else []
        facts += [languages[i]] if i < len(languages) and languages[i] else []
        lines.append(" · ".join([f"**{escape_markdown(s.title)}**", *facts]))
    return "\n\n".join(lines)


def escape_markdown(text: str) -> str:
    """Titles come from files and web pages: show them as text, never as Markdown or HTML."""
    return "".join("\\" + c if c in "\\`*_[]<>!|~" else c for c in text)


def cue_time(seconds: float) -> str:
    return format_timestamp(seconds, ".")


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


def picker_colour(colour: str) -> str:
    """Gradio's colour picker gives #rrggbb, or rgba(r, g, b, a) in some browsers."""
    if m := re.match(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)", colour or ""):
        return "#" + "".join(f"{round(float(v)):02X}" for v in m.groups())
    return colour


def inputs_named(files: list[str] | None, url: str | None) -> list[str]:
    """The inputs on the page, by name: the files' names, then the link."""
    return [Path(f).name for f in files or []] + ([url.strip()] if url and url.strip() else [])


def origin_problem(made_from: list[str] | None, files: list[str] | None, url: str | None) -> str:
    """Why the cue table cannot be made into files of the inputs on the page ("" when it can): its cues came from
    other inputs. Cues from no job (`made_from` None: typed, or sent through the API) go on any input."""
    now = inputs_named(files, url)
    if not made_from or now == made_from:
        return ""
    new = ", ".join(now) or "the new file"
    return f"These cues are from {', '.join(made_from)}, not {new}: press Generate subtitles for {new} first"


def done_line(result: JobResult, spec: JobSpec, took: float) -> str:
    """The status line of a finished job, naming what was done: transcribed, made from cues, burned in; notes and
    failures after it."""
    burned = any(f.burned for f in result.files)
    if spec.subtitles is None:
        audio = sum(f.result.info.duration for f in result.files)
        line = f"Done: {hms(audio)} of audio transcribed" + (" and burned into the video" if burned else "")
    else:
        given = "your edited cues" if isinstance(spec.subtitles, SubtitleText) else Path(spec.subtitles).name
        line = f"Made the files from {given}" + (" and burned them into the video" if burned else "")
    line += f" in {hms(took)}."
    voices = [f.result.voices for f in result.files if f.result.voices is not None]
    if voices:
        found = " and ".join(dict.fromkeys(voices_found(n) for n in voices))
        line += f" {found} found" + ("." if spec.speakers is None or spec.speakers.speakers else
                                     ": if you know how many speak, give the number under Advanced options.")  # fmt: skip
    line += "".join(f" {note}" for f in result.files for note in f.notes)
    if result.failed:
        line += " Failed: " + "; ".join(f.message for f in result.failed)
    return line
