"""The speaker encoder (convert/weights/ge2e.npz: Resemblyzer's GE2E model, Apache-2.0) exported once to OpenVINO IR.

speaker.xml: mel partials (B, 160, 40), power mel spectrograms of 1.6 s -> embeddings (B, 256), unit vectors. The IR
lives in the model cache (convert.export.cache_root) beside Whisper's, in a folder named by the weights' hash and
this module's EXPORT_VERSION (convert.export.cached_entry, as Whisper's IR).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from convert.export import cached_entry

WEIGHTS = Path(__file__).parent / "weights" / "ge2e.npz"
EXPORT_VERSION = 1  # bump when the IR changes
PARTIAL_FRAMES, N_MELS, WIDTH = 160, 40, 256


class GE2E(nn.Module):
    """Resemblyzer's VoiceEncoder: LSTM over the partial's frames, its last layer's final state, linear, ReLU, L2."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(N_MELS, WIDTH, 3, batch_first=True)
        self.linear = nn.Linear(WIDTH, WIDTH)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(mels)
        embedding = torch.relu(self.linear(hidden[-1]))
        return embedding / torch.linalg.vector_norm(embedding, dim=1, keepdim=True).clamp_min(1e-12)


def load_ge2e() -> GE2E:
    """The PyTorch model with the vendored weights (every weight present, nothing left over)."""
    model = GE2E()
    with np.load(WEIGHTS) as weights:
        model.load_state_dict({name: torch.from_numpy(weights[name]) for name in weights.files}, strict=True)
    return model.eval()


def ensure_speaker_ir() -> Path:
    """The cache folder holding speaker.xml/.bin, exported on first use (convert.export.cached_entry)."""
    digest = hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()[:16]
    return cached_entry(f"speaker-ge2e-{digest}-v{EXPORT_VERSION}", ("speaker.xml", "speaker.bin"), _export)


def _export(out: Path) -> None:
    import openvino as ov

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (tracing's warnings are not actionable here)
        model = ov.convert_model(
            load_ge2e(),
            example_input=torch.zeros(2, PARTIAL_FRAMES, N_MELS),
            input=[((-1, PARTIAL_FRAMES, N_MELS), ov.Type.f32)],
        )
    model.outputs[0].get_tensor().set_names({"embeddings"})
    ov.save_model(model, out / "speaker.xml", compress_to_fp16=False)
