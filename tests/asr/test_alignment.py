"""Word timing in numpy (pipeline/asr/alignment.py) against openai-whisper's whisper.timing, which it ports: the same
medians, DTW paths, merged punctuation, words, probabilities and times."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from whisper import timing as whisper_timing
from whisper.audio import N_FRAMES, N_SAMPLES, log_mel_spectrogram, pad_or_trim
from whisper.model import disable_sdpa
from whisper.tokenizer import get_tokenizer
from whisper.utils import get_end

from pipeline.asr import alignment


def banded(n: int, m: int, seed: int) -> np.ndarray:
    """A cost like word timing's: low along a wandering diagonal band, noise elsewhere."""
    rng = np.random.default_rng(seed)
    centre = np.cumsum(rng.uniform(0.2, 1.8, n)) * m / n
    distance = np.arange(m)[None, :] - centre[:, None]
    return (-np.exp(-((distance / 8) ** 2)) + 0.1 * rng.standard_normal((n, m))).astype(np.float32)


def matrix(shape: tuple[int, ...], kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "ties":  # few distinct values: equal costs and equal sums everywhere
        return rng.integers(0, 3, shape).astype(np.float32)
    if kind == "banded":
        return banded(*shape, seed)
    return rng.standard_normal(shape).astype(np.float64 if kind == "float64" else np.float32)


SHAPES = [(1, 1), (1, 9), (9, 1), (2, 2), (3, 8), (8, 3), (40, 300), (300, 40)]


@pytest.mark.parametrize("kind", ["float32", "float64", "ties"])
@pytest.mark.parametrize("shape", SHAPES)
def test_dtw_is_whispers(shape, kind):
    cost = matrix(shape, kind)
    path = alignment.dtw(cost)
    assert path.shape[0] == 2 and path.dtype == np.int64
    np.testing.assert_array_equal(path, whisper_timing.dtw(torch.from_numpy(cost)))


@pytest.mark.parametrize("shape", [(12, 100), (120, 1500), (200, 1500)])
def test_dtw_is_whispers_on_a_band(shape):
    cost = banded(*shape, seed=shape[0])
    np.testing.assert_array_equal(alignment.dtw(cost), whisper_timing.dtw(torch.from_numpy(cost)))


def test_dtw_with_infinities_and_nan():
    cost = matrix((30, 50), "float32")
    cost[3, :20] = np.inf
    cost[10:, 7] = np.nan
    np.testing.assert_array_equal(alignment.dtw(cost), whisper_timing.dtw(torch.from_numpy(cost)))


@pytest.mark.parametrize(
    ("shape", "kind", "width"),
    [
        ((20,), "float32", 7),
        ((4,), "float32", 7),  # just long enough to reflect
        ((3,), "float32", 7),  # too short: returned as it is
        ((5, 1), "float32", 3),  # too short
        ((5, 1), "float32", 1),
        ((1, 30), "ties", 5),
        ((30, 1), "float32", 7),
        ((6, 40, 150), "float32", 7),
        ((6, 40, 150), "ties", 7),
        ((2, 3, 9, 11), "float64", 3),
        ((3, 200), "float32", 11),
        ((40, 60), "ties", 9),
        ((4, 3), "float32", 8),  # even, but too short to be checked
    ],
)
def test_median_filter_is_whispers(shape, kind, width):
    x = matrix(shape, kind)
    expected = whisper_timing.median_filter(torch.from_numpy(x), width).numpy()
    found = alignment.median_filter(x, width)
    assert found.dtype == expected.dtype
    np.testing.assert_array_equal(found, expected)


def test_median_filter_nan_sorts_last_as_torch():
    x = matrix((3, 40), "float32")
    x[1, 5] = x[2, 17:19] = np.nan
    expected = whisper_timing.median_filter(torch.from_numpy(x), 7).numpy()
    np.testing.assert_array_equal(alignment.median_filter(x, 7), expected)


def test_median_filter_width_must_be_odd():
    with pytest.raises(AssertionError):
        alignment.median_filter(np.zeros((2, 20), np.float32), 4)


@pytest.mark.parametrize(
    ("words", "merged"),
    [
        ([], []),
        ([" Hello"], [" Hello"]),
        ([" Hello", ",", " world", "."], [" Hello,", "", " world.", ""]),
        ([" (", "hi", ")"], ["", " (hi)", ""]),
        ([' "', "Quoted", '"', " text"], ["", ' "Quoted"', "", " text"]),
        ([" -", " -", " dash"], ["", "", " - - dash"]),  # merged one after another, from the end
        ([" Wait", ".", ".", "."], [" Wait...", "", "", ""]),
        (["¿", "Qué", "?"], ["¿", "Qué?", ""]),  # an opening mark without its space stays
        (["word ", "."], ["word ", "."]),  # a closing mark after a space stays
        (["你好", "。", "世界", "、"], ["你好。", "", "世界、", ""]),
        ([" x", "?!"], [" x", "?!"]),  # two marks in one word are not in the list
    ],
)
def test_merge_punctuations(words, merged):
    prepended, appended = "\"'“¿([{-", "\"'.。,，!！?？:：”)]}、"
    ours = [alignment.WordTiming(word=w, tokens=[k], start=k, end=k + 1, probability=0.5) for k, w in enumerate(words)]
    theirs = [whisper_timing.WordTiming(w, [k], k, k + 1, 0.5) for k, w in enumerate(words)]
    alignment.merge_punctuations(ours, prepended=prepended, appended=appended)
    whisper_timing.merge_punctuations(theirs, prepended, appended)
    assert [t.word for t in ours] == [t.word for t in theirs] == merged
    assert [t.tokens for t in ours] == [t.tokens for t in theirs]
    assert [(t.start, t.end) for t in ours] == [(t.start, t.end) for t in theirs]


def torch_align(model, mel: torch.Tensor) -> alignment.Align:
    """`align` from a PyTorch Whisper: its logits and the alignment heads' scores, caught as whisper's hooks catch
    them."""
    heads = model.alignment_heads.indices().T.tolist()  # (layer, head), sorted

    def align(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        qks = [None] * model.dims.n_text_layer
        hooks = [
            block.cross_attn.register_forward_hook(lambda _, ins, outs, index=i: qks.__setitem__(index, outs[-1][0]))
            for i, block in enumerate(model.decoder.blocks)
        ]
        try:
            with torch.no_grad(), disable_sdpa():
                logits = model(mel.unsqueeze(0), torch.from_numpy(tokens).unsqueeze(0))[0]
        finally:
            for hook in hooks:
                hook.remove()
        return logits.numpy(), torch.stack([qks[layer][head] for layer, head in heads]).numpy()

    return align


class FakeWhisper(torch.nn.Module):
    """Just what whisper's find_alignment touches of a Whisper, with random logits and attention scores for any
    tokens: for comparing the steps after the model without running one."""

    def __init__(self, *, seed: int, layers: int = 4, heads: int = 6, vocab: int = 51865):
        super().__init__()
        self.dims = type("Dims", (), {"n_text_layer": layers})
        self.device = torch.device("cpu")
        self.decoder = torch.nn.Module()
        self.decoder.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            block = torch.nn.Module()
            block.cross_attn = Passing()
            self.decoder.blocks.append(block)
        mask = torch.zeros(layers, heads, dtype=torch.bool)
        mask[[1, 2, 2, 3], [4, 0, 3, 5]] = True
        self.register_buffer("alignment_heads", mask.to_sparse(), persistent=False)
        self.seed, self.heads, self.vocab = seed, heads, vocab

    def forward(self, mel: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed)
        length = tokens.shape[-1]
        for block in self.decoder.blocks:  # scores peaked along a diagonal, as real heads are
            qk = 3 * torch.randn(1, self.heads, length, N_FRAMES // 2, generator=generator)
            qk += (
                12
                * (torch.linspace(0, 1, N_FRAMES // 2)[None, :] - torch.linspace(0, 0.6, length)[:, None]).abs().neg()
            )
            block.cross_attn(qk)
        return 4 * torch.randn(1, length, self.vocab, generator=generator)


class Passing(torch.nn.Module):
    def forward(self, qk: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, qk


def fake_align(model: FakeWhisper) -> alignment.Align:
    return torch_align(model, torch.zeros(80, N_FRAMES))


SENTENCES = [
    ' "Hello," she said. (Quietly.) It was 3:45 -- the end?!',
    " And so, my fellow Americans: ask not what your country can do for you.",
    " Wait... what?",
    " One",
]


@pytest.mark.parametrize("seed", range(4))
def test_word_timestamps_are_whispers_after_the_model(seed):
    """The same words, probabilities and times as whisper's from the same logits and scores (random ones: every
    step after the model, fast)."""
    tokenizer = get_tokenizer(multilingual=True, language="en", task="transcribe")
    model = FakeWhisper(seed=seed)
    rng = np.random.default_rng(seed)
    segments, start = [], 1.0
    for k, text in enumerate(SENTENCES[: 1 + seed % len(SENTENCES)] + SENTENCES[seed % 2 :]):
        end = start + rng.uniform(0.5, 4)
        begin = tokenizer.timestamp_begin
        tokens = [begin + round(start * 50), *tokenizer.encode(text), begin + round(end * 50)]
        segments.append({"seek": 3000 * seed, "start": start, "end": end, "tokens": tokens, "id": k})
        start = end
    theirs, ours = copy.deepcopy(segments), copy.deepcopy(segments)
    options = dict(
        tokenizer=tokenizer, num_frames=min(N_FRAMES, int(start * 100) + 50), last_speech_timestamp=0.5 * seed
    )
    whisper_timing.add_word_timestamps(segments=theirs, model=model, mel=torch.zeros(80, N_FRAMES), **options)
    alignment.add_word_timestamps(segments=ours, align=fake_align(model), **options)
    assert_same_segments(ours, theirs)


def test_no_segments_and_no_text():
    tokenizer = get_tokenizer(multilingual=True, language="en", task="transcribe")
    model = FakeWhisper(seed=0)
    alignment.add_word_timestamps(segments=[], align=fake_align(model), tokenizer=tokenizer, num_frames=3000)
    segments = [{"seek": 0, "start": 1.0, "end": 2.0, "tokens": [tokenizer.timestamp_begin]}]
    alignment.add_word_timestamps(segments=segments, align=fake_align(model), tokenizer=tokenizer, num_frames=3000)
    assert segments[0]["words"] == [] and (segments[0]["start"], segments[0]["end"]) == (1.0, 2.0)


def assert_same_segments(ours: list[dict], theirs: list[dict]) -> None:
    """Words and times equal; probabilities to 1e-4 relative: torch sums a softmax's 50k float32 terms in a few
    running lanes, numpy pairwise, and the two sums part in the fifth digit (numpy's is the nearer the exact one)."""
    assert [(s["start"], s["end"]) for s in ours] == [(s["start"], s["end"]) for s in theirs]
    for our, their in zip(ours, theirs):
        assert [(w["word"], w["start"], w["end"]) for w in our["words"]] == [
            (w["word"], w["start"], w["end"]) for w in their["words"]
        ]
        np.testing.assert_allclose(
            [w["probability"] for w in our["words"]], [w["probability"] for w in their["words"]], rtol=1e-4, atol=0
        )


@pytest.mark.slow
@pytest.mark.parametrize("clip_id", ["en_jfk"])  # (short: PyTorch decodes it; more clips: test_openvino.py)
def test_word_timestamps_are_whispers_on_real_speech(torch_model, audio, clip_id):
    """whisper's segments, their words timed by whisper and by us from the same PyTorch Whisper, window by window."""
    import whisper

    samples = audio(clip_id)
    result = whisper.transcribe(torch_model, samples, word_timestamps=False, fp16=False, language="en")
    tokenizer = get_tokenizer(torch_model.is_multilingual, num_languages=torch_model.num_languages, language="en")
    mel = log_mel_spectrogram(samples, torch_model.dims.n_mels, padding=N_SAMPLES)
    content_frames = mel.shape[-1] - N_FRAMES
    last_ours = last_theirs = 0.0
    words = 0
    for seek, window in itertools.groupby(result["segments"], key=lambda s: s["seek"]):
        window = list(window)
        size = min(N_FRAMES, content_frames - seek)
        mel_segment = pad_or_trim(mel[:, seek : seek + size], N_FRAMES)
        theirs, ours = copy.deepcopy(window), copy.deepcopy(window)
        whisper_timing.add_word_timestamps(segments=theirs, model=torch_model, tokenizer=tokenizer, mel=mel_segment,
                                           num_frames=size, last_speech_timestamp=last_theirs)  # fmt: skip
        alignment.add_word_timestamps(segments=ours, align=torch_align(torch_model, mel_segment), tokenizer=tokenizer,
                                      num_frames=size, last_speech_timestamp=last_ours)  # fmt: skip
        assert_same_segments(ours, theirs)
        # as whisper.transcribe carries it from window to window
        last_ours, last_theirs = get_end(ours) or last_ours, get_end(theirs) or last_theirs
        words += sum(len(s["words"]) for s in theirs)
    assert words > 10
