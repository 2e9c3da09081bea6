"""Subtitle writers: pure functions, table-driven."""

from __future__ import annotations

import json

import pytest
import srt

from pipeline.asr.results import Word
from pipeline.errors import SubtitleError
from pipeline.subtitles.cues import Cue
from pipeline.subtitles.formats import clean_cues, format_timestamp, to_json, to_rttm, to_srt, to_txt, to_vtt
from pipeline.subtitles.read import MAX_CUE_CHARS, MAX_CUES, MAX_SUBTITLE_CHARS, decode_subtitles, parse
from pipeline.subtitles.write import cue_turns


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


def test_json_says_who_speaks_when():
    turns = [(2.0, 3.5, "Speaker 2"), (0.0, 2.5, "Speaker 1")]  # (overlapping: two at once from 2 to 2.5 s)
    data = json.loads(to_json([Cue(0.0, 3.5, "Hello there.")], "en", 4.0, turns))
    assert data["speakers"] == [
        {"start": 0.0, "end": 2.5, "speaker": "Speaker 1"},
        {"start": 2.0, "end": 3.5, "speaker": "Speaker 2"},
    ]
    assert "speakers" not in json.loads(to_json([Cue(0.0, 3.5, "Hello there.")], "en", 4.0))


@pytest.mark.parametrize(
    ("turns", "name", "rttm"),
    [
        ([], "call", ""),
        ([(1.25, 2.5, "Speaker 1")], "call", "SPEAKER call 1 1.250 1.250 <NA> <NA> Speaker_1 <NA> <NA>\n"),
        # in order of time, overlapping turns both kept; spaces in names would split the fields
        ([(2.0, 3.0, "Ann Lee"), (0.5, 2.25, "Bo")], "my talk", "SPEAKER my_talk 1 0.500 1.750 <NA> <NA> Bo <NA> <NA>\n"
         "SPEAKER my_talk 1 2.000 1.000 <NA> <NA> Ann_Lee <NA> <NA>\n"),
        ([(0.0, 1.0, " ")], " ", "SPEAKER _ 1 0.000 1.000 <NA> <NA> _ <NA> <NA>\n"),
    ],
)  # fmt: skip
def test_rttm(turns, name, rttm):
    assert to_rttm(turns, name) == rttm


def test_edited_cues_say_who_speaks_when_cue_by_cue():
    cues = [Cue(0.0, 1.0, "Hi.", speaker="Ann"), Cue(1.0, 2.0, "Hm."), Cue(2.0, 3.0, "Yes.", speaker="Bo")]
    assert cue_turns(cues) == [(0.0, 1.0, "Ann"), (2.0, 3.0, "Bo")]


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
    from pipeline.subtitles.read import parse

    srt_file, vtt_file = to_srt([Cue(1, 2, text)]), to_vtt([Cue(1, 2, text)])
    assert srt_file == f"1\n00:00:01,000 --> 00:00:02,000\n{in_srt}\n"
    assert vtt_file == f"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n{in_vtt}\n"
    assert [c.text for c in parse(vtt_file)] == [text]
    assert len(list(srt.parse(srt_file))) == 1


HEAD = "1\n00:00:01,000 --> 00:00:02,000\n"


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "<a" * 100_000,  # every "<a" opens a tag that never closes: [^>]* read to the end from each
        HEAD + "{\\" * 100_000,  # the same with override blocks
        HEAD + "</" * 100_000,
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n" + "<a" * 100_000,
    ],
)
def test_no_cue_text_makes_the_parser_go_back_over_it(text):
    """Tags are removed in time linear in the text: 200 k characters of unclosed tags took 15 s before (quadratic),
    and hold the GIL all that time. The cue is over MAX_CUE_CHARS, so parsing refuses it with a message; the tag
    pattern itself is timed on the whole text."""
    import time

    from pipeline.subtitles import read

    started = time.monotonic()
    read._TAG.sub("", text)
    read._VTT_TAG.sub("", text)
    with pytest.raises(SubtitleError, match=rf"^Cue 1 has more than {MAX_CUE_CHARS} characters of text"):
        parse(text)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("x" * (MAX_SUBTITLE_CHARS + 1), r"^The subtitle text is over 2 MB of text"),
        ((HEAD + "hi\n\n") * (MAX_CUES + 1), rf"^The subtitles have more than {MAX_CUES} cues"),
        (HEAD + "y" * (MAX_CUE_CHARS + 1), rf"^Cue 1 has more than {MAX_CUE_CHARS} characters"),
        (HEAD + "ab\n" * (MAX_CUE_CHARS // 2 + 1), rf"^Cue 1 has more than {MAX_CUE_CHARS} characters"),
        ("1\n" + "4" * 400 + ":00:01,000 --> 00:00:02,000\nhi\n", r"^Cue 1 has a time of 444444444444… hours"),
        ("1\n" + "4" * 5000 + ":00:01,000 --> 00:00:02,000\nhi\n", r"^Cue 1 has a time of 444444444444… hours"),
        ("1\n00:00:01,000 --> " + "9" * 20 + ":00:02,000\nhi\n", r"^Cue 1 has a time of 999999999999… hours"),
        ("1\n00:00:01,000 --> 00001:00:02,000\nhi\n", r"^Cue 1 has a time of 00001 hours"),
    ],
)
def test_subtitles_over_the_limits_are_a_message_before_they_are_parsed(text, message):
    with pytest.raises(SubtitleError, match=message):
        parse(text)


@pytest.mark.parametrize(
    "stamp, seconds",
    [("9999:00:00,000", 9999 * 3600), ("01:02:03,5", 3723.5), ("1:02.25", 62.25), ("00:00:00,001", 0.001)],
)
def test_times_within_the_bounds_are_read(stamp, seconds):
    assert parse(f"1\n{stamp} --> {stamp}\nhi\n")[0].start == pytest.approx(seconds)


FR = ["Café déjà vu à l'été.", "Où est la gare, s'il vous plaît ?", "Ça coûte très cher, garçon."]
RU = ["Привет, как дела?", "Это очень хорошо, спасибо."]
JA = ["こんにちは、世界。", "今日はいい天気ですね。"]


def srt_of(lines: list[str]) -> str:
    return "".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},900\n{t}\n\n" for i, t in enumerate(lines, start=1))


@pytest.mark.parametrize(
    "lines, encoding",
    [
        (FR, "utf-8"),
        (FR, "utf-8-sig"),
        (FR, "utf-16"),  # with its byte order mark (was "No cues found")
        (FR, "utf-16-le"),  # without one
        (FR, "utf-32"),
        (FR, "cp1252"),  # Windows' Western European (its accents became U+FFFD)
        (RU, "cp1251"),
        (JA, "shift_jis"),
    ],
)
def test_uploaded_subtitles_are_read_in_their_encoding(lines, encoding):
    assert [c.text for c in parse(decode_subtitles(srt_of(lines).encode(encoding)))] == lines


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_wide_encoding_is_held_to_the_character_limit_too(encoding):
    """A byte order mark let up to 4x the bytes in, for 2- and 4-byte characters: 3.95 M characters got past the
    2-M cap in UTF-16 (issue 49, item 8). The text decoded is held to it."""
    with pytest.raises(SubtitleError, match="^talk.ass is over 2 MB of text"):
        decode_subtitles(("x" * (MAX_SUBTITLE_CHARS + 1)).encode(encoding), "talk.ass")
    assert len(decode_subtitles(("x" * (MAX_SUBTITLE_CHARS - 1)).encode(encoding))) == MAX_SUBTITLE_CHARS - 1


def test_a_subtitle_file_over_the_limit_is_refused_before_it_is_decoded():
    with pytest.raises(SubtitleError, match=r"^talk.srt is over 2 MB of text"):
        decode_subtitles(b"x" * (MAX_SUBTITLE_CHARS + 1), "talk.srt")


@pytest.mark.parametrize(
    "given",
    [
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n&#123;\\an8\\fs300&#125;Up here",  # entities decode to a tag
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n&lbrace;\\an8\\fs300&rbrace;Up here",
        "1\n00:00:01,000 --> 00:00:02,000\n{\\an8\\fs300}Up here",
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<i>{\\an8}</i>Up here",
    ],
)
def test_override_tags_never_reach_the_written_files(given):
    """An SSA override block read from an upload, also spelled with WebVTT entities, is not cue text: it is dropped
    after the entities are decoded, so the SRT (and the soft tracks, made from it) never carries one."""
    cues = parse(given)
    assert [c.text for c in cues] == ["Up here"]


@pytest.mark.parametrize(
    "text, in_srt",
    [
        ("{\\an8}Up here", "{\\\u2060an8}Up here"),  # (from an edit or the audio: inert in SRT, as in burn-in)
        ("a {b} c", "a {b} c"),
        ("back\\slash", "back\\slash"),
    ],
)
def test_srt_text_never_opens_an_override_block(text, in_srt):
    assert to_srt([Cue(1, 2, text)]) == f"1\n00:00:01,000 --> 00:00:02,000\n{in_srt}\n"
