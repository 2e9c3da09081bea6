"""Re-decoding what whisper skipped (pipeline/asr/longform/redecode.py): which speech no text covers, what a re-decode
adds, and where the window loop goes on."""

from __future__ import annotations

from dataclasses import replace

import pytest
from stages import SPEECH, heard, said, segment

from pipeline.asr.longform import Decoded
from pipeline.asr.longform.redecode import merge_repeat, missed_speech, skipped, split_around, take_new, uncovered
from pipeline.asr.vad import SpeechMap


@pytest.mark.parametrize(
    ("seek", "next_seek", "decoded_end", "expected"),
    [
        (0, 3000, 11.5, 3000),  # everything up to whisper's next window was decoded
        (0, 1300, 3.9, 980),  # whisper stopped after 4 s and would skip the speech at 10 s: decode it again
        (0, 1300, 11.9, 1300),  # that speech was decoded
        (0, 1300, 10.0, 1030),  # only its first half second was: from 0.2 s before the rest
        (990, 1300, 3.9, 1300),  # never backwards
    ],
)
def test_missed_speech(seek, next_seek, decoded_end, expected):
    assert missed_speech(SPEECH, seek, next_seek, decoded_end) == expected


@pytest.mark.parametrize(
    ("regions", "segments", "expected"),
    [
        # detected speech from 2 to 8 s; 0.5 s of it, or more, that no word covers (0.3 s slack) is decoded again
        (((2.0, 8.0),), [said((" a", 2.0, 2.5), (" b", 7.0, 8.0))], [(2.5 + 0.3, 7.0)]),  # a gap between words
        (((2.0, 8.0),), [said(*((f" w{i}", 2.0 + i, 3.0 + i) for i in range(6)))], []),
        (((2.0, 8.0),), [said(*((f" w{i}", 4.0 + i, 5.0 + i) for i in range(4)))], [(0.0, 4.0)]),  # before the first
        (((2.0, 3.0), (6.0, 8.0)), [said((" a", 2.0, 3.0), (" b", 6.0, 7.0), (" c", 7.0, 8.0))], []),  # no speech
        # a word stretched over 1.5 s covers only its last 1.5 s (the alignment stretched it across a skip)
        (((2.0, 8.0),), [said((" a", 2.0, 2.5), (" b", 2.5, 8.0))], [(2.5 + 0.3, 6.5)]),
        # under a second of speech: not decoded again, all speech (0.7 s here: 8 such decodes found no words) or a
        # burst in a pause (a breath, an "uh")
        (((2.0, 8.0),), [said((" a", 2.0, 3.0), (" b", 4.0, 5.0))], []),
        (((2.0, 3.0), (4.0, 4.6), (7.0, 8.0)), [said((" a", 2.0, 3.0), (" c", 7.0, 8.0))], []),
        (((2.0, 3.0), (4.0, 5.2), (7.0, 8.0)), [said((" a", 2.0, 3.0), (" c", 7.0, 8.0))], [(3.3, 7.0)]),
    ],
)
def test_uncovered(regions, segments, expected):
    found = uncovered(SpeechMap(regions, 100.0), 0.0, segments)
    assert found == [pytest.approx(e) for e in expected]


def _words(n: int, length: float, *, logprob: float) -> Decoded:
    """n words of `length` s each from 16 s."""
    return said(*((f" w{i}", 16.0 + i * length, 16.0 + (i + 1) * length) for i in range(n)), logprob=logprob)


_LOW = (0.05, 0.1, 0.02)  # what the alignment gives words it hardly hears


def _seconds(start: float, end: float) -> Decoded:
    """A segment of one-second words from start to end."""
    return said(*((f" w{t}", float(t), float(t) + 1) for t in range(int(start), int(end))))


@pytest.mark.parametrize(
    ("regions", "found", "expected"),
    [
        # whisper skipped speech from 2 to 20 s, and decoded again it wrote `found`. What it skipped again: the next
        # detected speech 0.3 s or more after that text, if 0.5 s of it or more lies before 20 s
        (((2.0, 5.0), (6.0, 12.0)), [_seconds(2, 5)], [(6.0, 20.0)]),
        (((2.0, 12.0),), [_seconds(2, 5)], [(5.3, 20.0)]),  # (the text ended inside a region: from just after it)
        (((2.0, 5.0), (6.0, 12.0)), [_seconds(2, 5), _seconds(6, 12)], []),  # all of it
        (((2.0, 5.0), (19.7, 25.0)), [_seconds(2, 5)], []),  # 0.3 s of speech left before 20 s
        (((2.0, 5.0), (20.0, 25.0)), [_seconds(2, 5)], []),  # none before 20 s
        (((2.0, 5.0), (6.0, 12.0)), [], []),  # it found nothing: whisper is sure nothing is there
        # and, as uncovered, speech before its text: here its first sentence, once more
        (((2.0, 5.0), (6.0, 12.0)), [_seconds(6, 12)], [(1.0, 6.0)]),
        (((2.0, 5.0), (6.0, 9.0), (10.0, 12.0)), [_seconds(6, 9)], [(1.0, 6.0), (10.0, 20.0)]),
    ],
)
def test_skipped(regions, found, expected):
    assert skipped(SpeechMap(regions, 100.0), 1.0, found, 20.0) == [pytest.approx(e) for e in expected]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([3.0], [(" a", (1, 2)), (" b c", ())]),  # speech decoded again at 3 s, between a and b: split there
        ([8.0], [(" a b c", (1, 2))]),  # elsewhere: as it was
        ([], [(" a b c", (1, 2))]),
    ],
)
def test_split_around(found, expected):
    seg = said((" a", 1.0, 2.0), (" b", 5.0, 5.5), (" c", 5.5, 6.0))
    parts = split_around([seg], [segment("...", t, t + 1.0) for t in found])
    assert [(" " + p.text, p.tokens) for p in parts] == expected
    assert [(p.start, p.end) for p in parts] == [(p.words[0].start, p.words[-1].end) for p in parts]


@pytest.mark.parametrize(
    ("found", "repeated", "expected"),
    [
        # the window wrote "... of about | 1455, that the" with "1455," placed late, at 17.4 s; its speech, 16-17 s,
        # looked skipped, and decoded again it said "1455": the same words, which take the re-decode's times
        (said((" 1455", 16.0, 17.0)), True, [("about", 15.7, 16.0), ("1455,", 16.0, 17.0), ("that", 18.0, 18.2)]),
        (said((" about", 16.0, 16.2)), True, [("about", 16.0, 16.2), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)]),
        (
            said((" 1455", 16.0, 16.5), (" that", 16.5, 17.0)),
            True,  # (two words: the two after it)
            [("about", 15.7, 16.0), ("1455,", 16.0, 16.5), ("that", 16.5, 17.0)],
        ),
        # other words, or only some of the same ones: speech whisper skipped, kept
        (
            said((" in", 16.0, 16.2), (" 1455", 16.2, 17.0)),
            False,
            [("about", 15.7, 16.0), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)],
        ),
        (said((" printed", 16.0, 17.0)), False, [("about", 15.7, 16.0), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)]),
    ],
)
def test_merge_repeat(found, repeated, expected):
    segments = [said((" of", 15.2, 15.7), (" about", 15.7, 16.0)), said((" 1455,", 17.4, 18.0), (" that", 18.0, 18.2))]
    retimed = merge_repeat(found, segments)
    assert (retimed is not None) is repeated
    segments = retimed or segments
    words = [w for seg in segments for w in seg.words][1:]
    assert [(w.word.strip(), w.start, w.end) for w in words] == expected
    assert [(seg.start, seg.end) for seg in segments] == [
        (seg.words[0].start, max(seg.words[-1].end, end)) for seg, end in zip(segments, (16.0, 18.2))
    ]


@pytest.mark.parametrize(
    ("found", "new"),
    [
        # what a re-decode found beside "of about | 1455, that": kept if it is speech the window's text lacks
        (said((" Thank", 16.0, 16.3), (" you.", 16.3, 16.6)), False),  # whisper's filler over a breath
        (said((" Thanks", 16.0, 16.3), (" for", 16.3, 16.5), (" watching!", 16.5, 17.0)), False),
        (said((" 1455", 16.0, 17.0)), False),  # the words after it said again
        (said((" printed", 16.0, 17.0)), True),  # speech whisper skipped
        (said((" Thank", 16.0, 16.3), (" you", 16.3, 16.6), (" all.", 16.6, 17.0)), True),  # not just the filler
        (said((" printed", 16.0, 17.0), logprob=-0.46), True),  # (the least sure of the real finds)
        # under -0.6, whisper is unsure of its tokens: kept only if the words pass whisper's test for made-up text.
        # Made up over 0.74 s of "psalters" (the speed benchmark's pauses recording) and "so" in another composition
        # (their word probabilities were not recorded: here as low as seed 5's below)
        (
            heard(said((" That's", 16.0, 16.2), (" all", 16.2, 16.4), (" for now.", 16.4, 16.7), logprob=-0.92), _LOW),
            False,
        ),
        (heard(said((" so", 16.0, 16.4), logprob=-0.78), (0.1,)), False),
        # development seed 5: 24 words over 2.4 s of one voice, "nor of my antecedents" said twice
        (heard(_words(24, 0.1, logprob=-0.72), (0.11, 0.03, 0.03, 0.03, 0.0, 0.01, 0.05, 0.28)), False),
        # seed 18: a fast falsetto voice read right, "I really don't know how to talk like this." (8 of 9 words)
        (heard(_words(9, 0.25, logprob=-0.70), (0.79, 0.92, 0.98, 0.93, 0.67, 0.59, 0.81, 0.98, 0.99)), True),
        (heard(said((" printed", 16.0, 17.0), logprob=-0.6), (0.9,)), True),
        (heard(said((" printed", 16.0, 17.0), logprob=-0.6), (0.1,)), False),  # (one word under 0.15: made up)
        (heard(said((" printed", 16.0, 16.05), logprob=-0.6), (0.9,)), False),  # (0.05 s: too short a word)
        (heard(said((" printed", 16.0, 17.0), logprob=-1.1), (0.9,)), False),  # under whisper's logprob_threshold
        (replace(said((" printed", 16.0, 17.0), logprob=-0.7), words=None), False),  # not timed: sure or nothing
    ],
)
def test_take_new(found, new):
    segments = [said((" of", 15.2, 15.7), (" about", 15.7, 16.0)), said((" 1455,", 17.4, 18.0), (" that", 18.0, 18.2))]
    kept, retimed = take_new([found], segments, floor=-1.0)
    assert kept == ([found] if new else [])
    assert len(retimed) == len(segments) and all(s.text == r.text for s, r in zip(segments, retimed))
