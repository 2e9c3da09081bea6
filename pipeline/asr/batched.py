"""whisper's per-step decoding rules for all rows of a batch at once: the same results, fewer small torch calls.

whisper's BeamSearchDecoder.update and ApplyTimestampRules.apply loop over rows in Python (docs/engine.md gives the
cost). These subclasses compute the same values in the same float32 order, so every decode gives the same tokens
(tests/asr/test_batched.py compares them with whisper's).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from whisper.decoding import ApplyTimestampRules, BeamSearchDecoder


class BatchedTimestampRules(ApplyTimestampRules):
    """ApplyTimestampRules.apply, its two loops over the rows done at once."""

    def apply(self, logits: torch.Tensor, tokens: torch.Tensor) -> None:
        begin, eot = self.tokenizer.timestamp_begin, self.tokenizer.eot
        if self.tokenizer.no_timestamps is not None:
            logits[:, self.tokenizer.no_timestamps] = -np.inf

        # timestamps come in pairs, except right before the end; they never go back; a segment is never empty
        sampled = tokens[:, self.sample_begin :].numpy()
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
            logits[:, :begin] = -np.inf  # the first token is a timestamp
            if self.max_initial_timestamp_index is not None:
                logits[:, begin + self.max_initial_timestamp_index + 1 :] = -np.inf

        # a timestamp when the timestamps together are likelier than any text token
        logprobs = F.log_softmax(logits.float(), dim=-1)
        timestamp_logprob = logprobs[:, begin:].logsumexp(dim=-1)
        max_text_token_logprob = logprobs[:, :begin].max(dim=-1).values
        for k in torch.nonzero(timestamp_logprob > max_text_token_logprob).flatten().tolist():
            logits[k, :begin] = -np.inf


class BatchedBeamSearch(BeamSearchDecoder):
    """BeamSearchDecoder.update with one topk for all rows, and candidates keyed by (row's prefix, token)
    rather than the whole sequence: candidates, scores, order and finished sequences are whisper's."""

    def update(self, tokens: torch.Tensor, logits: torch.Tensor, sum_logprobs: torch.Tensor):
        beams = self.beam_size
        if tokens.shape[0] % beams != 0:
            raise ValueError(f"{tokens.shape}[0] % {beams} != 0")
        n_audio = tokens.shape[0] // beams
        if self.finished_sequences is None:  # for the first update
            self.finished_sequences = [{} for _ in range(n_audio)]

        logprobs = F.log_softmax(logits.float(), dim=-1)
        top_logprobs, top_tokens = logprobs.topk(beams + 1)
        scores_of = (sum_logprobs[:, None] + top_logprobs).tolist()  # float32 sums, as whisper's (a + b).item()
        tokens_of = top_tokens.tolist()
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
                    finished[tuple(rows[sources[key]]) + (key[1],)] = scores[key]
                else:
                    new_sums.append(scores[key])
                    next_tokens.append(key[1])
                    source_indices.append(sources[key])
                    saved += 1
                    if saved == beams:
                        break
            finished_sequences.append(finished)

        # (each window keeps `beams` rows: a prefix has beams + 1 candidates, at most one of them the end token)
        sum_logprobs[: len(new_sums)] = torch.tensor(new_sums, dtype=sum_logprobs.dtype)
        source = torch.tensor(source_indices)
        tokens = torch.cat([tokens[source], torch.tensor(next_tokens, dtype=tokens.dtype)[:, None]], dim=-1)
        self.inference.rearrange_kv_cache(source_indices)

        # what follows is BeamSearchDecoder.update's
        for previously_finished, newly_finished in zip(self.finished_sequences, finished_sequences):
            for seq in sorted(newly_finished, key=newly_finished.get, reverse=True):
                if len(previously_finished) >= self.max_candidates:
                    break  # the candidate list is full
                previously_finished[seq] = newly_finished[seq]
        completed = all(len(sequences) >= self.max_candidates for sequences in self.finished_sequences)
        return tokens, completed
