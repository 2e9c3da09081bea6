"""The precision a model runs at: how its IR stores weights and how each IR is compiled, chosen for this CPU."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.cpu import CPU, PRECISIONS, auto_precision, cpu
from pipeline.errors import SubtitleError


@dataclass(frozen=True, kw_only=True)
class Precision:
    """How one precision is stored and compiled: the IR's weights and each IR's OpenVINO CPU settings."""

    name: str  # f32, bf16, int8
    weights: str  # the IR's weight storage (convert.ir_layout.WEIGHTS)
    encoder: str  # INFERENCE_PRECISION_HINT of the encoder (compute-bound: 1500 audio positions per window)
    decoder: str  # ... of the decoder and aligner (memory-bound: a few tokens per step)
    kv_cache: str  # KV_CACHE_PRECISION of the decoder's self-attention cache
    encoder_weights: str | None = None  # the encoder's weights when not the IR's: auto's measured choice (measured.py)
    measured: tuple[str, ...] = ()  # the encoder weights timed on a first load to choose the setting (none: fixed)

    @property
    def encoder_xml(self) -> str:
        """The encoder's file in the IR's folder."""
        from convert.ir_layout import encoder_xml

        return encoder_xml(self.weights, self.encoder_weights or self.weights)


def resolve_precision(name: str, info: CPU | None = None) -> Precision:
    """`auto` made concrete for this CPU (or `info`), checked against what it can do."""
    if name not in PRECISIONS:
        raise SubtitleError(f"Unknown precision {name!r}: use {', '.join(PRECISIONS)}")
    info = info or cpu()
    auto = name == "auto"
    name = auto_precision(info) if auto else name
    if name == "f32":  # the reference: token-for-token openai-whisper (tests/asr/test_openvino.py)
        return Precision(name="f32", weights="f16", encoder="f32", decoder="f32", kv_cache="f32")
    if name == "bf16":
        if not info.has_bf16:
            raise SubtitleError("This CPU has no bf16 instructions (AVX512-BF16 or AMX): use precision f32 or int8")
        # the decoder stays f32: in bf16 some sampled decodes gave NaN logits
        return Precision(name="bf16", weights="f16", encoder="bf16", decoder="f32", kv_cache="f32")
    # int8 weights, computed in f32 around them (the CPU plugin quantizes activations for the matmuls); the encoder's
    # hint here is where a load starts: the first load on a machine measures which is fastest (measured.py), and for
    # auto also whether the encoder's f16 weights are
    return Precision(
        name="auto" if auto else "int8",
        weights="int8",
        measured=("int8", "f16") if auto else ("int8",),  # (int8 is asked for its memory: its own weights only)
        encoder="bf16" if info.has_amx else "f32",
        decoder="f32",
        kv_cache="f32",
    )
