"""Who speaks: speaker embeddings of stretches of speech, the first stage of speaker turns.

The encoder is Resemblyzer's GE2E model (convert/speaker.py, weights in convert/weights/: Apache-2.0, no account or
token), run on OpenVINO. It is fed as it was trained (Resemblyzer's preprocess_wav and embed_utterance): 16-kHz audio
raised to -30 dBFS if it is quieter (never lowered), a power mel spectrogram (not log) of 25-ms periodic Hann windows
every 10 ms, centred, 40 Slaney mel bands from 0 to 8 kHz (librosa's melspectrogram defaults), cut into partials of
1.6 s every 1/rate seconds; an utterance's embedding is the normalised mean of its partials'. Embeddings are unit
vectors: the cosine similarity of two is their dot product (same speaker: about 0.75-0.95; different: 0.4-0.6).
"""

from __future__ import annotations

import threading
from functools import cache

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s
TARGET_DBFS = -30.0  # quieter audio is raised to this level (the model's training level); louder is left as it is


@cache
def mel_filterbank() -> np.ndarray:
    """(40, 201): librosa.filters.mel(sr=16000, n_fft=400, n_mels=40): the Slaney mel scale, each band's area 1."""

    def to_mel(hz):
        hz = np.asarray(hz, dtype=np.float64)
        log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
        return np.where(hz >= 1000.0, log_part, hz / (200.0 / 3))

    def to_hz(mel):
        mel = np.asarray(mel, dtype=np.float64)
        return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), mel * (200.0 / 3))

    bins = np.linspace(0, SAMPLE_RATE / 2, 1 + N_FFT // 2)
    edges = to_hz(np.linspace(to_mel(0.0), to_mel(SAMPLE_RATE / 2), N_MELS + 2))
    ramps = edges[:, None] - bins[None, :]
    widths = np.diff(edges)
    weights = np.maximum(0, np.minimum(-ramps[:-2] / widths[:-1, None], ramps[2:] / widths[1:, None]))
    return (weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


def leveled(samples: np.ndarray) -> np.ndarray:
    """The samples raised to TARGET_DBFS RMS if they are quieter (as int16 samples are measured); else as they are."""
    rms = float(np.sqrt(np.mean(np.square(samples * 32767.0, dtype=np.float64)))) if samples.size else 0.0
    if rms <= 0.0:
        return samples
    change = TARGET_DBFS - 20 * np.log10(rms / 32767.0)
    return samples * np.float32(10 ** (change / 20)) if change > 0 else samples


def power_mel(samples: np.ndarray) -> np.ndarray:
    """(1 + len // 160, 40) float32: the power mel spectrogram, one frame every 10 ms, each centred on its sample
    (the signal zero-padded by half a window at both ends, as librosa does)."""
    padded = np.pad(np.asarray(samples, dtype=np.float32), N_FFT // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)  # periodic Hann
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
    return (power.astype(np.float32) @ mel_filterbank().T).astype(np.float32)


def partial_starts(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[int]:
    """The first mel frame of each 1.6-s partial of an utterance of n_samples, one every round(100 / rate) frames,
    as Resemblyzer's compute_partial_slices: the last is dropped when under min_coverage of it is audio (unless it is
    the only one)."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round(SAMPLE_RATE / rate / HOP))
    if not 0 < step <= PARTIAL_FRAMES:
        raise ValueError(f"rate {rate}: a partial every {step} frames does not cover the utterance")
    starts = list(range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step))
    if len(starts) > 1 and (n_samples - starts[-1] * HOP) / (PARTIAL_FRAMES * HOP) < min_coverage:
        starts.pop()
    return starts


class SpeakerEncoder:
    """The GE2E encoder compiled for this CPU. f32: its embeddings are the PyTorch model's within 1e-5; "auto" is
    bf16 on a CPU with native bf16 (AVX512-BF16, AMX): twice as fast, each embedding within cosine 0.9999 of f32's."""

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

    def embed_partials(self, mels: np.ndarray) -> np.ndarray:
        """(B, 160, 40) partials -> (B, 256) unit vectors."""
        if not hasattr(self._requests, "request"):
            self._requests.request = self.compiled.create_infer_request()
        request = self._requests.request
        request.infer({0: np.ascontiguousarray(mels, dtype=np.float32)})
        return request.get_output_tensor(0).data.copy()

    def embed(self, samples: np.ndarray, rate: float = 1.3, min_coverage: float = 0.75) -> np.ndarray:
        """An utterance's embedding (256,): the normalised mean of its partials' (Resemblyzer's embed_utterance)."""
        samples = leveled(np.asarray(samples, dtype=np.float32))
        starts = partial_starts(len(samples), rate, min_coverage)
        needed = (starts[-1] + PARTIAL_FRAMES) * HOP
        if needed >= len(samples):
            samples = np.pad(samples, (0, needed - len(samples)))
        mel = power_mel(samples)
        partials = self.embed_partials(np.stack([mel[s : s + PARTIAL_FRAMES] for s in starts]))
        mean = partials.mean(axis=0)
        return mean / np.linalg.norm(mean)
