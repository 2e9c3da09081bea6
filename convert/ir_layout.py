"""The IR's files and how they are stored: what convert/export.py caches and convert/whisper_ir.py writes.

- encoder.xml: mel (B, n_mels, 3000) -> audio_features (B, 1500, d) and cross_kv (B, L, 2, heads, 1500, d/heads),
  the cross-attention keys/values of every decoder layer, computed once per window instead of once per token.
- aligner.xml: tokens (B, T), cross_{k,v}_i -> logits (B, T, vocab) and alignment_qk (B, A, T, 1500), the alignment
  heads' scores over the whole sequence, for whisper's word timing (whisper.timing).
- decoder.xml: tokens (B, T), beam_idx (B,) i32, logit_pos (K,), cross_{k,v}_i -> logits (B, K, vocab). Stateful, as
  OpenVINO GenAI / optimum-intel export decoders: the self-attention cache lives in the compiled model, `beam_idx`
  reorders it for beam search and `reset_state()` empties it between windows.

Weights are f16, or int8 (nncf's INT8_ASYM weight compression; the CPU plugin quantizes activations on the fly). An
int8 IR also keeps its encoder with f16 weights (encoder-f16.xml): on CPUs with bf16, that encoder computed in bf16 is
both faster than int8 weights computed in f32 and nearer to f32's output, and `auto` measures which to run.
"""

from __future__ import annotations

from dataclasses import dataclass

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
