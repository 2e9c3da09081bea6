"""The chunked log-mel spectrogram is whisper's own, bit for bit, whatever the chunk size and length (a chunk of a
single frame goes through a matrix-vector product instead, and may differ in the last bit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import LONG
from whisper.audio import N_SAMPLES, log_mel_spectrogram

import pipeline.features as features


@pytest.mark.parametrize(
    "seconds, padding, chunk, tolerance",
    [
        (53.3, N_SAMPLES, features.CHUNK_FRAMES, 0),  # one chunk
        (53.3, N_SAMPLES, 997, 0),  # chunk edges anywhere, the last one short
        (53.3, 0, 3000, 0),  # no padding: the end is reflected audio, not zeros
        (30.0, N_SAMPLES, 1500, 0),
        (0.0625, 0, 997, 0),  # shorter than one chunk and than the FFT's reach at both ends
        (0.0625, N_SAMPLES, 2, 0),
        (0.0625, N_SAMPLES, 1, 2e-7),  # a chunk per frame: one float32 ulp at these values
    ],
)
def test_log_mel_is_whispers(audio, monkeypatch, seconds, padding, chunk, tolerance):
    samples = audio(LONG)[: int(seconds * 16000)]
    monkeypatch.setattr(features, "CHUNK_FRAMES", chunk)
    expected = log_mel_spectrogram(torch.from_numpy(samples), 80, padding=padding)
    got = features.log_mel(samples, 80, padding)
    assert got.shape == expected.shape
    assert (got - expected).abs().max().item() <= tolerance


def test_log_mel_of_128_bins():
    """large-v3's 128 mel bins, on noise: whisper's filters are read for any bin count."""
    samples = np.random.default_rng(3).standard_normal(40_000).astype(np.float32) * 0.1
    assert torch.equal(
        features.log_mel(samples, 128, N_SAMPLES),
        log_mel_spectrogram(torch.from_numpy(samples), 128, padding=N_SAMPLES),
    )
