"""Word timestamps from the decoder's cross-attention, in numpy: a port of openai-whisper's whisper/timing.py
(MIT licence, Copyright (c) 2022 OpenAI) that imports neither torch, numba nor whisper, so that a transcription
process loads none of them.

Where whisper's `find_alignment` runs a PyTorch model with forward hooks, the caller passes `align`: given the
token sequence, it returns the logits and the alignment heads' raw cross-attention scores. The results are
whisper's for the same inputs (tests/asr/test_alignment.py runs both); the DTW is vectorized over anti-diagonals
instead of compiled by numba.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pipeline.asr.mel import HOP_LENGTH, SAMPLE_RATE, TOKENS_PER_SECOND
from pipeline.asr.search import softmax

MEDIAN_ROWS = 16  # rows median-filtered at once: their `width` copies stay in the CPU's cache

# tokens (1-D int64) -> (logits (T, vocab), raw cross-attention scores of the alignment heads (heads, T, 1500)), both
# float32, the heads sorted by layer then head, before qk_scale and softmax: what whisper's hooks see
Align = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class WordTokenizer(Protocol):
    """The parts of whisper's `Tokenizer` that word timing uses."""

    sot_sequence: tuple[int, ...]
    no_timestamps: int
    eot: int

    def split_to_word_tokens(self, tokens: list[int]) -> tuple[list[str], list[list[int]]]: ...


@dataclass(kw_only=True)
class WordTiming:
    """A word as the alignment found it, times in seconds from the window's start."""

    word: str  # with its leading space, as the tokens decode
    tokens: list[int]
    start: float  # np.float64, as whisper's: round() on it is numpy's, so times round as whisper's do
    end: float
    probability: float  # the mean of its tokens' probabilities


def median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """The median of each `width` values along the last axis, reflect-padded at the ends; `x` itself when it is too
    short to reflect (as whisper's)."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    assert width > 0 and width % 2 == 1, "the median filter's width should be an odd number"
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect").reshape(-1, x.shape[-1] + 2 * pad)
    out = np.empty((len(padded), x.shape[-1]), dtype=x.dtype)
    nan = bool(np.isnan(x).any())
    for k in range(0, len(padded), MEDIAN_ROWS):  # in blocks of rows, each copied `width` times, in the CPU's cache
        block = padded[k : k + MEDIAN_ROWS]
        if nan:  # the window's middle value once sorted, NaN last, as torch sorts (np.minimum would spread NaN)
            out[k : k + MEDIAN_ROWS] = np.partition(sliding_window_view(block, width, axis=-1), pad, axis=-1)[..., pad]
            continue
        # the same value, from the comparisons of a sorting network that decide its middle output: 7 times faster
        # than np.partition at width 7 (no Python per value, no sort per window)
        values = [block[:, i : i + x.shape[-1]].copy() for i in range(width)]
        for a, b in _median_network(width):
            low = np.minimum(values[a], values[b])
            np.maximum(values[a], values[b], out=values[b])
            values[a] = low
        out[k : k + MEDIAN_ROWS] = values[pad]
    return out.reshape(x.shape)


@functools.cache
def _median_network(width: int) -> list[tuple[int, int]]:
    """The comparisons (low, high) of odd-even transposition sort over `width` values that decide its middle output."""
    network = [(i, i + 1) for step in range(width) for i in range(step % 2, width - 1, 2)]
    needed, kept = {width // 2}, []
    for a, b in reversed(network):
        if a in needed or b in needed:
            kept.append((a, b))
            needed |= {a, b}
    return kept[::-1]


def dtw(cost: np.ndarray) -> np.ndarray:
    """The cheapest monotonic path through `cost` (N, M), as (2, steps) row and column indices: whisper's `dtw_cpu`,
    with its float32 sums and its tie-breaking (diagonal if strictly cheapest, else up if strictly cheapest, else left).

    Each anti-diagonal of the accumulated cost depends only on the two before it, so one numpy step computes a whole
    anti-diagonal: the accumulated cost is skewed, its row d holding the cells (i, d - i) by i."""
    n, m = cost.shape
    # float32 costs add in float32; others add in float64 and round to float32, as numba does
    x = np.ascontiguousarray(cost, dtype=np.float32 if cost.dtype == np.float32 else np.float64).reshape(-1)
    acc = np.full((n + m + 1, n + 1), np.inf, dtype=np.float32)  # acc[i + j, i]: the cheapest path's cost to (i, j)
    acc[0, 0] = 0
    flipped = acc[::-1]  # flipped[n + m - d] is acc[d]: rows d - 1, d - 2 as one view
    inf = np.float32(np.inf)
    for d in range(2, n + m + 1):
        lo, hi = max(1, d - m), min(n, d - 1) + 1  # the cells (i, d - i) inside the matrix
        if lo >= hi:  # (N or M is 0)
            continue
        diag_up = acc[d - 2 : d, lo - 1 : hi - 1]  # (2, k): cells (i - 1, j - 1) and (i - 1, j)
        up_diag = flipped[n + m - d + 1 : n + m - d + 3, lo - 1 : hi - 1]  # the same two swapped
        left = acc[d - 1, lo:hi]  # (i, j - 1)
        # whisper's choice as a minimum: diagonal or up where strictly below the other (a tie of the two goes left),
        # then left unless strictly above; a NaN anywhere chooses left, as in whisper's comparisons
        strict = np.where(diag_up < up_diag, diag_up, inf)
        best = np.minimum(np.minimum(strict[0], strict[1], out=strict[0]), left, out=strict[0])
        first = (lo - 1) * m + d - lo - 1  # x[lo - 1, d - lo - 1], then down-left along the anti-diagonal
        np.add(x[first : first + (hi - lo - 1) * (m - 1) + 1 : max(m - 1, 1)], best, out=acc[d, lo:hi])
    return _backtrace(acc, n, m)


def _backtrace(acc: np.ndarray, n: int, m: int) -> np.ndarray:
    """The path from (n, m) back to (0, 0), each step whisper's choice between the stored costs it compared; along
    the top row left, along the left column up (as whisper's `backtrace`)."""
    rows, cols = [], []
    i, j = n, m
    while i > 0 or j > 0:
        rows.append(i - 1)
        cols.append(j - 1)
        if i == 0:
            j -= 1
            continue
        if j == 0:
            i -= 1
            continue
        c0, c1, c2 = acc[i + j - 2, i - 1], acc[i + j - 1, i - 1], acc[i + j - 1, i]
        if c0 < c1 and c0 < c2:
            i, j = i - 1, j - 1
        elif c1 < c0 and c1 < c2:
            i -= 1
        else:
            j -= 1
    return np.array([rows[::-1], cols[::-1]], dtype=np.int64).reshape(2, -1)


def find_alignment(
    *,
    align: Align,
    tokenizer: WordTokenizer,
    text_tokens: list[int],
    num_frames: int,
    medfilt_width: int = 7,
    qk_scale: float = 1.0,
) -> list[WordTiming]:
    """The words of `text_tokens` with their times in a window of `num_frames` mel frames and their probabilities:
    DTW along the alignment heads' attention, as whisper's `find_alignment`."""
    if len(text_tokens) == 0:
        return []
    sot = len(tokenizer.sot_sequence)
    tokens = np.array([*tokenizer.sot_sequence, tokenizer.no_timestamps, *text_tokens, tokenizer.eot], dtype=np.int64)
    logits, qks = align(tokens)  # (T, vocab), (heads, T, 1500)

    # each text token's probability where it was sampled, the softmax over the text vocabulary (below eot)
    sampled = logits[sot : sot + len(text_tokens), : tokenizer.eot]  # the rows that predict the text tokens
    shifted = sampled - sampled.max(axis=-1, keepdims=True)
    picked = shifted[np.arange(len(text_tokens)), text_tokens]
    np.exp(shifted, out=shifted)  # (in place: a window's rows are about 30 MB)
    text_token_probs = (np.exp(picked) / shifted.sum(axis=-1)).tolist()

    weights = softmax(qks[:, :, : num_frames // 2] * np.float32(qk_scale))  # (heads, T, frames / 2)
    weights = (weights - weights.mean(axis=-2, keepdims=True)) / weights.std(axis=-2, keepdims=True)
    weights = median_filter(weights, medfilt_width)
    matrix = weights.mean(axis=0)[sot:-1]  # (no_timestamps + text tokens, frames / 2)
    text_indices, time_indices = dtw(-matrix)

    words, word_tokens = tokenizer.split_to_word_tokens([*text_tokens, tokenizer.eot])
    if len(word_tokens) <= 1:  # eot alone: no boundaries to look up
        return []
    word_boundaries = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    # a token's time is where the path first reaches its row
    jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
    jump_times = time_indices[jumps] / TOKENS_PER_SECOND
    start_times = jump_times[word_boundaries[:-1]]
    end_times = jump_times[word_boundaries[1:]]
    word_probabilities = [np.mean(text_token_probs[i:j]) for i, j in zip(word_boundaries[:-1], word_boundaries[1:])]
    return [
        WordTiming(word=word, tokens=tokens, start=start, end=end, probability=probability)
        for word, tokens, start, end, probability in zip(words, word_tokens, start_times, end_times, word_probabilities)
    ]


def merge_punctuations(alignment: list[WordTiming], *, prepended: str, appended: str) -> None:
    """Join opening punctuation to the word after it and closing punctuation to the word before it, in place: a
    merged-away entry keeps its times with an empty word and no tokens (as whisper's)."""
    i, j = len(alignment) - 2, len(alignment) - 1
    while i >= 0:
        previous, following = alignment[i], alignment[j]
        if previous.word.startswith(" ") and previous.word.strip() in prepended:
            following.word = previous.word + following.word
            following.tokens = previous.tokens + following.tokens
            previous.word, previous.tokens = "", []
        else:
            j = i
        i -= 1

    i, j = 0, 1
    while j < len(alignment):
        previous, following = alignment[i], alignment[j]
        if not previous.word.endswith(" ") and following.word in appended:
            previous.word = previous.word + following.word
            previous.tokens = previous.tokens + following.tokens
            following.word, following.tokens = "", []
        else:
            i = j
        j += 1


def add_word_timestamps(
    *,
    segments: list[dict],
    align: Align,
    tokenizer: WordTokenizer,
    num_frames: int,
    prepend_punctuations: str = "\"'“¿([{-",
    append_punctuations: str = "\"'.。,，!！?？:：”)]}、",
    last_speech_timestamp: float | None = None,
    **kwargs,
) -> None:
    """Give one window's whisper-style segments their "words" (word, start, end, probability; seconds in the audio)
    and move their "start" and "end" to them, in place, as whisper's `add_word_timestamps`. `last_speech_timestamp`
    is where speech last ended before the window (None: the audio's start); `kwargs` go to `find_alignment`."""
    if len(segments) == 0:
        return
    if last_speech_timestamp is None:
        last_speech_timestamp = 0.0

    text_tokens_per_segment = [[token for token in segment["tokens"] if token < tokenizer.eot] for segment in segments]
    text_tokens = list(itertools.chain.from_iterable(text_tokens_per_segment))
    alignment = find_alignment(
        align=align, tokenizer=tokenizer, text_tokens=text_tokens, num_frames=num_frames, **kwargs
    )
    word_durations = np.array([t.end - t.start for t in alignment])
    word_durations = word_durations[word_durations.nonzero()]
    median_duration = np.median(word_durations) if len(word_durations) > 0 else 0.0
    median_duration = min(0.7, float(median_duration))
    max_duration = median_duration * 2

    # whisper's hack: words at sentence boundaries are at most twice the median word long
    if len(word_durations) > 0:
        sentence_end_marks = ".。!！?？"
        for i in range(1, len(alignment)):
            if alignment[i].end - alignment[i].start > max_duration:
                if alignment[i].word in sentence_end_marks:
                    alignment[i].end = alignment[i].start + max_duration
                elif alignment[i - 1].word in sentence_end_marks:
                    alignment[i].start = alignment[i].end - max_duration

    merge_punctuations(alignment, prepended=prepend_punctuations, appended=append_punctuations)

    time_offset = segments[0]["seek"] * HOP_LENGTH / SAMPLE_RATE
    word_index = 0
    for segment, text_tokens in zip(segments, text_tokens_per_segment):
        saved_tokens = 0
        words = []
        while word_index < len(alignment) and saved_tokens < len(text_tokens):
            timing = alignment[word_index]
            if timing.word:
                words.append(
                    dict(
                        word=timing.word,
                        start=round(time_offset + timing.start, 2),
                        end=round(time_offset + timing.end, 2),
                        probability=timing.probability,
                    )
                )
            saved_tokens += len(timing.tokens)
            word_index += 1

        # whisper's hack: the first words after a pause are at most twice the median word long
        if len(words) > 0:
            if words[0]["end"] - last_speech_timestamp > median_duration * 4 and (
                words[0]["end"] - words[0]["start"] > max_duration
                or (len(words) > 1 and words[1]["end"] - words[0]["start"] > max_duration * 2)
            ):
                if len(words) > 1 and words[1]["end"] - words[1]["start"] > max_duration:
                    boundary = max(words[1]["end"] / 2, words[1]["end"] - max_duration)
                    words[0]["end"] = words[1]["start"] = boundary
                words[0]["start"] = max(0, words[0]["end"] - max_duration)

            # the segment's own start when the first word is too long, else the first word's
            if segment["start"] < words[0]["end"] and segment["start"] - 0.5 > words[0]["start"]:
                words[0]["start"] = max(0, min(words[0]["end"] - median_duration, segment["start"]))
            else:
                segment["start"] = words[0]["start"]

            # the segment's own end when the last word is too long, else the last word's
            if segment["end"] > words[-1]["start"] and segment["end"] + 0.5 < words[-1]["end"]:
                words[-1]["end"] = max(words[-1]["start"] + median_duration, segment["end"])
            else:
                segment["end"] = words[-1]["end"]

            last_speech_timestamp = segment["end"]

        segment["words"] = words
