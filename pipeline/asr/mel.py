"""Whisper's audio constants and log-Mel spectrogram in numpy: whisper.audio's values without importing torch.

openai-whisper's package __init__ imports torch, so even `from whisper.audio import N_FRAMES` costs a torch import
(issue 52). This module gives the same values (tests/asr/test_mel.py compares them with whisper's) and reads the
filterbank from whisper's package folder without running its __init__.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

# hard-coded audio hyperparameters (whisper.audio's)
SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
CHUNK_LENGTH = 30
N_SAMPLES = CHUNK_LENGTH * SAMPLE_RATE  # 480000 samples in a 30-second chunk
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 3000 frames in a mel spectrogram input

N_SAMPLES_PER_TOKEN = HOP_LENGTH * 2  # the initial convolutions has stride 2
FRAMES_PER_SECOND = SAMPLE_RATE // HOP_LENGTH  # 10ms per audio frame
TOKENS_PER_SECOND = SAMPLE_RATE // N_SAMPLES_PER_TOKEN  # 20ms per audio token

# torch.hann_window(N_FFT), which is periodic: the window of an N_FFT + 1 point Hann without its last point
# (float64: the FFT runs in float64; its float32 values, as torch's hann_window gives them)
_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32).astype(np.float64)


def pad_or_trim(array: np.ndarray, length: int = N_SAMPLES, *, axis: int = -1) -> np.ndarray:
    """Pad `array` with zeros or trim it to `length` along `axis`, as the encoder expects (N_SAMPLES of audio)."""
    if array.shape[axis] > length:
        array = array.take(indices=range(length), axis=axis)
    if array.shape[axis] < length:
        pad_widths = [(0, 0)] * array.ndim
        pad_widths[axis] = (0, length - array.shape[axis])
        array = np.pad(array, pad_widths)
    return array


@functools.cache
def mel_filters(n_mels: int) -> np.ndarray:
    """The Mel filterbank whisper ships (librosa's for 80 or 128 bands), (n_mels, N_FFT // 2 + 1) float32, read-only.

    Found with find_spec, which locates the package without running its __init__ (and so without torch)."""
    assert n_mels in {80, 128}, f"Unsupported n_mels: {n_mels}"
    (folder,) = importlib.util.find_spec("whisper").submodule_search_locations
    with np.load(Path(folder) / "assets" / "mel_filters.npz", allow_pickle=False) as f:
        filters = f[f"mel_{n_mels}"]
    filters.flags.writeable = False  # (shared by every caller: the cache)
    return filters


def log_mel_spectrogram(audio: np.ndarray, n_mels: int) -> np.ndarray:
    """whisper.audio.log_mel_spectrogram of 16 kHz mono audio: (n_mels, audio.size // HOP_LENGTH) float32.

    torch.stft's frames (centred on every HOP_LENGTH-th sample, the ends reflected, a periodic Hann window), their
    power without the last frame, Mel bands, log10 floored 8 below the loudest band, scaled as the encoder expects.
    Where torch's reflection fails (200 samples or fewer) the ends are reflected as np.pad does; no audio gives no
    frames."""
    audio = np.asarray(audio, np.float32)
    n_frames = audio.size // HOP_LENGTH  # torch.stft's 1 + size // HOP_LENGTH frames, without the last
    if n_frames == 0:
        return np.zeros((n_mels, 0), np.float32)
    padded = np.pad(audio, N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP_LENGTH][:n_frames]  # (n_frames, N_FFT)
    # in float64, rounded once: a float32 FFT's rounding differs by library and CPU, and a decode through the bf16
    # encoder tips on differences that small (docs/engine.md, *Determinism*)
    spectrum = np.fft.rfft(frames * _WINDOW, axis=-1)  # (n_frames, N_FFT // 2 + 1); scipy.fft's, to the bit
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
    mel = np.empty((n_mels, n_frames), np.float32)
    for band, (first, weights) in enumerate(_bands(n_mels)):  # mel_filters(n_mels) @ power.T, band by band
        mel[band] = power[:, first : first + weights.size] @ weights
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


@functools.cache
def _bands(n_mels: int) -> tuple[tuple[int, np.ndarray], ...]:
    """Each Mel band's first FFT bin and its weights up to its last nonzero one. A band spans a few neighbouring
    bins: products over those alone skip the dense product's zeros, and the threads OpenBLAS would start for it
    (which compete with OpenVINO's for the cores)."""
    bands = []
    for row in mel_filters(n_mels):
        bins = np.flatnonzero(row)
        first, end = (bins[0], bins[-1] + 1) if bins.size else (0, 0)
        bands.append((int(first), row[first:end]))
    return tuple(bands)
