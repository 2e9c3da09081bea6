"""Long-form subtitles on real speech, end to end: nothing lost, cues on time and readable, nothing where nobody
speaks. (Each stage's rules have their own table: test_windows, test_decoding, test_redecode, test_snap, test_vad.)

A composition of ten real clips with known silences between them (0.4 to 8 s), so every utterance's onset is known.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, wer

from benchmarks.composition import (
    Clip,
    _noise,
    compose,
    load_clips,
    music,
    onset_errors,
    onset_summary,
    utterance_report,
)
from pipeline.asr.longform.windows import plan_window
from pipeline.asr.options import TranscribeOptions
from pipeline.asr.vad import speech_map
from pipeline.jobs.subtitling import subtitle_audio
from pipeline.media.audio import SAMPLE_RATE
from pipeline.subtitles.check import check, parse_srt
from pipeline.subtitles.formats import to_srt

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
    result = subtitle_audio(audio, ov_model, TranscribeOptions(language="en"))  # fmt: skip
    return result.cues


@pytest.mark.slow
def test_every_utterance_is_there(composition, cues):
    assert wer(composition.reference, " ".join(c.text.replace("\n", " ") for c in cues)) <= 0.08


@pytest.mark.slow
def test_cues_start_at_the_speech(composition, cues):
    errors = onset_errors([c.start for c in cues], composition.onsets)
    within = np.mean(np.abs(errors) <= 0.3)
    assert within >= 0.9, onset_summary(errors)


@pytest.mark.slow
def test_cues_pass_the_checker(cues):
    parsed = parse_srt(to_srt(cues))
    broken = {p.index for p in check(parsed)}
    assert len(parsed) >= len(CLIPS)
    assert 1 - len(broken) / len(parsed) >= 0.95, check(parsed)


@pytest.mark.slow
def test_no_cue_between_the_clips(composition, cues):
    ends = [o + c.audio.size / SAMPLE_RATE for o, c in zip(composition.offsets, composition.clips, strict=True)]
    for end, next_onset, gap in zip(ends, composition.onsets[1:], GAPS, strict=False):
        if gap >= 2:
            inside = [c for c in cues if c.start < next_onset - 0.3 and c.end > end + 0.3]
            assert inside == [], (end, next_onset, inside)


@pytest.mark.slow
def test_speech_map_finds_each_clip(composition):
    found = speech_map(composition.audio)
    for onset, clip in zip(composition.onsets, composition.clips, strict=True):
        assert found.fraction(onset, onset + clip.audio.size / SAMPLE_RATE - 1.0) > 0.5, clip.id
    assert found.speech_in(0, found.duration) < sum(c.audio.size for c in composition.clips) / SAMPLE_RATE


@pytest.mark.slow
def test_no_cues_in_music(ov_model, audio, manifest):
    """Twenty seconds of (synthetic) music between two utterances: nothing is written there (on its own, the same
    music makes whisper write "I don't know how to do it" over and over), and both utterances are."""
    t = np.arange(20 * SAMPLE_RATE) / SAMPLE_RATE
    music = np.zeros_like(t)
    for i, f in enumerate([220, 277, 330, 440, 554, 659, 392, 494] * 5):
        note = (t >= i * 0.5) & (t < i * 0.5 + 0.5)
        music[note] = sum(np.sin(2 * np.pi * f * k * t[note]) / k for k in range(1, 6)) * np.exp(
            -3 * (t[note] - i * 0.5)
        )
    music = (0.3 * music / np.abs(music).max()).astype(np.float32)
    first, last = audio(CLIPS[0]), audio(CLIPS[1])
    samples = np.concatenate([first, music, last])
    start, end = first.size / SAMPLE_RATE, first.size / SAMPLE_RATE + 20
    result = subtitle_audio(samples, ov_model, TranscribeOptions(language="en"))
    assert [c for c in result.cues if c.start < end - 0.3 and c.end > start + 0.3] == []
    reference = manifest[CLIPS[0]]["reference_text"] + " " + manifest[CLIPS[1]]["reference_text"]
    assert wer(reference, " ".join(c.text.replace("\n", " ") for c in result.cues)) <= 0.08


@pytest.mark.slow
def test_a_whisper_under_the_quiet_floor_is_read(ov_model):
    """A whisper 22 dB quieter than recorded (-74 dBFS RMS) in digital silence, 2 s before a loud sentence: the
    detector hears none of it, and the window of its sound is under the level (QUIET_DBFS) below which a window of
    speech is not decoded. Decoded, whisper reads it as it does at its recorded level."""
    whisper, loud = load_clips(DATA, ["en_mfa_whisper", "en_ljs_LJ001-0001"])
    quiet = Clip(whisper.id, whisper.audio * np.float32(10 ** (-22 / 20)), whisper.reference)
    comp = compose([quiet, loud], [2.0, 1.0])
    cues = subtitle_audio(comp.audio, ov_model, TranscribeOptions(language="en")).cues
    alone = compose([whisper], 1.0)
    (recorded,) = utterance_report(alone, subtitle_audio(alone.audio, ov_model, TranscribeOptions(language="en")).cues)
    whispered, read = utterance_report(comp, cues)
    assert recorded.recall > 0.5
    assert whispered.recall >= recorded.recall
    assert read.recall >= 0.9


@pytest.mark.slow
def test_two_whispers_close_together_share_a_window(ov_model):
    """A sentence, two whispered ones 0.8 s apart (the detector hears a little of the first), a loud one: the
    whispers are decoded as one window (one encoder pass, not two), and each of the four is read. (Each whisper in
    a window of its own, whisper read the first as "This is all very whisper.", 80 %.)"""
    clips = load_clips(DATA, ["en_librivox_sas01_0880", "en_mfa_whisper", "en_mfa_whisper2", "en_ljs_LJ001-0003"])
    comp = compose(clips, [2.2, 0.8, 2.0, 1.0])
    speech, frames = speech_map(comp.audio), comp.audio.size * 100 // SAMPLE_RATE
    whispers = plan_window(speech, plan_window(speech, 0, frames).end, frames)
    second_ends = comp.offsets[2] + clips[2].audio.size / SAMPLE_RATE
    assert whispers.start / 100 <= comp.onsets[1] and whispers.end / 100 >= second_ends - 0.5, whispers
    cues = subtitle_audio(comp.audio, ov_model, TranscribeOptions(language="en")).cues
    assert all(u.recall >= 0.9 for u in utterance_report(comp, cues)), [c.text for c in cues]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_music_after_a_whisper_gets_no_cue(seed, ov_model):
    """Music (seed 0) or noise (seed 1) 0.8 s after a whisper the detector heard a little of shares its window
    (windows._sounds_end): whisper still reads the whisper, and writes nothing over the music."""
    said, whisper, after = load_clips(DATA, ["en_ls_61-70968-0000", "en_mfa_whisper", "en_ljs_LJ001-0003"])
    rng = np.random.default_rng(seed)
    filler = (music(rng) if seed == 0 else _noise(rng)).astype(np.float32)
    comp = compose([said, whisper, Clip("filler", filler, ""), after], [2.2, 0.8, 1.0, 1.0])
    cues = subtitle_audio(comp.audio, ov_model, TranscribeOptions(language="en")).cues
    start, end = comp.offsets[2], comp.offsets[2] + filler.size / SAMPLE_RATE
    assert [c.text for c in cues if c.start < end - 0.3 and c.end > start + 0.3] == []
    assert "this is all very whisper" in " ".join(c.text for c in cues).lower()
