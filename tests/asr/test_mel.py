"""Whisper's features without torch (pipeline/asr/mel.py), against whisper.audio's own on real speech and edge inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import whisper.audio
from conftest import ENGLISH, LONG, SPANISH

from pipeline.asr import mel
from pipeline.asr.mel import HOP_LENGTH, N_FFT, N_FRAMES, N_SAMPLES, log_mel_spectrogram, mel_filters, pad_or_trim

# torch's float32 STFT and ours round differently: the log-Mel values agree to about 1e-5 (a quiet band's power is
# the one to differ most, in relative terms)
MAX_DIFFERENCE, MEAN_DIFFERENCE = 2e-4, 1e-5
# read speech, Spanish, 53 s (two windows), a whisper, a phone call
CLIPS = [*ENGLISH[:2], SPANISH, LONG, "en_mfa_whisper", "en_pyannote_call"]


def whispers(samples: np.ndarray, n_mels: int) -> np.ndarray:
    return whisper.audio.log_mel_spectrogram(torch.from_numpy(samples), n_mels).numpy()


def assert_close(found: np.ndarray, expected: np.ndarray) -> None:
    assert found.shape == expected.shape
    assert found.dtype == np.float32
    difference = np.abs(found - expected)
    assert difference.max() <= MAX_DIFFERENCE
    assert difference.mean() <= MEAN_DIFFERENCE


@pytest.mark.parametrize(
    "name",
    ["SAMPLE_RATE", "N_FFT", "HOP_LENGTH", "CHUNK_LENGTH", "N_SAMPLES", "N_FRAMES", "N_SAMPLES_PER_TOKEN",
     "FRAMES_PER_SECOND", "TOKENS_PER_SECOND"],
)  # fmt: skip
def test_constants_are_whispers(name):
    assert getattr(mel, name) == getattr(whisper.audio, name)


@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_are_whispers(n_mels):
    filters = mel_filters(n_mels)
    assert np.array_equal(filters, whisper.audio.mel_filters("cpu", n_mels).numpy())
    assert filters.shape == (n_mels, N_FFT // 2 + 1) and filters.dtype == np.float32
    assert not filters.flags.writeable  # (cached: no caller may change it for the others)


@pytest.mark.parametrize("n_mels", [80, 128])
@pytest.mark.parametrize("clip", CLIPS)
def test_log_mel_spectrogram_of_real_speech(clip, n_mels, audio):
    samples = audio(clip)
    window = pad_or_trim(samples)  # what the encoder is given: 30 s, padded with silence or cut
    assert np.array_equal(window, whisper.audio.pad_or_trim(samples))
    assert_close(log_mel_spectrogram(window, n_mels), whispers(window, n_mels))
    assert_close(log_mel_spectrogram(samples, n_mels), whispers(samples, n_mels))  # the whole clip


def noise(size: int, scale: float = 0.1) -> np.ndarray:
    return (scale * np.random.default_rng(size).standard_normal(size)).astype(np.float32)


@pytest.mark.parametrize(
    ("samples", "frames"),
    [
        (np.zeros(N_SAMPLES, np.float32), N_FRAMES),  # silence: every band on the floor
        (noise(201), 1),  # shorter than one FFT (the shortest audio torch can reflect at both ends)
        (noise(N_FFT - 1), 2),
        (noise(N_FFT), 2),
        (noise(N_SAMPLES), N_FRAMES),  # exactly 30 s
        (noise(N_SAMPLES + 1234), N_FRAMES + 7),  # longer than 30 s
        (noise(N_SAMPLES, 1e-5), N_FRAMES),  # near digital silence
        (np.r_[noise(16000), np.zeros(16000, np.float32)], 200),  # sound, then silence under the floor
        (np.full(16000, 0.5, np.float32), 100),  # a constant: all power at 0 Hz
    ],
    ids=["silence", "201", "N_FFT - 1", "N_FFT", "30 s", "over 30 s", "1e-5", "then silence", "constant"],
)
@pytest.mark.parametrize("n_mels", [80, 128])
def test_log_mel_spectrogram_of_edge_inputs(samples, frames, n_mels):
    found = log_mel_spectrogram(samples, n_mels)
    assert found.shape == (n_mels, frames)
    assert_close(found, whispers(samples, n_mels))


@pytest.mark.parametrize("size", [0, 1, 2, 159, 160, 200])
def test_log_mel_spectrogram_of_audio_too_short_for_torch(size):
    """200 samples or fewer: torch.stft cannot reflect them (whisper raises); np.pad can. No audio, no frames."""
    found = log_mel_spectrogram(np.full(size, 0.1, np.float32), 80)
    assert found.shape == (80, size // HOP_LENGTH) and found.dtype == np.float32
    assert np.isfinite(found).all()


@pytest.mark.parametrize(
    ("shape", "length", "axis"),
    [
        ((10,), 20, -1),  # padded
        ((30,), 20, -1),  # trimmed
        ((20,), 20, -1),
        ((0,), 5, -1),
        ((3, 10), 4, 0),
        ((3, 10), 2, 0),
        ((3, 10), 4, -1),
        ((3, 10), 12, 1),
    ],
)
def test_pad_or_trim_is_whispers(shape, length, axis):
    array = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    found = pad_or_trim(array, length, axis=axis)
    expected = whisper.audio.pad_or_trim(array, length, axis=axis)
    assert found.dtype == expected.dtype and found.shape == expected.shape
    assert np.array_equal(found, expected)


def test_pad_or_trim_defaults_to_30_seconds():
    assert pad_or_trim(np.ones(5, np.float32)).shape == (N_SAMPLES,)
    assert pad_or_trim(np.ones(N_SAMPLES + 5, np.float32)).shape == (N_SAMPLES,)
