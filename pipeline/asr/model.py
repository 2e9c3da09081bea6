"""Whisper on OpenVINO: compiled encoder/decoder IR behind openai-whisper's own decoding code.

`OVWhisper` offers the parts of openai-whisper's `Whisper` that `whisper.decoding` uses (`dims`,
`is_multilingual`, `num_languages`, `encoder`, `logits`, `detect_language`, `decode`), so whisper's
`DecodingTask` (timestamp rules, token suppression, greedy/beam search, no-speech probability) drives our IR
unchanged. The only seam is `Inference` (pipeline/asr/inference.py). Loading and sharing models: cache.py.
"""

from __future__ import annotations

import json
import threading
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from whisper.audio import N_FRAMES
from whisper.decoding import DecodingOptions, DecodingResult
from whisper.decoding import detect_language as whisper_detect_language
from whisper.model import ModelDimensions
from whisper.tokenizer import Tokenizer

from pipeline import timings
from pipeline.asr.compiled import compiling
from pipeline.asr.inference import CompiledDecoder, OVDecodingTask, OVInference, bind_cross_kv
from pipeline.asr.memory import release_free_memory
from pipeline.asr.precision import Precision


class OVWhisper:
    """Whisper encoder + decoder compiled for the OpenVINO CPU plugin."""

    def __init__(self, ir_dir: Path, precision: Precision, threads: int = 0, compiled_cache: Path | None = None):
        info = json.loads((ir_dir / "model.json").read_text())
        self.dims = ModelDimensions(**info["dims"])
        self.head_list: list[list[int]] = info["alignment_heads"]  # (layer, head) pairs, in the aligner's order
        self.ir_dir = ir_dir
        self.precision = precision
        self.choice = None  # how the encoder's hint was chosen, where it was measured (pipeline/asr/measured.py)
        self.threads = threads  # (0: OpenVINO chooses)
        core = ov.Core()
        if compiled_cache is not None:  # compiled blobs on disk: a second process skips compiling
            core.set_property({"CACHE_DIR": str(compiled_cache)})
        base = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}  # 0: OpenVINO chooses

        def compile_ir(name: str, hint: str, **extra) -> ov.CompiledModel:
            return core.compile_model(ir_dir / name, "CPU", {**base, "INFERENCE_PRECISION_HINT": hint, **extra})

        with compiling(compiled_cache) if compiled_cache is not None else nullcontext():
            self.encoder_model = compile_ir(precision.encoder_xml, precision.encoder)
            self.decoder = CompiledDecoder(
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
        """mel (B, n_mels, 3000) -> cross-attention keys/values of all decoder layers, (B, 2L, 1500, d).

        One layer's keys, (heads, 1500, hs) in the IR, are seen as (1500, d), which whisper's detect_language accepts as
        encoded; the memory is laid out (2L, B, 1500, d) so the decoder binds one layer of all windows without a copy."""
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
        # one window at a time: the encoder is compute-bound, so a batch gains nothing but larger activations
        for i, row in enumerate(mel.numpy()):
            if known[i] is not None:
                store[:, i] = known[i][0].numpy()
                continue
            with timings.stage("encoder"):
                req.infer({0: row[None]})
            store[:, i] = req.get_tensor("cross_kv").data.reshape(store.shape[0], *store.shape[2:])
        if len(mel) > 1:  # a batch's rows decode next: the encoder's working buffers are not held meanwhile (a
            try:  # single window skips it, 10-25 ms a call: docs/engine.md, *Memory*)
                self.encoder_model.release_memory()
            except RuntimeError:  # "in a busy state": another thread's job is encoding
                pass
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
        """Drop the encoder outputs kept for this thread's word timing; call it when a round of
        windows (decoded, fallen back, timed) is done."""
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
        """Whisper's forward pass, (B, T, vocab) logits, as whisper.timing.find_alignment calls it: the
        alignment heads' scores go to the hooks it registers on `decoder.blocks[i].cross_attn`, so whisper's own DTW runs."""
        cross_kv, dims = self.encoder(mel), self.dims
        heads = dims.n_text_head
        req = self.aligner.create_infer_request()
        req.set_tensor("tokens", ov.Tensor(np.ascontiguousarray(tokens.numpy(), dtype=np.int64)))
        bind_cross_kv(req, cross_kv, dims)
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
        """Hand back what the last windows' inference holds: the decoder's and the aligner's working buffers, which
        the CPU plugin keeps sized for the largest shapes seen so far, and the C heap's free pages. A model that
        another job is running just now keeps its buffers."""
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
        """whisper.decode on OpenVINO, for one window or a batch; row_prompts: each row's own prompt, all as
        long as options.prompt. The results' audio_features are left empty (word timing finds them by the window's mel)."""
        single = mel.ndim == 2
        if single:
            mel = mel.unsqueeze(0)
        with torch.no_grad():
            results = OVDecodingTask(self, options, row_prompts).run(mel)
        results = [replace(result, audio_features=_NO_FEATURES) for result in results]
        return results[0] if single else results


_NO_FEATURES = torch.empty(0)  # DecodingResult.audio_features as decode() returns it
