"""whisper's per-step decoding rules (openai-whisper's whisper/decoding.py, MIT) in numpy, for all rows of a batch at
once: token suppression, the timestamp rules, greedy decoding, a seeded sampler and beam search. Each computes
whisper's values in float32, so a decode gives whisper's tokens (tests/asr/test_batched.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np


class KVCache(Protocol):
    def rearrange_kv_cache(self, source_indices: list[int]) -> None: ...


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float32, as torch computes it."""
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest values of each row and their indices, largest first (torch.topk). By k argmax passes: numpy's
    argpartition slows down tenfold on rows that the rules filled with -inf."""
    work, rows = x.copy(), np.arange(len(x))
    index = np.empty((len(x), k), dtype=np.int64)
    for j in range(k):
        index[:, j] = work.argmax(axis=-1)
        work[rows, index[:, j]] = -np.inf
    values = np.take_along_axis(x, index, axis=-1)
    for row in np.flatnonzero(np.isneginf(values).any(axis=-1)):  # (too few finite values: distinct -inf indices)
        index[row] = np.argsort(-x[row], kind="stable")[:k]
        values[row] = x[row, index[row]]
    return values, index


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class SuppressBlank:
    def __init__(self, tokenizer, sample_begin: int):
        self.blank = [*tokenizer.encode(" "), tokenizer.eot]
        self.sample_begin = sample_begin

    def apply(self, logits: np.ndarray, tokens: np.ndarray) -> None:
        if tokens.shape[1] == self.sample_begin:
            logits[:, self.blank] = -np.inf


class SuppressTokens:
    def __init__(self, suppress: Iterable[int]):
        self.suppress = np.asarray(list(suppress), dtype=np.int64)

    def apply(self, logits: np.ndarray, tokens: np.ndarray) -> None:
        logits[:, self.suppress] = -np.inf


class TimestampRules:
    """whisper's ApplyTimestampRules for all rows at once: timestamps come in pairs except right before the end, never
    go back, a segment is never empty; the first token is a timestamp; a timestamp when the timestamps together are
    likelier than any text token."""

    def __init__(self, tokenizer, sample_begin: int, max_initial_timestamp_index: int | None):
        self.tokenizer = tokenizer
        self.sample_begin = sample_begin
        self.max_initial_timestamp_index = max_initial_timestamp_index

    def apply(self, logits: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Applies the rules to `logits` in place; returns their log-softmax as it stands after them (the decoders'
        next step reads it: one pass over the vocabulary a step instead of two)."""
        begin, eot = self.tokenizer.timestamp_begin, self.tokenizer.eot
        if self.tokenizer.no_timestamps is not None:
            logits[:, self.tokenizer.no_timestamps] = -np.inf
        sampled = tokens[:, self.sample_begin :]
        n = sampled.shape[1]
        if n:
            is_time = sampled >= begin
            last = is_time[:, -1]
            penultimate = is_time[:, -2] if n >= 2 else np.ones_like(last)
            last_time = sampled[np.arange(len(sampled)), n - 1 - is_time[:, ::-1].argmax(axis=1)]
            closing = last & ~penultimate  # the last token opened a pair: the next one closes it
            for k in np.flatnonzero(is_time.any(axis=1)).tolist():
                if last[k]:
                    if penultimate[k]:
                        logits[k, begin:] = -np.inf
                    else:
                        logits[k, :eot] = -np.inf
                logits[k, begin : int(last_time[k]) + (0 if closing[k] else 1)] = -np.inf
        if tokens.shape[1] == self.sample_begin:
            logits[:, :begin] = -np.inf
            if self.max_initial_timestamp_index is not None:
                logits[:, begin + self.max_initial_timestamp_index + 1 :] = -np.inf
        logprobs = log_softmax(logits)
        times = logprobs[:, begin:]
        peak = times.max(axis=-1)
        with np.errstate(invalid="ignore"):  # (every timestamp suppressed: -inf, as torch's logsumexp gives)
            timestamp_logprob = peak + np.log(np.exp(times - peak[:, None]).sum(axis=-1))
        changed = timestamp_logprob > logprobs[:, :begin].max(axis=-1)
        if changed.any():
            logits[changed, :begin] = -np.inf
            logprobs[changed] = log_softmax(logits[changed])  # (row by row: the same values as the whole array's)
        return logprobs


class GreedyDecoder:
    def __init__(self, temperature: float, eot: int):
        self.temperature = temperature
        self.eot = eot

    def reset(self) -> None:
        pass

    def next_tokens(self, logits: np.ndarray) -> np.ndarray:
        return logits.argmax(axis=-1)

    def update(
        self, tokens: np.ndarray, logits: np.ndarray, sum_logprobs: np.ndarray, logprobs: np.ndarray | None = None
    ) -> tuple[np.ndarray, bool]:
        """The next tokens; `logprobs`, when given, is log_softmax(logits) already computed."""
        next_tokens = self.next_tokens(logits)
        logprobs = log_softmax(logits) if logprobs is None else logprobs
        ended = tokens[:, -1] == self.eot
        with np.errstate(invalid="ignore"):
            sum_logprobs += logprobs[np.arange(len(logprobs)), next_tokens] * ~ended
        next_tokens[ended] = self.eot
        tokens = np.concatenate([tokens, next_tokens[:, None]], axis=1)
        return tokens, bool((tokens[:, -1] == self.eot).all())

    def ended(self, tokens: np.ndarray, windows: int) -> np.ndarray:
        """(windows,): whether each window's rows have all ended (they only add end tokens from here)."""
        return (tokens[:, -1] == self.eot).reshape(windows, -1).all(axis=1)

    def narrow(self, first: int) -> None:
        """The rows from here on are those of windows `first` onwards (each row stands alone: nothing to keep)."""

    def finalize(self, tokens: np.ndarray, sum_logprobs: np.ndarray):
        ends = np.full((*tokens.shape[:-1], 1), self.eot, dtype=tokens.dtype)  # at least one end token each
        return np.concatenate([tokens, ends], axis=-1), sum_logprobs.tolist()


class SeededSampler(GreedyDecoder):
    """Sampling at a temperature above 0 from a generator seeded afresh for each decode: the same window gives the
    same text on every run and in every thread."""

    SEED = 0

    def __init__(self, temperature: float, eot: int):
        super().__init__(temperature, eot)
        self.rng = np.random.default_rng(self.SEED)

    def next_tokens(self, logits: np.ndarray) -> np.ndarray:
        cumulative = np.cumsum(softmax(logits / self.temperature).astype(np.float64), axis=-1)
        draw = self.rng.random(len(logits))[:, None] * cumulative[:, -1:]
        return np.minimum((cumulative <= draw).sum(axis=-1), logits.shape[-1] - 1)


class BeamSearchDecoder:
    """whisper's BeamSearchDecoder with one top-k for all rows and candidates keyed by (row's prefix, token) rather
    than the whole sequence: its candidates, scores, order and finished sequences."""

    def __init__(self, beam_size: int, eot: int, inference: KVCache, patience: float | None = None):
        self.beam_size, self.eot, self.inference = beam_size, eot, inference
        self.max_candidates = round(beam_size * (patience or 1.0))
        if self.max_candidates <= 0:
            raise ValueError(f"Invalid beam size ({beam_size}) or patience ({patience})")
        self.finished_sequences: list[dict] | None = None
        self.first = 0  # the window of the first row (DecodingTask narrows the batch to the windows still searching)

    def reset(self) -> None:
        self.finished_sequences = None
        self.first = 0

    def ended(self, tokens: np.ndarray, windows: int) -> np.ndarray:
        """(windows,): whether each window of the rows has its finished sequences: its rows no longer change them,
        nor finalize's choice (it tops up from the rows only a window with fewer than beam_size)."""
        full = max(self.max_candidates, self.beam_size)
        return np.array([len(s) >= full for s in self.finished_sequences[self.first : self.first + windows]])

    def narrow(self, first: int) -> None:
        self.first = first

    def update(
        self, tokens: np.ndarray, logits: np.ndarray, sum_logprobs: np.ndarray, logprobs: np.ndarray | None = None
    ) -> tuple[np.ndarray, bool]:
        beams = self.beam_size
        if tokens.shape[0] % beams != 0:
            raise ValueError(f"{tokens.shape}[0] % {beams} != 0")
        n_audio = tokens.shape[0] // beams
        if self.finished_sequences is None:
            self.finished_sequences = [{} for _ in range(n_audio)]
        searching = self.finished_sequences[self.first : self.first + n_audio]
        values, top = top_k(log_softmax(logits) if logprobs is None else logprobs, beams + 1)
        scores_of = (sum_logprobs[:, None] + values).tolist()  # float32 sums, as whisper's (a + b).item()
        tokens_of = top.tolist()
        rows = tokens.tolist()
        first_row: dict[tuple[int, ...], int] = {}
        prefix = [first_row.setdefault(tuple(row), idx) for idx, row in enumerate(rows)]  # equal rows, one key

        next_tokens, source_indices, new_sums, finished_sequences = [], [], [], []
        for i in range(n_audio):
            scores, sources, finished = {}, {}, {}
            for idx in range(i * beams, (i + 1) * beams):
                for score, token in zip(scores_of[idx], tokens_of[idx]):
                    scores[prefix[idx], token] = score
                    sources[prefix[idx], token] = idx
            saved = 0
            for key in sorted(scores, key=scores.get, reverse=True):
                if key[1] == self.eot:
                    finished[(*rows[sources[key]], key[1])] = scores[key]
                else:
                    new_sums.append(scores[key])
                    next_tokens.append(key[1])
                    source_indices.append(sources[key])
                    saved += 1
                    if saved == beams:
                        break
            finished_sequences.append(finished)

        # (each window keeps `beams` rows: a prefix has beams + 1 candidates, at most one of them the end token)
        sum_logprobs[: len(new_sums)] = np.asarray(new_sums, dtype=np.float32)
        tokens = np.concatenate([tokens[source_indices], np.asarray(next_tokens, dtype=tokens.dtype)[:, None]], axis=1)
        self.inference.rearrange_kv_cache(source_indices)
        for previously_finished, newly_finished in zip(searching, finished_sequences):
            for seq in sorted(newly_finished, key=newly_finished.get, reverse=True):
                if len(previously_finished) >= self.max_candidates:
                    break  # the candidate list is full
                previously_finished[seq] = newly_finished[seq]
        return tokens, all(len(sequences) >= self.max_candidates for sequences in self.finished_sequences)

    def finalize(self, preceding_tokens: np.ndarray, sum_logprobs: np.ndarray):
        """The finished sequences of each window, topped up with its likeliest unfinished ones."""
        for i, sequences in enumerate(self.finished_sequences):
            if len(sequences) < self.beam_size:
                for j in list(np.argsort(sum_logprobs[i]))[::-1]:
                    sequences[(*preceding_tokens[i, j].tolist(), self.eot)] = float(sum_logprobs[i][j])
                    if len(sequences) >= self.beam_size:
                        break
        tokens = [[np.asarray(seq) for seq in sequences] for sequences in self.finished_sequences]
        return tokens, [list(sequences.values()) for sequences in self.finished_sequences]
