"""Whisper's log-mel spectrogram of a whole recording, computed a few minutes at a time.

`whisper.audio.log_mel_spectrogram` holds the complex STFT and the magnitudes of the whole recording at once: for one
hour that is 0.6 GB and 0.3 GB on top of the 115 MB result, the peak of a whole transcription. This computes the same
frames (the same window, hop, reflect padding at the recording's ends, mel filters and clamping, with whisper's
own `mel_filters`) chunk by chunk into the result, so the extra memory is one chunk's.
"""

from __future__ import annotations

import numpy as np
import torch
from whisper.audio import HOP_LENGTH, N_FFT, mel_filters

CHUNK_FRAMES = 30_000  # 5 minutes of 10-ms frames per STFT: ~50 MB of complex values


def log_mel(audio: np.ndarray, n_mels: int, padding: int = 0) -> torch.Tensor:
    """(n_mels, frames) as whisper.audio.log_mel_spectrogram(audio, n_mels, padding) gives it."""
    audio = np.ascontiguousarray(audio, np.float32)
    n_samples = audio.size + padding  # the padding is zeros after the audio
    n_frames = n_samples // HOP_LENGTH  # whisper drops the STFT's last frame
    out = torch.empty(n_mels, n_frames)
    filters = mel_filters("cpu", n_mels)
    window = torch.hann_window(N_FFT)
    half = N_FFT // 2  # frame f is centred on sample f * HOP_LENGTH
    for f0 in range(0, n_frames, CHUNK_FRAMES):
        f1 = min(f0 + CHUNK_FRAMES, n_frames)
        index = np.arange(f0 * HOP_LENGTH - half, (f1 - 1) * HOP_LENGTH + half)
        index = np.abs(index)  # reflect at the start (torch.stft's center=True pads with reflection)
        index = np.where(index >= n_samples, 2 * (n_samples - 1) - index, index)  # ... and at the end
        samples = np.zeros(index.size, np.float32)
        inside = index < audio.size
        samples[inside] = audio[index[inside]]
        stft = torch.stft(
            torch.from_numpy(samples), N_FFT, HOP_LENGTH, window=window, center=False, return_complex=True
        )
        magnitudes = stft.abs() ** 2  # (201, f1 - f0)
        out[:, f0:f1] = torch.clamp(filters @ magnitudes, min=1e-10).log10()
    torch.maximum(out, out.max() - 8.0, out=out)
    return out.add_(4.0).div_(4.0)
