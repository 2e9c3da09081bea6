"""The page's cue table ([File,] Start, End, [Speaker,] Text; lines joined by " / ") to subtitle text and back."""

from __future__ import annotations

import re

from pipeline.errors import SubtitleError
from pipeline.subtitles.formats import voice_tag, vtt_text
from pipeline.subtitles.read import MAX_CUE_CHARS, MAX_CUES, MAX_HOUR_DIGITS, cue_too_long

MAX_NAME_CHARS = 40  # characters of a speaker's name


_TIME_CELL = re.compile(rf"(\d{{1,{MAX_HOUR_DIGITS}}}:)?\d{{1,2}}:\d{{2}}([.,]\d{{1,3}})?")  # a time in the cue table


def cue_table(rows: list[list[str]], several: bool) -> dict:
    """The cue table: [File,] Start, End, Speaker, Text; the Speaker column only when some cue has one."""
    if not any(r[-2] for r in rows):
        rows = [r[:-2] + r[-1:] for r in rows]
        return {"headers": ["File", "Start", "End", "Text"] if several else ["Start", "End", "Text"], "data": rows}
    headers = ["Start", "End", "Speaker", "Text"]
    return {"headers": ["File", *headers] if several else headers, "data": rows}


def table_to_subtitles(cells: list[tuple[str, str, str, str]]) -> str:
    """The cue table's cells (table_cells) as SRT text, or WebVTT when a cue has a speaker; SubtitleError for a time
    that is not one, or a table over the limits."""
    if len(cells) > MAX_CUES:
        raise SubtitleError(f"The table has more than {MAX_CUES} cues: make the files from fewer")
    vtt = any(speaker for _, _, speaker, _ in cells)
    blocks = []
    for n, (start, end, speaker, text) in enumerate(cells, start=1):
        if len(text) > MAX_CUE_CHARS:
            raise cue_too_long(n)
        if len(speaker) > MAX_NAME_CHARS:
            raise SubtitleError(f"Cue {n}: a speaker's name is at most {MAX_NAME_CHARS} characters")
        for name, value in (("start", start), ("end", end)):
            if not _TIME_CELL.fullmatch(value[:40]):
                raise SubtitleError(f"Cue {n}: the {name} {value[:40]!r} is not a time like 00:01:02.500")
        lines = [line.strip() for line in text.split(" / ")]
        if vtt:
            stamp = [v.replace(",", ".") if "." in v or "," in v else v + ".000" for v in (start, end)]
            body = voice_tag(speaker or None) + "\n".join(vtt_text(line) for line in lines)
            blocks.append(f"{stamp[0]} --> {stamp[1]}\n{body}")
        else:
            stamp = [v.replace(".", ",") if "." in v or "," in v else v + ",000" for v in (start, end)]
            blocks.append(f"{n}\n{stamp[0]} --> {stamp[1]}\n" + "\n".join(lines))
    return ("WEBVTT\n\n" if vtt else "") + "\n\n".join(blocks) + "\n"


def table_cells(table) -> list[tuple[str, str, str, str]]:
    """(start, end, speaker, text) of each row that holds anything, by the table's headers."""
    headers, rows = _headers_and_rows(table)
    if len(rows) > MAX_CUES:
        raise SubtitleError(f"The table has more than {MAX_CUES} cues: make the files from fewer")
    rows = [[str(v if v is not None else "").strip() for v in r] for r in rows if any(str(v).strip() for v in r)]
    at = {name: i for i, name in enumerate(headers)}
    if not {"Start", "End", "Text"} <= set(at):
        return [(*r[-3:-1], "", r[-1]) for r in rows if len(r) >= 3]
    speaker = at.get("Speaker")
    return [
        (r[at["Start"]], r[at["End"]], r[speaker] if speaker is not None else "", r[at["Text"]])
        for r in rows
        if len(r) == len(headers)
    ]


def rename_speaker(table, old: str, new: str) -> dict:
    """The cue table with every cue of speaker `old` given to `new` (a new name, or another speaker's)."""
    old, new = " ".join((old or "").split()), " ".join((new or "").split())
    if not new or len(new) > MAX_NAME_CHARS:
        raise SubtitleError(f"Give the speaker a name of 1 to {MAX_NAME_CHARS} characters")
    headers, rows = _headers_and_rows(table)
    if "Speaker" not in headers or not any(r[headers.index("Speaker")] == old for r in rows):
        raise SubtitleError(f"No cue has the speaker {old!r}: type a name from the Speaker column")
    at = headers.index("Speaker")
    return {"headers": headers, "data": [[*r[:at], new if r[at] == old else r[at], *r[at + 1 :]] for r in rows]}


def _headers_and_rows(table) -> tuple[list[str], list[list]]:
    """The table's headers and rows, from Gradio's DataFrame or the API's dict (None: empty)."""
    if isinstance(table, dict | None):
        return list((table or {}).get("headers") or []), [list(r) for r in (table or {}).get("data") or []]
    return list(table.columns), table.values.tolist()
