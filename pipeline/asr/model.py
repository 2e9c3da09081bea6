"""Whisper on OpenVINO: the compiled encoder, decoder and aligner IR, and whisper's decoding on them (task.py).

`OVWhisper` encodes windows (keeping the outputs a round of decoding and word timing reuses), decodes them, detects
their language and gives the aligner's attention scores for word timing (alignment.py). Loading and sharing models:
cache.py.
"""

from __future__ import annotations

import json
import threading
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import openvino as ov

from pipeline import timings
from pipeline.asr.compiled import compiling, cpu_config
from pipeline.asr.inference import ModelDimensions, OVInference, bind_cross_kv
from pipeline.asr.mel import N_FRAMES
from pipeline.asr.memory import release_free_memory
from pipeline.asr.precision import Precision
from pipeline.asr.task import DecodingOptions, DecodingResult, DecodingTask
from pipeline.asr.task import detect_language as detect_languages
from pipeline.asr.tokenizer import get_tokenizer


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
        base = cpu_config(threads)

        def compile_ir(name: str, hint: str, **extra) -> ov.CompiledModel:
            return core.compile_model(ir_dir / name, "CPU", {**base, "INFERENCE_PRECISION_HINT": hint, **extra})

        with compiling(compiled_cache) if compiled_cache is not None else nullcontext():
            self.encoder_model = compile_ir(precision.encoder_xml, precision.encoder)
            self.decoder = compile_ir("decoder.xml", precision.decoder, KV_CACHE_PRECISION=precision.kv_cache)
            # The aligner sees a new sequence length on every call, so the plugin's per-shape kernel cache only grows
            self.aligner = compile_ir("aligner.xml", precision.decoder, CPU_RUNTIME_CACHE_CAPACITY=0)
        self._requests = threading.local()  # one encoder request per thread: concurrent jobs share this model

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

    def encoder(self, mel: np.ndarray) -> np.ndarray:
        """mel (B, n_mels, 3000) -> cross-attention keys/values of all decoder layers, (B, 2L, 1500, d).

        The memory is laid out (2L, B, 1500, d), so the decoder binds one layer of all windows without a copy."""
        # word timing (and fallback decodes) encode the windows a decode of this round encoded already: that batch,
        # or one row of it, is found here by its memory
        encoded = self._encoded()
        address = mel.__array_interface__["data"][0]
        for batch, result in encoded:
            if batch.shape == mel.shape and batch.__array_interface__["data"][0] == address:
                return result
            if mel.shape[0] == 1 and batch.shape[1:] == mel.shape[1:]:
                for i in range(len(batch)):
                    if batch[i].__array_interface__["data"][0] == address:
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
        for i, row in enumerate(mel):
            if known[i] is not None:
                store[:, i] = known[i][0]
                continue
            with timings.stage("encoder"):
                req.infer({0: np.ascontiguousarray(row[None], dtype=np.float32)})
            store[:, i] = req.get_tensor("cross_kv").data.reshape(store.shape[0], *store.shape[2:])
        if len(mel) > 1:  # a batch's rows decode next: the encoder's working buffers are not held meanwhile (a
            try:  # single window skips it, 10-25 ms a call: docs/engine.md, *Memory*)
                self.encoder_model.release_memory()
            except RuntimeError:  # "in a busy state": another thread's job is encoding
                pass
        result = store.transpose(1, 0, 2, 3)
        encoded.append((mel, result))  # holding `mel` keeps its memory from being reused for another window
        return result

    def _encoded_row(self, row: np.ndarray) -> np.ndarray | None:
        """The encoder's output (1, 2L, 1500, d) for one window's mel, if this round encoded that window alone."""
        for batch, result in self._encoded():
            if len(batch) == 1 and batch.shape[1:] == row.shape and np.array_equal(batch[0], row):
                return result
        return None

    KEEP_ENCODED = 8  # windows whose encoder output is kept for word timing, at most (forget_encodings drops them)

    def _encoded(self) -> list[tuple[np.ndarray, np.ndarray]]:
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

    def logits(self, tokens: np.ndarray, cross_kv: np.ndarray) -> np.ndarray:
        """(B, vocab): the logits after each row's last token, uncached (language detection)."""
        last, _ = OVInference(self).logits(tokens, cross_kv)
        return last

    def detect_language(self, mel_or_cross_kv: np.ndarray, tokenizer=None):
        """whisper's detect_language: (language tokens, {language: probability}), a list of each for a batch."""
        single = mel_or_cross_kv.ndim == 2
        if single:
            mel_or_cross_kv = mel_or_cross_kv[None]
        if mel_or_cross_kv.shape[-2:] == (self.dims.n_mels, N_FRAMES):  # a mel spectrogram: encode it first
            mel_or_cross_kv = self.encoder(mel_or_cross_kv)
        if tokenizer is None:
            tokenizer = get_tokenizer(self.is_multilingual, num_languages=self.num_languages)
        tokens, probs = detect_languages(self, mel_or_cross_kv, tokenizer)
        return (tokens[0], probs[0]) if single else (tokens, probs)

    def align(self, mel: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One window's (n_mels, 3000) forward pass over a whole token sequence for word timing: the logits
        (T, vocab) and the alignment heads' cross-attention scores before softmax, (heads, T, 1500), heads in
        (layer, head) order (alignment.py)."""
        req = self.aligner.create_infer_request()
        req.set_tensor("tokens", ov.Tensor(np.ascontiguousarray(tokens[None], dtype=np.int64)))
        bind_cross_kv(req, self.encoder(mel[None]), self.dims)
        with timings.stage("aligner"):
            req.infer()
        return req.get_tensor("logits").data[0].copy(), req.get_tensor("alignment_qk").data[0].copy()

    def release_memory(self) -> None:
        """Hand back what the last windows' inference holds: the decoder's and the aligner's working buffers, which
        the CPU plugin keeps sized for the largest shapes seen so far, and the C heap's free pages. A model that
        another job is running just now keeps its buffers."""
        for compiled in (self.decoder, self.aligner):
            try:
                compiled.release_memory()
            except RuntimeError:  # "in a busy state": an inference in another thread holds it
                pass
        release_free_memory()

    def decode(
        self, mel: np.ndarray, options: DecodingOptions = DecodingOptions(), row_prompts: list[list[int]] | None = None
    ) -> DecodingResult | list[DecodingResult]:
        """whisper.decode on OpenVINO, for one window (n_mels, 3000) or a batch; row_prompts: each row's own prompt,
        all as long as options.prompt."""
        single = mel.ndim == 2
        results = DecodingTask(self, options, row_prompts).run(mel[None] if single else mel)
        return results[0] if single else results
