"""Voice activity detection: where in the audio someone speaks (Silero VAD, its ONNX export run on OpenVINO).

Up to MAX_FRAMES frames of 32 ms per call; probabilities become regions by silero's own state machine
(`get_speech_timestamps_from_probs`). The regions steer the windows, word times and the guards of pipeline/asr/.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.timings import timed
from pipeline.tuning import (
    LOUDEST_PERCENTILE,
    MAX_FRAMES,
    RISE_BELOW_PEAK,
    SOUND_ABOVE_FLOOR,
    SOUND_BRIDGE,
    SOUND_FLOOR_PERCENTILE,
    SOUND_MIN,
    SOUND_MIN_DBFS,
)

SAMPLE_RATE = 16000
FRAME_SAMPLES, CONTEXT_SAMPLES = 512, 64  # silero's 16 kHz frame (32 ms) and the context it prepends
STATE_SHAPE = (1, 1, 128)


@dataclass(frozen=True, kw_only=True)
class VadOptions:
    threshold: float = 0.5  # frames more likely speech than this start a region (silero's default)
    min_speech_ms: int = 250  # shorter bursts are not speech (clicks, coughs)
    min_silence_ms: int = 100  # a region ends after this much silence
    speech_pad_ms: int = 30  # regions are widened by this much on each side (silero's default)


LEVEL_FRAME = SAMPLE_RATE // 100  # 10 ms frames for the energy check


@dataclass(frozen=True)
class SpeechMap:
    """Speech regions of one recording, in seconds, sorted and disjoint; and the level of every 10-ms frame, for
    finding sounds the detector does not call speech (whispers: silero gives them 0.02-0.5)."""

    regions: tuple[tuple[float, float], ...]
    duration: float
    levels: np.ndarray | None = field(default=None, compare=False, repr=False)  # dBFS per 10-ms frame

    def speech_in(self, start: float, end: float) -> float:
        """Seconds of speech between start and end."""
        total = 0.0
        for s, e in self.regions[max(self._index(start) - 1, 0) :]:
            if s >= end:
                break
            total += max(0.0, min(e, end) - max(s, start))
        return total

    def fraction(self, start: float, end: float) -> float:
        """Share of [start, end] that is speech (a zero-length span counts as speech if it lies in a region)."""
        if end <= start:
            return 1.0 if self.region_at(start) is not None else 0.0
        return self.speech_in(start, end) / (end - start)

    def region_at(self, t: float) -> tuple[float, float] | None:
        i = self._index(t) - 1
        if i >= 0 and self.regions[i][0] <= t <= self.regions[i][1]:
            return self.regions[i]
        return None

    def next_speech(self, t: float) -> float | None:
        """The first time >= t that is speech, or None when no speech follows."""
        if self.region_at(t) is not None:
            return t
        i = self._index(t)
        return self.regions[i][0] if i < len(self.regions) else None

    def pauses(self, start: float, end: float) -> list[tuple[float, float]]:
        """The pauses that begin inside (start, end), as (pause start, pause end clipped to end)."""
        gaps = []
        first = max(self._index(start) - 1, 0)
        following = (*self.regions[first + 1 :], (self.duration, self.duration))
        for (_, e0), (s1, _) in zip(self.regions[first:], following, strict=True):
            if e0 >= end:
                break
            if start < e0 and s1 > e0:
                gaps.append((e0, min(s1, end)))
        return gaps

    def sounds(self, start: float, end: float) -> list[tuple[float, float]]:
        """Stretches of [start, end] that stand out from its floor (SOUND_ABOVE_FLOOR, SOUND_FLOOR_PERCENTILE,
        SOUND_MIN_DBFS), joined across SOUND_BRIDGE, each with SOUND_MIN s of sound: speech, whispers, music or noise."""
        if self.levels is None:
            return []
        step = LEVEL_FRAME / SAMPLE_RATE
        first, level = self._frames(start, end)
        if level.size == 0:
            return []
        floor = float(np.percentile(level, SOUND_FLOOR_PERCENTILE))
        loud = np.flatnonzero(level > max(floor + SOUND_ABOVE_FLOOR, SOUND_MIN_DBFS))
        if loud.size == 0:
            return []
        # runs of loud frames, joined where the gap from one frame's end to the next frame is under SOUND_BRIDGE
        new_run = np.flatnonzero((np.diff(loud) - 1) * step >= SOUND_BRIDGE) + 1
        firsts, lasts = np.r_[0, new_run], np.r_[new_run - 1, loud.size - 1]
        return [((first + loud[a]) * step, (first + loud[b] + 1) * step)
                for a, b in zip(firsts, lasts) if (b - a + 1) * step >= SOUND_MIN]  # fmt: skip

    def speech_end_before(self, t: float) -> float:
        """Where the last region that ends by t ends (0 when none does)."""
        i = self._index(t) - 1
        if i >= 0 and self.regions[i][1] > t:  # t lies inside that region: the one before it
            i -= 1
        return self.regions[i][1] if i >= 0 else 0.0

    def loudness(self, start: float, end: float) -> float | None:
        """dBFS of [start, end]'s loudest 10-ms frames (their LOUDEST_PERCENTILE percentile); None without levels."""
        if self.levels is None:
            return None
        level = self._frames(start, end)[1]
        return float(np.percentile(level, LOUDEST_PERCENTILE)) if level.size else None

    def rise(self, start: float, end: float) -> float:
        """Where [start, end] first comes within RISE_BELOW_PEAK dB of its loudness (the start of a 10-ms frame):
        the onset of a sound that begins in quieter noise. `start` without levels."""
        if self.levels is None:
            return start
        first, level = self._frames(start, end)
        if level.size == 0:
            return start
        loud = np.flatnonzero(level >= np.percentile(level, LOUDEST_PERCENTILE) - RISE_BELOW_PEAK)
        return max(start, (first + int(loud[0])) * LEVEL_FRAME / SAMPLE_RATE)

    def _frames(self, start: float, end: float) -> tuple[int, np.ndarray]:
        """The index of [start, end]'s first 10-ms frame, and the levels of the frames it touches (at least that
        first one, unless it lies past the recording)."""
        step = LEVEL_FRAME / SAMPLE_RATE
        first = int(start / step)
        return first, self.levels[first : max(int(np.ceil(end / step)), first + 1)]

    def _index(self, t: float) -> int:
        return bisect.bisect_right(self._starts, t)

    @functools.cached_property
    def _starts(self) -> list[float]:  # (asked for every word: built once)
        return [s for s, _ in self.regions]


@functools.cache
def _compiled(threads: int):
    """The detector compiled for `threads` CPU threads (0: OpenVINO chooses): the same probabilities on any count,
    faster on more (docs/longform.md, MAX_FRAMES)."""
    import openvino as ov

    core = ov.Core()
    model_path = Path(_silero()[2]) / "data" / "silero_vad_16k_sequence.onnx"
    return core.compile_model(core.read_model(model_path), "CPU", {"INFERENCE_NUM_THREADS": threads})


@functools.lru_cache(maxsize=1)
def _silero():
    """silero's frame layout, region state machine and package folder (with the model). Importing the package runs
    its __init__, which calls torch.set_num_threads(1) for the whole process; the thread count is put back."""
    import torch

    threads = torch.get_num_threads()
    try:
        import silero_vad
        from silero_vad.sequence_vad import frame_blocks
        from silero_vad.utils_vad import get_speech_timestamps_from_probs
    finally:
        torch.set_num_threads(threads)
    return frame_blocks, get_speech_timestamps_from_probs, Path(silero_vad.__file__).parent


def speech_probabilities(audio: np.ndarray, fresh: bool = False, threads: int = 0) -> np.ndarray:
    """Per-frame (32 ms) speech probability of 16 kHz mono float32 audio: the LSTM state carried through the whole
    recording (silero's way), or `fresh` from each block of MAX_FRAMES (16.4 s). `threads`: as the model's."""
    request = _compiled(threads).create_infer_request()  # one request per call: safe from several threads
    zeros = np.zeros(STATE_SHAPE, np.float32)
    h, c = zeros, zeros
    probs = []
    frame_blocks, _, _ = _silero()
    for block in frame_blocks(np.ascontiguousarray(audio, np.float32), FRAME_SAMPLES, CONTEXT_SAMPLES, MAX_FRAMES):
        out = request.infer({"input": block, "h": zeros if fresh else h, "c": zeros if fresh else c})
        probs.append(np.array(out["speech_probs"]).reshape(-1))
        h, c = np.array(out["hn"]), np.array(out["cn"])
    return np.concatenate(probs) if probs else np.zeros(0, np.float32)


@timed("detector")
def speech_map(audio: np.ndarray, options: VadOptions = VadOptions(), threads: int = 0) -> SpeechMap:
    """Speech regions of 16 kHz mono float32 audio. `threads`: CPU threads (0: OpenVINO chooses)."""
    _, get_speech_timestamps_from_probs, _ = _silero()
    # The state carried over a long recording drifts: after speech and music, silero can miss speech it hears alone.
    # A second pass starts from a fresh state every MAX_FRAMES, and a frame is as likely speech as the surer of the
    # two passes says; the second pass costs under 1 % of decoding. The passes run one after the other (side by side
    # they take as long; one pass on two OpenVINO threads is faster: _compiled). What was measured: docs/longform.md,
    # MAX_FRAMES.
    probs = np.maximum(speech_probabilities(audio, threads=threads), speech_probabilities(audio, True, threads))
    found = get_speech_timestamps_from_probs(
        probs.tolist(),
        sampling_rate=SAMPLE_RATE,
        threshold=options.threshold,
        min_speech_duration_ms=options.min_speech_ms,
        min_silence_duration_ms=options.min_silence_ms,
        speech_pad_ms=options.speech_pad_ms,
        audio_length_samples=audio.size,
    )
    regions = tuple((r["start"] / SAMPLE_RATE, r["end"] / SAMPLE_RATE) for r in found)
    return SpeechMap(regions, audio.size / SAMPLE_RATE, frame_levels(audio))


def frame_levels(audio: np.ndarray) -> np.ndarray:
    """dBFS of each 10-ms frame (float32; an hour is 1.4 MB)."""
    n = audio.size // LEVEL_FRAME
    frames = audio[: n * LEVEL_FRAME].reshape(n, LEVEL_FRAME)
    power = np.einsum("ij,ij->i", frames, frames, dtype=np.float64) / LEVEL_FRAME
    return (10 * np.log10(power + 1e-12)).astype(np.float32)
