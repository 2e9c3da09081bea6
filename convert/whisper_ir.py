"""openai-whisper's PyTorch modules traced into the IR files that convert/export.py caches (convert/ir_layout.py
describes them): the encoder with every layer's cross-attention keys/values, the stateful decoder and the aligner. torch is
imported here only, so that a cached IR loads without it."""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from whisper.model import Whisper

from convert.ir_layout import EXPORT_VERSION, F16_ENCODER, ExportOptions


def export(model: Whisper, out: Path, options: ExportOptions = ExportOptions()) -> None:
    """Convert `model` to encoder.xml/decoder.xml (+ .bin) and model.json (dims, alignment heads) in `out`."""
    import openvino as ov

    fp16 = options.weights == "f16"
    model = model.float().eval()
    dims = model.dims
    # torch.jit tracing warns about whisper's shape assert and about being deprecated; neither is actionable here
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mel = torch.zeros(1, dims.n_mels, 3000)
        encoder = _convert(_Encoder(model), (mel,), [((-1, dims.n_mels, 3000), ov.Type.f32)])
        encoder.outputs[0].get_tensor().set_names({"audio_features"})
        encoder.outputs[1].get_tensor().set_names({"cross_kv"})
        if options.weights == "int8":  # (before compressing: saved as it was traced)
            ov.save_model(encoder, out / F16_ENCODER[0], compress_to_fp16=True)
        ov.save_model(_compressed(encoder, options), out / "encoder.xml", compress_to_fp16=fp16)

        layers, heads, hs = dims.n_text_layer, dims.n_text_head, dims.n_text_state // dims.n_text_head
        names = ["tokens", "beam_idx", "logit_pos"]
        names += [f"cross_{kv}_{i}" for i in range(layers) for kv in "kv"]
        names += [f"past_{kv}_{i}" for i in range(layers) for kv in "kv"]
        shapes = (
            [(-1, -1), (-1,), (-1,)]
            + [(-1, heads, dims.n_audio_ctx, hs)] * 2 * layers
            + [(-1, heads, -1, hs)] * 2 * layers
        )
        example = [torch.tensor([[50258, 50259, 50359]]), torch.zeros(1, dtype=torch.int32), torch.tensor([0, 2])]
        example += [torch.zeros(1, heads, dims.n_audio_ctx, hs)] * 2 * layers + [
            torch.zeros(1, heads, 2, hs)
        ] * 2 * layers
        types = [ov.Type.i64, ov.Type.i32, ov.Type.i64] + [ov.Type.f32] * 4 * layers
        decoder = _convert(_Decoder(model), tuple(example), list(zip(shapes, types)))
        for port, name in zip(decoder.inputs, names):
            port.get_tensor().set_names({name})
        outputs = ["logits"] + [f"present_{kv}_{i}" for i in range(layers) for kv in "kv"]
        for port, name in zip(decoder.outputs, outputs):
            port.get_tensor().set_names({name})
        _make_stateful(decoder, layers, heads, hs)
        ov.save_model(_compressed(decoder, options), out / "decoder.xml", compress_to_fp16=fp16)

        aligner = _convert(
            _Aligner(model),
            (example[0], *example[3 : 3 + 2 * layers]),
            [((-1, -1), ov.Type.i64)] + [((-1, heads, dims.n_audio_ctx, hs), ov.Type.f32)] * 2 * layers,
        )
        for port, name in zip(aligner.inputs, ["tokens"] + names[3 : 3 + 2 * layers]):
            port.get_tensor().set_names({name})
        for port, name in zip(aligner.outputs, ["logits", "alignment_qk"]):
            port.get_tensor().set_names({name})
        ov.save_model(_compressed(aligner, options), out / "aligner.xml", compress_to_fp16=fp16)

    heads = model.alignment_heads.to_dense().nonzero().tolist()
    info = {"dims": asdict(dims), "alignment_heads": heads, "export": asdict(options), "version": EXPORT_VERSION}
    (out / "model.json").write_text(json.dumps(info, indent=1))


def _convert(module: nn.Module, example: tuple, inputs: list):
    """ov.convert_model of a module traced once: torch.jit.trace's check_trace (the module run again and compared,
    a third of a conversion's time) is left out; tests/asr/test_openvino.py compares the IR with PyTorch instead."""
    import openvino as ov
    from openvino.frontend.pytorch.ts_decoder import TorchScriptPythonDecoder

    traced = TorchScriptPythonDecoder(module, example_input=example, trace_kwargs={"check_trace": False})
    return ov.convert_model(traced, example_input=example, input=inputs)


def _make_stateful(decoder, layers: int, heads: int, hs: int) -> None:
    """past_*/present_* pairs become internal state, each starting as an empty (B, heads, 0, hs) tensor: the
    layout optimum-intel gives its stateful decoders, which the CPU plugin fuses with the attention (with an i32 beam_idx)."""
    import numpy as np
    import openvino.opset13 as ops
    from openvino._offline_transformations import apply_make_stateful_transformation

    apply_make_stateful_transformation(
        decoder, {f"past_{kv}_{i}": f"present_{kv}_{i}" for i in range(layers) for kv in "kv"}
    )
    batch = ops.gather(ops.shape_of(decoder.input("tokens"), output_type="i64"), ops.constant([0]), ops.constant(0))
    shape = ops.concat([batch, ops.constant(np.array([heads, 0, hs], np.int64))], axis=0)  # (B, nh, 0, hs)
    for op in decoder.get_ops():
        if op.get_type_name() == "ReadValue":
            op.set_arguments([ops.broadcast(ops.constant(0.0, dtype=op.get_output_element_type(0)), shape)])
    decoder.validate_nodes_and_infer_types()


def _compressed(model, options: ExportOptions):
    """int8 weights (per output channel, asymmetric) for every matmul and embedding, or the model as it is."""
    if options.weights != "int8":
        return model
    import logging

    import nncf

    logging.getLogger("nncf").setLevel(logging.WARNING)  # its progress bars and statistics are not ours to print
    return nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)


def _heads(x: Tensor, n_head: int) -> Tensor:
    b, t, d = x.shape
    return x.view(b, t, n_head, d // n_head).transpose(1, 2)  # (B, T, d) -> (B, nh, T, hs)


class _Encoder(nn.Module):
    def __init__(self, model: Whisper):
        super().__init__()
        self.encoder = model.encoder
        self.blocks = model.decoder.blocks
        self.n_head = model.dims.n_text_head

    def forward(self, mel: Tensor) -> tuple[Tensor, Tensor]:
        x = self.encoder(mel)  # (B, S, d)
        scale = (x.shape[-1] // self.n_head) ** -0.5
        kv = []
        for b in self.blocks:
            # keys transposed and pre-scaled so the decoder's cross-attention is two plain matmuls per step
            k = _heads(b.cross_attn.key(x), self.n_head).transpose(2, 3) * scale  # (B, nh, hs, S)
            v = _heads(b.cross_attn.value(x), self.n_head)  # (B, nh, S, hs)
            kv.append(torch.stack([k.reshape(v.shape), v], dim=1))  # (B, 2, nh, S, hs); k's rows are (hs, S)
        return x, torch.stack(kv, dim=1)  # (B, L, 2, nh, S, hs)


class _Decoder(nn.Module):
    """One decoding step. Inputs and outputs are per layer, in head layout, so the IR never slices or transposes
    the caches."""

    def __init__(self, model: Whisper):
        super().__init__()
        self.decoder = model.decoder
        self.n_head = model.dims.n_text_head
        self.head_dim = model.dims.n_text_state // model.dims.n_text_head
        self.n_audio_ctx = model.dims.n_audio_ctx

    def _cross_attention(self, block: nn.Module, x: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """x + cross-attention(x) over the audio, and the raw scores q·k / sqrt(hs) (k arrives pre-scaled).

        K/V hold one row per window; the B token rows are the windows' beams, contiguous. The beams are folded into the query
        rows, so one matmul reads a window's keys and values once per step for all its beams (docs/engine.md)."""
        nh, hs, s = self.n_head, self.head_dim, self.n_audio_ctx
        q = _heads(block.cross_attn.query(block.cross_attn_ln(x)), nh)  # (B, nh, T, hs)
        windows, t = k.shape[0], q.shape[2]
        q = q.reshape(windows, -1, nh, t, hs).transpose(1, 2).reshape(windows, nh, -1, hs)  # (W, nh, G*T, hs)
        qk = q @ k.reshape(windows, nh, hs, s)  # (W, nh, G*T, S)
        y = torch.softmax(qk, dim=-1) @ v  # (W, nh, G*T, hs)
        y = y.reshape(windows, nh, -1, t, hs).transpose(1, 2).reshape(-1, nh, t, hs)  # (B, nh, T, hs)
        qk = qk.reshape(windows, nh, -1, t, s).transpose(1, 2).reshape(-1, nh, t, s)  # (B, nh, T, S)
        return x + block.cross_attn.out(y.transpose(1, 2).flatten(2)), qk

    def forward(self, tokens: Tensor, beam_idx: Tensor, logit_pos: Tensor, *kv: Tensor) -> tuple[Tensor, ...]:
        # logit_pos: the token positions whose logits are returned (whisper reads only the SOT and the last one,
        #   and the vocabulary projection is the costliest matmul, so a long prompt must not pay it per token)
        # kv: cross_k_0, cross_v_0, ..., cross_v_{L-1} (k as (B, nh, hs, S), pre-scaled by hs**-0.5),
        #     past_k_0, past_v_0, ..., past_v_{L-1} (B, nh, P, hs)
        dec, n_layer = self.decoder, len(self.decoder.blocks)
        cross, past = kv[: 2 * n_layer], kv[2 * n_layer :]
        offset, t = past[0].shape[2], tokens.shape[1]
        x = dec.token_embedding(tokens) + dec.positional_embedding[offset : offset + t]  # (B, T, d)
        # query i (at position offset + i) sees keys 0 .. offset + i
        mask = torch.arange(offset + t)[None, :] <= (torch.arange(t) + offset)[:, None]  # (T, P + T)
        presents = []
        for i, block in enumerate(dec.blocks):
            h = block.attn_ln(x)
            # beam_idx reorders the cache after a beam-search step (identity otherwise)
            k = torch.cat([past[2 * i].index_select(0, beam_idx), _heads(block.attn.key(h), self.n_head)], dim=2)
            v = torch.cat([past[2 * i + 1].index_select(0, beam_idx), _heads(block.attn.value(h), self.n_head)], dim=2)
            presents += [k, v]  # (B, nh, P + T, hs)
            y = F.scaled_dot_product_attention(_heads(block.attn.query(h), self.n_head), k, v, attn_mask=mask)
            x = x + block.attn.out(y.transpose(1, 2).flatten(2))
            x, _ = self._cross_attention(block, x, cross[2 * i], cross[2 * i + 1])
            x = x + block.mlp(block.mlp_ln(x))
        x = x.index_select(1, logit_pos)  # (B, K, d)
        logits = dec.ln(x) @ dec.token_embedding.weight.T  # (B, K, vocab)
        return (logits, *presents)


class _Aligner(_Decoder):
    """The whole token sequence at once, without a cache: logits at every position and the raw scores of the
    alignment heads only (before softmax, as whisper's hooks see them)."""

    def __init__(self, model: Whisper):
        super().__init__(model)
        self.heads = [tuple(h) for h in model.alignment_heads.to_dense().nonzero().tolist()]  # (layer, head)

    def forward(self, tokens: Tensor, *cross: Tensor) -> tuple[Tensor, Tensor]:
        dec, t = self.decoder, tokens.shape[1]
        x = dec.token_embedding(tokens) + dec.positional_embedding[:t]  # (B, T, d)
        mask = torch.arange(t)[None, :] <= torch.arange(t)[:, None]  # (T, T) causal
        scores = []
        for i, block in enumerate(dec.blocks):
            h = block.attn_ln(x)
            q, k, v = (_heads(m(h), self.n_head) for m in (block.attn.query, block.attn.key, block.attn.value))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + block.attn.out(y.transpose(1, 2).flatten(2))
            x, qk = self._cross_attention(block, x, cross[2 * i], cross[2 * i + 1])
            scores += [qk[:, head] for layer, head in self.heads if layer == i]
            x = x + block.mlp(block.mlp_ln(x))
        logits = dec.ln(x) @ dec.token_embedding.weight.T  # (B, T, vocab)
        return logits, torch.stack(scores, dim=1)  # (B, A, T, S)
