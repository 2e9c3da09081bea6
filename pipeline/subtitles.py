"""Subtitle files from cues: SRT, WebVTT, plain text, JSON. Pure functions, text in, text out.

Every writer first passes the cues through `clean_cues`, which guarantees what players and editors rely on:
cues are in order, never go backwards, never overlap, never pass the end of the media, and have text.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from pipeline.errors import SubtitleError
from pipeline.segment import Cue

FORMATS = ("srt", "vtt", "txt", "json")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>|\{\\[^}]*\}")  # <i>, <font ...>, {\an8}: not shown, not counted
_TAG_START = re.compile(r"<(?=[a-zA-Z/])")  # what would open a tag in SRT text
_CUE_TIMES = re.compile(
    r"^\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})\s*-->\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})(?:\s.*)?$"
)


def format_timestamp(seconds: float | None, separator: str = ",") -> str:
    """HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (VTT); hours are not limited to two digits."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    ms = round(seconds * 1000)
    h, ms = divmod(ms, 3_600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{separator}{ms:03d}"


def clean_cues(cues: Iterable[Cue], duration: float | None = None) -> list[Cue]:
    """Drop empty cues; clamp to [0, duration]; make starts non-decreasing and ends not past the next start.

    A cue that starts inside the previous one cuts the previous one short; a cue that starts before the previous
    one's start is moved after it.
    """
    out: list[Cue] = []
    for seg in cues:
        text = "\n".join(" ".join(line.split()) for line in seg.text.splitlines() if line.strip())  # keeps lines
        if not text:
            continue
        start = max(seg.start, 0.0)
        if out and start < out[-1].start:  # starts before the previous cue: it goes after it instead
            start = out[-1].end
        end = seg.end if seg.end is not None and math.isfinite(seg.end) else start
        if duration is not None:
            start, end = min(start, duration), min(end, duration)
        if out and out[-1].end > start:  # overlap: the earlier cue gives way
            out[-1] = replace(out[-1], end=start)
            if out[-1].end <= out[-1].start:
                out.pop()
        if end <= start:
            continue
        out.append(replace(seg, start=start, end=end, text=text))
    return out


def to_srt(cues: Sequence[Cue], duration: float | None = None) -> str:
    blocks = [
        f"{i}\n{format_timestamp(s.start)} --> {format_timestamp(s.end)}\n{srt_text(s.text)}\n"
        for i, s in enumerate(clean_cues(cues, duration), start=1)
    ]
    return "\n".join(blocks)


def to_vtt(cues: Sequence[Cue], duration: float | None = None) -> str:
    blocks = [
        f"{format_timestamp(s.start, '.')} --> {format_timestamp(s.end, '.')}\n{vtt_text(s.text)}\n"
        for s in clean_cues(cues, duration)
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def srt_text(text: str) -> str:
    """Cue text as SRT text, where it cannot be read as more than text: SRT has no escapes, so an arrow "-->" (a
    timing line to a parser) becomes "->" and a "<" that would open a tag ("<i", "</", "<font") becomes "‹"."""
    return _TAG_START.sub("‹", text.replace("-->", "->"))


def vtt_text(text: str) -> str:
    """Cue text as WebVTT text: &, < and > escaped (so neither a tag nor "-->" can be read in it)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_txt(cues: Sequence[Cue], duration: float | None = None) -> str:
    return "".join(f"{' '.join(s.text.splitlines())}\n" for s in clean_cues(cues, duration))


def to_json(cues: Sequence[Cue], language: str, duration: float) -> str:
    out = []  # (under "segments", as whisper's own JSON has them)
    for s in clean_cues(cues, duration):
        cue = {"start": s.start, "end": s.end, "text": s.text}
        if s.words is not None:
            cue["words"] = [
                {"start": w.start, "end": w.end, "word": w.word, "probability": w.probability} for w in s.words
            ]
        out.append(cue)
    return (
        json.dumps({"language": language, "duration": duration, "segments": out}, ensure_ascii=False, indent=1) + "\n"
    )


def render(fmt: str, cues: Sequence[Cue], language: str, duration: float) -> str:
    """The text of one subtitle file in format `fmt` (one of FORMATS)."""
    if fmt == "srt":
        return to_srt(cues, duration)
    if fmt == "vtt":
        return to_vtt(cues, duration)
    if fmt == "txt":
        return to_txt(cues, duration)
    if fmt == "json":
        return to_json(cues, language, duration)
    raise ValueError(f"unknown subtitle format {fmt!r}")


def parse(text: str) -> list[Cue]:
    """The cues of an SRT or WebVTT file, in file order. Cue numbers, VTT headers, NOTE/STYLE blocks, cue settings
    and inline tags (<i>, <c.x>, {\\an8}) are dropped, and so are cues without text; a cue's line breaks are kept.
    Raises SubtitleError when the text holds no cue at all."""
    cues = [Cue(start, end, body) for start, end, body in cue_blocks(text) if body]
    if not cues:
        raise SubtitleError("No cues found: the subtitles must be an SRT or WebVTT file")
    return cues


def cue_blocks(text: str) -> Iterator[tuple[float, float, str]]:
    """(start, end, text) of each cue of SRT or WebVTT text, empty ones too; tolerant of a BOM, CRLF, '.' for ',',
    missing or wrong cue numbers and extra blank lines."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    vtt = text.startswith("WEBVTT")
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.strip("\n").split("\n")
        at = next((i for i, line in enumerate(lines[:2]) if _CUE_TIMES.match(line)), None)
        if at is None:
            continue
        m = _CUE_TIMES.match(lines[at])
        body = [_TAG.sub("", line).strip() for line in lines[at + 1 :]]
        if vtt:  # (entities are WebVTT's; SRT has none)
            body = [html.unescape(line) for line in body]
        yield _seconds(m.group(1)), _seconds(m.group(2)), "\n".join(line for line in body if line)


def _seconds(stamp: str) -> float:
    *hm, s = stamp.replace(",", ".").split(":")
    h, m = (0, *map(int, hm))[-2:] if len(hm) < 2 else map(int, hm)
    return h * 3600 + m * 60 + float(s)
