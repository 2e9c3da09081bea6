"""pyannote's speaker segmentation model, segmentation-3.0 (convert/weights/segmentation.npz, MIT), exported to
OpenVINO IR.

segmentation.xml: waveforms (B, 1, 160000), 10 s at 16 kHz -> (B, 589, 7) log-probabilities of the powerset classes
(nobody, speaker 1, 2, 3, 1 and 2, 1 and 3, 2 and 3) of the chunk's own three speakers, a frame every 270 samples.
Cached as Whisper's IR (convert.export.cached_entry); the PyTorch network it is traced from is convert/pyannet.py,
imported only to export, so that a cached IR loads without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from convert.export import weights_entry

if TYPE_CHECKING:
    from torch import nn

WEIGHTS = Path(__file__).parent / "weights" / "segmentation.npz"
EXPORT_VERSION = 1  # bump when the IR changes
RATE, CHUNK, CLASSES = 16000, 160000, 7


def ensure_segmentation_ir() -> Path:
    """The cache folder holding segmentation.xml/.bin, exported on first use (convert.export.cached_entry)."""

    def network() -> nn.Module:
        from convert.pyannet import load_segmentation  # (torch: only to export)

        return load_segmentation(WEIGHTS)

    return weights_entry("segmentation", WEIGHTS, EXPORT_VERSION, xml="segmentation.xml", output="classes",
                         module=network, example=(2, 1, CHUNK), shape=(-1, 1, CHUNK))  # fmt: skip
