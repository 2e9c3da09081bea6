"""Long-form subtitles on real speech: nothing lost, cues on time and readable, nothing where nobody speaks.

A composition of ten real clips with known silences between them (0.4 to 8 s), so every utterance's onset is known.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, wer

from benchmarks.composition import compose, load_clips, onset_errors, onset_summary
from pipeline.check import check, parse_srt
from pipeline.jobs import _transcribe
from pipeline.media import SAMPLE_RATE, MediaInfo
from pipeline.subtitles import to_srt
from pipeline.transcribe import TranscribeOptions
from pipeline.vad import SpeechMap, speech_map

CLIPS = [
    "en_jfk",
    "en_ls_2412-153948-0000",
    "en_ljs_LJ001-0008",
    "en_ls_1995-1837-0001",
    "en_librivox_sas01_0880",
    "en_ljs_LJ001-0001",
    "en_ami_ES2011a_headset0_40-46s",
    "en_librivox_sas01_0870",
    "en_ljs_LJ001-0003",
    "en_ls_61-70968-0000",
]
GAPS = [0.4, 2.5, 0.8, 8.0, 1.2, 0.6, 4.0, 1.5, 3.0, 1.0]


@pytest.fixture(scope="module")
def composition():
    return compose(load_clips(DATA, CLIPS), GAPS)


@pytest.fixture(scope="module")
def cues(ov_model, composition):
    audio = composition.audio
    result = _transcribe(audio, MediaInfo(audio.size / SAMPLE_RATE, True, False), ov_model,
                         TranscribeOptions(language="en"), None, None)  # fmt: skip
    return result.segments


def test_every_utterance_is_there(composition, cues):
    assert wer(composition.reference, " ".join(c.text.replace("\n", " ") for c in cues)) <= 0.08


def test_cues_start_at_the_speech(composition, cues):
    errors = onset_errors([c.start for c in cues], composition.onsets)
    within = np.mean(np.abs(errors) <= 0.3)
    assert within >= 0.9, onset_summary(errors)


def test_cues_pass_the_checker(cues):
    parsed = parse_srt(to_srt(cues))
    broken = {p.cue.index for p in check(parsed)}
    assert len(parsed) >= len(CLIPS)
    assert 1 - len(broken) / len(parsed) >= 0.95, check(parsed)


def test_no_cue_between_the_clips(composition, cues):
    ends = [o + c.audio.size / SAMPLE_RATE for o, c in zip(composition.offsets, composition.clips, strict=True)]
    for end, next_onset, gap in zip(ends, composition.onsets[1:], GAPS, strict=False):
        if gap >= 2:
            inside = [c for c in cues if c.start < next_onset - 0.3 and c.end > end + 0.3]
            assert inside == [], (end, next_onset, inside)


def test_speech_map_finds_each_clip(composition):
    found = speech_map(composition.audio)
    for onset, clip in zip(composition.onsets, composition.clips, strict=True):
        assert found.fraction(onset, onset + clip.audio.size / SAMPLE_RATE - 1.0) > 0.5, clip.id
    assert found.speech_in(0, found.duration) < sum(c.audio.size for c in composition.clips) / SAMPLE_RATE


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
