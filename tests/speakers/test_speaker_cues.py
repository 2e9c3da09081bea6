"""Cues with speakers: segmentation never spans a change of speaker; how speakers show in each format. Pure
functions, table-driven."""

from __future__ import annotations

import json

import pytest

from pipeline.asr.results import Segment, Word
from pipeline.jobs.subtitling import speaking, whole_sentences
from pipeline.media.video import Style, to_ass
from pipeline.speakers.turns import Turn, speakers_of, turn_options
from pipeline.subtitles.cues import Cue, CueRules, cues_from_words
from pipeline.subtitles.formats import shown, to_json, to_srt, to_txt, to_vtt
from pipeline.subtitles.read import parse
from pipeline.subtitles.table import rename_speaker, table_cells, table_to_subtitles

A, B, C = "Speaker 1", "Speaker 2", "Speaker 3"


def said(*words: tuple[str, float, float, str | None]) -> list[Word]:
    return [Word(start, end, text, 0.9, who) for text, start, end, who in words]


@pytest.mark.parametrize(
    ("words", "cues"),
    [
        pytest.param(
            said((" How", 0.0, 0.3, A), (" are", 0.3, 0.5, A), (" you?", 0.5, 0.8, A), (" Fine.", 0.9, 1.2, B)),
            [("How are you?", A), ("Fine.", B)],
            id="a question and its answer, no pause: two cues",
        ),
        pytest.param(
            said((" I", 0.0, 0.2, A), (" think", 0.2, 0.5, A), (" so", 0.5, 0.7, B), (" too.", 0.7, 1.0, B)),
            [("I think", A), ("so too.", B)],
            id="mid-sentence: still cut at the change",
        ),
        pytest.param(
            said((" One", 0.0, 0.3, A), (" two", 0.3, 0.6, A), (" three.", 0.6, 0.9, A)),
            [("One two three.", A)],
            id="one speaker: one cue",
        ),
        pytest.param(
            said((" One", 0.0, 0.3, None), (" two.", 0.3, 0.6, None)),
            [("One two.", None)],
            id="no speakers known: as before",
        ),
    ],
)
def test_a_cue_never_spans_a_change_of_speaker(words, cues):
    got = cues_from_words(words, CueRules())
    assert [(c.text, c.speaker) for c in got] == cues
    assert all({w.speaker for w in c.words} == {c.speaker} for c in got)


@pytest.mark.parametrize(
    ("words", "speakers"),
    [
        pytest.param(
            said((" I", 0.0, 0.2, A), (" need", 0.2, 0.4, B), (" to", 0.4, 0.5, B), (" design.", 0.5, 1.0, B)),
            [B] * 4,
            id="a label flickers at a sentence's start: the sentence goes to who says most of it",
        ),
        pytest.param(
            said(
                (" So", 0.0, 0.2, A),
                (" I", 0.2, 0.3, A),
                (" don't", 0.3, 0.6, A),
                (" hear", 0.6, 0.8, B),
                (" that.", 0.8, 1.0, B),
            ),  # fmt: skip
            [A] * 5,
            id="a change mid-sentence, no pause: one speaker",
        ),
        pytest.param(
            said((" Hello?", 0.0, 0.4, A), (" Hi,", 0.5, 0.7, B), (" it's", 0.7, 0.9, B), (" me.", 0.9, 1.2, B)),
            [A, B, B, B],
            id="a short first turn that ends a sentence keeps its own speaker",
        ),
        pytest.param(
            said((" and", 0.0, 0.2, A), (" so", 0.2, 0.4, A), (" yeah", 0.65, 0.9, B), (" right", 0.9, 1.2, B)),
            [A, A, B, B],
            id="a change where the words are TURN_SENTENCE_GAP apart is kept, punctuation or not",
        ),
        pytest.param(
            said((" and", 0.0, 0.2, A), (" so", 0.2, 0.4, A), (" yeah", 0.55, 0.9, B), (" right", 0.9, 1.3, B)),
            [B] * 4,
            id="closer: one breath, one speaker",
        ),
        pytest.param(said((" One", 0.0, 0.3, None), (" two.", 0.3, 0.6, None)), [None, None], id="none known"),
        pytest.param([], [], id="no words"),
    ],
)
def test_whole_sentences(words, speakers):
    assert whole_sentences(words, [w.speaker for w in words]) == speakers


def test_rebalancing_never_moves_words_across_a_change_of_speaker():
    """A fast first cue would take words from the second to be readable: not from another speaker."""
    fast = [(f" w{i}", i * 0.1, i * 0.1 + 0.1, A) for i in range(12)]
    words = said(*fast, (" and", 1.2, 1.4, B), (" then", 1.4, 1.6, B), (" more.", 1.6, 2.5, B))
    got = cues_from_words(words, CueRules())
    assert [c.speaker for c in got] == [A, B] and got[1].text == "and then more."


def cue(start: float, end: float, text: str, speaker: str | None) -> Cue:
    return Cue(start, end, text, None, speaker)


@pytest.mark.parametrize(
    ("cues", "labels", "expected"),
    [
        pytest.param([cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine.", B)], "dashes",
                     [(0, 2.2, "- How are you?\n- Fine.")], id="a quick exchange: one dialogue cue"),
        pytest.param([cue(0, 2.0, "How are you?", A), cue(3.0, 4.0, "Fine.", B)], "dashes",
                     [(0, 2.0, "How are you?"), (3.0, 4.0, "Fine.")], id="an answer 3 s later: two cues"),
        pytest.param([cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine.", A)], "dashes",
                     [(0, 1.2, "How are you?"), (1.4, 2.2, "Fine.")], id="the same speaker: no dashes"),
        pytest.param([cue(0, 1.2, "How are you?\non this fine day", A), cue(1.4, 2.2, "Fine.", B)], "dashes",
                     [(0, 1.2, "How are you?\non this fine day"), (1.4, 2.2, "Fine.")],
                     id="a cue of two lines: no room for a dialogue cue"),
        pytest.param([cue(0, 1.0, "Yes.", A), cue(1.1, 2.0, "No.", B), cue(2.1, 3.0, "Yes!", C)], "dashes",
                     [(0, 2.0, "- Yes.\n- No."), (2.1, 3.0, "Yes!")], id="three in a row: a pair, then one"),
        pytest.param([cue(0, 1.2, "Hi.", None), cue(1.4, 2.2, "Hello.", None)], "dashes",
                     [(0, 1.2, "Hi."), (1.4, 2.2, "Hello.")], id="no speakers: as they are"),
        pytest.param([cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine.", B), cue(2.4, 3.0, "Good.", B)],
                     "names", [(0, 1.2, "Speaker 1: How are you?"), (1.4, 2.2, "Speaker 2: Fine."),
                               (2.4, 3.0, "Good.")], id="names: where the speaker changes"),
        pytest.param([cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine.", B)], "none",
                     [(0, 1.2, "How are you?"), (1.4, 2.2, "Fine.")], id="none: a new cue only"),
    ],
)  # fmt: skip
def test_shown(cues, labels, expected):
    srt = to_srt(cues, None, labels)
    assert [(c.start, c.end, c.text) for c in parse(srt)] == expected
    assert len(shown(cues, labels)) == len(expected)


def test_webvtt_voices_are_written_and_read_back():
    cues = [cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine & <you>?", "Ann <B>"), cue(5, 6, "Hm.", None)]
    vtt = to_vtt(cues, None, "dashes")
    assert vtt == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:02.200\n<v Speaker 1>- How are you?\n<v Ann &lt;B&gt;>- Fine &amp; &lt;you&gt;?\n"
        "\n00:00:05.000 --> 00:00:06.000\nHm.\n"
    )
    plain = to_vtt(cues, None, "none")
    assert [(c.text, c.speaker) for c in parse(plain)] == [
        ("How are you?", A), ("Fine & <you>?", "Ann <B>"), ("Hm.", None)
    ]  # fmt: skip


def test_json_carries_the_speaker_of_each_cue_and_word():
    words = (Word(0.0, 0.5, " Hi.", 0.9, A),)
    data = json.loads(to_json([Cue(0.0, 0.5, "Hi.", words, A), cue(1.0, 2.0, "Bye.", None)], "en", 3.0))
    first, second = data["segments"]
    assert first["speaker"] == A and first["words"][0]["speaker"] == A
    assert "speaker" not in second


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ("dashes", "Speaker 1: Hi. How are you?\n\nSpeaker 2: Fine.\n"),
        ("names", "Speaker 1: Hi. How are you?\n\nSpeaker 2: Fine.\n"),
        ("none", "Hi.\nHow are you?\nFine.\n"),
    ],
)
def test_the_transcript_has_a_paragraph_per_turn(labels, expected):
    cues = [cue(0, 1, "Hi.", A), cue(1.5, 2.5, "How are\nyou?", A), cue(3, 4, "Fine.", B)]
    assert to_txt(cues, None, labels) == expected


def test_each_speaker_burns_in_a_colour_of_their_own():
    """The first speaker keeps the text colour; the next take yellow, cyan, green; a dialogue cue's lines each
    their own speaker's colour."""
    cues = [cue(0, 1, "Hi.", A), cue(1.2, 2, "Yes?", B), cue(5, 6, "Go on.", A), cue(8, 9, "Wait.", C)]
    ass = to_ass(cues, 1280, 720, style=Style(speaker_colours=True), language="en", labels="dashes")
    events = [line.split(",,", 1)[1] for line in ass.splitlines() if line.startswith("Dialogue:")]
    assert events == [
        "0,0,0,,{\\c&HFFFFFF&}- Hi.\\N{\\c&H00FFFF&}- Yes?",
        "0,0,0,,{\\c&HFFFFFF&}Go on.",
        "0,0,0,,{\\c&HFFFF00&}Wait.",
    ]
    assert "\\c&H" not in to_ass(cues, 1280, 720, style=Style(), language="en", labels="dashes")


@pytest.mark.parametrize(
    ("span", "speaker"),
    [
        ((0.2, 0.5), A),  # inside the first turn
        ((1.8, 2.4), B),  # mostly in the second
        ((2.9, 3.1), B),  # between turns, nearer the second's end
        ((3.6, 3.8), C),  # between turns, nearer the third
        ((9.0, 9.5), C),  # after the last
    ],
)
def test_speakers_of(span, speaker):
    turns = [Turn(0.0, 2.0, 0), Turn(2.0, 2.8, 1), Turn(4.0, 6.0, 2)]
    assert speakers_of(turns, [span]) == [speaker]
    assert speakers_of([], [span]) == [None]


@pytest.mark.parametrize(
    ("value", "speakers"),
    [("off", "off"), ("", "off"), (None, "off"), ("auto", None), ("AUTO", None), ("3", 3), (2, 2)],
)
def test_turn_options(value, speakers):
    got = turn_options(value)
    assert (got is None) if speakers == "off" else got.speakers == speakers


@pytest.mark.parametrize("value", ["0", "21", "two", "-1", "2.5"])
def test_turn_options_refuse_what_is_not_a_count(value):
    from pipeline.errors import OptionError

    with pytest.raises(OptionError):
        turn_options(value)


@pytest.mark.parametrize(
    ("table", "cells"),
    [
        pytest.param({"headers": ["Start", "End", "Text"], "data": [["00:00:01.000", "00:00:02.000", "Hi"]]},
                     [("00:00:01.000", "00:00:02.000", "", "Hi")], id="no speakers"),
        pytest.param({"headers": ["Start", "End", "Speaker", "Text"],
                      "data": [["00:00:01.000", "00:00:02.000", " Alice ", "Hi"], ["", "", "", ""]]},
                     [("00:00:01.000", "00:00:02.000", "Alice", "Hi")], id="speakers; empty rows left out"),
        pytest.param({"headers": ["File", "Start", "End", "Speaker", "Text"],
                      "data": [["a.mp4", "00:00:01.000", "00:00:02.000", "Bob", "Hi"]]},
                     [("00:00:01.000", "00:00:02.000", "Bob", "Hi")], id="several files"),
        pytest.param({"data": [["00:00:01.000", "00:00:02.000", "Hi"]]},
                     [("00:00:01.000", "00:00:02.000", "", "Hi")], id="no headers (an API call): Start, End, Text"),
    ],
)  # fmt: skip
def test_table_cells(table, cells):

    assert table_cells(table) == cells


def test_the_tables_speakers_come_back_in_the_cues():
    """The edited table goes through WebVTT voices: each cue keeps the speaker its row has."""

    cells = [("00:00:01.000", "00:00:02.000", "Alice", "Hi / there"), ("00:00:02.500", "00:00:03.000", "", "<b>&")]
    got = parse(table_to_subtitles(cells))
    assert [(c.start, c.end, c.text, c.speaker) for c in got] == [
        (1.0, 2.0, "Hi\nthere", "Alice"), (2.5, 3.0, "<b>&", None)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "speakers"),
    [
        ("Speaker 1", "Alice", ["Alice", "Speaker 2", "Alice"]),
        (" Speaker  2 ", "Bob", ["Speaker 1", "Bob", "Speaker 1"]),
        ("Speaker 2", "Speaker 1", ["Speaker 1", "Speaker 1", "Speaker 1"]),  # (merging two speakers)
    ],
)
def test_renaming_a_speaker_renames_every_cue_of_theirs(old, new, speakers):

    rows = [["00:00:01.000", "00:00:02.000", s, "Hi"] for s in ("Speaker 1", "Speaker 2", "Speaker 1")]
    table = {"headers": ["Start", "End", "Speaker", "Text"], "data": rows}
    renamed = rename_speaker(table, old, new)
    assert [r[2] for r in renamed["data"]] == speakers and renamed["headers"] == table["headers"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("Speaker 9", "Alice", "No cue has the speaker 'Speaker 9'"),
        ("Speaker 1", "  ", "Give the speaker a name of 1 to 40 characters"),
        ("Speaker 1", "x" * 41, "Give the speaker a name of 1 to 40 characters"),
    ],
)
def test_renaming_says_what_is_wrong(old, new, message):
    from pipeline.errors import SubtitleError

    table = {
        "headers": ["Start", "End", "Speaker", "Text"],
        "data": [["00:00:01.000", "00:00:02.000", "Speaker 1", "Hi"]],
    }
    with pytest.raises(SubtitleError, match=f"^{message}"):
        rename_speaker(table, old, new)


@pytest.mark.slow
def test_a_conversation_of_three_voices_gets_a_speaker_per_cue(ov_model, audio):
    """Three real voices taking turns (2-11 s each, 0.3-0.6 s apart), transcribed with speaker turns found
    automatically: no cue holds two voices, each voice is one speaker throughout, and the files say who speaks."""
    import numpy as np

    from pipeline.asr.options import TranscribeOptions
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.speakers.turns import TurnOptions

    order = [("en_ljs_LJ001-0001", "lj"), ("en_jfk", "jfk"), ("en_librivox_sas01_0880", "sas"),
             ("en_ljs_LJ001-0003", "lj"), ("en_librivox_sas01_0890", "sas"), ("en_jfk", "jfk")]  # fmt: skip
    pieces, spans, t = [], [], 0.0
    for (clip, who), gap in zip(order, [0.4, 0.6, 0.3, 0.5, 0.4, 0.5]):
        samples = audio(clip)
        pieces += [samples, np.zeros(int(gap * 16000), np.float32)]
        spans.append((t, t + len(samples) / 16000, who))
        t += len(samples) / 16000 + gap
    result = subtitle_audio(np.concatenate(pieces), ov_model, TranscribeOptions(language="en"),
                            rules=CueRules(), speakers=TurnOptions())  # fmt: skip

    def voice(word: Word) -> str:
        middle = (word.start + word.end) / 2
        return min(spans, key=lambda s: max(s[0] - middle, middle - s[1], 0.0))[2]

    found: dict[str, set[str]] = {}
    for c in result.cues:
        voices = {voice(w) for w in c.words}
        assert len(voices) == 1, (c.text, voices)  # no cue spans a change of speaker
        found.setdefault(voices.pop(), set()).add(c.speaker)
    assert all(len(names) == 1 and None not in names for names in found.values()), found
    assert len({next(iter(names)) for names in found.values()}) == 3, found  # three voices, three speakers
    assert result.voices == 3  # (what the CLI and the page say: "3 voices found")
    vtt = to_vtt(result.cues, result.info.duration, "dashes")
    assert {line[3 : line.index(">")] for line in vtt.splitlines() if line.startswith("<v ")} == set().union(
        *found.values()
    )


@pytest.mark.slow
def test_one_voice_found_carries_no_speaker_labels(ov_model, audio):
    """Speakers on auto and one voice found (an audiobook's reader): the cues carry no speaker, so the files have no
    "Speaker 1:" and no <v Speaker 1>, and the result says one voice was found (issue 51, item 4)."""
    import numpy as np

    from pipeline.asr.options import TranscribeOptions
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.speakers.turns import TurnOptions

    speech = np.concatenate(
        [audio("en_librivox_sas01_0880"), np.zeros(8000, np.float32), audio("en_librivox_sas01_0890")]
    )
    result = subtitle_audio(speech, ov_model, TranscribeOptions(language="en"), rules=CueRules(),
                            speakers=TurnOptions())  # fmt: skip
    assert result.voices == 1 and result.cues and all(c.speaker is None for c in result.cues)
    assert "<v " not in to_vtt(result.cues, result.info.duration, "dashes")


def test_a_dialogue_cue_keeps_the_jobs_own_cue_rules():
    """Lines of 14 characters with their dashes: one dialogue cue under the default 42 characters a line, two cues
    when the job's rules allow 13, or 1.5 s on screen."""
    from pipeline.subtitles.formats import Labels

    cues = [cue(0, 1.2, "How are you?", A), cue(1.4, 2.2, "Fine.", B)]
    assert len(shown(cues, Labels("dashes"))) == 1
    assert len(shown(cues, Labels("dashes", CueRules(max_line_chars=13)))) == 2
    assert len(shown(cues, Labels("dashes", CueRules(max_duration=1.5)))) == 2


@pytest.mark.slow
def test_speaker_turns_stop_with_a_failed_transcription(ov_model, audio):
    """The turns are found on a thread of their own while whisper decodes; when the decoding fails (a cancelled job),
    the error comes through and the thread ends (test_embedding_stops_when_told: it gives up at its next encoder
    call)."""
    import threading
    import time

    import numpy as np

    from pipeline.asr.options import TranscribeOptions
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.speakers.turns import TurnOptions

    speech = np.concatenate([audio("en_ljs_LJ001-0001"), audio("en_jfk")] * 6)  # 2 min

    def cancel(segment, duration):
        raise KeyboardInterrupt  # what a cancelled job sees

    with pytest.raises(KeyboardInterrupt):
        subtitle_audio(
            speech,
            ov_model,
            TranscribeOptions(language="en"),
            rules=CueRules(),
            on_segment=cancel,
            speakers=TurnOptions(),
        )
    deadline = time.monotonic() + 10
    while any(t.name.startswith("speaker-turns") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("speaker-turns")]


def _said(*speakers: str | None) -> Segment:
    """A segment of one word per speaker (None: a segment without words, its own speaker unknown)."""
    if speakers == (None,):
        return Segment(0.0, 1.0, "", speaker=None)
    words = tuple(Word(float(i), i + 0.5, f" w{i}", speaker=name) for i, name in enumerate(speakers))
    return Segment(0.0, float(len(speakers)), "", words=words, speaker=speakers[0])


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        ([_said("Speaker 1"), _said("Speaker 2")], {"Speaker 1", "Speaker 2"}),
        ([_said("Speaker 1", "Speaker 1")], {"Speaker 1"}),  # a second voice in the turns that says no word: none
        ([_said("Speaker 1", "Speaker 2")], {"Speaker 1", "Speaker 2"}),  # a word's speaker, not only its segment's
        ([Segment(0.0, 1.0, "hm", speaker="Speaker 3"), _said("Speaker 1")], {"Speaker 1", "Speaker 3"}),  # no words
        ([_said(None), _said(None)], set()),
        ([], set()),
    ],
)
def test_speaking(segments, expected):
    assert speaking(segments) == expected
