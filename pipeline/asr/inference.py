"""whisper's decoding seams on the OpenVINO decoder: the KV-cached forward pass (OVInference), the DecodingTask that
uses it (OVDecodingTask), a seeded sampler (the same subtitles on every run), and stand-ins for the PyTorch modules
whisper reaches into.
"""

from __future__ import annotations

import itertools
import threading
from types import SimpleNamespace
from typing import Protocol

import numpy as np
import openvino as ov
import torch
from whisper.decoding import ApplyTimestampRules, DecodingOptions, DecodingTask, GreedyDecoder, Inference
from whisper.model import ModelDimensions

from pipeline import timings
from pipeline.asr.batched import BatchedBeamSearch, BatchedTimestampRules


def bind_cross_kv(request: ov.InferRequest, cross_kv: torch.Tensor, dims: ModelDimensions) -> None:
    """Set a decoder IR's cross_k_i/cross_v_i inputs, (B, heads, 1500, hs), from the encoder's output
    (B, 2L, 1500, d), shared with the request, not copied (OVWhisper.encoder lays each layer out as one block)."""
    heads, hs = dims.n_text_head, dims.n_text_state // dims.n_text_head
    for i in range(dims.n_text_layer):
        for j, name in enumerate("kv"):
            block = np.ascontiguousarray(cross_kv[:, 2 * i + j].numpy()).reshape(-1, heads, dims.n_audio_ctx, hs)
            request.set_tensor(f"cross_{name}_{i}", ov.Tensor(block, shared_memory=True))


class CompiledDecoder:
    """The compiled decoder IR, with a stand-in per layer for what whisper reaches into a PyTorch decoder
    for: `blocks[i].attn.key/value` and `blocks[i].cross_attn.register_forward_hook` (word timestamps)."""

    def __init__(self, compiled: ov.CompiledModel, n_layer: int):
        self.compiled = compiled
        self.blocks = tuple(_Block() for _ in range(n_layer))


class DecoderModel(Protocol):
    """What the decoding seams use of OVWhisper (pipeline/asr/model.py, which imports this module)."""

    dims: ModelDimensions
    decoder: CompiledDecoder


class _HookPoint:
    """Accepts forward hooks like an nn.Module, calling them with (module, inputs, outputs) on `run_hooks`,
    only for passes of the thread that registered them: jobs align their windows on one model at once."""

    def __init__(self):
        self._hooks: dict[tuple[int, int], object] = {}  # (thread, number) -> hook
        self._next = itertools.count()
        self._lock = threading.Lock()

    def register_forward_hook(self, hook):
        key = (threading.get_ident(), next(self._next))
        with self._lock:
            self._hooks[key] = hook

        def remove() -> None:
            with self._lock:
                self._hooks.pop(key, None)

        return _Handle(remove)

    def run_hooks(self, outputs) -> None:
        me = threading.get_ident()
        with self._lock:
            mine = [hook for (thread, _), hook in self._hooks.items() if thread == me]
        for hook in mine:
            hook(self, (), outputs)


class _Handle:
    def __init__(self, remove):
        self.remove = remove


class _Block:
    def __init__(self):
        self.attn = SimpleNamespace(key=None, value=None)
        self.cross_attn = _HookPoint()


class OVDecodingTask(DecodingTask):
    """whisper's DecodingTask with its forward pass on OpenVINO; every decoding rule is whisper's own."""

    def __init__(self, model: DecoderModel, options: DecodingOptions, row_prompts: list[list[int]] | None = None):
        super().__init__(model, options)
        self.inference = OVInference(model, len(self.initial_tokens), self.sot_index)
        # whisper's per-step rules, the same results computed for the whole batch at once (pipeline/asr/batched.py)
        self.logit_filters = [
            BatchedTimestampRules(f.tokenizer, f.sample_begin, f.max_initial_timestamp_index)
            if type(f) is ApplyTimestampRules else f
            for f in self.logit_filters
        ]  # fmt: skip
        if options.beam_size is not None:
            self.decoder = BatchedBeamSearch(options.beam_size, self.tokenizer.eot, self.inference, options.patience)
        elif options.temperature > 0:
            self.decoder = SeededSampler(options.temperature, self.tokenizer.eot)
        self.row_prompts = None
        if row_prompts is not None and any(row_prompts):
            rows = torch.tensor(row_prompts, dtype=torch.long)
            if rows.shape[1] != self.sot_index - 1:  # (initial tokens: sot_prev, the prompt, the SOT sequence)
                raise ValueError("Each row's prompt must be as long as the options' prompt")
            self.row_prompts = rows

    def _detect_language(self, audio_features: torch.Tensor, tokens: torch.Tensor):
        """whisper's step that writes into each row's initial tokens (the language): each row's own prompt is
        written there first."""
        if self.row_prompts is not None:
            tokens[:, 1 : self.sot_index] = self.row_prompts
        if self._windows is None:
            return super()._detect_language(audio_features, tokens)
        if self.options.language is None:
            raise ValueError("A batch of windows decoded with beams needs its language set")
        return [self.options.language] * tokens.shape[0], None

    _windows: torch.Tensor | None = None

    def _get_audio_features(self, mel: torch.Tensor) -> torch.Tensor:
        """The encoder's output. With beams over several windows, whisper's run() wants a
        row per beam but the IR one per window: the windows are kept for _main_loop, and run() gets an empty stand-in."""
        features = super()._get_audio_features(mel)
        if features.shape[0] == 1 or self.n_group == 1:
            return features
        self._windows = features
        return features.new_empty(features.shape[0] * self.n_group, 0)

    def _main_loop(self, audio_features: torch.Tensor, tokens: torch.Tensor):
        return super()._main_loop(self._windows if self._windows is not None else audio_features, tokens)


class SeededSampler(GreedyDecoder):
    """whisper's GreedyDecoder at a temperature above 0, drawing from a generator seeded afresh for each decode
    instead of torch's global one: the same window gives the same text on every run and in every thread."""

    SEED = 0

    def __init__(self, temperature: float, eot: int):
        super().__init__(temperature, eot)
        self.generator = torch.Generator().manual_seed(self.SEED)

    def update(self, tokens: torch.Tensor, logits: torch.Tensor, sum_logprobs: torch.Tensor):
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        next_tokens = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)
        # what follows is GreedyDecoder.update's
        sum_logprobs += logprobs[torch.arange(logprobs.shape[0]), next_tokens] * (tokens[:, -1] != self.eot)
        next_tokens[tokens[:, -1] == self.eot] = self.eot
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=-1)
        return tokens, bool((tokens[:, -1] == self.eot).all())


class OVInference(Inference):
    """The stateful decoder IR: the self-attention KV cache lives in the infer request's state.

    The first call runs the prompt once per window (whisper repeats it per beam) and binds the cross-attention keys and
    values; later calls run the newest token, with `beam_idx` copying and reordering the cache (as optimum-intel does)."""

    def __init__(self, model: DecoderModel, initial_token_length: int, sot_index: int = 0):
        self.model = model
        self.initial_token_length = initial_token_length
        self.sot_index = sot_index
        self.request = model.decoder.compiled.create_infer_request()
        self.n_layer = model.dims.n_text_layer
        self._started = False
        self._beam_idx: np.ndarray | None = None
        self._expand: np.ndarray | None = None  # after the first call: each row's window (the cache has one row each)

    def logits(self, tokens: torch.Tensor, cross_kv: torch.Tensor) -> torch.Tensor:
        """(B, T, vocab) logits, as whisper expects; after the first step T is 1. On the first step only
        the rows whisper reads (the SOT position and the last) are computed; the others are left uninitialised."""
        req, n_batch = self.request, tokens.shape[0]
        if not self._started:
            # whisper repeats the tokens, not the audio, for beam search / best-of: the IR folds each window's
            # beams into one read of its keys/values (convert/export.py _cross_attention)
            bind_cross_kv(req, cross_kv, self.model.dims)
            req.reset_state()
            self._started = True
            windows = cross_kv.shape[0]
            if n_batch > windows:  # each window's rows are equal now (whisper's repeat_interleave): run one of them
                tokens = tokens[:: n_batch // windows]
                self._expand = np.repeat(np.arange(windows, dtype=np.int32), n_batch // windows)
            beam_idx = np.arange(len(tokens), dtype=np.int32)
        else:
            tokens = tokens[:, -1:]  # only the newest token after the first forward pass
            beam_idx = self._beam_idx if self._beam_idx is not None else self._expand
            if beam_idx is None:
                beam_idx = np.arange(n_batch, dtype=np.int32)
            self._beam_idx = self._expand = None
        req.set_tensor("tokens", ov.Tensor(np.ascontiguousarray(tokens.numpy(), dtype=np.int64)))
        positions = sorted({self.sot_index, tokens.shape[-1] - 1}) if tokens.shape[-1] > 1 else [0]
        req.set_tensor("beam_idx", ov.Tensor(beam_idx))
        req.set_tensor("logit_pos", ov.Tensor(np.asarray(positions, dtype=np.int64)))
        with timings.stage("decoder"):
            req.infer()
        computed = torch.from_numpy(req.get_tensor("logits").data)  # (rows run, len(positions), vocab)
        if tokens.shape[-1] == 1:
            return computed.clone()
        if len(tokens) < n_batch:
            computed = computed.repeat_interleave(n_batch // len(tokens), dim=0)
        logits = torch.empty(n_batch, tokens.shape[-1], computed.shape[-1])  # untouched pages cost nothing
        logits[:, positions] = computed
        return logits

    def rearrange_kv_cache(self, source_indices) -> None:
        source = np.asarray(source_indices, dtype=np.int32)
        if self._expand is not None:  # the cache still has one row per window
            self._beam_idx = self._expand[source]
        elif (source != np.arange(len(source))).any():
            self._beam_idx = source

    def cleanup_caching(self) -> None:
        self.request.reset_state()  # the cache's memory is kept for the next window
        self._started = False
        self._beam_idx = self._expand = None
