"""The seeded recordings that long-form decoding is judged on, and the per-utterance checks, on real clips."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DATA

from benchmarks.composition import compose, cues_in, duplicated, generate, load_clips, utterance_report
from pipeline.media.audio import SAMPLE_RATE

CLIPS = ["en_jfk", "en_mfa_whisper", "en_ls_61-70968-0000", "en_mfa_falsetto2", "en_librivox_sas01_0890",
         "en_ljs_LJ001-0008", "en_ls_1995-1837-0001", "en_mfa_whisper2"]  # fmt: skip


@pytest.fixture(scope="module")
def clips():
    return load_clips(DATA, CLIPS)


def cue(start, end, text):
    return SimpleNamespace(start=start, end=end, text=text)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_generate_draws_a_recording_from_its_seed(clips, seed):
    comp = generate(clips, seed)
    again = generate(clips, seed)
    assert np.array_equal(comp.audio, again.audio) and comp.kinds == again.kinds
    assert sorted(c.id for c in comp.clips) == sorted(CLIPS)  # every utterance, once
    silences = [(a, b) for a, b, kind in comp.no_speech if kind == "silence"]
    assert len(silences) == 1 and 30 <= silences[0][1] - silences[0][0] <= 60
    assert sum(kind in ("music", "noise") for *_, kind in comp.no_speech) == 2
    assert "after silence" in comp.kinds or comp.kinds[0] in ("quiet", "fast")  # a drawn kind wins over the label
    ends = comp.ends
    for i, (offset, onset) in enumerate(zip(comp.offsets, comp.onsets)):
        assert offset <= onset < ends[i]
        if i + 1 < len(comp.offsets):
            assert 0.2 <= comp.offsets[i + 1] - ends[i]  # a pause, music or noise, or the long silence
    for a, b, _ in comp.no_speech:  # nobody speaks there
        assert all(e <= a + 1e-6 or o >= b - 1e-6 for o, e in zip(comp.offsets, ends))
    assert max(ends) < comp.audio.size / SAMPLE_RATE <= max(ends) + 20.01  # then a pause, music or noise
    other = generate(clips, seed + 100)
    assert [c.id for c in other.clips] != [c.id for c in comp.clips] or other.audio.size != comp.audio.size


def test_quiet_and_fast_utterances_are_what_they_say(clips):
    found = {}
    for seed in range(12):
        comp = generate(clips, seed, quiet=0.4, fast=0.3)
        originals = {c.id: c.audio for c in clips}
        for clip, kind in zip(comp.clips, comp.kinds):
            found.setdefault(kind, []).append((clip.audio, originals[clip.id]))
    for altered, original in found["quiet"]:
        gain = 20 * np.log10(np.sqrt(np.mean(altered**2)) / np.sqrt(np.mean(original**2)))
        assert -26.01 <= gain <= -17.99
    for altered, original in found["fast"]:
        assert altered.size / original.size == pytest.approx(1 / 1.3, abs=0.02)


@pytest.mark.parametrize(
    "cues, recall, onset_error",
    [
        # the utterance is en_jfk (11 s at offset 0): every word written, cue at the onset
        ([cue(0.3, 11.0, "And so, my fellow Americans, ask not what your country can do for you, ask what you "
                         "can do for your country.")], 1.0, 0.0),
        # half the words written
        ([cue(0.3, 5.0, "And so, my fellow Americans, ask not what your country can do for you")], 14 / 22, 0.0),
        # written, but in a cue far from the utterance: not counted
        ([cue(20.0, 25.0, "ask not what your country can do for you")], 0.0, None),
        ([], 0.0, None),
    ],
)  # fmt: skip
def test_utterance_report(clips, cues, recall, onset_error):
    comp = compose([clips[0]], 1.0)
    onset = comp.onsets[0]
    cues = [cue(c.start if c.start != 0.3 else onset, c.end, c.text) for c in cues]
    [report] = utterance_report(comp, cues)
    assert report.id == "en_jfk" and report.recall == pytest.approx(recall)
    if onset_error is not None:
        assert report.onset_error == pytest.approx(onset_error)
    else:
        assert abs(report.onset_error) > 5


@pytest.mark.parametrize(
    "texts, reference, expected",
    [
        (["And here's some more words"], "", []),
        (["And", "And here's some more words"], "", ["and and"]),
        (["And And here's some more words"], "", ["and and"]),
        (["he had had enough"], "he had had enough", []),  # doubled in the reference: spoken twice
        (["in the year 14.", "1462."], "", []),
        (["this is the same line", "something else", "This is the same line."], "", ["This is the same line."]),
        (["Yes.", "Yes."], "", ["yes yes"]),
    ],
)
def test_duplicated(texts, reference, expected):
    assert duplicated([cue(i, i + 1, t) for i, t in enumerate(texts)], reference) == expected


def test_cues_in_music_noise_and_silence(clips):
    comp = generate(clips[:4], 5)
    spans = comp.no_speech
    inside = [cue(a + 1.0, a + 2.0, "la la") for a, b, _ in spans]
    edge = [cue(a - 2.0, a + 0.4, "speech ending at the music") for a, _, _ in spans]
    assert cues_in(comp, inside + edge) == inside
