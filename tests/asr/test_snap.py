"""Snapping word times onto the detected speech (pipeline/asr/longform/snap.py)."""

from __future__ import annotations

import pytest
from stages import SPEECH, levels, said, segment, spans

from pipeline.asr.longform.snap import first_word, snap, snap_to_speech, unstretch
from pipeline.asr.vad import SpeechMap

INF = float("inf")


@pytest.mark.parametrize(
    ("span", "limit", "expected"),
    [
        ((0.8, 1.4), INF, (1.0, 1.4)),  # starts before the speech: moved onto its onset
        ((3.5, 4.6), INF, (3.5, 4.0)),  # ends after it: moved onto its end
        ((1.2, 3.0), INF, (1.2, 3.0)),  # inside
        ((4.5, 6.0), INF, (4.5, 6.0)),  # no speech at all: left to the guards
        ((3.8, 10.5), INF, (10.0, 10.5)),  # stretched back across a pause: it belongs to the speech it ends in
        ((5.0, 10.5), INF, (10.0, 10.5)),
        ((5.0, 10.5), 1.0, (5.0, 10.5)),  # a segment's start moves 1 s at most
        ((9.5, 10.5), 1.0, (10.0, 10.5)),
        ((3.0, 9.0), 1.0, (3.0, 9.0)),  # ends 5 s after the speech: the detector missed something, leave it
        ((0.5, 0.9), INF, (0.5, 0.9)),
    ],
)
def test_snap(span, limit, expected):
    assert snap(*span, SPEECH, limit) == expected


# speech at 1-4 s and 6-9 s (-20 dBFS, silence -90); a sound the detector did not call speech at 5.0-5.7 s in WITH_SOUND
QUIET_PAUSE = SpeechMap(((1.0, 4.0), (6.0, 9.0)), 12.0, levels([(1.0, 4.0), (6.0, 9.0)], 12.0, level=-20.0))
WITH_SOUND = SpeechMap(QUIET_PAUSE.regions, 12.0, levels([(1.0, 4.0), (5.0, 5.7), (6.0, 9.0)], 12.0, level=-20.0))
SHORT_GAP = SpeechMap(((1.0, 4.0), (4.2, 9.0)), 12.0, levels([(1.0, 4.0), (4.2, 9.0)], 12.0, level=-20.0))


@pytest.mark.parametrize(
    ("word", "after", "speech", "expected"),
    [
        ((6.2, 6.5), 3.9, QUIET_PAUSE, (6.0, 6.5)),  # first word of a region, aligned late: onto the region's start
        ((6.45, 6.8), 3.9, QUIET_PAUSE, (6.0, 6.8)),
        ((6.7, 7.0), 3.9, QUIET_PAUSE, None),  # more than 0.5 s in: whisper may have left out a word there
        ((6.2, 6.5), 6.1, QUIET_PAUSE, None),  # a word before it in the region already
        ((5.2, 5.6), 3.9, QUIET_PAUSE, (6.0, 6.0)),  # all of it in the silent pause: onto the speech after it
        ((5.2, 5.6), 3.9, WITH_SOUND, None),  # all of it on a sound the detector missed: left there
        ((5.2, 5.6), 5.3, QUIET_PAUSE, None),  # not the first word after the pause
        ((3.0, 5.6), 1.0, QUIET_PAUSE, None),  # ends in the pause: snap's
        ((4.05, 4.15), 3.9, SHORT_GAP, None),  # in a 0.2-s gap between words: not a pause to jump
        ((0.5, 1.3), float("-inf"), QUIET_PAUSE, None),  # starts in the pause, ends in speech: snap's
    ],
)
def test_first_word_of_a_region(word, after, speech, expected):
    assert first_word(*word, after, speech) == expected


UNSTRETCH = SpeechMap(((1.0, 4.0), (4.3, 9.0)), 12.0)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ((3.2, 3.95), (4.3, 4.6), (4.3, 4.3)),  # drawn back over the tail of the speech before: onto the next speech
        ((3.2, 3.95), (4.0, 4.6), (4.3, 4.3)),  # (the next word's own start still in the pause)
        ((1.1, 1.8), (4.3, 4.6), (1.1, 1.8)),  # starts where its speech starts: a slow word, left
        ((3.6, 3.95), (4.3, 4.6), (3.6, 3.95)),  # not stretched
        ((3.0, 3.7), (3.7, 3.9), (3.0, 3.7)),  # the next word in the same speech
        ((3.0, 3.6), (4.3, 4.6), (3.0, 3.6)),  # the next speech begins 0.7 s after it
    ],
)
def test_unstretch_a_first_word(first, second, expected):
    words = said((" a", *first), (" b", *second)).words
    moved = unstretch(words, UNSTRETCH)
    assert (moved[0].start, moved[0].end) == expected and moved[1] == words[1]


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        # speech at 1-4 s and 10-12 s. (start, end) of each word of each segment, after
        ([[(0.8, 1.4), (1.4, 2.0)]], [[(1.0, 1.4), (1.4, 2.0)]]),  # starts in the pause before the speech
        ([[(3.5, 4.6)]], [[(3.5, 4.0)]]),  # ends after it
        ([[(3.0, 3.9)], [(10.3, 10.6)]], [[(3.0, 3.9)], [(10.0, 10.6)]]),  # the first word of the next speech, late
        ([[(3.0, 3.9), (10.3, 10.6)]], [[(3.0, 3.9), (10.0, 10.6)]]),  # (across segments or in one)
        ([[(10.1, 10.3)], [(10.4, 10.6)]], [[(10.0, 10.3)], [(10.4, 10.6)]]),  # only the first word of it
        ([[(1.8, 2.0)], []], [[(1.8, 2.0)], []]),  # a segment whisper timed no words in: as it was
    ],
)
def test_snap_to_speech(segments, expected):
    found = [said(*((" w", a, b) for a, b in words)) if words else segment("...", 5.0, 6.0) for words in segments]
    snapped = snap_to_speech(found, SPEECH)
    assert [spans(s) if s.words else [] for s in snapped] == expected
    assert all(s.start == s.words[0].start and s.end == s.words[-1].end for s in snapped if s.words)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (9.5, 11.0, 10.0),  # no words: the segment's start onto the speech, by 1 s at most
        (9.2, 11.0, 10.0),
        (8.8, 11.0, 8.8),  # 1.2 s before it: the detector missed some of it, or whisper's time is coarse
        (2.0, 3.0, 2.0),
    ],
)
def test_snap_to_speech_without_words(start, end, expected):
    (snapped,) = snap_to_speech([segment("Hello.", start, end)], SPEECH)
    assert (snapped.start, snapped.end) == (expected, end)
