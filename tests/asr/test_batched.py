"""whisper's per-step rules done for the whole batch (pipeline/asr/batched.py) give whisper's own results: the same masked
logits, the same beams, scores and finished sequences, step after step; and the same tokens in a real decode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from whisper.decoding import ApplyTimestampRules, BeamSearchDecoder, DecodingOptions
from whisper.tokenizer import get_tokenizer

from pipeline.asr.batched import BatchedBeamSearch, BatchedTimestampRules

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
    ours, theirs = logits(len(sampled), len(sampled[0]), boost), None
    theirs = ours.clone()
    ApplyTimestampRules(TOKENIZER, len(SOT), max_initial).apply(theirs, tokens)
    BatchedTimestampRules(TOKENIZER, len(SOT), max_initial).apply(ours, tokens)
    assert torch.equal(ours, theirs)
    assert torch.isinf(ours).any()  # (the rules did mask something)


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
    searches = []
    for cls in (BeamSearchDecoder, BatchedBeamSearch):
        search = cls(beams, EOT, Recorder(), patience)
        search.reset()
        searches.append((search, tokens.clone(), torch.zeros(len(tokens))))
    for step in range(steps):
        # (at the first step every beam of a window is the same sequence, with the same logits)
        x = logits(windows, 100).repeat_interleave(beams, 0) if step == 0 else logits(len(tokens), 100 + step)
        x[:, EOT] += eot_boost * (step >= 2)
        outputs = []
        for i, (search, toks, sums) in enumerate(searches):
            toks, completed = search.update(toks, x.clone(), sums)
            searches[i] = (search, toks, sums)
            outputs.append((toks, sums.clone(), completed, search.inference.calls[-1], search.finished_sequences))
        (a_tokens, a_sums, a_done, a_source, a_finished), (b_tokens, b_sums, b_done, b_source, b_finished) = outputs
        assert torch.equal(a_tokens, b_tokens) and a_tokens.dtype == b_tokens.dtype
        assert torch.equal(a_sums, b_sums)
        assert a_source == b_source and a_done == b_done
        assert a_finished == b_finished and [list(f) for f in a_finished] == [list(f) for f in b_finished]
        if a_done:
            break
    finals = [search.finalize(toks[None].reshape(windows, beams, -1), sums.reshape(windows, beams))
              for search, toks, sums in searches]  # fmt: skip
    assert [[t.tolist() for t in row] for row in finals[0][0]] == [[t.tolist() for t in row] for row in finals[1][0]]
    assert finals[0][1] == finals[1][1]
    assert any(searches[0][0].finished_sequences) or eot_boost == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [None, 5])
def test_a_real_decode_as_whisper(ov_model, audio, beam_size):
    """A real window of speech decoded with whisper's own rule classes and with ours: the same tokens and scores."""
    from whisper.audio import log_mel_spectrogram, pad_or_trim

    from pipeline.asr.inference import OVDecodingTask

    mel = log_mel_spectrogram(torch.from_numpy(pad_or_trim(audio("en_ljs_LJ001-0001"))))[None]
    mel = torch.cat([mel, log_mel_spectrogram(torch.from_numpy(pad_or_trim(audio("en_ls_61-70968-0000"))))[None]])
    options = DecodingOptions(language="en", beam_size=beam_size, fp16=False)
    ours = OVDecodingTask(ov_model, options)
    theirs = OVDecodingTask(ov_model, options)
    theirs.logit_filters = [ApplyTimestampRules(f.tokenizer, f.sample_begin, f.max_initial_timestamp_index)
                            if isinstance(f, BatchedTimestampRules) else f for f in theirs.logit_filters]  # fmt: skip
    if beam_size:
        theirs.decoder = BeamSearchDecoder(beam_size, EOT, theirs.inference)
    with torch.no_grad():
        a, b = ours.run(mel), theirs.run(mel)
    assert [r.tokens for r in a] == [r.tokens for r in b]
    assert [r.avg_logprob for r in a] == [r.avg_logprob for r in b]
    assert all(len(r.tokens) > 10 for r in a)
