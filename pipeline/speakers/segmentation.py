"""Where the speaker changes, frame by frame: pyannote's segmentation-3.0 (convert/segmentation.py, MIT) on OpenVINO.

It hears 10-s chunks and says, every 17 ms, which of up to three local speakers talk. Its local speakers are not
matched to voices (it often gives two of ours one label); the instants where the set of talkers changes, agreed on by
the chunks that cover them, cut the turns (pipeline/speakers/turns.py, `cut_at_changes`; docs/speakers.md). What a
chunk hears one talker say alone is embedded to count the voices (`chunk_voices`) and to find a voice the windows
lost (`newcomers`).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipeline.speakers.embeddings import SpeakerEncoder, Stopped
from pipeline.tuning import CHANGE_AGREE, CHANGE_WITHIN, CHUNK_ALONE, CHUNK_MERGE, SEGMENT_STEP, VOICE_APART

RATE = 16000
SEGMENT_BATCH = 8  # chunks a call (about 12 MB held each; 8 take 0.75 of the time 4 take)
CHUNK = 10 * RATE  # samples the model hears at once
HOP = 270 / RATE  # s between its frames
CENTRE = 991 / 2 / RATE  # s from a frame's start to the middle of what it hears
# the powerset classes as the chunk's three speakers: nobody, 1, 2, 3, 1 and 2, 1 and 3, 2 and 3
POWERSET = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], np.float32)


@dataclass(frozen=True, kw_only=True)
class Segmented:
    starts: np.ndarray  # (C,): each chunk's first frame on the recording's grid of HOP
    active: np.ndarray  # (C, frames, 3): who of the chunk's own three speakers speaks, 0 or 1
    frames: int  # the recording's frames


class Segmenter:
    """segmentation-3.0 compiled for this CPU (bf16 where native, as the speaker encoder)."""

    def __init__(self, threads: int = 0):
        from convert.segmentation import ensure_segmentation_ir
        from pipeline.asr.compiled import compile_small

        self.compiled = compile_small(ensure_segmentation_ir() / "segmentation.xml", threads=threads)
        self._requests = threading.local()

    def segment(
        self,
        audio: np.ndarray,
        *,
        step: float = SEGMENT_STEP,
        regions: Sequence[tuple[float, float]] | None = None,
        stop: threading.Event | None = None,
    ) -> Segmented:
        """The chunks every `step` seconds (the last one ending with the audio; a shorter recording padded), those
        holding none of the speech `regions` (seconds) left out; Stopped before a call once `stop` is set."""
        if not hasattr(self._requests, "request"):
            self._requests.request = self.compiled.create_infer_request()
        request = self._requests.request
        n = len(audio)
        starts = list(range(0, max(n - CHUNK, 0) + 1, int(step * RATE)))
        if starts[-1] + CHUNK < n:
            starts.append(n - CHUNK)
        if regions is not None:  # (regions are sorted and disjoint: the first ending after a chunk's start decides)
            ends = [b * RATE for _, b in regions]
            starts = [s for s in starts if _heard(regions, ends, s)] or starts[:1]
        active = []
        for i in range(0, len(starts), SEGMENT_BATCH):
            if stop is not None and stop.is_set():
                raise Stopped("speaker turns no longer wanted")
            batch = np.zeros((len(starts[i : i + SEGMENT_BATCH]), 1, CHUNK), np.float32)
            for row, start in enumerate(starts[i : i + SEGMENT_BATCH]):
                piece = audio[start : start + CHUNK]
                batch[row, 0, : len(piece)] = piece
            request.infer({0: batch})
            heard = POWERSET[request.get_output_tensor(0).data.argmax(axis=-1)]
            for row, start in enumerate(starts[i : i + SEGMENT_BATCH]):  # (a padded chunk's padding: nobody)
                heard[row, frame_at(max(n - start, 0) / RATE, heard.shape[1]) :] = 0
            active.append(heard)
        at = np.round(np.array(starts) / RATE / HOP).astype(int)
        frames = int(np.ceil(n / RATE / HOP)) + 1
        return Segmented(starts=at, active=np.concatenate(active), frames=frames)


def _heard(regions: Sequence[tuple[float, float]], ends: list[float], start: int) -> bool:
    """Whether the chunk starting at sample `start` holds any of the speech `regions` (ends: theirs in samples)."""
    i = bisect.bisect_right(ends, start)
    return i < len(regions) and regions[i][0] * RATE < start + CHUNK


@cache
def speaker_segmenter(threads: int = 0) -> Segmenter:
    """One compiled segmenter per thread count, for the life of the process."""
    return Segmenter(threads)


def change_points(segmented: Segmented) -> list[float]:
    """Seconds where the set of talkers changes (one starts or stops) in at least `CHANGE_AGREE` of the chunks that
    hear it (away from their edges), within `CHANGE_WITHIN` s; a run of such frames is one change, at its middle."""
    frames, near = segmented.frames, max(int(round(CHANGE_WITHIN / HOP)), 0)
    hits, heard = np.zeros(frames), np.zeros(frames)
    for first, active in zip(segmented.starts.tolist(), segmented.active):
        last = min(first + len(active), frames)
        changed = np.zeros(last - first, bool)
        for f in np.flatnonzero((np.diff(active[: last - first], axis=0) != 0).any(axis=1)) + 1:
            changed[max(f - near, 0) : f + near + 1] = True
        hits[first:last] += changed
        heard[first + near : last - near] += 1  # (a change at a chunk's edge is not heard whole)
    agreed = np.r_[False, hits >= CHANGE_AGREE * np.maximum(heard, 1), False] & np.r_[False, heard > 0, False]
    edges = np.flatnonzero(np.diff(agreed.astype(np.int8)))
    return [frame_time((a + b - 1) / 2) for a, b in zip(edges[::2].tolist(), edges[1::2].tolist())]


def frame_time(frame: float) -> float:
    """Seconds at the middle of what a frame hears (on the recording's grid of HOP), to the millisecond."""
    return round(float(frame * HOP + CENTRE), 3)


def frame_at(t: float, frames: int) -> int:
    """The frame whose middle is nearest `t` seconds, within [0, frames]."""
    return min(max(int(round((t - CENTRE) / HOP)), 0), frames)


def chunk_voices(
    segmented: Segmented,
    audio: np.ndarray,
    encoder: SpeakerEncoder,
    *,
    more_than: int,
    regions: Sequence[tuple[float, float]] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """The most voices one chunk hears, or `more_than` if no chunk hears more. The model tells apart the talkers of
    one chunk, however alike one room or one phone line makes them sound to the encoder: a meeting's voice that says
    1.6 s in 30 s is too few windows to cluster, but is its own talker in the chunk where it speaks. Each talker heard
    alone for `CHUNK_ALONE` s is embedded from those frames, and talkers of one chunk closer than `CHUNK_MERGE` are
    one voice (`distinct`). Only chunks with more such talkers than `more_than` are embedded; with speech `regions`
    (seconds), only the frames within them (music or noise the detector left out is no voice)."""
    most, speech = more_than, _in_samples(regions)
    for first, active in zip(segmented.starts.tolist(), segmented.active):
        spans = heard_alone(active)
        if len(spans) <= most:
            continue
        if stop is not None and stop.is_set():
            raise Stopped("speaker turns no longer wanted")
        embeddings = [e for e in (_talker(first, runs, audio, encoder, speech) for runs in spans) if e is not None]
        if len(embeddings) > most:
            most = max(most, distinct(np.stack(embeddings)))
    return most


def newcomers(
    segmented: Segmented,
    audio: np.ndarray,
    encoder: SpeakerEncoder,
    voices: np.ndarray,
    *,
    near: Sequence[tuple[float, float]],
    regions: Sequence[tuple[float, float]] | None = None,
    stop: threading.Event | None = None,
) -> np.ndarray:
    """Voices the windows lost: unit embeddings, one a voice, of the talkers heard alone (`heard_alone`) in chunks
    overlapping the `near` spans (seconds: windows no voice fits) whose embedding is under `VOICE_APART` to every row of
    `voices`; those closer than `CHUNK_MERGE` to each other are one voice. A voice that says a sentence or two has too
    few windows to be a cluster, and they join the nearest voice, but the chunk where it speaks hears it alone. Only
    the frames within speech `regions` are embedded, as in chunk_voices."""
    found, near, speech = [], _Spans(near), _in_samples(regions)
    for first, active in zip(segmented.starts.tolist(), segmented.active):
        if not near.overlaps(first * HOP, first * HOP + CHUNK / RATE):
            continue
        spans = [runs for runs in heard_alone(active) if any(near.overlaps(*_seconds(first, run)) for run in runs)]
        if spans and stop is not None and stop.is_set():
            raise Stopped("speaker turns no longer wanted")
        for runs in spans:
            embedding = _talker(first, runs, audio, encoder, speech)
            if embedding is not None and (voices @ embedding).max() < VOICE_APART:
                found.append(embedding)
    if not found:
        return np.zeros((0, voices.shape[1]), voices.dtype)
    found = np.stack(found)
    labels = grouped(found)
    means = np.stack([found[labels == k].mean(axis=0) for k in range(labels.max() + 1)])
    return (means / np.linalg.norm(means, axis=1, keepdims=True)).astype(voices.dtype)


def _talker(
    first: int, runs: list[tuple[int, int]], audio: np.ndarray, encoder: SpeakerEncoder, speech: _Spans | None
) -> np.ndarray | None:
    """The embedding of a chunk's (its first frame) talker from the frames it is heard alone (within the `speech`
    spans, in samples, if given), None when those hold under half of CHUNK_ALONE of the audio (frames past its end
    hold none)."""
    bounds = [(_sample_at(first + a), _sample_at(first + b)) for a, b in runs]
    if speech is not None:
        bounds = [part for x, y in bounds for part in speech.within(x, y)]
    samples = np.concatenate([audio[x:y] for x, y in bounds] or [audio[:0]])
    return encoder.embed(samples) if len(samples) >= CHUNK_ALONE * RATE / 2 else None


def _sample_at(frame: int) -> int:
    """The sample where a frame's own stretch (HOP wide, about its middle) begins, at least 0."""
    return max(int((frame * HOP + CENTRE - HOP / 2) * RATE), 0)


def _seconds(first: int, run: tuple[int, int]) -> tuple[float, float]:
    """Where a run of a chunk's (its first frame) frames lies, seconds."""
    return frame_time(first + run[0]) - HOP / 2, frame_time(first + run[1]) - HOP / 2


def _in_samples(regions: Sequence[tuple[float, float]] | None) -> _Spans | None:
    return None if regions is None else _Spans([(int(a * RATE), int(b * RATE)) for a, b in regions])


class _Spans:
    """(start, end) spans, sorted, for overlap questions in logarithmic time: a chunk's against an hour's windows."""

    def __init__(self, spans: Sequence[tuple[float, float]]):
        self.spans = sorted(spans)
        self.starts = [a for a, _ in self.spans]
        self.reach = list(itertools.accumulate((b for _, b in self.spans), max))  # the furthest end so far

    def overlaps(self, start: float, end: float) -> bool:
        i = bisect.bisect_left(self.starts, end)
        return i > 0 and self.reach[i - 1] > start

    def within(self, start: float, end: float) -> list[tuple[float, float]]:
        """The parts of (start, end) inside the spans, which must not overlap each other."""
        out, i = [], bisect.bisect_right(self.reach, start)
        while i < len(self.spans) and self.spans[i][0] < end:
            a, b = self.spans[i]
            if max(start, a) < min(end, b):
                out.append((max(start, a), min(end, b)))
            i += 1
        return out


def heard_alone(active: np.ndarray) -> list[list[tuple[int, int]]]:
    """For each of a chunk's talkers heard alone (nobody else in the frame) for `CHUNK_ALONE` s or more, the (first,
    end) frames of those runs."""
    alone = (active > 0) & (active.sum(axis=1, keepdims=True) == 1)
    out = []
    for talker in range(alone.shape[1]):
        if alone[:, talker].sum() * HOP < CHUNK_ALONE:
            continue
        edges = np.flatnonzero(np.diff(np.r_[0, alone[:, talker].astype(np.int8), 0]))
        out.append(list(zip(edges[::2].tolist(), edges[1::2].tolist())))
    return out


def distinct(embeddings: np.ndarray, merge: float = CHUNK_MERGE) -> int:
    """How many voices unit embeddings are (`grouped`)."""
    return int(grouped(embeddings, merge).max()) + 1 if len(embeddings) else 0


def grouped(embeddings: np.ndarray, merge: float = CHUNK_MERGE) -> np.ndarray:
    """A voice (0, 1, ...) for each unit embedding, two with a cosine of `merge` or more being one (and so on,
    transitively: the components of that graph, by SciPy)."""
    from scipy.sparse.csgraph import connected_components

    embeddings = np.asarray(embeddings)
    return connected_components(embeddings @ embeddings.T >= merge, directed=False)[1]
