"""The speech detector's map (pipeline/asr/vad.py): where speech is, the sounds it did not call speech, their levels."""

from __future__ import annotations

import numpy as np
import pytest
from stages import levels

from benchmarks.composition import music
from pipeline.asr.vad import SpeechMap, frame_levels, speech_map
from pipeline.media.audio import SAMPLE_RATE


@pytest.mark.parametrize("threads", [1, 2])
def test_speech_map_is_the_same_on_any_thread_count(threads, audio):
    samples = np.concatenate([audio("en_ljs_LJ001-0001"), music(np.random.default_rng(0)), audio("en_mfa_whisper")])
    found = speech_map(samples, threads=threads)
    assert found == speech_map(samples, threads=0)
    assert found.regions  # (not the same nothing)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_speech_map_hears_speech_after_music(seed, audio):
    """Speech the detector hears only weakly (a voice with a cold), after speech and music: silero's state, carried
    through them, heard none of it."""
    before = np.concatenate([audio("en_ljs_LJ001-0001"), music(np.random.default_rng(seed))])
    samples = np.concatenate([before, audio("en_mfa_cold_corpus")])
    found = speech_map(samples)
    assert found.fraction(before.size / SAMPLE_RATE, found.duration) > 0.35


@pytest.mark.parametrize(
    ("method", "args", "expected"),
    [
        ("speech_in", (0, 10), 4.0),
        ("speech_in", (1.5, 2.5), 0.5),
        ("fraction", (1, 3), 0.5),
        ("fraction", (4, 4), 0.0),
        ("fraction", (6, 6), 1.0),
        ("region_at", (2.5,), (2, 3)),
        ("region_at", (3.5,), None),
        ("next_speech", (2.5,), 2.5),
        ("next_speech", (3.5,), 5),
        ("next_speech", (8.5,), None),
        ("pauses", (0, 10), [(1, 2), (3, 5), (7.5, 10)]),
        ("pauses", (2.5, 6), [(3, 5)]),
        ("pauses", (2.5, 4), [(3, 4)]),
    ],
)
def test_speech_map(method, args, expected):
    speech = SpeechMap(((0.5, 1), (2, 3), (5, 7.5)), 12.0)
    found = getattr(speech, method)(*args)
    assert found == (pytest.approx(expected) if isinstance(expected, float | int) else expected)


@pytest.mark.parametrize(
    ("sounds", "span", "expected"),
    [
        ([(1.0, 2.0)], (0, 10), [(1.0, 2.0)]),
        ([(1.0, 2.0), (2.5, 3.0)], (0, 10), [(1.0, 3.0)]),  # under 1 s apart: one stretch (a whisper's words)
        ([(1.0, 2.0), (3.5, 4.0)], (0, 10), [(1.0, 2.0), (3.5, 4.0)]),
        ([(1.0, 1.1)], (0, 10), []),  # a click
        ([(1.0, 2.0)], (1.5, 10), [(1.5, 2.0)]),  # only inside the span
        ([], (0, 10), []),
    ],
)
def test_sounds(sounds, span, expected):
    found = SpeechMap((), 100.0, levels(sounds)).sounds(*span)
    assert found == [pytest.approx(e, abs=0.011) for e in expected]


@pytest.mark.parametrize(
    ("floor", "level", "found"),
    [
        (-90.0, -45.0, True),  # a whisper in a clean recording
        (-50.0, -45.0, False),  # 5 dB over a noisy floor: the floor itself
        (-50.0, -30.0, True),
        (-120.0, -80.0, False),  # under -75 dBFS: nothing, however clean the recording
    ],
)
def test_sound_levels(floor, level, found):
    assert bool(SpeechMap((), 100.0, levels([(1.0, 3.0)], floor=floor, level=level)).sounds(0, 10)) == found


@pytest.mark.parametrize(
    ("floor", "span", "expected"),
    [
        (-80.0, (0.5, 2.0), 1.0),  # a word drawn back over the noise before it: where the sound rises
        (-55.0, (0.5, 2.0), 0.5),  # the "noise" within 15 dB of the sound: part of it (a soft start)
        (-80.0, (1.2, 2.0), 1.2),  # inside the sound already
        (-80.0, (2.5, 3.0), 2.5),  # no sound in it: stays
    ],
)
def test_rise(floor, span, expected):
    assert SpeechMap((), 100.0, levels([(1.0, 2.0)], floor=floor)).rise(*span) == pytest.approx(expected, abs=0.011)


def test_frame_levels_of_real_speech(audio):
    samples = np.concatenate([np.zeros(SAMPLE_RATE, np.float32), audio("en_jfk")])
    levels = frame_levels(samples)
    assert levels.size == samples.size // 160
    assert levels[:100].max() < -100  # the digital silence
    assert -40 < np.percentile(levels[100:], 90) < -5  # speech
