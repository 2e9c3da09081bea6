"""whisper's per-step rules in numpy for the whole batch (pipeline/asr/search.py) give whisper's own (PyTorch) results:
the same masked logits, the same beams, scores and finished sequences, step after step. Real decodes against
PyTorch's: tests/asr/test_openvino.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from whisper.decoding import ApplyTimestampRules, BeamSearchDecoder
from whisper.tokenizer import get_tokenizer

from pipeline.asr.search import BeamSearchDecoder as OurBeamSearch
from pipeline.asr.search import TimestampRules, log_softmax

TOKENIZER = get_tokenizer(True, num_languages=99, language="en", task="transcribe")
BEGIN, EOT = TOKENIZER.timestamp_begin, TOKENIZER.eot
VOCAB = 51865
SOT = list(TOKENIZER.sot_sequence)
T = [BEGIN + i for i in range(1501)]  # timestamp tokens: T[i] is i * 0.02 s


def logits(rows: int, seed: int, timestamp_boost: float = 0.0) -> torch.Tensor:
    x = torch.from_numpy(np.random.default_rng(seed).normal(0, 3, (rows, VOCAB)).astype(np.float32))
    x[:, BEGIN:] += timestamp_boost
    return x


@pytest.mark.parametrize(
    ("sampled", "boost", "max_initial"),
    [
        ([[]], 0.0, 50),  # the first step: only timestamps, at most 1 s in
        ([[]], 0.0, None),
        ([[T[0]]], 0.0, 50),  # a segment opened: text next, or its closing timestamp (not T[0] again)
        ([[T[0], 400]], 0.0, None),  # text after an opening timestamp
        ([[T[0], 400, T[50]]], 0.0, None),  # a closing timestamp: the next one opens (>= T[50]) or text ends
        ([[T[0], 400, T[50], T[50]]], 0.0, None),  # a pair: text must follow
        ([[400, 401, 402]], 0.0, None),  # no timestamp yet (a prompt-free continuation)
        ([[T[3], 400, T[9]]], 8.0, None),  # timestamps likelier than any text token: text masked
        ([[T[3], 400, 401]], -8.0, None),
        (  # a batch of rows in different states, as beams are
            [[T[0], 400, T[50], T[50]], [T[0], 400, 401, 402], [T[0], 400, T[50], 500], [T[0], 400, 402, T[60]]],
            0.0,
            None,
        ),
        ([[T[0], 400, T[50], T[50]], [T[0], 400, 401, 402], [T[0], 400, 402, T[60]]], 5.0, 50),
    ],
)
def test_timestamp_rules_as_whisper(sampled, boost, max_initial):
    tokens = torch.tensor([SOT + row for row in sampled], dtype=torch.long)
    theirs = logits(len(sampled), len(sampled[0]), boost)
    ours = theirs.numpy().copy()
    ApplyTimestampRules(TOKENIZER, len(SOT), max_initial).apply(theirs, tokens)
    logprobs = TimestampRules(TOKENIZER, len(SOT), max_initial).apply(ours, tokens.numpy())
    assert np.array_equal(ours, theirs.numpy())
    assert np.isinf(ours).any()  # (the rules did mask something)
    # the log-softmax it hands the decoder is the one the decoder would compute from the masked logits, to the bit,
    # in rows masked after it was first computed or not
    assert np.array_equal(logprobs, log_softmax(ours))


class Recorder:
    """Stands in for the decoder's KV cache: records each reordering the search asks for."""

    def __init__(self):
        self.calls = []

    def rearrange_kv_cache(self, source_indices):
        self.calls.append(list(source_indices))


@pytest.mark.parametrize(
    ("windows", "beams", "patience", "eot_boost", "steps"),
    [
        (1, 5, None, 0.0, 6),
        (1, 5, None, 4.0, 8),  # the end token likely: sequences finish along the way
        (3, 5, None, 3.0, 8),  # windows side by side
        (2, 2, 2.0, 5.0, 10),  # patience: more finished sequences than beams
        (2, 5, None, 30.0, 3),  # every row wants to end at once
    ],
)
def test_beam_search_as_whisper(windows, beams, patience, eot_boost, steps):
    prompt = [[SOT[0], 100 + w, 200 + w] + SOT[1:] for w in range(windows)]
    tokens = torch.tensor([row for row in prompt for _ in range(beams)], dtype=torch.long)  # beams equal at first
    theirs = BeamSearchDecoder(beams, EOT, Recorder(), patience)
    ours = OurBeamSearch(beams, EOT, Recorder(), patience)
    theirs.reset()
    ours.reset()
    a_tokens, a_sums = tokens.clone(), torch.zeros(len(tokens))
    b_tokens, b_sums = tokens.numpy().copy(), np.zeros(len(tokens), dtype=np.float32)
    for step in range(steps):
        # (at the first step every beam of a window is the same sequence, with the same logits)
        x = logits(windows, 100).repeat_interleave(beams, 0) if step == 0 else logits(len(tokens), 100 + step)
        x[:, EOT] += eot_boost * (step >= 2)
        a_tokens, a_done = theirs.update(a_tokens, x.clone(), a_sums)
        b_tokens, b_done = ours.update(b_tokens, x.numpy().copy(), b_sums)
        assert np.array_equal(a_tokens.numpy(), b_tokens) and b_tokens.dtype == np.int64
        assert np.allclose(a_sums.numpy(), b_sums, rtol=1e-6, atol=0)  # (numpy's exp and log: the last bit may differ)
        assert theirs.inference.calls[-1] == ours.inference.calls[-1] and a_done == b_done
        assert [list(f) for f in theirs.finished_sequences] == [list(f) for f in ours.finished_sequences]
        for a, b in zip(theirs.finished_sequences, ours.finished_sequences):
            assert list(a.values()) == pytest.approx(list(b.values()), rel=1e-6)
        if a_done:
            break
    a_final = theirs.finalize(a_tokens[None].reshape(windows, beams, -1), a_sums.reshape(windows, beams))
    b_final = ours.finalize(b_tokens.reshape(windows, beams, -1), b_sums.reshape(windows, beams))
    assert [[t.tolist() for t in row] for row in a_final[0]] == [[t.tolist() for t in row] for row in b_final[0]]
    assert [lp for row in a_final[1] for lp in row] == pytest.approx([lp for row in b_final[1] for lp in row], rel=1e-6)
    assert any(ours.finished_sequences) or eot_boost == 0.0
