"""The OpenVINO decoder's forward pass with its self-attention cache (OVInference), and the model's dimensions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import openvino as ov

from pipeline import timings


@dataclass(frozen=True)
class ModelDimensions:
    """whisper.model.ModelDimensions, as the IR's model.json keeps them."""

    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_vocab: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int


def bind_cross_kv(request: ov.InferRequest, cross_kv: np.ndarray, dims: ModelDimensions) -> None:
    """Set a decoder IR's cross_k_i/cross_v_i inputs, (B, heads, 1500, hs), from the encoder's output
    (B, 2L, 1500, d), shared with the request, not copied (OVWhisper.encoder lays each layer out as one block)."""
    heads, hs = dims.n_text_head, dims.n_text_state // dims.n_text_head
    for i in range(dims.n_text_layer):
        for j, name in enumerate("kv"):
            block = np.ascontiguousarray(cross_kv[:, 2 * i + j]).reshape(-1, heads, dims.n_audio_ctx, hs)
            request.set_tensor(f"cross_{name}_{i}", ov.Tensor(block, shared_memory=True))


class DecoderModel(Protocol):
    """What the decoder's forward pass uses of OVWhisper (pipeline/asr/model.py, which imports this module)."""

    dims: ModelDimensions
    decoder: ov.CompiledModel


class OVInference:
    """The stateful decoder IR: the self-attention KV cache lives in the infer request's state.

    The first call runs the prompt once per window (whisper repeats it per beam) and binds the cross-attention keys and
    values; later calls run the newest token, with `beam_idx` copying and reordering the cache (as optimum-intel does)."""

    def __init__(self, model: DecoderModel, *, sot_index: int = 0):
        self.model = model
        self.sot_index = sot_index
        self.request = model.decoder.create_infer_request()
        self._started = False
        self._beam_idx: np.ndarray | None = None
        self._expand: np.ndarray | None = None  # after the first call: each row's window (the cache has one row each)
        self._cross_kv: np.ndarray | None = None  # the windows' keys/values, all of them (narrow binds a range)

    def logits(self, tokens: np.ndarray, cross_kv: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(B, vocab) logits of each row's last token and, on the first step, of its SOT token (whisper reads the
        no-speech probability there); only those positions are computed."""
        req, n_batch = self.request, tokens.shape[0]
        first = not self._started
        if first:
            # beams and samples repeat the tokens, not the audio: the IR folds each window's rows into one read of
            # its keys/values (convert/whisper_ir.py)
            bind_cross_kv(req, cross_kv, self.model.dims)
            self._cross_kv = cross_kv
            req.reset_state()
            self._started = True
            windows = cross_kv.shape[0]
            if n_batch > windows:  # each window's rows are equal now: run one of them
                tokens = tokens[:: n_batch // windows]
                self._expand = np.repeat(np.arange(windows, dtype=np.int32), n_batch // windows)
            beam_idx = np.arange(len(tokens), dtype=np.int32)
        else:
            tokens = tokens[:, -1:]  # only the newest token after the first forward pass
            beam_idx = self._beam_idx if self._beam_idx is not None else self._expand
            if beam_idx is None:
                beam_idx = np.arange(n_batch, dtype=np.int32)
            self._beam_idx = self._expand = None
        length = tokens.shape[-1]
        positions = sorted({self.sot_index, length - 1}) if length > 1 else [0]
        req.set_tensor("tokens", ov.Tensor(np.ascontiguousarray(tokens, dtype=np.int64)))
        req.set_tensor("beam_idx", ov.Tensor(beam_idx))
        req.set_tensor("logit_pos", ov.Tensor(np.asarray(positions, dtype=np.int64)))
        with timings.stage("decoder"):
            req.infer()
        computed = req.get_tensor("logits").data  # (rows run, len(positions), vocab)
        if len(tokens) < n_batch:
            computed = np.repeat(computed, n_batch // len(tokens), axis=0)
        last = computed[:, -1].copy()  # (the request's memory is reused by the next step)
        return last, (computed[:, positions.index(min(self.sot_index, length - 1))].copy() if first else None)

    def rearrange_kv_cache(self, source_indices) -> None:
        source = np.asarray(source_indices, dtype=np.int32)
        if self._expand is not None:  # the cache still has one row per window
            self._beam_idx = self._expand[source]
        elif (source != np.arange(len(source))).any():
            self._beam_idx = source

    def narrow(self, first: int, last: int, rows: slice) -> None:
        """Decode on only windows first..last-1 (of the batch's first call) from the next step, their rows `rows` of
        the current ones: the cache keeps those rows, the cross-attention inputs a view of those windows (no copy)."""
        index = self._beam_idx if self._beam_idx is not None else self._expand
        if index is None:
            index = np.arange(rows.stop, dtype=np.int32)
        self._beam_idx, self._expand = np.ascontiguousarray(index[rows]), None
        bind_cross_kv(self.request, self._cross_kv[first:last], self.model.dims)

    def cleanup_caching(self) -> None:
        self.request.reset_state()  # the cache's memory is kept for the next window
        self._started = False
        self._beam_idx = self._expand = self._cross_kv = None
