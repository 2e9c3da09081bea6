"""Whisper on OpenVINO: compiled encoder/decoder IR behind openai-whisper's own decoding code.

`OVWhisper` offers the parts of openai-whisper's `Whisper` that `whisper.decoding` uses (`dims`,
`is_multilingual`, `num_languages`, `encoder`, `logits`, `detect_language`, `decode`), so whisper's
`DecodingTask` (timestamp rules, token suppression, greedy/beam search, no-speech probability) drives our IR
unchanged. The only seam is `Inference`, the small class whisper uses for the KV-cached forward pass:
`OVInference` implements it on the decoder IR. No PyTorch model runs here. One rule is replaced: sampling (the
temperature fallback) draws from a generator of its own, so a recording gives the same subtitles on every run.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import itertools
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import torch
from whisper.audio import N_FRAMES
from whisper.decoding import (
    ApplyTimestampRules,
    DecodingOptions,
    DecodingResult,
    DecodingTask,
    GreedyDecoder,
    Inference,
)
from whisper.decoding import detect_language as whisper_detect_language
from whisper.model import ModelDimensions
from whisper.timing import dtw as whisper_dtw
from whisper.timing import dtw_cpu
from whisper.tokenizer import Tokenizer

from pipeline import timings
from pipeline.asr.batched import BatchedBeamSearch, BatchedTimestampRules
from pipeline.cpu import CPU, PRECISIONS, auto_precision, cpu
from pipeline.errors import Cancelled, OptionError, SubtitleError
from pipeline.timings import timed

log = logging.getLogger("subtitle-generator")


@dataclass(frozen=True)
class ModelOptions:
    model: str = "base"  # a name (tiny … large-v3, turbo), a .pt file, or a faster-whisper directory
    precision: str = "auto"  # "f32", "bf16" (CPUs with AVX512-BF16/AMX), "int8" weights, or "auto": see pipeline.cpu
    threads: int = 0  # CPU threads for inference; 0: the cores this process may use

    def __post_init__(self):
        resolve_precision(self.precision)  # an unknown name, or bf16 on a CPU without it, fails here
        if self.threads < 0:
            raise OptionError("threads", "The thread count must be 0 (all usable cores) or more")


@dataclass(frozen=True)
class Precision:
    """How one precision is stored and compiled: the IR's weights and each IR's OpenVINO CPU settings."""

    name: str  # f32, bf16, int8
    weights: str  # the IR's weight storage (convert.export.WEIGHTS)
    encoder: str  # INFERENCE_PRECISION_HINT of the encoder (compute-bound: 1500 audio positions per window)
    decoder: str  # ... of the decoder and aligner (memory-bound: a few tokens per step)
    kv_cache: str  # KV_CACHE_PRECISION of the decoder's self-attention cache


def resolve_precision(name: str, info: CPU | None = None) -> Precision:
    """`auto` made concrete for this CPU (or `info`), checked against what it can do."""
    if name not in PRECISIONS:
        raise SubtitleError(f"Unknown precision {name!r}: use {', '.join(PRECISIONS)}")
    info = info or cpu()
    name = auto_precision(info) if name == "auto" else name
    if name == "f32":  # the reference: token-for-token openai-whisper (tests/test_openvino.py)
        return Precision("f32", "f16", "f32", "f32", "f32")
    if name == "bf16":
        if not info.has_bf16:
            raise SubtitleError("This CPU has no bf16 instructions (AVX512-BF16 or AMX): use precision f32 or int8")
        # the decoder stays f32: computed in bf16 it gave NaN logits on some sampled decodes (tests, benchmark)
        return Precision("bf16", "f16", "bf16", "f32", "f32")
    # int8 weights: the decoder computes in f32 around them (measured faster than bf16 there: the CPU plugin
    # quantizes activations to int8 for the matmuls, on VNNI or AMX). The encoder too, except on AMX, whose bf16
    # tiles it keeps: where bf16 runs on AVX512-BF16 dot products alone, the activations are not quantized and a
    # window took 367 ms against 288 ms in f32 (base, 2 cores, a Xeon with AVX512-BF16/VNNI and no AMX)
    return Precision("int8", "int8", "bf16" if info.has_amx else "f32", "f32", "f32")


class OVWhisper:
    """Whisper encoder + decoder compiled for the OpenVINO CPU plugin."""

    def __init__(self, ir_dir: Path, precision: Precision, threads: int = 0, compiled_cache: Path | None = None):
        info = json.loads((ir_dir / "model.json").read_text())
        self.dims = ModelDimensions(**info["dims"])
        self.head_list: list[list[int]] = info["alignment_heads"]  # (layer, head) pairs, in the aligner's order
        self.ir_dir = ir_dir
        self.precision = precision
        self.threads = threads  # (0: OpenVINO chooses)
        core = ov.Core()
        if compiled_cache is not None:  # compiled blobs on disk: a second process skips compiling
            core.set_property({"CACHE_DIR": str(compiled_cache)})
        base = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}  # 0: OpenVINO chooses

        def compile_ir(name: str, hint: str, **extra) -> ov.CompiledModel:
            return core.compile_model(ir_dir / name, "CPU", {**base, "INFERENCE_PRECISION_HINT": hint, **extra})

        self.encoder_model = compile_ir("encoder.xml", precision.encoder)
        self.decoder = _CompiledDecoder(
            compile_ir("decoder.xml", precision.decoder, KV_CACHE_PRECISION=precision.kv_cache),
            self.dims.n_text_layer,
        )
        # The aligner sees a new sequence length on every call, so the plugin's per-shape kernel cache only grows
        self.aligner = compile_ir("aligner.xml", precision.decoder, CPU_RUNTIME_CACHE_CAPACITY=0)
        heads = torch.zeros(self.dims.n_text_layer, self.dims.n_text_head, dtype=torch.bool)
        for layer, head in self.head_list:
            heads[layer, head] = True
        self.alignment_heads = heads.to_sparse()  # as whisper's Whisper has it (whisper.timing reads it)
        self._heads_by_layer: dict[int, list[tuple[int, int]]] = {}  # layer -> (index in aligner output, head)
        for a, (layer, head) in enumerate(self.head_list):
            self._heads_by_layer.setdefault(layer, []).append((a, head))
        self._requests = threading.local()  # one encoder request per thread: concurrent jobs share this model
        self.device = torch.device("cpu")  # whisper.decoding moves tensors to model.device

    def _encoder_request(self) -> ov.InferRequest:
        if not hasattr(self._requests, "encoder"):
            self._requests.encoder = self.encoder_model.create_infer_request()
        return self._requests.encoder

    @property
    def is_multilingual(self) -> bool:
        return self.dims.n_vocab >= 51865

    @property
    def num_languages(self) -> int:
        return self.dims.n_vocab - 51765 - int(self.is_multilingual)

    def encoder(self, mel: torch.Tensor) -> torch.Tensor:
        """mel (B, n_mels, 3000) -> cross-attention keys/values of all decoder layers.

        whisper.decoding calls this "audio features" and only passes it on to `Inference.logits`. Each window's
        keys or values of one layer, (heads, 1500, hs) in the IR's output, are seen as (1500, d), because whisper's
        detect_language re-encodes any input whose last two dims are not (n_audio_ctx, n_audio_state). The result
        is (B, 2L, 1500, d), but laid out layer by layer, (2L, B, 1500, d) in memory: one layer's keys (or values)
        for all the windows are then one block that the decoder binds without a copy (_layer_kv).
        """
        # word timestamps (and fallback decodes) encode the windows a decode() of this round encoded already: that
        # batch, or one row of it, is found here by its memory
        encoded = self._encoded()
        for batch, result in encoded:
            if batch.data_ptr() == mel.data_ptr() and batch.shape == mel.shape:
                return result
            if mel.shape[0] == 1 and batch.shape[-2:] == mel.shape[-2:]:
                for i, row in enumerate(batch):
                    if row.data_ptr() == mel.data_ptr():
                        return result[i : i + 1]
        # a window encoded alone already (the first window, for language detection) is found by its content
        known = [self._encoded_row(row) for row in mel]
        if len(mel) == 1 and known[0] is not None:
            return known[0]
        while encoded and sum(len(batch) for batch, _ in encoded) + len(mel) > self.KEEP_ENCODED:
            encoded.pop(0)  # (its memory is free before the new output takes as much again)
        req, dims = self._encoder_request(), self.dims
        store = np.empty((2 * dims.n_text_layer, mel.shape[0], dims.n_audio_ctx, dims.n_text_state), np.float32)
        # one window at a time: the encoder is compute-bound, so a batch gains nothing, and its activations grow with
        # it (4 windows: 0.3-0.5 GB more RSS)
        for i, row in enumerate(mel.numpy()):
            if known[i] is not None:
                store[:, i] = known[i][0].numpy()
                continue
            with timings.stage("encoder"):
                req.infer({0: row[None]})
            store[:, i] = req.get_tensor("cross_kv").data.reshape(store.shape[0], *store.shape[2:])
        result = torch.from_numpy(store).transpose(0, 1)
        encoded.append((mel, result))  # holding `mel` keeps its memory from being reused for another window
        return result

    def _encoded_row(self, row: torch.Tensor) -> torch.Tensor | None:
        """The encoder's output (1, 2L, 1500, d) for one window's mel, if this round encoded that window alone."""
        for batch, result in self._encoded():
            if len(batch) == 1 and batch.shape[1:] == row.shape and torch.equal(batch[0], row):
                return result
        return None

    KEEP_ENCODED = 8  # windows whose encoder output is kept for word timing, at most (forget_encodings drops them)

    def _encoded(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(mel, encoder output) of the windows this thread encoded since it last called forget_encodings."""
        if not hasattr(self._requests, "encoded"):
            self._requests.encoded = []
        return self._requests.encoded

    def forget_encodings(self) -> None:
        """Drop the encoder outputs kept for this thread's word timing: call it when a round of windows (decoded,
        fallen back, timed) is done. Until then every window a round encodes is kept: with windows of equal prompts
        batched and the rest decoded one by one, keeping only the last decode's windows re-encoded most of the others
        for their word timing (a 384-s recording in batches of 4: 20 windows encoded twice, 8 s of 25)."""
        self._encoded().clear()

    def encode(self, mel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Both encoder outputs: audio_features (B, 1500, d) and cross_kv (B, L, 2, heads, 1500, hs)."""
        req = self._encoder_request()
        req.infer({0: mel})
        return req.get_tensor("audio_features").data.copy(), req.get_tensor("cross_kv").data.copy()

    def logits(self, tokens: torch.Tensor, cross_kv: torch.Tensor) -> torch.Tensor:
        """Uncached forward pass over the whole token sequence (whisper's language detection uses it)."""
        inference = OVInference(self, tokens.shape[-1])
        return inference.logits(tokens, cross_kv)

    def detect_language(self, mel_or_cross_kv: torch.Tensor, tokenizer: Tokenizer | None = None):
        """whisper's detect_language: (language tokens, {language: probability}), a list of each for a batch."""
        single = mel_or_cross_kv.ndim == 2
        if single:
            mel_or_cross_kv = mel_or_cross_kv[None]
        if mel_or_cross_kv.shape[-2:] == (self.dims.n_mels, N_FRAMES):  # a mel spectrogram: encode it first
            mel_or_cross_kv = self.encoder(mel_or_cross_kv)
        tokens, probs = whisper_detect_language(self, mel_or_cross_kv, tokenizer)
        return (tokens[0], probs[0]) if single else (tokens, probs)

    def __call__(self, mel: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Whisper's forward pass, (B, T, vocab) logits, as whisper.timing.find_alignment calls it for word timestamps.

        The alignment heads' cross-attention scores go to the hooks find_alignment registers on
        `decoder.blocks[i].cross_attn` (as PyTorch forward hooks would see them), so whisper's own dynamic time
        warping and word-timing rules run unchanged on our IR."""
        cross_kv, dims = self.encoder(mel), self.dims
        heads = dims.n_text_head
        req = self.aligner.create_infer_request()
        req.set_tensor("tokens", ov.Tensor(np.ascontiguousarray(tokens.numpy(), dtype=np.int64)))
        _bind_cross_kv(req, cross_kv, dims)
        with timings.stage("aligner"):
            req.infer()
        scores = torch.from_numpy(req.get_tensor("alignment_qk").data.copy())  # (B, A, T, S)
        for layer, block in enumerate(self.decoder.blocks):
            # (B, nh, T, S) with the alignment heads filled in; whisper reads nothing else, so a layer without
            # alignment heads gets an empty tensor
            qk = torch.zeros(scores.shape[0], heads if layer in self._heads_by_layer else 0, *scores.shape[2:])
            for a, head in self._heads_by_layer.get(layer, ()):
                qk[:, head] = scores[:, a]
            block.cross_attn.run_hooks((None, qk))
        return torch.from_numpy(req.get_tensor("logits").data.copy())

    def release_memory(self) -> None:
        """Hand back what the last windows' inference holds: the decoder's and the aligner's working buffers,
        which the CPU plugin keeps, sized for the largest shapes seen so far (4 windows with 5 beams and 223-token
        prompts: 0.35 GB), and the C heap's free pages. A model that another job is running just now keeps its
        buffers: that job is using them."""
        for compiled in (self.decoder.compiled, self.aligner):
            try:
                compiled.release_memory()
            except RuntimeError:  # "in a busy state": an inference in another thread holds it
                pass
        release_free_memory()

    def decode(
        self,
        mel: torch.Tensor,
        options: DecodingOptions = DecodingOptions(),
        row_prompts: list[list[int]] | None = None,
    ) -> DecodingResult | list[DecodingResult]:
        """whisper.decode, run on OpenVINO: one 30-second window (or a batch of them). row_prompts: for a batch, each
        window's own prompt tokens, all as long as options.prompt (whisper's decode gives every row that one).

        The results' audio_features are left empty. Each was a view of the whole batch's encoder output (37 MB a
        window for base, 0.5 GB for large-v3), and a result lives as long as its window's segments: with 4 parts
        of an hour decoded side by side, results held 1.2 GB of old encoder outputs. Word timing finds the encoder
        output it needs by the window's mel instead (encoder)."""
        single = mel.ndim == 2
        if single:
            mel = mel.unsqueeze(0)
        with torch.no_grad():
            results = OVDecodingTask(self, options, row_prompts).run(mel)
        results = [replace(result, audio_features=_NO_FEATURES) for result in results]
        return results[0] if single else results


_NO_FEATURES = torch.empty(0)  # DecodingResult.audio_features as decode() returns it


def _bind_cross_kv(request: ov.InferRequest, cross_kv: torch.Tensor, dims: ModelDimensions) -> None:
    """Set a decoder IR's cross_k_i/cross_v_i inputs, (B, heads, 1500, hs), from the encoder's output (B, 2L, 1500,
    d). The arrays are shared with the request, not copied: as OVWhisper.encoder lays them out, one layer's keys of
    all the windows (or of one row) are one block of memory already."""
    heads, hs = dims.n_text_head, dims.n_text_state // dims.n_text_head
    for i in range(dims.n_text_layer):
        for j, name in enumerate("kv"):
            block = np.ascontiguousarray(cross_kv[:, 2 * i + j].numpy()).reshape(-1, heads, dims.n_audio_ctx, hs)
            request.set_tensor(f"cross_{name}_{i}", ov.Tensor(block, shared_memory=True))


class _CompiledDecoder:
    """The compiled decoder IR, plus one stand-in per layer for what whisper's code reaches into a PyTorch decoder
    for: `blocks[i].attn.key/value` (listed by the PyTorchInference that DecodingTask.__init__ builds before
    OVDecodingTask replaces it) and `blocks[i].cross_attn.register_forward_hook` (whisper.timing's word timestamps)."""

    def __init__(self, compiled: ov.CompiledModel, n_layer: int):
        self.compiled = compiled
        self.blocks = tuple(_Block() for _ in range(n_layer))


class _HookPoint:
    """Accepts forward hooks like an nn.Module and calls them with (module, inputs, outputs) when `run_hooks` is.

    A hook belongs to the thread that registered it and sees only that thread's forward passes: whisper's
    find_alignment registers its hooks, runs the model and removes them in one thread, and jobs in other threads
    align their own windows on the same compiled model at the same time (shared hooks gave each other's scores)."""

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

    def __init__(self, model: OVWhisper, options: DecodingOptions, row_prompts: list[list[int]] | None = None):
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
        """The encoder's output. For several windows with beams (or best-of), whisper's run() expects one row per
        beam (it keeps every n_group-th row after decoding) but repeats only the tokens; the IR wants one row per
        window. So the windows' rows are kept here for _main_loop, and run() gets an empty stand-in with a row per
        beam (DecodingResult.audio_features is then empty; nothing here reads it)."""
        features = super()._get_audio_features(mel)
        if features.shape[0] == 1 or self.n_group == 1:
            return features
        self._windows = features
        return features.new_empty(features.shape[0] * self.n_group, 0)

    def _main_loop(self, audio_features: torch.Tensor, tokens: torch.Tensor):
        return super()._main_loop(self._windows if self._windows is not None else audio_features, tokens)


class SeededSampler(GreedyDecoder):
    """whisper's GreedyDecoder at a temperature above 0, drawing from a generator seeded afresh for each decode
    instead of torch's global one: the same window gives the same text on every run and in every thread. (With the
    global generator, one 280-s composition scored WER 8.1 to 11.7 % from run to run on the same machine.)"""

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

    The first call runs the whole prompt; later calls run only the newest token. The cross-attention keys/values,
    computed by the encoder once per window, are bound once; `beam_idx` reorders the cache for beam search.

    whisper repeats each window's initial tokens for every beam (or best-of sample), so the first call runs them
    once per window, and the next call's `beam_idx` copies each window's cache to its beams (optimum-intel's
    `_deduplicate_inputs` does the same). With a 226-token prompt and 5 beams, the first call's cross-attention
    scores alone took 0.2 GB per window, and its compute was 5 times what it needs to be.
    """

    def __init__(self, model: OVWhisper, initial_token_length: int, sot_index: int = 0):
        self.model = model
        self.initial_token_length = initial_token_length
        self.sot_index = sot_index
        self.request = model.decoder.compiled.create_infer_request()
        self.n_layer = model.dims.n_text_layer
        self._started = False
        self._beam_idx: np.ndarray | None = None
        self._expand: np.ndarray | None = None  # after the first call: each row's window (the cache has one row each)

    def logits(self, tokens: torch.Tensor, cross_kv: torch.Tensor) -> torch.Tensor:
        """(B, T, vocab) logits, as whisper expects; after the first step T is 1.

        On the first step only the rows whisper reads are computed: the SOT position (no-speech probability) and
        the last one. The other rows are left uninitialised, which is safe because DecodingTask never reads them.
        """
        req, n_batch = self.request, tokens.shape[0]
        if not self._started:
            # whisper repeats the tokens, not the audio, for beam search / best-of: the IR folds each window's
            # beams into one read of its keys/values (convert/export.py _cross_attention)
            _bind_cross_kv(req, cross_kv, self.model.dims)
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


@timed("model load")
def load_model(options: ModelOptions = ModelOptions(), progress=lambda message: None) -> OVWhisper:
    """Resolve the checkpoint, export it to IR on first use (cached), and compile it."""
    # imported here: convert/ imports pipeline.errors, so a module-level import would be circular
    from convert.checkpoints import resolve_checkpoint
    from convert.export import ExportOptions, ensure_ir

    map_large_buffers()
    precision = resolve_precision(options.precision)
    checkpoint = resolve_checkpoint(options.model)
    ir_dir = ensure_ir(checkpoint, ExportOptions(weights=precision.weights), progress)
    progress(f"Loading {checkpoint.description} ({precision.name})")
    threads = options.threads or cpu().cores
    model = OVWhisper(ir_dir, precision, threads, compiled_cache_dir(precision, threads))
    # whisper's word-timing DTW is compiled by numba on first use (1-5 s): pay it here, not in the first job, and
    # once per machine: numba keeps the compiled function on disk (beside whisper's bytecode cache, or in its
    # user-wide cache when that is read-only) and later processes load it (0.25 s)
    dtw_cpu.enable_caching()
    whisper_dtw(torch.zeros(2, 2))
    return model


def compiled_cache_dir(precision: Precision, threads: int) -> Path:
    """Where OpenVINO keeps compiled blobs for this CPU, precision and thread count. OpenVINO's own cache key leaves
    the precision hint out (a bf16 compile loaded the f32 blob of the same IR and crashed), and a blob compiled for
    one CPU's instruction sets must not be loaded on another, so each gets its own folder; the hints are part of its
    name, so a precision whose hints change (int8's encoder) never loads a blob compiled for the old ones."""
    hints = f"{precision.encoder}-{precision.decoder}-{precision.kv_cache}"
    return compiled_dir(f"{precision.name}-{hints}-{threads}t")


def compiled_dir(name: str) -> Path:
    """The folder of compiled blobs `name` (the models, hints and thread count) on this CPU and OpenVINO version."""
    from convert.export import cache_root

    machine = hashlib.sha256(f"{ov.get_version()} {cpu().model} {sorted(cpu().flags)}".encode()).hexdigest()[:12]
    return cache_root() / "compiled" / f"{machine}-{name}"


def _glibc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (musl, macOS): nothing to tune
        return None


_GLIBC = _glibc()
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 1 << 20


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim; elsewhere nothing).

    Each window's inference allocates and frees hundreds of MB (OpenVINO's buffers, whisper's tensors); glibc keeps
    the freed pages, scattered through its arenas, resident. Trimming after every window took a 400-s recording's
    resident set from 1,495 to 1,264 MiB, at well under a millisecond a call."""
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def map_large_buffers() -> None:
    """Have glibc map every buffer of 1 MiB or more on its own, and unmap it when it is freed.

    By default glibc raises that threshold to the largest buffer freed so far, up to 32 MiB, and serves everything
    below it from its arenas, where buffers of every size freed in every order (whisper's tensors, numpy's arrays)
    leave holes that no trim hands back. One hour decoded 4 windows at a time held 942 MiB free in its arenas and
    peaked at 2,316 MiB; with this, 1,860 MiB. It costs nothing measurable in speed (a 384-s recording: 23.8 against
    23.8 s by default, 14.9 against 14.6 s in batches). Process-wide and idempotent; called when a model loads."""
    if _GLIBC is not None:
        _GLIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


class ModelCache:
    """Models compiled once and shared by every job (the web app's users), by model and precision. Thread-safe: a
    model is loaded by the first job that asks for it while jobs on models already loaded go on; compiled models
    serve concurrent jobs."""

    def __init__(
        self,
        options: ModelOptions = ModelOptions(),
        loaded: dict[tuple[str, str], OVWhisper] | None = None,
        keep: int = 2,
    ):
        self.options = options  # threads; the model and precision come with each request
        self.keep = keep  # models held at once; the least recently used goes (jobs using it keep their reference)
        self._models: OrderedDict[tuple[str, str], OVWhisper] = OrderedDict(loaded or {})  # (model, precision)
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def is_loaded(self, model: str, precision: str = "auto") -> bool:
        return self._key(model, precision) in self._models

    def get(
        self, model: str, progress=lambda message: None, precision: str = "auto", stop: threading.Event | None = None
    ) -> OVWhisper:
        """The compiled model, loaded (and exported first, if it is not cached) on first use. With `stop`, a load
        runs in a thread of its own and the caller gets Cancelled as soon as `stop` is set; the load itself goes on
        to its end and the model is cached (one load per model at a time, so cancelled jobs cannot stack them)."""
        if stop is not None and not self.is_loaded(model, precision):
            loading: Future = Future()

            def load() -> None:
                try:
                    loading.set_result(self.get(model, lambda m: None if stop.is_set() else progress(m), precision))
                except BaseException as e:
                    loading.set_exception(e)

            threading.Thread(target=load, name=f"load-{model}", daemon=True).start()
            while True:
                try:
                    return loading.result(timeout=0.2)
                except TimeoutError:
                    if stop.is_set():
                        raise Cancelled from None
        key = self._key(model, precision)
        with self._guard:
            if key in self._models:
                self._models.move_to_end(key)
                return self._models[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one load per model; jobs on other models go on meanwhile
            with self._guard:
                if key in self._models:  # loaded by another job while this one waited
                    return self._models[key]
            started = time.monotonic()
            log.info("loading model %s at %s (compiled once; exported first if it is not cached)", model, key[1])
            loaded = load_model(replace(self.options, model=model, precision=key[1]), progress)
            log.info("model %s at %s ready in %.1f s", model, key[1], time.monotonic() - started)
            with self._guard:
                self._models[key] = loaded
                while len(self._models) > self.keep:
                    self._models.popitem(last=False)
            return loaded

    @staticmethod
    def _key(model: str, precision: str) -> tuple[str, str]:
        return model, resolve_precision(precision).name  # "auto" is what it means on this CPU
