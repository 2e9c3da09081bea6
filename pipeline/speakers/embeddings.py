"""Speaker embeddings by 3D-Speaker's CAM++ (convert/speaker.py) on OpenVINO (docs/speakers.md), fed as trained.

The stretch's mean frame is taken from its fbank, so that loudness does not matter. Embeddings are unit vectors.
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
BATCH = 32  # windows per encoder call: half the working memory of 64, as fast a window (docs/speakers.md)
FRAME_SECONDS = 0.02  # the network's frames, before its pooling: every other fbank frame


@cache
def povey_window() -> np.ndarray:
    n = np.arange(FRAME, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME - 1))) ** 0.85


@cache
def mel_banks() -> np.ndarray:
    """(257, 80): Kaldi's MelBanks (torchaudio.compliance.kaldi.get_mel_banks); the Nyquist bin's weight 0."""

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
    """(1 + (n - 400) // 160, 80) log mel energies of n samples, as Kaldi's snip_edges (fewer than 400: one frame)."""
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
    """The work was called off."""


@dataclass(frozen=True, kw_only=True)
class Embedded:
    """Embeddings of windows of speech, and of parts of each window."""

    whole: np.ndarray  # (N, 192): each window's embedding
    parts: np.ndarray  # (M, 192): each part's
    part_times: np.ndarray  # (M,): the middle of each part, seconds
    part_of: np.ndarray  # (M,): the window each part is from


class SpeakerEncoder:
    """CAM++ compiled for this CPU: the network up to its pooling on OpenVINO, the pooling and the embedding layer in
    numpy. "auto" is bf16 on a CPU with native bf16, f32 elsewhere (docs/speakers.md, *The encoder*)."""

    def __init__(self, threads: int = 0, precision: str = "auto"):
        from convert.speaker import ensure_speaker_ir, pooling_weights
        from pipeline.asr.compiled import compile_small

        self.compiled = compile_small(ensure_speaker_ir() / "speaker.xml", threads=threads, precision=precision)
        self.weight, self.mean, self.deviation = pooling_weights()
        self._requests = threading.local()

    def frames(self, batch: np.ndarray) -> np.ndarray:
        """(B, T, 80) features -> (B, 512, ceil(T / 2)) frames, one every 20 ms."""
        if not hasattr(self._requests, "request"):
            self._requests.request = self.compiled.create_infer_request()
        request = self._requests.request
        request.infer({0: np.ascontiguousarray(batch, dtype=np.float32)})
        return request.get_output_tensor(0).data.astype(np.float32)

    def pool(self, frames: np.ndarray) -> np.ndarray:
        """(..., 512, T) frames -> (..., 192) unit vectors: their mean and deviation through the embedding layer."""
        spread = frames.std(axis=-1, ddof=1) if frames.shape[-1] > 1 else np.zeros(frames.shape[:-1], np.float32)
        stats = np.concatenate([frames.mean(axis=-1), spread], axis=-1)
        out = (stats @ self.weight.T - self.mean) / self.deviation
        return out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)

    def embed_windows(
        self,
        audio: np.ndarray,
        spans: Sequence[tuple[float, float]],
        *,
        part: float = 0.0,
        hop: float = 0.0,
        stop: threading.Event | None = None,
    ) -> Embedded:
        """Each (start, end) window of 16-kHz audio embedded and, with `part` > 0, each `part` seconds every `hop`
        seconds of it, pooled from the window's frames; Stopped before an encoder call once `stop` is set."""
        whole = np.zeros((len(spans), WIDTH), np.float32)
        parts: list[tuple[int, np.ndarray, np.ndarray]] = []  # (window, middles, embeddings)
        by_length: dict[int, list[int]] = {}
        for i, (first, last) in enumerate(_sample_bounds(audio, spans)):
            by_length.setdefault(_frame_count(last - first), []).append(i)
        for same in by_length.values():
            for k in range(0, len(same), BATCH):
                batch = same[k : k + BATCH]
                if stop is not None and stop.is_set():
                    raise Stopped("speaker turns no longer wanted")
                # (features batch by batch: all of an hour's at once would hold hundreds of MB)
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
            return Embedded(
                whole=whole, parts=np.zeros((0, WIDTH), np.float32), part_times=np.zeros(0), part_of=np.zeros(0, int)
            )
        return Embedded(
            whole=whole,
            parts=np.concatenate([p[2] for p in parts]),
            part_times=np.concatenate([p[1] for p in parts]),
            part_of=np.concatenate([np.full(len(p[1]), p[0]) for p in parts]),
        )

    def embed_spans(self, audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> np.ndarray:
        """(N, 192): the embedding of each (start, end) stretch of 16-kHz audio (seconds)."""
        return self.embed_windows(audio, spans).whole

    def embed(self, samples: np.ndarray) -> np.ndarray:
        """An utterance's embedding (192,), in one pass over all of it."""
        return self.pool(self.frames(features(samples)[None]))[0]


def window_features(audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> list[np.ndarray]:
    """features() of each (start, end) stretch of the audio; overlapping stretches share one fbank, each starting at
    the frame nearest its start (at most 5 ms off)."""
    bounds = _sample_bounds(audio, spans)
    out: list[np.ndarray] = []
    i = 0
    while i < len(bounds):
        j = i + 1
        while j < len(bounds) and bounds[i][0] <= bounds[j][0] < bounds[j - 1][1]:
            j += 1
        first = bounds[i][0]
        banks = fbank(audio[first : max(last for _, last in bounds[i:j])])
        for start, end in bounds[i:j]:
            frames = _frame_count(end - start)
            offset = min(int(round((start - first) / SHIFT)), len(banks) - frames)
            part = banks[offset : offset + frames]
            out.append(part - part.mean(axis=0, keepdims=True))
        i = j
    return out


def _sample_bounds(audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """Each span's first and end sample (at least one sample)."""
    out = [(max(int(round(a * SAMPLE_RATE)), 0), min(int(round(b * SAMPLE_RATE)), len(audio))) for a, b in spans]
    return [(first, max(last, first + 1)) for first, last in out]


def _frame_count(samples: int) -> int:
    return 1 + max(samples - FRAME, 0) // SHIFT


def part_offsets(frames: int, part: float, hop: float) -> list[int]:
    """The first frame of each part of `part` seconds every `hop` seconds, the last ending with the window."""
    size, step = int(round(part / FRAME_SECONDS)), max(int(round(hop / FRAME_SECONDS)), 1)
    if frames <= size:
        return [0]
    offsets = list(range(0, frames - size + 1, step))
    return offsets if offsets[-1] == frames - size else offsets + [frames - size]
