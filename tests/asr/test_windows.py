"""Window planning (pipeline/asr/longform/windows.py): where windows start and end, what they leave out, how loud,
times mapped back to the recording, and the parts decoded side by side."""

from __future__ import annotations

import numpy as np
import pytest
from stages import levels, said, segment, spans

from pipeline.asr.longform.windows import Window, gains, leveled, off_the_seams, parts, plan_window
from pipeline.asr.vad import SpeechMap
from pipeline.media.audio import SAMPLE_RATE


@pytest.mark.parametrize(
    ("regions", "sounds", "seek", "pieces", "heard"),
    [
        # frames are 10 ms; audio is 100 s (10000 frames); sounds: where the levels stand out (whatever the detector
        # made of them). pieces: the stretches of the recording joined into one window
        (((5.0, 8.0),), [], 0, ((480, 900),), True),  # nothing before the speech: from 0.2 s before it
        (((5.0, 8.0),), [(1.0, 2.2)], 0, ((80, 250),), False),  # a sound alone: whisper judges it, tightly
        (((5.0, 8.0),), [(1.0, 1.6)], 0, ((480, 900),), True),  # ... unless under 1 s (a breath, a click): skipped
        (((5.0, 8.0),), [(4.0, 4.5)], 0, ((380, 900),), True),  # a short one that runs into the speech starts it
        (((5.0, 8.0),), [(3.0, 4.5)], 0, ((280, 900),), True),  # a sound that runs into the speech starts it
        (((1.5, 8.0),), [], 0, ((130, 900),), True),  # speech soon: from 0.2 s before it to 1 s into the pause after
        (((1.5, 8.0), (60.0, 70.0)), [], 5900, ((5980, 7100),), True),
        (((0.0, 10.0), (10.4, 20.0), (21.0, 28.0), (28.2, 40.0)), [], 0, ((0, 2050),), True),  # latest >= 0.5 s pause
        (((0.0, 10.0), (10.3, 20.0), (20.2, 40.0)), [], 0, ((0, 2010),), True),  # none: the latest past 20 s
        # none past 20 s: at 30 s, where whisper's timestamps go on (a pause at 10 s left 20 s of the window unused)
        (((0.0, 10.0), (10.3, 19.0), (19.2, 40.0)), [], 0, ((0, 3000),), True),
        # a silence (>= 2 s, no sound): left out but for 0.6 s after the speech and 0.4 s before the next
        (((0.0, 10.0), (13.0, 20.0), (20.6, 40.0)), [], 0, ((0, 1060), (1260, 3200)), True),
        (((0.0, 5.0), (40.0, 45.0), (80.0, 90.0)), [], 0, ((0, 560), (3960, 4560), (7960, 9100)), True),
        (((0.0, 0.5), (5.0, 20.0)), [], 0, ((0, 110), (460, 2100)), True),  # (even right after the window's start)
        # ... unless a sound is in it: the window ends there (the sound is judged next)
        (((0.0, 10.0), (13.0, 20.0), (20.6, 40.0)), [(11.0, 12.0)], 0, ((0, 1100),), True),
        # ... a sound under 1 s, away from the speech after it, is a breath or a click: still a silence
        (((0.0, 10.0), (13.0, 20.0), (20.6, 40.0)), [(11.0, 11.5)], 0, ((0, 1060), (1260, 3200)), True),
        # ... nor one that leads to a blip of speech in a sound (a whisper the detector hardly hears): the window ends
        (((0.0, 10.0), (13.0, 13.3), (20.0, 30.0)), [(12.5, 17.0)], 0, ((0, 1060),), True),
        # ... and the window after it: the blip and the sound it lies in, alone (whisper skipped a whisper in 30 s)
        (((0.0, 10.0), (13.0, 13.3), (20.0, 30.0)), [(12.5, 17.0)], 1280, ((1280, 1730),), True),
        (((0.0, 10.0), (13.0, 13.3), (20.0, 30.0)), [(12.5, 15.0)], 1280, ((1280, 1530),), True),
        # ... with the sounds after it, each within 2 s of the one before (two whispered sentences: one pass)
        (((0.0, 10.0), (13.0, 13.3), (25.0, 30.0)), [(12.5, 15.0), (16.2, 19.0)], 1280, ((1280, 1930),), True),
        (((0.0, 10.0), (13.0, 13.3), (25.0, 30.0)), [(12.5, 15.0), (17.5, 19.0)], 1280, ((1280, 1530),), True),
        (((0.0, 10.0), (13.0, 13.3), (25.0, 30.0)), [(12.5, 15.0), (16.2, 24.5)], 1280, ((1280, 1530),), True),
        # ... also after a pause too short to leave out (a sentence's): the window ends in that pause, and the next
        # starts with the sound that runs into the blip (a whisper starts before the detector hears it)
        (((0.0, 10.0), (11.5, 11.8), (20.0, 30.0)), [(11.2, 15.0)], 0, ((0, 1075),), True),
        (((0.0, 10.0), (11.5, 11.8), (20.0, 30.0)), [(11.2, 15.0)], 1075, ((1100, 1530),), True),
        (((0.0, 10.0), (11.5, 11.8), (20.0, 30.0)), [], 0, ((0, 1240), (1960, 3100)), True),  # (no sound: a "yes")
        (((0.0, 10.0), (10.3, 10.6), (20.0, 30.0)), [(10.4, 15.0)], 0, ((0, 1160),), True),  # (a word: no pause)
        (((0.0, 10.0), (11.5, 12.8), (20.0, 30.0)), [(11.2, 15.0)], 0, ((0, 1380),), True),  # (over 1 s: no blip)
        # ... a sound too close to the next speech for a window of its own (under 3 s of pause): an ordinary pause
        (((0.0, 10.0), (12.5, 20.0), (20.6, 40.0)), [(11.0, 12.0)], 0, ((0, 2030),), True),
        # ... or too little room is left for more speech; or the speech after it has no pause before 30 s
        (((0.0, 28.0), (31.0, 40.0)), [], 0, ((0, 2900),), True),
        (((0.0, 10.0), (13.0, 40.0)), [], 0, ((0, 1060),), True),
        (((0.0, 45.0),), [], 0, ((0, 3000),), True),  # 45 s without a pause: 30 s, whisper's timestamps go on
        (((0.0, 45.0),), [], 2000, ((2000, 4600),), True),  # speech ends in this window: 1 s into the pause after it
        (((0.0, 10.0),), [(40.0, 45.0)], 1100, ((3980, 4530),), False),  # a sound after it: judged alone
        (((0.0, 10.0),), [(40.0, 45.0), (46.5, 48.0)], 1100, ((3980, 4530),), False),  # (speech after music?)
        (((0.0, 10.0),), [(20.0, 70.0)], 1100, ((1980, 4980),), False),  # a long one: 30 s at a time
    ],
)
def test_plan_window(regions, sounds, seek, pieces, heard):
    assert plan_window(SpeechMap(regions, 100.0, levels(sounds)), seek, 10000) == Window(pieces, heard)


@pytest.mark.parametrize(
    ("duration", "frames", "pieces"),
    [
        # a whisper (a blip of speech in sounds) that runs on to the end of what is decoded: its window takes it all
        (100.0, 2000, ((1280, 1980),)),  # the end of a part (decoded side by side with others)
        (20.005, 2000, ((1280, 1980),)),  # the end of a recording whose length is not whole 10-ms frames
        (100.0, 10000, ((1280, 1980),)),  # (a silence follows: the same)
    ],
)
def test_plan_window_of_a_whisper_at_the_end(duration, frames, pieces):
    speech = SpeechMap(((0.0, 10.0), (13.0, 13.3)), duration, levels([(12.5, 15.0), (16.2, 19.5)], duration))
    assert plan_window(speech, 1280, frames) == Window(pieces)


@pytest.mark.parametrize(
    ("regions", "sounds", "seek"),
    [
        (((0.0, 10.0),), [], 1100),  # no speech nor sound after the last speech: done
        (((0.0, 10.0),), [], 9900),  # under 2 s left, no speech: done
    ],
)
def test_plan_window_at_the_end(regions, sounds, seek):
    assert plan_window(SpeechMap(regions, 100.0, levels(sounds)), seek, 10000) is None


@pytest.mark.parametrize(
    ("pieces", "t", "end", "expected"),
    [
        # a window of 0-5 s and 10-15 s of the recording (whisper's times count from 0 s through the joined audio)
        (((0, 500), (1000, 1500)), 2.0, False, 2.0),
        (((0, 500), (1000, 1500)), 7.0, False, 12.0),
        (((0, 500), (1000, 1500)), 5.0, False, 10.0),  # on the seam: a start is the later stretch's
        (((0, 500), (1000, 1500)), 5.0, True, 5.0),  # ... an end the earlier one's
        (((0, 500), (1000, 1500)), 11.0, True, 16.0),  # past the end
        (((200, 700), (1000, 1500)), 1.5, False, 1.5),  # before the window: as it is
        (((200, 700), (1000, 1500)), 8.0, False, 11.0),
    ],
)
def test_window_time(pieces, t, end, expected):
    assert Window(pieces).time(t, end) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("pieces", "frames", "expected"),
    [(((0, 500), (1000, 1500)), 300, 300), (((0, 500), (1000, 1500)), 500, 500), (((0, 500), (1000, 1500)), 700, 1200)],
)
def test_window_frame_after(pieces, frames, expected):
    assert Window(pieces).frame_after(frames) == expected


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [(100, 1200, ((100, 500), (1000, 1200))), (600, 900, ((600, 900),)), (1100, 1300, ((1100, 1300),))],
)
def test_window_within(first, last, expected):
    assert Window(((0, 500), (1000, 1500))).within(first, last).pieces == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # a seam's silence from 10.0 to 12.0 s (what the window kept of a longer one): a segment's first words there
        # belong to the speech after it
        ([(10.3, 10.6), (12.5, 13.0)], [(12.0, 12.5), (12.5, 13.0)]),
        ([(10.1, 10.3), (10.3, 10.6), (12.2, 12.6)], [(12.0, 12.1), (12.1, 12.2), (12.2, 12.6)]),
        ([(10.3, 10.6)], [(12.0, 12.3)]),  # all of it
        ([(9.5, 10.2), (12.5, 13.0)], [(9.5, 10.2), (12.5, 13.0)]),  # it starts before the seam: as it is
        ([(9.9, 10.3), (12.5, 13.0)], [(12.0, 12.5), (12.5, 13.0)]),  # ... unless most of it lies in the seam
        ([(9.9, 10.3)], [(9.9, 10.3)]),  # (and it is not all the segment: then it may be the end of what came before)
        ([(13.0, 13.5)], [(13.0, 13.5)]),
        ([(8.0, 9.0), (9.2, 12.5), (12.6, 13.0)], [(8.0, 9.0), (12.0, 12.5), (12.6, 13.0)]),  # a word spanning it
    ],
)
def test_off_the_seams(words, expected):
    seg = said(*((" w", a, b) for a, b in words))
    moved = off_the_seams(seg, [(10.0, 12.0)])
    assert spans(moved) == [pytest.approx(e) for e in expected]
    assert (moved.start, moved.end) == pytest.approx((expected[0][0], max(words[-1][1], expected[-1][1])))
    assert spans(seg) == words  # (a new value: the segment given is as it was)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (10.5, 13.0, 12.0),  # no timed words: a segment that starts in the seam starts after it
        (10.5, 11.5, 11.5),  # ... by its end at most
        (9.5, 13.0, 9.5),  # it starts before the seam
    ],
)
def test_off_the_seams_without_words(start, end, expected):
    assert off_the_seams(segment("Hello.", start, end), [(10.0, 12.0)]).start == expected


@pytest.mark.parametrize(
    ("regions", "seconds", "n", "expected"),
    [
        # 10-ms frames. Parts of 60 s at least; each cut in the longest pause within 15 s of the even split
        (((0.0, 100.0),), 100.0, 4, [(0, 10000)]),  # too short to cut
        (((0.0, 55.0), (57.0, 130.0)), 130.0, 2, [(0, 5600), (5600, 13000)]),
        (((0.0, 50.0), (51.0, 64.0), (68.0, 130.0)), 130.0, 2, [(0, 6600), (6600, 13000)]),  # the longer pause
        (((0.0, 90.0), (90.5, 200.0)), 200.0, 2, [(0, 9025), (9025, 20000)]),  # the pause there, however short
        (((0.0, 300.0),), 300.0, 2, [(0, 15000), (15000, 30000)]),  # no pause near: at the split
        (((0.0, 300.0),), 300.0, 8, [(0, 6000), (6000, 12000), (12000, 18000), (18000, 24000), (24000, 30000)]),
        (((0.0, 59.0), (61.0, 119.0), (121.0, 180.0)), 180.0, 3, [(0, 6000), (6000, 12000), (12000, 18000)]),
    ],
)
def test_parts(regions, seconds, n, expected):
    assert parts(SpeechMap(regions, seconds), None, int(seconds * 100), n) == expected


@pytest.mark.parametrize(
    ("sounds", "cut"),
    [
        # a pause of 14 s (110-124) at the even split of 240 s; sounds: where the levels stand out (whispers)
        ([], 11700),  # its middle
        ([(115.0, 121.0)], 11250),  # a whisper in it: the middle of its longest stretch without a sound, before it
        ([(111.0, 114.0)], 11900),  # ... or after it
        ([(110.0, 124.0)], 11700),  # one level throughout (nothing stands out): its middle
    ],
)
def test_parts_cut_no_whisper_in_two(sounds, cut):
    speech = SpeechMap(((0.0, 110.0), (124.0, 240.0)), 240.0, levels(sounds, 240.0))
    assert parts(speech, None, 24000, 2) == [(0, cut), (cut, 24000)]


def test_parts_without_the_detector():
    """Without speech detection the cut is in the quietest second near the even split."""
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(200 * SAMPLE_RATE)).astype(np.float32)
    audio[108 * SAMPLE_RATE : 109 * SAMPLE_RATE] *= 0.001
    (_, cut), (again, end) = parts(None, audio, 20000, 2)
    assert cut == again and 10780 <= cut <= 10920 and end == 20000


_SPEECH = ((0.0, 10.0), (10.6, 20.0), (20.5, 28.0))  # three runs, between pauses of 0.6 and 0.5 s


@pytest.mark.parametrize(
    ("regions", "sounds", "expected"),
    [
        # sounds: (start, end, dBFS) levels. A run 12 dB or more under the loudest is raised to it, from the middle of
        # the pause before it to the middle of the pause after it (or the window's edge)
        (_SPEECH, [(0, 10, -20), (10.6, 28, -40)], [(10.3, 20.25, 20.0), (20.25, 29.0, 20.0)]),  # quiet after loud
        (_SPEECH, [(0, 10, -40), (10.6, 20, -20), (20.5, 28, -44)], [(0.0, 10.3, 20.0), (20.25, 29.0, 24.0)]),
        (_SPEECH, [(0, 10, -20), (10.6, 28, -70)], [(10.3, 20.25, 30.0), (20.25, 29.0, 30.0)]),  # 30 dB at most
        (_SPEECH, [(0, 10, -20), (10.6, 28, -30)], []),  # 10 dB: one voice, as it comes and goes
        (((0.0, 10.0), (10.3, 20.0)), [(0, 10, -20), (10.3, 20, -40)], []),  # a gap of 0.3 s: between words
        (((0.0, 10.0), (10.6, 10.9), (11.5, 20.0)), [(0, 10, -20), (10.6, 10.9, -40), (11.5, 20, -20)], []),  # a blip
        (((0.0, 28.0),), [(0, 28, -40)], []),  # one run, however quiet
    ],
)
def test_gains(regions, sounds, expected):
    found = gains(SpeechMap(regions, 100.0, levels(sounds)), 0.0, 30.0)
    assert [x for g in found for x in g] == pytest.approx([x for g in expected for x in g])


@pytest.mark.parametrize(
    ("pieces", "t", "joined"),
    [
        # joined times count from the recording's time at the window's start (1 s), as whisper's do
        (((100, 500),), 2.5, 2.5),
        (((100, 500), (900, 1200)), 4.5, 4.5),
        (((100, 500), (900, 1200)), 6.0, 5.0),  # (in the stretch left out: the next stretch's start)
        (((100, 500), (900, 1200)), 10.0, 6.0),
        (((100, 500), (900, 1200)), 11.0, 7.0),
        (((100, 500), (900, 1200)), 13.0, 8.0),  # (past the window: its end)
        (((100, 500),), 0.5, 1.0),  # (before it: its start)
    ],
)
def test_window_joined(pieces, t, joined):
    window = Window(pieces)
    assert window.joined(t) == pytest.approx(joined)
    if any(a / 100 <= t < b / 100 for a, b in pieces):
        assert window.time(joined) == pytest.approx(t)  # (the inverse of time())


def test_leveled():
    """Each gain applies to its stretch of the joined audio, and nowhere else (here: across a stretch left out)."""
    window = Window(((100, 500), (900, 1200)))  # 1-5 s and 9-12 s of the recording: 7 s of joined audio
    audio = np.full(7 * SAMPLE_RATE, 0.01, np.float32)
    out = leveled(audio, window, [(4.0, 10.0, 20.0)])
    raised = np.flatnonzero(out > 0.05)
    assert (raised[0], raised[-1] + 1) == (3 * SAMPLE_RATE, 5 * SAMPLE_RATE)  # 4-5 s and 9-10 s: joined 3-5 s
    assert out[raised] == pytest.approx(0.1) and np.all(audio == np.float32(0.01))  # (a copy)
    assert leveled(audio, window, []) is audio
