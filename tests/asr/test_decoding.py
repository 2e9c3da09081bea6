"""The decode rules (pipeline/asr/decoding.py): whisper's thresholds and timestamps, loops, echoes, the guards."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from stages import SPEECH, heard, result, said, segment
from whisper.tokenizer import get_tokenizer

from pipeline.asr.decoding import Guard, cut_loop, echoes, is_quiet, is_silence, needs_fallback, split_at_timestamps
from pipeline.asr.options import TranscribeOptions


@pytest.mark.parametrize(
    ("segments", "kept"),
    [
        # (text, start, end, decode result) -> which survive
        ([("Hello there.", 1.0, 3.0, result())], [True]),
        ([("Thanks for watching!", 5.0, 8.0, result(0.7, -0.9))], [False]),  # no speech, whisper unsure
        ([("This is all very whispered.", 5.0, 8.0, result(0.3, -0.4))], [True]),  # no speech found, whisper sure
        ([("Thanks for watching!", 5.0, 8.0, result(0.3, -0.4))], [False]),  # a filler where nobody speaks
        ([("Subtitles by the Amara.org community", 4.5, 9.0, result(0.3, -0.4))], [False]),
        ([("Thank you for watching.", 10.0, 12.0, result())], [True]),  # said by someone
        ([("Thank you.", 3.5, 5.5, result())], [False]),  # a filler, and only 0.5 s of its 2 s is speech
        ([("Thank you.", 3.0, 4.5, result())], [True]),  # mostly speech
        ([("We go on.", 1.0, 2.0, result()), ("We go on.", 2.0, 3.0, result())], [True, True]),  # said twice
        ([("We go on.", 1.0, 2.0, result()), ("We go on.", 4.0, 9.0, result(0.3, -0.4))], [True, False]),
        (
            [("I don't know.", 1.0, 2.0, result(ratio=3.0)), ("I don't know.", 2.0, 3.0, result(ratio=3.0))],
            [True, False],
        ),  # fmt: skip
        ([("Hello.", 1.0, 2.0, result()), ("Hello!", 5.0, 9.0, result(0.3, -0.4))], [True, False]),
    ],
)
def test_hallucination_guards(segments, kept):
    guard = Guard(SPEECH, compression_ratio_threshold=2.4, logprob_threshold=-1.0)
    found = [guard.keep(segment(t, s, e, r)) for t, s, e, r in segments]
    assert found == kept


_WHISPERED = said((" This", 5.0, 5.3), (" is", 5.3, 5.5), (" all", 5.5, 5.8), (" very", 5.8, 6.2),
                  (" whispered.", 6.2, 6.9), logprob=-0.70)  # fmt: skip


@pytest.mark.parametrize(
    ("seg", "kept"),
    [
        # where the detector heard no speech, whisper unsure of its tokens: kept if its timed words pass whisper's own
        # test for made-up text. A whisper after a sentence, read right at -0.70 (development seeds 6 and 30)
        (heard(_WHISPERED, (0.6, 0.9, 0.8, 0.7, 0.5), no_speech=0.14), True),
        (heard(_WHISPERED, (0.1, 0.05, 0.1, 0.02, 0.1), no_speech=0.14), False),  # words the alignment hardly hears
        (heard(_WHISPERED, (0.6, 0.9, 0.8, 0.7, 0.5), no_speech=0.96), False),  # whisper deems it silence
        (heard(replace(_WHISPERED, result=result(0.14, -1.1)), (0.6, 0.9, 0.8, 0.7, 0.5)), False),  # under -1.0
        (replace(_WHISPERED, words=None), False),  # not timed: sure or nothing
        (heard(said((" Thank", 5.0, 5.3), (" you.", 5.3, 5.6), logprob=-0.8), (0.9, 0.9)), False),  # a filler
    ],
)
def test_text_where_no_speech_was_heard(seg, kept):
    assert Guard(SPEECH, compression_ratio_threshold=2.4, logprob_threshold=-1.0).keep(seg) is kept


def test_no_guard_but_repeats_without_speech_detection():
    guard = Guard(None, compression_ratio_threshold=2.4, logprob_threshold=-1.0)
    assert guard.keep(segment("Thanks for watching!", 5.0, 8.0, result(0.7, -0.9)))
    assert not guard.keep(segment("Thanks for watching!", 8.0, 9.0, result(ratio=3.0)))


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
    assert cut_loop(piece, timestamp_begin=100) == expected


_TOKENIZER = get_tokenizer(True, num_languages=99, language="en", task="transcribe")


def _tokens(text: str, start: float = 0.0, end: float = 2.0) -> list[int]:
    """A decoded piece as whisper gives it: text tokens between two timestamp tokens."""
    stamp = _TOKENIZER.timestamp_begin
    return [stamp + round(start / 0.02), *_TOKENIZER.encode(text), stamp + round(end / 0.02)]


@pytest.mark.parametrize(
    ("decoded", "prompt", "echo"),
    [
        (
            _tokens(" The Press Yard"),
            _tokens(" here.") + _tokens(" 8. The Press Yard", 2, 4),
            True,
        ),  # (a heading said again)
        (_tokens(" The Press Yard"), _tokens(" 8. The Press Yard") + _tokens(" here.", 2, 4), False),  # not the end
        (_tokens(" The Press Yard and more"), _tokens(" 8. The Press Yard"), False),  # new words after it
        (_tokens(" The Press Yard"), _tokens(" Yard"), False),  # longer than the prompt
        (_tokens(" It imitates a much freer hand"), _tokens(" 8. The Press Yard"), False),
        (_tokens(" Yard"), None, False),  # no prompt
        ([_TOKENIZER.timestamp_begin, _TOKENIZER.timestamp_begin + 100], _tokens(" Yard"), False),  # no text
    ],
)
def test_echoes(decoded, prompt, echo):
    assert echoes(decoded, prompt, _TOKENIZER.eot) is echo


T = 1000  # timestamp_begin in these rows: 1000 is <|0.00|>, 1001 <|0.02|>, ...


@pytest.mark.parametrize(
    ("tokens", "pieces", "advance"),
    [
        # (tokens, window frames) -> pieces (start, end in 0.02-s steps, tokens) and mel frames to advance
        # a single timestamp at the end: no speech after it, on to the window's end
        ([T, 1, 2, T + 50, T + 50, 3, T + 100], [(0, 50, [T, 1, 2, T + 50]), (50, 100, [T + 50, 3, T + 100])], 3000),
        # a pair at the end: on to it (its 0.02-s steps are 2 mel frames each)
        ([T, 1, T + 50, T + 50, 3, T + 100, T + 100], [(0, 50, [T, 1, T + 50]), (50, 100, [T + 50, 3, T + 100])], 200),
        ([T, 1, T + 50, T + 50, 3], [(0, 50, [T, 1, T + 50])], 100),  # unfinished: decoded again from the pair
        ([T, 1, T + 50, T + 50], [(0, 50, [T, 1, T + 50])], 100),
        ([T, 1, 2], [(0, 1500, [T, 1, 2])], 3000),  # no pair, no end: all of the window
        ([T, 1, 2, T + 40], [(0, 40, [T, 1, 2, T + 40])], 3000),  # no pair, a last timestamp: the speech ends there
        ([T, T], [(0, 0, [T])], 3000),  # a lone <|0.00|> pair: move on
    ],
)
def test_split_at_timestamps(tokens, pieces, advance):
    assert split_at_timestamps(tokens, T, 3000) == (pieces, advance)


@pytest.mark.parametrize(
    ("decode", "fallback", "silence"),
    [
        # whisper.transcribe's thresholds: compression ratio 2.4, log-probability -1.0, no-speech 0.6
        (result(), False, False),
        (result(ratio=2.5), True, False),  # too repetitive
        (result(logprob=-1.2), True, False),  # too unlikely
        (result(no_speech=0.7, logprob=-1.2), False, True),  # silent, and unsure: skipped, not decoded again
        (result(no_speech=0.7, logprob=-0.5), False, False),  # silent, but sure of its text: kept
    ],
)
def test_whispers_thresholds(decode, fallback, silence):
    options = TranscribeOptions()
    assert needs_fallback(decode, options) is fallback
    assert is_silence(decode, options) is silence


@pytest.mark.parametrize(
    ("dbfs", "quiet"),
    [(-20.0, False), (-55.0, False), (-65.0, True), (-120.0, True), (None, True)],  # None: no samples
)
def test_is_quiet(dbfs, quiet):
    samples = np.array([], np.float32) if dbfs is None else np.full(1600, 10 ** (dbfs / 20), np.float32)
    assert bool(is_quiet(samples)) is quiet
