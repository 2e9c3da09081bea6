"""One subtitle file in any of our formats: the writers of pipeline/subtitles/formats.py and ass.py behind one name."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.subtitles.ass import DEFAULT_SIZE, Style, ass_file
from pipeline.subtitles.cues import Cue
from pipeline.subtitles.formats import Heard, Labels, clean_cues, to_json, to_rttm, to_srt, to_txt, to_vtt

FORMATS = ("srt", "vtt", "txt", "json", "ass", "rttm")


def to_format(
    fmt: str,
    cues: Sequence[Cue],
    *,
    language: str,
    duration: float,
    labels: Labels | str = Labels(),
    style: Style | None = None,
    size: tuple[int, int] | None = None,
    turns: Sequence[Heard] | None = None,
    name: str = "audio",
) -> str:
    """The text of one subtitle file in format `fmt` (one of FORMATS); `labels`: how speakers show; `style`: the look
    of an ASS file on a picture of `size` (width, height), and whether words light up (ASS karaoke, WebVTT times);
    `turns`: who speaks when, the JSON's "speakers" and the RTTM (None: no "speakers"; the RTTM has the cues'
    speakers, cue by cue); `name`: the RTTM's file."""
    if fmt == "srt":
        return to_srt(cues, duration, labels)
    if fmt == "vtt":
        return to_vtt(cues, duration, labels, words=bool(style and style.highlight_words))
    if fmt == "ass":
        width, height = size or DEFAULT_SIZE
        return ass_file(
            clean_cues(cues, duration), width, height, style=style or Style(), language=language, labels=labels
        )
    if fmt == "txt":
        return to_txt(cues, duration, labels)
    if fmt == "json":
        return to_json(cues, language, duration, turns or ())
    if fmt == "rttm":
        return to_rttm(turns if turns is not None else cue_turns(cues, duration), name)
    raise ValueError(f"unknown subtitle format {fmt!r}")


def cue_turns(cues: Sequence[Cue], duration: float | None = None) -> list[Heard]:
    """Who speaks when by the cues alone (edited or imported subtitles): each cue with a speaker, a turn."""
    return [(c.start, c.end, c.speaker) for c in clean_cues(cues, duration) if c.speaker]
