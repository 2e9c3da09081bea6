"""Long-form subtitles on real speech: nothing lost, cues on time and readable, nothing where nobody speaks.

A composition of ten real clips with known silences between them (0.4 to 8 s), so every utterance's onset is known.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, wer
from whisper.decoding import DecodingResult
from whisper.tokenizer import get_tokenizer

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
from pipeline.check import check, parse_srt
from pipeline.jobs import subtitle_audio
from pipeline.media import SAMPLE_RATE
from pipeline.subtitles import to_srt
from pipeline.transcribe import (
    TranscribeOptions,
    _cut_loop,
    _echoes,
    _first_word,
    _gains,
    _Guard,
    _leveled,
    _merge_repeat,
    _missed_speech,
    _new_speech,
    _off_the_seams,
    _plan_window,
    _skipped,
    _snap,
    _split_around,
    _uncovered,
    _unstretch,
    _Window,
)
from pipeline.vad import SpeechMap, frame_levels, speech_map

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


def _result(no_speech: float = 0.1, logprob: float = -0.3, ratio: float = 1.5) -> DecodingResult:
    return DecodingResult(audio_features=None, language="en", avg_logprob=logprob, no_speech_prob=no_speech,
                          compression_ratio=ratio)  # fmt: skip


SPEECH = SpeechMap(((1.0, 4.0), (10.0, 12.0)), 20.0)
INF = float("inf")


@pytest.mark.parametrize(
    ("segments", "kept"),
    [
        # (text, start, end, decode result) -> which survive
        ([("Hello there.", 1.0, 3.0, _result())], [True]),
        ([("Thanks for watching!", 5.0, 8.0, _result(0.7, -0.9))], [False]),  # no speech, whisper unsure
        ([("This is all very whispered.", 5.0, 8.0, _result(0.3, -0.4))], [True]),  # no speech found, whisper sure
        ([("Thanks for watching!", 5.0, 8.0, _result(0.3, -0.4))], [False]),  # a filler where nobody speaks
        ([("Subtitles by the Amara.org community", 4.5, 9.0, _result(0.3, -0.4))], [False]),
        ([("Thank you for watching.", 10.0, 12.0, _result())], [True]),  # said by someone
        ([("Thank you.", 3.5, 5.5, _result())], [False]),  # a filler, and only 0.5 s of its 2 s is speech
        ([("Thank you.", 3.0, 4.5, _result())], [True]),  # mostly speech
        ([("We go on.", 1.0, 2.0, _result()), ("We go on.", 2.0, 3.0, _result())], [True, True]),  # said twice
        ([("We go on.", 1.0, 2.0, _result()), ("We go on.", 4.0, 9.0, _result(0.3, -0.4))], [True, False]),
        (
            [("I don't know.", 1.0, 2.0, _result(ratio=3.0)), ("I don't know.", 2.0, 3.0, _result(ratio=3.0))],
            [True, False],
        ),  # fmt: skip
        ([("Hello.", 1.0, 2.0, _result()), ("Hello!", 5.0, 9.0, _result(0.3, -0.4))], [True, False]),
    ],
)
def test_hallucination_guards(segments, kept):
    guard = _Guard(SPEECH, 2.4)
    found = [guard.keep({"text": t, "start": s, "end": e, "result": r}) for t, s, e, r in segments]
    assert found == kept


def test_no_guard_but_repeats_without_speech_detection():
    guard = _Guard(None, 2.4)
    assert guard.keep({"text": "Thanks for watching!", "start": 5.0, "end": 8.0, "result": _result(0.7, -0.9)})
    assert not guard.keep({"text": "Thanks for watching!", "start": 8.0, "end": 9.0, "result": _result(ratio=3.0)})


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
    whispers = _plan_window(speech, _plan_window(speech, 0, frames).end, frames)
    second_ends = comp.offsets[2] + clips[2].audio.size / SAMPLE_RATE
    assert whispers.start / 100 <= comp.onsets[1] and whispers.end / 100 >= second_ends - 0.5, whispers
    cues = subtitle_audio(comp.audio, ov_model, TranscribeOptions(language="en")).cues
    assert all(u.recall >= 0.9 for u in utterance_report(comp, cues)), [c.text for c in cues]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_music_after_a_whisper_gets_no_cue(seed, ov_model):
    """Music (seed 0) or noise (seed 1) 0.8 s after a whisper the detector heard a little of shares its window
    (_sounds_end): whisper still reads the whisper, and writes nothing over the music."""
    said, whisper, after = load_clips(DATA, ["en_ls_61-70968-0000", "en_mfa_whisper", "en_ljs_LJ001-0003"])
    rng = np.random.default_rng(seed)
    filler = (music(rng) if seed == 0 else _noise(rng)).astype(np.float32)
    comp = compose([said, whisper, Clip("filler", filler, ""), after], [2.2, 0.8, 1.0, 1.0])
    cues = subtitle_audio(comp.audio, ov_model, TranscribeOptions(language="en")).cues
    start, end = comp.offsets[2], comp.offsets[2] + filler.size / SAMPLE_RATE
    assert [c.text for c in cues if c.start < end - 0.3 and c.end > start + 0.3] == []
    assert "this is all very whisper" in " ".join(c.text for c in cues).lower()


@pytest.mark.parametrize(
    ("piece", "expected"),
    [
        ([100, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 101], [100, 1, 2, 3, 101]),  # a phrase looping
        ([100, 5, 6, 1, 1, 1, 1, 101], [100, 5, 6, 1, 101]),  # one token over and over
        ([5, 6, 7, 5, 6, 7, 5, 6, 7], [5, 6, 7]),  # no timestamps
        ([100, 1, 2, 1, 2, 3, 101], [100, 1, 2, 1, 2, 3, 101]),  # twice is speech
        ([100, 1, 2, 3, 4, 101], [100, 1, 2, 3, 4, 101]),
        ([100, 101], [100, 101]),
        ([], []),
    ],
)
def test_cut_loop(piece, expected):
    assert _cut_loop(piece, timestamp_begin=100) == expected


def _levels(sounds, seconds: float = 100.0, floor: float = -90.0, level: float = -45.0) -> np.ndarray:
    """10-ms frame levels (dBFS): `floor` everywhere, `level` inside each (start, end) sound, or the sound's own
    (start, end, level)."""
    levels = np.full(int(seconds * 100), floor, np.float32)
    for a, b, *own in sounds:
        levels[int(a * 100) : int(b * 100)] = own[0] if own else level
    return levels


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
    assert _plan_window(SpeechMap(regions, 100.0, _levels(sounds)), seek, 10000) == _Window(pieces, heard)


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
    speech = SpeechMap(((0.0, 10.0), (13.0, 13.3)), duration, _levels([(12.5, 15.0), (16.2, 19.5)], duration))
    assert _plan_window(speech, 1280, frames) == _Window(pieces)


@pytest.mark.parametrize(
    ("regions", "sounds", "seek"),
    [
        (((0.0, 10.0),), [], 1100),  # no speech nor sound after the last speech: done
        (((0.0, 10.0),), [], 9900),  # under 2 s left, no speech: done
    ],
)
def test_plan_window_at_the_end(regions, sounds, seek):
    assert _plan_window(SpeechMap(regions, 100.0, _levels(sounds)), seek, 10000) is None


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
    assert _Window(pieces).time(t, end) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("pieces", "frames", "expected"),
    [(((0, 500), (1000, 1500)), 300, 300), (((0, 500), (1000, 1500)), 500, 500), (((0, 500), (1000, 1500)), 700, 1200)],
)
def test_window_frame_after(pieces, frames, expected):
    assert _Window(pieces).frame_after(frames) == expected


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [(100, 1200, ((100, 500), (1000, 1200))), (600, 900, ((600, 900),)), (1100, 1300, ((1100, 1300),))],
)
def test_window_within(first, last, expected):
    assert _Window(((0, 500), (1000, 1500))).within(first, last).pieces == expected


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
    found = SpeechMap((), 100.0, _levels(sounds)).sounds(*span)
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
    assert bool(SpeechMap((), 100.0, _levels([(1.0, 3.0)], floor=floor, level=level)).sounds(0, 10)) == found


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
    assert SpeechMap((), 100.0, _levels([(1.0, 2.0)], floor=floor)).rise(*span) == pytest.approx(expected, abs=0.011)


def test_frame_levels_of_real_speech(audio):
    samples = np.concatenate([np.zeros(SAMPLE_RATE, np.float32), audio(CLIPS[0])])
    levels = frame_levels(samples)
    assert levels.size == samples.size // 160
    assert levels[:100].max() < -100  # the digital silence
    assert -40 < np.percentile(levels[100:], 90) < -5  # speech


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
def test_snap_to_speech(span, limit, expected):
    assert _snap(*span, SPEECH, limit) == expected


# speech at 1-4 s and 6-9 s (-20 dBFS, silence -90); a sound the detector did not call speech at 5.0-5.7 s in WITH_SOUND
QUIET_PAUSE = SpeechMap(((1.0, 4.0), (6.0, 9.0)), 12.0, _levels([(1.0, 4.0), (6.0, 9.0)], 12.0, level=-20.0))
WITH_SOUND = SpeechMap(QUIET_PAUSE.regions, 12.0, _levels([(1.0, 4.0), (5.0, 5.7), (6.0, 9.0)], 12.0, level=-20.0))
SHORT_GAP = SpeechMap(((1.0, 4.0), (4.2, 9.0)), 12.0, _levels([(1.0, 4.0), (4.2, 9.0)], 12.0, level=-20.0))


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
        ((3.0, 5.6), 1.0, QUIET_PAUSE, None),  # ends in the pause: _snap's
        ((4.05, 4.15), 3.9, SHORT_GAP, None),  # in a 0.2-s gap between words: not a pause to jump
        ((0.5, 1.3), float("-inf"), QUIET_PAUSE, None),  # starts in the pause, ends in speech: _snap's
    ],
)
def test_first_word_of_a_region(word, after, speech, expected):
    assert _first_word(*word, after, speech) == expected


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
    words = [{"start": a, "end": b} for a, b in (first, second)]
    _unstretch(words, UNSTRETCH)
    assert (words[0]["start"], words[0]["end"]) == expected


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
    assert _missed_speech(SPEECH, seek, next_seek, decoded_end) == expected


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
    seg = {"start": words[0][0], "end": words[-1][1], "words": [{"start": a, "end": b} for a, b in words]}
    _off_the_seams(seg, [(10.0, 12.0)])
    assert [(w["start"], w["end"]) for w in seg["words"]] == [pytest.approx(e) for e in expected]
    assert (seg["start"], seg["end"]) == pytest.approx((expected[0][0], max(words[-1][1], expected[-1][1])))


def _seg(*words: tuple[str, float, float], logprob: float = -0.3) -> dict:
    ws = [{"word": w, "start": a, "end": b} for w, a, b in words]
    return {"start": ws[0]["start"], "end": ws[-1]["end"], "text": "".join(w for w, _, _ in words).strip(),
            "tokens": [1, 2], "words": ws, "result": _result(logprob=logprob)}  # fmt: skip


@pytest.mark.parametrize(
    ("regions", "segments", "expected"),
    [
        # detected speech from 2 to 8 s; 0.5 s of it, or more, that no word covers (0.3 s slack) is decoded again
        (((2.0, 8.0),), [_seg((" a", 2.0, 2.5), (" b", 7.0, 8.0))], [(2.5 + 0.3, 7.0)]),  # a gap between words
        (((2.0, 8.0),), [_seg(*((f" w{i}", 2.0 + i, 3.0 + i) for i in range(6)))], []),
        (((2.0, 8.0),), [_seg(*((f" w{i}", 4.0 + i, 5.0 + i) for i in range(4)))], [(0.0, 4.0)]),  # before the first
        (((2.0, 3.0), (6.0, 8.0)), [_seg((" a", 2.0, 3.0), (" b", 6.0, 7.0), (" c", 7.0, 8.0))], []),  # no speech
        # a word stretched over 1.5 s covers only its last 1.5 s (the alignment stretched it across a skip)
        (((2.0, 8.0),), [_seg((" a", 2.0, 2.5), (" b", 2.5, 8.0))], [(2.5 + 0.3, 6.5)]),
        # under a second of speech: not decoded again, all speech (0.7 s here: 8 such decodes found no words) or a
        # burst in a pause (a breath, an "uh")
        (((2.0, 8.0),), [_seg((" a", 2.0, 3.0), (" b", 4.0, 5.0))], []),
        (((2.0, 3.0), (4.0, 4.6), (7.0, 8.0)), [_seg((" a", 2.0, 3.0), (" c", 7.0, 8.0))], []),
        (((2.0, 3.0), (4.0, 5.2), (7.0, 8.0)), [_seg((" a", 2.0, 3.0), (" c", 7.0, 8.0))], [(3.3, 7.0)]),
    ],
)
def test_uncovered(regions, segments, expected):
    found = _uncovered(SpeechMap(regions, 100.0), 0.0, segments)
    assert found == [pytest.approx(e) for e in expected]


def _said(start: float, end: float) -> dict:
    """A segment of one-second words from start to end."""
    return _seg(*((f" w{t}", float(t), float(t) + 1) for t in range(int(start), int(end))))


@pytest.mark.parametrize(
    ("regions", "found", "expected"),
    [
        # whisper skipped speech from 2 to 20 s, and decoded again it wrote `found`. What it skipped again: the next
        # detected speech 0.3 s or more after that text, if 0.5 s of it or more lies before 20 s
        (((2.0, 5.0), (6.0, 12.0)), [_said(2, 5)], [(6.0, 20.0)]),
        (((2.0, 12.0),), [_said(2, 5)], [(5.3, 20.0)]),  # (the text ended inside a region: from just after it)
        (((2.0, 5.0), (6.0, 12.0)), [_said(2, 5), _said(6, 12)], []),  # all of it
        (((2.0, 5.0), (19.7, 25.0)), [_said(2, 5)], []),  # 0.3 s of speech left before 20 s
        (((2.0, 5.0), (20.0, 25.0)), [_said(2, 5)], []),  # none before 20 s
        (((2.0, 5.0), (6.0, 12.0)), [], []),  # it found nothing: whisper is sure nothing is there
        # and, as _uncovered, speech before its text: here its first sentence, once more
        (((2.0, 5.0), (6.0, 12.0)), [_said(6, 12)], [(1.0, 6.0)]),
        (((2.0, 5.0), (6.0, 9.0), (10.0, 12.0)), [_said(6, 9)], [(1.0, 6.0), (10.0, 20.0)]),
    ],
)
def test_skipped(regions, found, expected):
    assert _skipped(SpeechMap(regions, 100.0), 1.0, found, 20.0) == [pytest.approx(e) for e in expected]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([3.0], [(" a", [1, 2]), (" b c", [])]),  # speech decoded again at 3 s, between a and b: split there
        ([8.0], [(" a b c", [1, 2])]),  # elsewhere: as it was
        ([], [(" a b c", [1, 2])]),
    ],
)
def test_split_around(found, expected):
    seg = _seg((" a", 1.0, 2.0), (" b", 5.0, 5.5), (" c", 5.5, 6.0))
    parts = _split_around([seg], [{"start": t} for t in found])
    assert [(" " + p["text"], p["tokens"]) for p in parts] == expected
    assert [(p["start"], p["end"]) for p in parts] == [(p["words"][0]["start"], p["words"][-1]["end"]) for p in parts]


@pytest.mark.parametrize(
    ("found", "repeated", "expected"),
    [
        # the window wrote "... of about | 1455, that the" with "1455," placed late, at 17.4 s; its speech, 16-17 s,
        # looked skipped, and decoded again it said "1455": the same words, which take the re-decode's times
        (_seg((" 1455", 16.0, 17.0)), True, [("about", 15.7, 16.0), ("1455,", 16.0, 17.0), ("that", 18.0, 18.2)]),
        (_seg((" about", 16.0, 16.2)), True, [("about", 16.0, 16.2), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)]),
        (
            _seg((" 1455", 16.0, 16.5), (" that", 16.5, 17.0)),
            True,  # (two words: the two after it)
            [("about", 15.7, 16.0), ("1455,", 16.0, 16.5), ("that", 16.5, 17.0)],
        ),
        # other words, or only some of the same ones: speech whisper skipped, kept
        (
            _seg((" in", 16.0, 16.2), (" 1455", 16.2, 17.0)),
            False,
            [("about", 15.7, 16.0), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)],
        ),
        (_seg((" printed", 16.0, 17.0)), False, [("about", 15.7, 16.0), ("1455,", 17.4, 18.0), ("that", 18.0, 18.2)]),
    ],
)
def test_merge_repeat(found, repeated, expected):
    segments = [_seg((" of", 15.2, 15.7), (" about", 15.7, 16.0)), _seg((" 1455,", 17.4, 18.0), (" that", 18.0, 18.2))]
    assert _merge_repeat(found, segments) is repeated
    words = [w for seg in segments for w in seg["words"]][1:]
    assert [(w["word"].strip(), w["start"], w["end"]) for w in words] == expected
    assert [(seg["start"], seg["end"]) for seg in segments] == [
        (seg["words"][0]["start"], max(seg["words"][-1]["end"], end)) for seg, end in zip(segments, (16.0, 18.2))
    ]


@pytest.mark.parametrize(
    ("found", "new"),
    [
        (_seg((" Thank", 16.0, 16.3), (" you.", 16.3, 16.6)), False),  # whisper's filler over a breath
        (_seg((" Thanks", 16.0, 16.3), (" for", 16.3, 16.5), (" watching!", 16.5, 17.0)), False),
        (_seg((" 1455", 16.0, 17.0)), False),  # the words after it said again
        (_seg((" printed", 16.0, 17.0)), True),  # speech whisper skipped
        (_seg((" Thank", 16.0, 16.3), (" you", 16.3, 16.6), (" all.", 16.6, 17.0)), True),  # not just the filler
        # whisper unsure of it: made up over 0.74 s of "psalters" (the speed benchmark's pauses recording)
        (_seg((" That's", 16.0, 16.2), (" all", 16.2, 16.4), (" for now.", 16.4, 16.7), logprob=-0.92), False),
        (_seg((" so", 16.0, 16.4), logprob=-0.78), False),
        (_seg((" printed", 16.0, 17.0), logprob=-0.6), False),
        (_seg((" printed", 16.0, 17.0), logprob=-0.46), True),  # (the least sure of the real finds)
    ],
)
def test_new_speech(found, new):
    segments = [_seg((" of", 15.2, 15.7), (" about", 15.7, 16.0)), _seg((" 1455,", 17.4, 18.0), (" that", 18.0, 18.2))]
    assert _new_speech(found, segments) is new


_TOKENIZER = get_tokenizer(True, num_languages=99, language="en", task="transcribe")


def _tokens(text: str, start: float = 0.0, end: float = 2.0) -> list[int]:
    """A decoded piece as whisper gives it: text tokens between two timestamp tokens."""
    stamp = _TOKENIZER.timestamp_begin
    return [stamp + round(start / 0.02), *_TOKENIZER.encode(text), stamp + round(end / 0.02)]


@pytest.mark.parametrize(
    ("decoded", "prompt", "echo"),
    [
        (_tokens(" The Press Yard"), _tokens(" here.") + _tokens(" 8. The Press Yard", 2, 4), True),  # (seed 7)
        (_tokens(" The Press Yard"), _tokens(" 8. The Press Yard") + _tokens(" here.", 2, 4), False),  # not the end
        (_tokens(" The Press Yard and more"), _tokens(" 8. The Press Yard"), False),  # new words after it
        (_tokens(" The Press Yard"), _tokens(" Yard"), False),  # longer than the prompt
        (_tokens(" It imitates a much freer hand"), _tokens(" 8. The Press Yard"), False),
        (_tokens(" Yard"), None, False),  # no prompt
        ([_TOKENIZER.timestamp_begin, _TOKENIZER.timestamp_begin + 100], _tokens(" Yard"), False),  # no text
    ],
)
def test_echoes(decoded, prompt, echo):
    assert _echoes(decoded, prompt, _TOKENIZER.eot) is echo


_SPEECH = ((0.0, 10.0), (10.6, 20.0), (20.5, 28.0))  # three runs, between pauses of 0.6 and 0.5 s


@pytest.mark.parametrize(
    ("regions", "sounds", "gains"),
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
def test_gains(regions, sounds, gains):
    found = _gains(SpeechMap(regions, 100.0, _levels(sounds)), 0.0, 30.0)
    assert [x for g in found for x in g] == pytest.approx([x for g in gains for x in g])


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
    window = _Window(pieces)
    assert window.joined(t) == pytest.approx(joined)
    if any(a / 100 <= t < b / 100 for a, b in pieces):
        assert window.time(joined) == pytest.approx(t)  # (the inverse of time())


def test_leveled():
    """Each gain applies to its stretch of the joined audio, and nowhere else (here: across a stretch left out)."""
    window = _Window(((100, 500), (900, 1200)))  # 1-5 s and 9-12 s of the recording: 7 s of joined audio
    audio = np.full(7 * SAMPLE_RATE, 0.01, np.float32)
    out = _leveled(audio, window, [(4.0, 10.0, 20.0)])
    raised = np.flatnonzero(out > 0.05)
    assert (raised[0], raised[-1] + 1) == (3 * SAMPLE_RATE, 5 * SAMPLE_RATE)  # 4-5 s and 9-10 s: joined 3-5 s
    assert out[raised] == pytest.approx(0.1) and np.all(audio == np.float32(0.01))  # (a copy)
    assert _leveled(audio, window, []) is audio
