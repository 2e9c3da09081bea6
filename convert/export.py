"""Export openai-whisper's PyTorch model to OpenVINO IR, kept in an on-disk cache.

- encoder.xml: mel (B, n_mels, 3000) -> audio_features (B, 1500, d) and cross_kv (B, L, 2, heads, 1500, d/heads),
  the cross-attention keys/values of every decoder layer, computed once per window instead of once per token.
- aligner.xml: tokens (B, T), cross_{k,v}_i -> logits (B, T, vocab) and alignment_qk (B, A, T, 1500), the alignment
  heads' scores over the whole sequence, for whisper's word timing (whisper.timing).
- decoder.xml: tokens (B, T), beam_idx (B,) i32, logit_pos (K,), cross_{k,v}_i -> logits (B, K, vocab). Stateful, as
  OpenVINO GenAI / optimum-intel export decoders: the self-attention cache lives in the compiled model, `beam_idx`
  reorders it for beam search and `reset_state()` empties it between windows.

Weights are f16, or int8 (nncf's INT8_ASYM weight compression; the CPU plugin quantizes activations on the fly). An
int8 IR also keeps its encoder with f16 weights (encoder-f16.xml): on CPUs with bf16, that encoder computed in bf16 is
both faster than int8 weights computed in f32 and nearer to f32's output, and `auto` measures which to run. The
cache lives under SUBTITLE_CACHE_DIR, one folder per checkpoint identity and export settings.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from whisper.model import Whisper

if TYPE_CHECKING:
    from convert.checkpoints import Checkpoint

EXPORT_VERSION = 5  # bump when the IR layout changes, so old cache entries are not reused
FILES = ("encoder.xml", "encoder.bin", "decoder.xml", "decoder.bin", "aligner.xml", "aligner.bin", "model.json")
F16_ENCODER = ("encoder-f16.xml", "encoder-f16.bin")  # beside an int8 IR's own encoder


def encoder_xml(ir_weights: str, weights: str) -> str:
    """The encoder file of an IR stored as `ir_weights` whose weights are `weights`."""
    if weights == ir_weights:
        return "encoder.xml"
    if (ir_weights, weights) == ("int8", "f16"):
        return F16_ENCODER[0]
    raise ValueError(f"an IR of {ir_weights} weights has no encoder of {weights} weights")


WEIGHTS = ("f16", "f32", "int8")


@dataclass(frozen=True)
class ExportOptions:
    weights: str = "f16"  # how the .bin stores weights: f16 (half of f32's size; computed in f32/bf16), f32, int8

    def __post_init__(self):
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, not {self.weights!r}")


def cache_root() -> Path:
    """SUBTITLE_CACHE_DIR, else $XDG_CACHE_HOME/subtitle-generator, else ~/.cache/subtitle-generator."""
    if env := os.environ.get("SUBTITLE_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "subtitle-generator"


def ensure_ir(
    checkpoint: Checkpoint,
    options: ExportOptions = ExportOptions(),
    progress: Callable[[str], None] = lambda message: None,
) -> Path:
    """Return the cache folder holding the IR for `checkpoint`, exporting it first if it is not there yet."""

    def write(folder: Path) -> None:
        progress(f"Preparing {checkpoint.description} for OpenVINO (first run only)")
        export(checkpoint.load(), folder, options)

    files = FILES + (F16_ENCODER if options.weights == "int8" else ())  # (an int8 entry without it: written again)
    return cached_entry(f"{checkpoint.identity}-v{EXPORT_VERSION}-{options.weights}", files, write)


def weights_entry(
    name: str,
    weights: Path,
    version: int,
    *,
    xml: str,
    output: str,
    module: Callable[[], nn.Module],
    example: Tensor,
    shape: tuple[int, ...],
) -> Path:
    """The cache folder of a small network's IR, keyed by its weights' digest and `version`, holding `xml` (and its
    .bin): `module()` traced on `example` with a float32 input of `shape` (-1: any size), its output named `output`,
    written on first use."""
    import hashlib

    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]

    def write(out: Path) -> None:
        import openvino as ov

        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (tracing's warnings are not actionable here)
            model = ov.convert_model(module(), example_input=example, input=[(shape, ov.Type.f32)])
        model.outputs[0].get_tensor().set_names({output})
        ov.save_model(model, out / xml, compress_to_fp16=False)

    return cached_entry(f"{name}-{digest}-v{version}", (xml, xml.replace(".xml", ".bin")), write)


def cached_entry(key: str, files: Sequence[str], write: Callable[[Path], None]) -> Path:
    """The cache folder `key`, holding `files`; written by `write(folder)` first if it is not there yet.

    One process writes an entry at a time (a lock file); an entry is written to a temporary folder and renamed into
    place, so an interrupted write never leaves a broken entry, and the next write sweeps its leftovers."""
    target = cache_root() / key

    def complete() -> bool:
        return all((target / name).is_file() for name in files)

    if complete():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes, also when the process dies)
        if complete():  # written by another process while this one waited
            return target
        for stale in target.parent.glob(f".{key}.*"):  # a killed write's leftovers (the lock is ours)
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
        try:
            write(tmp)
            if target.exists():  # an incomplete entry (files missing): replaced
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


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
