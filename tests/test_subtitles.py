"""Subtitle writers: pure functions, table-driven."""

from __future__ import annotations

import json

import pytest
import srt

from pipeline.segment import Cue, Word
from pipeline.subtitles import clean_cues, format_timestamp, to_json, to_srt, to_txt, to_vtt


@pytest.mark.parametrize(
    ("seconds", "sep", "expected"),
    [
        (0.0, ",", "00:00:00,000"),
        (1.5, ",", "00:00:01,500"),
        (59.9996, ",", "00:01:00,000"),  # rounds into the next minute
        (61.001, ".", "00:01:01.001"),
        (3600 + 2 * 60 + 3.004, ",", "01:02:03,004"),
        (100 * 3600, ",", "100:00:00,000"),
        (None, ",", "00:00:00,000"),  # missing time
        (-3.0, ",", "00:00:00,000"),
        (float("nan"), ".", "00:00:00.000"),
    ],
)
def test_format_timestamp(seconds, sep, expected):
    assert format_timestamp(seconds, sep) == expected


def seg(start, end, text):
    return Cue(start=start, end=end, text=text)


@pytest.mark.parametrize(
    ("segments", "duration", "expected"),
    [
        ([], None, []),
        ([seg(0, 1, "  ")], None, []),  # empty text
        ([seg(0, 1, "a  b\n c")], None, [(0, 1, "a b\nc")]),  # whitespace collapsed, line breaks kept
        ([seg(0, 1, " \n\n a \n")], None, [(0, 1, "a")]),  # blank lines dropped
        ([seg(0, 2, "a"), seg(1, 3, "b")], None, [(0, 1, "a"), (1, 3, "b")]),  # overlap: first gives way
        ([seg(2, 3, "a"), seg(1, 4, "b")], None, [(2, 3, "a"), (3, 4, "b")]),  # never backwards
        ([seg(0, 5, "a"), seg(9, 12, "b")], 10.0, [(0, 5, "a"), (9, 10, "b")]),  # clamped to the media
        ([seg(11, 12, "a")], 10.0, []),  # entirely past the end
        ([seg(1, 1, "a")], None, []),  # zero length
        ([seg(0, float("nan"), "a")], None, []),  # no end time
        ([seg(0, 3, "中文字幕"), seg(3, 4, "b")], None, [(0, 3, "中文字幕"), (3, 4, "b")]),
    ],
)
def test_clean_cues(segments, duration, expected):
    assert [(c.start, c.end, c.text) for c in clean_cues(segments, duration)] == expected


CUES = [seg(0.0, 1.25, "Hello there."), seg(3661.5, 3663.0, "Une heure plus tard, 中文")]


def test_srt_shape_and_parse():
    text = to_srt(CUES)
    assert (
        text
        == "1\n00:00:00,000 --> 00:00:01,250\nHello there.\n\n2\n01:01:01,500 --> 01:01:03,000\nUne heure plus tard, 中文\n"
    )
    parsed = list(srt.parse(text))
    assert [p.content for p in parsed] == [c.text for c in CUES]
    assert parsed[1].start.total_seconds() == 3661.5


def test_vtt_shape():
    assert to_vtt(CUES).startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.250\nHello there.\n\n01:01:01.500 --> ")


def test_txt():
    assert to_txt(CUES) == "Hello there.\nUne heure plus tard, 中文\n"


@pytest.mark.parametrize("with_words", [False, True])
def test_json_schema(with_words):
    words = (Word(0.0, 0.5, " Hello", 0.9), Word(0.5, 1.25, " there.", 0.8)) if with_words else None
    data = json.loads(to_json([Cue(0.0, 1.25, "Hello there.", words=words)], "en", 2.0))
    assert data["language"] == "en" and data["duration"] == 2.0
    (cue,) = data["segments"]
    assert (cue["start"], cue["end"], cue["text"]) == (0.0, 1.25, "Hello there.")
    if with_words:
        assert cue["words"][1] == {"start": 0.5, "end": 1.25, "word": " there.", "probability": 0.8}
    else:
        assert "words" not in cue


@pytest.mark.parametrize(
    "text, in_srt, in_vtt",
    [
        ("Fish & chips", "Fish & chips", "Fish &amp; chips"),
        ("if a < b then", "if a < b then", "if a &lt; b then"),
        ("<i>not a tag</i>", "‹i>not a tag‹/i>", "&lt;i&gt;not a tag&lt;/i&gt;"),
        ("A --> B", "A -> B", "A --&gt; B"),
        ("00:00:05,000 --> 00:00:09,000", "00:00:05,000 -> 00:00:09,000", "00:00:05,000 --&gt; 00:00:09,000"),
    ],
)
def test_cue_text_is_only_text(text, in_srt, in_vtt):
    """What a cue says (a person's edit, a hostile SRT) cannot become a tag, a timing line or a new cue; WebVTT
    escapes it and reads it back as it was."""
    from pipeline.subtitles import parse

    srt_file, vtt_file = to_srt([Cue(1, 2, text)]), to_vtt([Cue(1, 2, text)])
    assert srt_file == f"1\n00:00:01,000 --> 00:00:02,000\n{in_srt}\n"
    assert vtt_file == f"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n{in_vtt}\n"
    assert [c.text for c in parse(vtt_file)] == [text]
    assert len(list(srt.parse(srt_file))) == 1
