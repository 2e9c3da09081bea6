"""The speaker encoder, CAM++ (convert/weights/campplus.npz: 3D-Speaker's model, Apache-2.0), exported to OpenVINO IR.

speaker.xml: features (B, T, 80) -> frames (B, 512, ceil(T / 2)), the output before pooling, one frame per 20 ms; the
pooling and embedding layer run in numpy (pooling_weights), so any stretch of frames pools into an embedding. Cached as
Whisper's IR (convert.export.cached_entry); the PyTorch network it is traced from is convert/campplus.py, imported only
to export, so that a cached IR loads without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from convert.export import weights_entry

if TYPE_CHECKING:
    from torch import nn

WEIGHTS = Path(__file__).parent / "weights" / "campplus.npz"
EXPORT_VERSION = 3  # bump when the IR changes
N_BANKS = 80  # the features' mel banks (pipeline.speakers.embeddings.fbank)


def pooling_weights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The embedding layer after the pooling, float32: weight (192, 1024) applied to [mean, standard deviation] of the
    frames, then batch norm without scale: (weight @ stats - mean) / deviation."""
    prefix = "xvector.dense."
    with np.load(WEIGHTS) as weights:
        weight = weights[prefix + "linear.weight"][:, :, 0].astype(np.float32)
        mean = weights[prefix + "nonlinear.batchnorm.running_mean"].astype(np.float32)
        variance = weights[prefix + "nonlinear.batchnorm.running_var"].astype(np.float32)
    return weight, mean, np.sqrt(variance + 1e-5)  # (BatchNorm1d's eps)


def ensure_speaker_ir() -> Path:
    """The cache folder holding speaker.xml/.bin, exported on first use (convert.export.cached_entry)."""

    def network() -> nn.Module:
        from convert.campplus import frames_network  # (torch: only to export)

        return frames_network(WEIGHTS)

    return weights_entry("speaker-campplus", WEIGHTS, EXPORT_VERSION, xml="speaker.xml", output="frames",
                         module=network, example=(2, 158, N_BANKS), shape=(-1, -1, N_BANKS))  # fmt: skip
