"""segmentation-3.0's network in PyTorch, PyanNet as pyannote.audio 3 builds it (convert/weights/segmentation.npz,
MIT): SincNet (its 40 learned band-pass cut-offs turned into 80 fixed filters once, as asteroid-filterbanks'
ParamSincFB computes them), four bidirectional LSTM layers, two linear layers. Imported only to export
(convert/segmentation.py), so that a cached IR loads without torch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

RATE, CLASSES = 16000, 7  # (convert/segmentation.py's)
MIN_LOW_HZ = MIN_BAND_HZ = 50.0  # (ParamSincFB's defaults, as the checkpoint was trained)


def sinc_filters(low_hz: torch.Tensor, band_hz: torch.Tensor, n: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    """(80, 1, 251) band-pass filters from the learned cut-offs: 40 even (cosine) and 40 odd (sine) ones."""
    low = MIN_LOW_HZ + torch.abs(low_hz)
    high = torch.clamp(low + MIN_BAND_HZ + torch.abs(band_hz), MIN_LOW_HZ, RATE / 2)
    band = (high - low)[:, 0]
    at_low, at_high = low @ n, high @ n
    even = ((torch.sin(at_high) - torch.sin(at_low)) / (n / 2)) * window
    odd = ((torch.cos(at_low) - torch.cos(at_high)) / (n / 2)) * window
    filters = [
        torch.cat([even, 2 * band[:, None], torch.flip(even, dims=[1])], dim=1),
        torch.cat([odd, torch.zeros_like(band[:, None]), -torch.flip(odd, dims=[1])], dim=1),
    ]
    return torch.cat([f / (2 * band[:, None]) for f in filters])[:, None, :]


class PyanNet(nn.Module):
    """Waveforms (B, 1, samples) -> (B, frames, 7) log-probabilities of the powerset classes."""

    def __init__(self):
        super().__init__()
        self.register_buffer("sinc", torch.zeros(80, 1, 251))
        self.wav_norm = nn.InstanceNorm1d(1, affine=True)
        self.convs = nn.ModuleList([nn.Conv1d(80, 60, 5), nn.Conv1d(60, 60, 5)])
        self.norms = nn.ModuleList([nn.InstanceNorm1d(c, affine=True) for c in (80, 60, 60)])
        self.lstm = nn.LSTM(60, 128, num_layers=4, bidirectional=True, batch_first=True)
        self.linear = nn.ModuleList([nn.Linear(256, 128), nn.Linear(128, 128)])
        self.classifier = nn.Linear(128, CLASSES)

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        x = torch.abs(F.conv1d(self.wav_norm(waveforms), self.sinc, stride=10))
        for i, norm in enumerate(self.norms):
            x = x if i == 0 else self.convs[i - 1](x)
            x = F.leaky_relu(norm(F.max_pool1d(x, 3, 3)))
        x, _ = self.lstm(x.transpose(1, 2))
        for linear in self.linear:
            x = F.leaky_relu(linear(x))
        return F.log_softmax(self.classifier(x), dim=-1)


def load_segmentation(weights_file: Path) -> PyanNet:
    """The PyTorch model with the vendored weights (pyannote.audio's names mapped onto ours, every one used)."""
    with np.load(weights_file) as weights:
        state = {name: torch.from_numpy(weights[name].astype(np.float32)) for name in weights.files}
    bank = "sincnet.conv1d.0.filterbank."
    ours = {"sinc": sinc_filters(*(state.pop(bank + k) for k in ("low_hz_", "band_hz_", "n_", "window_")))}
    renames = {"sincnet.wav_norm1d.": "wav_norm.", "sincnet.conv1d.1.": "convs.0.", "sincnet.conv1d.2.": "convs.1.",
               "sincnet.norm1d.": "norms."}  # fmt: skip
    for name, value in state.items():
        prefix = next((p for p in renames if name.startswith(p)), "")
        ours[renames.get(prefix, "") + name[len(prefix) :]] = value
    model = PyanNet()
    model.load_state_dict(ours, strict=True)
    return model.eval()
