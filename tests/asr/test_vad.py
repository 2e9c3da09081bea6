"""The speech detector's map (pipeline/asr/vad.py): where speech is, the sounds it did not call speech, their levels;
its copies of silero's framing and region state machine, against silero's own; and a detector without torch."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import clip_path
from stages import levels

from benchmarks.composition import music
from pipeline.asr.vad import (
    CONTEXT_SAMPLES,
    FRAME_SAMPLES,
    SpeechMap,
    frame_blocks,
    frame_levels,
    speech_map,
    speech_probabilities,
    speech_timestamps,
)
from pipeline.media.audio import SAMPLE_RATE
from pipeline.tuning import MAX_FRAMES


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


@functools.cache
def silero():
    """silero's own frame_blocks and get_speech_timestamps_from_probs, the references. Importing its package sets
    torch's threads to 1 for the whole process (its model.py): put back, for the tests that run after these."""
    import torch

    threads = torch.get_num_threads()
    try:
        from silero_vad.sequence_vad import frame_blocks as blocks
        from silero_vad.utils_vad import get_speech_timestamps_from_probs
    finally:
        torch.set_num_threads(threads)
    return blocks, get_speech_timestamps_from_probs


@pytest.mark.parametrize("max_frames", [1, 3, 512])
@pytest.mark.parametrize("size", [0, 1, FRAME_SAMPLES - 1, FRAME_SAMPLES, FRAME_SAMPLES + 1, 7 * FRAME_SAMPLES + 100])
def test_frame_blocks_are_silero_s(size, max_frames):
    samples = np.random.default_rng(size).uniform(-1, 1, size).astype(np.float32)
    found = list(frame_blocks(samples, max_frames=max_frames))
    expected = list(silero()[0](samples, FRAME_SAMPLES, CONTEXT_SAMPLES, max_frames))
    assert len(found) == len(expected)
    for ours, theirs in zip(found, expected, strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_frame_blocks_of_real_speech_are_silero_s(audio):
    samples = audio("en_pyannote_call")
    found = list(frame_blocks(samples))
    assert len(found) == 2  # (30 s: more than one block of MAX_FRAMES)
    for ours, theirs in zip(found, silero()[0](samples, FRAME_SAMPLES, CONTEXT_SAMPLES, MAX_FRAMES), strict=True):
        assert np.array_equal(ours, theirs)


def pattern(*runs: tuple[float, int]) -> np.ndarray:
    """Probabilities from (probability, frames) runs."""
    return np.concatenate([np.full(n, p, np.float32) for p, n in runs])


SYNTHETIC = {
    "empty": np.zeros(0, np.float32),
    "all speech": np.full(500, 0.97, np.float32),
    "all silence": np.full(500, 0.01, np.float32),
    "short blips": pattern(*[(0.02, 30), (0.9, 1), (0.02, 20), (0.9, 3), (0.02, 25), (0.9, 8)] * 6, (0.02, 40)),
    "long silences": pattern((0.9, 100), (0.05, 600), (0.8, 50), (0.01, 900), (0.95, 8)),
    "speech to the end": pattern((0.1, 50), (0.9, 300)),
    "between the thresholds": pattern((0.1, 20), (0.9, 40), (0.4, 200), (0.9, 10), (0.3, 100)),  # holds, then ends
    # at and around the thresholds (0.5, and 0.35 = 0.5 - 0.15 below which silence counts)
    "at the thresholds": pattern(*[(0.5, 4), (0.35, 6), (0.3499, 5), (0.4999, 3), (0.36, 4), (0.2, 4)] * 20),
    "pauses in long speech": pattern(*[(0.9, 90), (0.2, 2), (0.9, 60), (0.1, 4), (0.9, 70), (0.05, 6)] * 8),
    "noise": np.random.default_rng(0).uniform(0, 1, 3000).astype(np.float32),
}
REAL = ["en_jfk", "en_pyannote_call", "en_mfa_whisper", "en_ami_ES2011a_headset0_40-46s", "speech and music"]
OPTIONS = [
    {},  # silero's defaults (and ours)
    {"threshold": 0.3},
    {"threshold": 0.8, "neg_threshold": 0.7},
    {"threshold": 0.5, "neg_threshold": 0.45},
    {"min_speech_ms": 0},
    {"min_speech_ms": 1000},
    {"min_silence_ms": 0},
    {"min_silence_ms": 2000},
    {"speech_pad_ms": 0},
    {"speech_pad_ms": 400},  # regions that would overlap share the gap between them
    {"max_speech_s": 1.0},  # over-long regions cut at their longest pause, or where they are
    {"max_speech_s": 4.0, "min_silence_ms": 1000},
    {"threshold": 0.4, "min_speech_ms": 100, "min_silence_ms": 300, "speech_pad_ms": 60, "max_speech_s": 8.0},
]
SILERO_NAMES = {"min_speech_ms": "min_speech_duration_ms", "min_silence_ms": "min_silence_duration_ms",
                "max_speech_s": "max_speech_duration_s"}  # fmt: skip


@pytest.fixture(scope="module")
def real_probabilities(audio):
    """Speech probabilities of real recordings, as speech_map makes them, by name: (probabilities, samples)."""
    found = {}
    for name in REAL:
        samples = (np.concatenate([audio("en_ljs_LJ001-0001"), music(np.random.default_rng(0)), audio("en_jfk")])
                   if name == "speech and music" else audio(name))  # fmt: skip
        probs = np.maximum(speech_probabilities(samples), speech_probabilities(samples, fresh=True))
        found[name] = probs, samples.size
    return found


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
@pytest.mark.parametrize("source", [*SYNTHETIC, *REAL])
def test_speech_timestamps_are_silero_s(source, options, real_probabilities):
    if source in SYNTHETIC:
        probs = SYNTHETIC[source]
        samples = max(probs.size * FRAME_SAMPLES - 100, 0)  # (the last frame padded)
    else:
        probs, samples = real_probabilities[source]
    found = speech_timestamps(probs, audio_samples=samples, **options)
    theirs = silero()[1](probs.tolist(), sampling_rate=SAMPLE_RATE, audio_length_samples=samples,
                         **{SILERO_NAMES.get(k, k): v for k, v in options.items()})  # fmt: skip
    assert found == [(r["start"], r["end"]) for r in theirs]
    assert all(type(start) is int and type(end) is int for start, end in found)


def test_detection_and_features_never_import_torch():
    """Transcription runs without torch (issue 52): the features and the speech detector, in a fresh process."""
    code = "\n".join([
        "import sys",
        "from pipeline.asr.mel import log_mel_spectrogram, pad_or_trim",
        "from pipeline.asr.vad import speech_map",
        "from pipeline.media.audio import load_audio",
        f"samples = load_audio({str(clip_path('en_jfk'))!r})",
        "assert speech_map(samples).regions",
        "assert log_mel_spectrogram(pad_or_trim(samples), 80).shape == (80, 3000)",
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'torch', 'whisper', 'silero_vad'}))",
    ])  # fmt: skip
    root = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
