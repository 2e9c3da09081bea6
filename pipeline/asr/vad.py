"""Voice activity detection: where in the audio someone speaks (Silero VAD, its ONNX export run on OpenVINO).

Up to MAX_FRAMES frames of 32 ms per call; probabilities become regions by silero's own state machine. The regions
steer the windows, word times and the guards of pipeline/asr/.

`frame_blocks` and `speech_timestamps` follow silero-vad's code (`silero_vad.sequence_vad.frame_blocks`,
`silero_vad.utils_vad.get_speech_timestamps_from_probs`; MIT licence, Copyright (c) 2020-present Silero Team): the
package's __init__ imports torch, which transcription does without (issue 52). tests/asr/test_vad.py checks that
they give what silero's give.
"""

from __future__ import annotations

import bisect
import functools
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.asr.compiled import cpu_config
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
MAX_SPEECH_PAUSE_MS = 98  # the shortest pause silero cuts an over-long region at (its min_silence_at_max_speech)


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

    # silero's package folder, found without running its __init__ (which imports torch)
    (folder,) = importlib.util.find_spec("silero_vad").submodule_search_locations
    core = ov.Core()
    model = core.read_model(Path(folder) / "data" / "silero_vad_16k_sequence.onnx")
    return core.compile_model(model, "CPU", cpu_config(threads))


def speech_probabilities(audio: np.ndarray, *, fresh: bool = False, threads: int = 0) -> np.ndarray:
    """Per-frame (32 ms) speech probability of 16 kHz mono float32 audio: the LSTM state carried through the whole
    recording (silero's way), or `fresh` from each block of MAX_FRAMES (16.4 s). `threads`: as the model's."""
    request = _compiled(threads).create_infer_request()  # one request per call: safe from several threads
    zeros = np.zeros(STATE_SHAPE, np.float32)
    h, c = zeros, zeros
    probs = []
    for block in frame_blocks(np.ascontiguousarray(audio, np.float32)):
        out = request.infer({"input": block, "h": zeros if fresh else h, "c": zeros if fresh else c})
        probs.append(np.array(out["speech_probs"]).reshape(-1))
        h, c = np.array(out["hn"]), np.array(out["cn"])
    return np.concatenate(probs) if probs else np.zeros(0, np.float32)


@timed("detector")
def speech_map(audio: np.ndarray, options: VadOptions = VadOptions(), threads: int = 0) -> SpeechMap:
    """Speech regions of 16 kHz mono float32 audio. `threads`: CPU threads (0: OpenVINO chooses)."""
    # The state carried over a long recording drifts: after speech and music, silero can miss speech it hears alone.
    # A second pass starts from a fresh state every MAX_FRAMES, and a frame is as likely speech as the surer of the
    # two passes says; the second pass costs under 1 % of decoding. The passes run one after the other (side by side
    # they take as long; one pass on two OpenVINO threads is faster: _compiled). What was measured: docs/longform.md,
    # MAX_FRAMES.
    carried = speech_probabilities(audio, threads=threads)
    probs = np.maximum(carried, speech_probabilities(audio, fresh=True, threads=threads))
    found = speech_timestamps(
        probs,
        audio_samples=audio.size,
        threshold=options.threshold,
        min_speech_ms=options.min_speech_ms,
        min_silence_ms=options.min_silence_ms,
        speech_pad_ms=options.speech_pad_ms,
    )
    regions = tuple((start / SAMPLE_RATE, end / SAMPLE_RATE) for start, end in found)
    return SpeechMap(regions, audio.size / SAMPLE_RATE, frame_levels(audio))


def frame_blocks(audio: np.ndarray, *, max_frames: int = MAX_FRAMES) -> Iterator[np.ndarray]:
    """The model's input for 16 kHz mono float32 audio: blocks of up to `max_frames` frames, each block
    (frames, CONTEXT_SAMPLES + FRAME_SAMPLES) float32. A frame comes after the last CONTEXT_SAMPLES of the frame
    before it (zeros before the first), as the streaming model sees it; the last frame is padded with zeros."""
    frame_count = (audio.size + FRAME_SAMPLES - 1) // FRAME_SAMPLES
    previous_context = np.zeros(CONTEXT_SAMPLES, np.float32)
    for first_frame in range(0, frame_count, max_frames):
        block_frames = min(max_frames, frame_count - first_frame)
        first_sample = first_frame * FRAME_SAMPLES
        samples = audio[first_sample : min(audio.size, (first_frame + block_frames) * FRAME_SAMPLES)]
        frames = np.zeros((block_frames, FRAME_SAMPLES), np.float32)
        frames.reshape(-1)[: samples.size] = samples
        contexts = np.empty((block_frames, CONTEXT_SAMPLES), np.float32)
        contexts[0] = previous_context
        contexts[1:] = frames[:-1, -CONTEXT_SAMPLES:]
        previous_context = frames[-1, -CONTEXT_SAMPLES:].copy()
        yield np.concatenate((contexts, frames), axis=1)


def speech_timestamps(
    probs: np.ndarray,
    *,
    audio_samples: int,
    threshold: float = 0.5,
    neg_threshold: float | None = None,
    min_speech_ms: float = 250,
    min_silence_ms: float = 100,
    speech_pad_ms: float = 30,
    max_speech_s: float = float("inf"),
) -> list[tuple[int, int]]:
    """Speech regions as (start, end) samples, from the speech probabilities of the FRAME_SAMPLES frames of 16 kHz
    audio of `audio_samples`: silero's get_speech_timestamps_from_probs, region for region (its default way to cut
    a region longer than `max_speech_s`: at its longest pause over MAX_SPEECH_PAUSE_MS, else where it is).

    A region starts at a frame of `threshold` or more. It ends where a silence began (from a frame under
    `neg_threshold`, by default 0.15 below `threshold`, to the next of `threshold` or more) once that silence has
    lasted `min_silence_ms`. Regions of `min_speech_ms` or less are dropped, the rest widened by `speech_pad_ms` on
    each side (by half the gap where two would meet)."""
    min_speech = SAMPLE_RATE * min_speech_ms / 1000
    pad = SAMPLE_RATE * speech_pad_ms / 1000
    max_speech = SAMPLE_RATE * max_speech_s - FRAME_SAMPLES - 2 * pad
    min_silence = SAMPLE_RATE * min_silence_ms / 1000
    min_pause_to_cut = SAMPLE_RATE * MAX_SPEECH_PAUSE_MS / 1000
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    speeches: list[list[int]] = []
    start = None  # the open region's start (silero's `triggered` and current_speech["start"])
    silence_start = 0  # where the silence in the open region began (silero's temp_end; 0: none)
    pauses: list[tuple[int, int]] = []  # (start, length) of its pauses long enough to cut at (possible_ends)
    for i, prob in enumerate(np.asarray(probs).tolist()):  # (Python floats, as silero is given them)
        sample = FRAME_SAMPLES * i
        if prob >= threshold and silence_start:  # speech again after a short silence
            if sample - silence_start > min_pause_to_cut:
                pauses.append((silence_start, sample - silence_start))
            silence_start = 0
        if prob >= threshold and start is None:
            start = sample
            continue
        if start is not None and sample - start > max_speech:
            if pauses:  # cut at the longest pause, and go on after it
                end, length = max(pauses, key=lambda pause: pause[1])
                speeches.append([start, end])
                start = end + length  # (silero checks `length < sample` first, which always holds)
            else:  # no pause to cut at: cut here
                speeches.append([start, sample])
                start, silence_start, pauses = None, 0, []
                continue
            silence_start, pauses = 0, []
        if prob < neg_threshold and start is not None:
            if not silence_start:
                silence_start = sample
            if sample - silence_start >= min_silence:
                if silence_start - start > min_speech:
                    speeches.append([start, silence_start])
                start, silence_start, pauses = None, 0, []
    if start is not None and audio_samples - start > min_speech:
        speeches.append([start, audio_samples])

    for i, speech in enumerate(speeches):
        if i == 0:
            speech[0] = int(max(0, speech[0] - pad))
        if i != len(speeches) - 1:
            silence = speeches[i + 1][0] - speech[1]
            if silence < 2 * pad:  # the two meet: each takes half the gap
                speech[1] += int(silence // 2)
                speeches[i + 1][0] = int(max(0, speeches[i + 1][0] - silence // 2))
            else:
                speech[1] = int(min(audio_samples, speech[1] + pad))
                speeches[i + 1][0] = int(max(0, speeches[i + 1][0] - pad))
        else:
            speech[1] = int(min(audio_samples, speech[1] + pad))
    return [(start, end) for start, end in speeches]


def frame_levels(audio: np.ndarray) -> np.ndarray:
    """dBFS of each 10-ms frame (float32; an hour is 1.4 MB)."""
    n = audio.size // LEVEL_FRAME
    frames = audio[: n * LEVEL_FRAME].reshape(n, LEVEL_FRAME)
    power = np.einsum("ij,ij->i", frames, frames, dtype=np.float64) / LEVEL_FRAME
    return (10 * np.log10(power + 1e-12)).astype(np.float32)
