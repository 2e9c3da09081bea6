"""Speaker turns: who speaks when, from speaker embeddings of the detected speech, clustered.

The speech regions (pipeline/asr/vad.py) are covered by windows of TURN_WINDOW seconds every TURN_STEP seconds; each
window is embedded (pipeline/speakers/embeddings.py: CAM++, on OpenVINO) and the windows are clustered by cosine distance with
SciPy's agglomerative clustering (average linkage, as pyannote's clustering uses SciPy's) until the closest two
clusters are TURN_DISTANCE apart. Clusters holding under TURN_MIN_SHARE of the windows are folded into the nearest
large one (a cough, a laugh, a stretch of noise is not a speaker), as pyannote does; when the number of speakers is
given, the clusters left are merged into that many. Then the turns are placed finer than the windows: each
speaker's voice is the mean of its windows, parts of TURN_PART seconds of every window (pooled from the frames the
encoder computed for the window, at no extra cost) vote for the voice they are closest to, each TURN_RESOLUTION-second
step of speech goes to the voice its votes favour, and runs shorter than TURN_MIN_RUN join a neighbour. Speakers are
numbered in the order they first speak.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipeline.errors import OptionError
from pipeline.speakers.embeddings import Embedded, SpeakerEncoder
from pipeline.tuning import (
    TURN_DISTANCE,
    TURN_MAX_CLUSTERED,
    TURN_MIN_RUN,
    TURN_MIN_SHARE,
    TURN_PART,
    TURN_PART_HOP,
    TURN_RESOLUTION,
    TURN_STEP,
    TURN_WINDOW,
)


@dataclass(frozen=True)
class Turn:
    start: float  # seconds
    end: float
    speaker: int  # 0, 1, ...: in the order the speakers first speak


@dataclass(frozen=True)
class TurnOptions:
    speakers: int | None = None  # how many people speak; None: found from the voices

    def __post_init__(self):
        if self.speakers is not None and not 1 <= self.speakers <= 20:
            raise OptionError("speakers", "The number of speakers is from 1 to 20, or auto")


def windows(regions: list[tuple[float, float]] | tuple, step: float = TURN_STEP) -> list[tuple[float, float]]:
    """(start, end) of the windows of TURN_WINDOW seconds over each speech region, every `step` seconds, the last one
    ending with the region; a region shorter than a window gets one window centred on it (it may reach outside the
    region)."""
    out = []
    for a, b in regions:
        if b - a <= TURN_WINDOW:
            middle = (a + b) / 2
            out.append((max(middle - TURN_WINDOW / 2, 0.0), max(middle - TURN_WINDOW / 2, 0.0) + TURN_WINDOW))
            continue
        starts = [float(s) for s in np.arange(a, b - TURN_WINDOW, step) if s < b - TURN_WINDOW - 1e-6]
        starts.append(b - TURN_WINDOW)
        out += [(float(s), float(s) + TURN_WINDOW) for s in starts]
    return out


def cluster(
    embeddings: np.ndarray,
    speakers: int | None = None,
    distance: float = TURN_DISTANCE,
    min_share: float = TURN_MIN_SHARE,
) -> np.ndarray:
    """A label per embedding, 0, 1, ... in the order of first appearance. Clusters are merged until the closest two
    are `distance` apart, those under `min_share` of the windows are folded into the nearest large one; with a
    number of `speakers` given, the clusters left are then merged (or, when too few, the windows split) into that
    many, so a few stray windows never take a speaker's place."""
    n = len(embeddings)
    if n == 0:
        return np.zeros(0, int)
    if n == 1 or speakers == 1:
        return np.zeros(n, int)
    if n <= TURN_MAX_CLUSTERED:
        labels = _agglomerative(embeddings, distance=distance)
    else:  # memory grows with the square of the windows: an even sample is clustered, the rest join its centroids
        sample = np.linspace(0, n - 1, TURN_MAX_CLUSTERED).round().astype(int)
        found = _agglomerative(embeddings[sample], distance=distance)
        centroids = np.stack([embeddings[sample][found == k].mean(axis=0) for k in range(found.max() + 1)])
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
        labels = (embeddings @ centroids.T).argmax(axis=1)
        labels[sample] = found
    labels = _fold_small(embeddings, labels, min_share)
    if speakers is not None:
        found = sorted(set(labels.tolist()))
        if len(found) > speakers:  # the clusters' centroids merged, by the same linkage, into `speakers`
            centroids = np.stack([embeddings[labels == k].mean(axis=0) for k in found])
            into = dict(zip(found, _agglomerative(centroids, count=speakers).tolist()))
            labels = np.array([into[k] for k in labels.tolist()])
        elif len(found) < speakers and n <= TURN_MAX_CLUSTERED:  # fewer voices than asked for: the windows split
            labels = _agglomerative(embeddings, count=min(speakers, n))
    order = {label: i for i, label in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[label] for label in labels.tolist()])


def _agglomerative(points: np.ndarray, distance: float | None = None, count: int | None = None) -> np.ndarray:
    """Labels 0, 1, ... of agglomerative clustering by cosine distance, average linkage (SciPy's, as pyannote's
    clustering uses): merged until the closest two clusters are `distance` apart, or into `count` clusters."""
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(np.asarray(points, dtype=np.float64), method="average", metric="cosine")
    if count is not None:
        return fcluster(tree, t=count, criterion="maxclust") - 1
    return fcluster(tree, t=distance, criterion="distance") - 1


def _fold_small(embeddings: np.ndarray, labels: np.ndarray, min_share: float = TURN_MIN_SHARE) -> np.ndarray:
    """Windows of clusters under `min_share` of all go to the large cluster whose centroid is closest."""
    counts = np.bincount(labels)
    large = [k for k in range(len(counts)) if counts[k] >= min_share * len(labels)]
    if not large or len(large) == len(counts):
        return labels
    centroids = np.stack([embeddings[labels == k].mean(axis=0) for k in large])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    nearest = np.array(large)[(embeddings @ centroids.T).argmax(axis=1)]
    return np.where(np.isin(labels, large), labels, nearest)


def turns_of(
    regions: list[tuple[float, float]] | tuple,
    spans: Sequence[tuple[float, float]],
    embedded: Embedded,
    labels: np.ndarray,
    step: float = TURN_STEP,
    resolution: float = TURN_RESOLUTION,
    min_run: float = TURN_MIN_RUN,
) -> list[Turn]:
    """The speech regions cut where the speaker changes. Each speaker's voice is the mean of the embeddings of its
    windows (`spans`: windows(regions, step); `labels`: their speakers); each part of a window votes, with its cosine
    similarity to every voice, for the instants in the middle half of the part; each `resolution`-second step of a
    region goes to the voice with the highest mean vote, and a run of steps shorter than `min_run` seconds joins the
    neighbour whose voice its votes favour. Speakers are numbered in the order they first speak."""
    if not len(spans):
        return []
    speakers = sorted(set(labels.tolist()))
    voices = np.stack([embedded.whole[labels == k].mean(axis=0) for k in speakers])
    voices /= np.linalg.norm(voices, axis=1, keepdims=True)
    counts = [len(windows([region], step)) for region in regions]
    assert sum(counts) == len(spans), "spans are not windows(regions, step)"
    region_of = np.repeat(np.arange(len(regions)), counts)
    if len(embedded.parts):
        times, votes, window_of = embedded.part_times, embedded.parts @ voices.T, embedded.part_of
        reach = TURN_PART / 4
    else:  # (no parts: each window votes as a whole)
        times, votes, window_of = (
            np.array([(s + e) / 2 for s, e in spans]),
            embedded.whole @ voices.T,
            np.arange(len(spans)),
        )
        reach = step / 2
    out: list[Turn] = []
    for r, (a, b) in enumerate(regions):
        mine = region_of[window_of] == r
        owners = merge_short_runs(
            stepped(a, b, times[mine], votes[mine], reach, resolution), max(1, round(min_run / resolution))
        )
        for first, last, owner in runs(owners):
            start, end = round(a + first * resolution, 3), round(min(a + last * resolution, b), 3)
            speaker = speakers[owner]
            if out and out[-1].speaker == speaker and start - out[-1].end < 1e-9:
                out[-1] = Turn(out[-1].start, end, speaker)
            elif end > start:
                out.append(Turn(start, end, speaker))
    order = {speaker: i for i, speaker in enumerate(dict.fromkeys(t.speaker for t in out))}
    return [Turn(t.start, t.end, order[t.speaker]) for t in out]


def stepped(
    a: float, b: float, times: np.ndarray, votes: np.ndarray, reach: float, resolution: float = TURN_RESOLUTION
) -> np.ndarray:
    """(steps, voices): the mean of the votes (one row per time in `times`, seconds) that reach each `resolution`-
    second step of [a, b] (a vote reaches the steps whose start is within `reach` of its time, and at least the
    step it falls in); a step no vote reaches takes the nearest step's."""
    steps = max(1, int(np.ceil((b - a) / resolution - 1e-9)))
    votes = np.asarray(votes, dtype=np.float64).reshape(len(times), -1)
    times = np.asarray(times, dtype=np.float64)
    centre = np.clip(((times - a) / resolution).astype(int), 0, steps - 1)
    low = np.clip(np.ceil((times - reach - a) / resolution - 1e-9).astype(int), 0, centre)
    high = np.clip(np.floor((times + reach - a) / resolution + 1e-9).astype(int), centre, steps - 1)
    change = np.zeros((steps + 1, votes.shape[1]))  # each vote added from its low step to its high one, by sums
    np.add.at(change, low, votes)
    np.add.at(change, high + 1, -votes)
    total = np.cumsum(change, axis=0)[:steps]
    count = np.cumsum(np.bincount(low, minlength=steps + 1) - np.bincount(high + 1, minlength=steps + 1))[:steps]
    filled = np.flatnonzero(count)
    if not len(filled):
        return total
    nearest = filled[np.abs(filled[None, :] - np.arange(steps)[:, None]).argmin(axis=1)]
    return total[nearest] / count[nearest][:, None]


def runs(labels: Sequence[int]) -> list[tuple[int, int, int]]:
    """(first, end, label) of each run of equal labels."""
    out, first = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[first]:
            out.append((first, i, int(labels[first])))
            first = i
    return out


def merge_short_runs(votes: np.ndarray, min_steps: int) -> np.ndarray:
    """Each step's voice (the highest vote), then, shortest first, every run under `min_steps` steps given to the
    neighbouring run whose voice its votes favour, until none is left (or one run is)."""
    labels = votes.argmax(axis=1)
    while True:
        found = runs(labels)
        short = [i for i, (first, end, _) in enumerate(found) if end - first < min_steps]
        if len(found) < 2 or not short:
            return labels
        i = min(short, key=lambda i: found[i][1] - found[i][0])
        first, end, _ = found[i]
        sums = votes[first:end].sum(axis=0)
        neighbours = [found[j][2] for j in (i - 1, i + 1) if 0 <= j < len(found)]
        labels[first:end] = max(neighbours, key=lambda k: sums[k])


def speaker_name(speaker: int) -> str:
    """The label of a speaker number: "Speaker 1", "Speaker 2", ... (renamed on the page)."""
    return f"Speaker {speaker + 1}"


def speakers_of(turns: Sequence[Turn], spans: Sequence[tuple[float, float]]) -> list[str | None]:
    """The speaker of each (start, end) span (a word, a segment): the one whose turns overlap it most; a span in no
    turn (a word the detector did not call speech) gets the nearest turn's speaker. None when there are no turns."""
    if not turns:
        return [None] * len(spans)
    starts = [t.start for t in turns]
    out = []
    for a, b in spans:
        first, last = max(bisect.bisect_right(starts, a) - 1, 0), bisect.bisect_left(starts, b)
        near = turns[first : last + 1]
        shares: dict[int, float] = {}
        for t in near:
            shares[t.speaker] = shares.get(t.speaker, 0.0) + max(0.0, min(b, t.end) - max(a, t.start))
        best = max(shares, key=shares.get) if shares and max(shares.values()) > 0 else None
        if best is None:  # between turns: the closer one
            middle = (a + b) / 2
            best = min(near, key=lambda t: max(t.start - middle, middle - t.end, 0.0)).speaker
        out.append(speaker_name(best))
    return out


@cache
def speaker_encoder(threads: int = 0) -> SpeakerEncoder:
    """One compiled speaker encoder per thread count, for the life of the process (it is 28 MB)."""
    return SpeakerEncoder(threads)


def speaker_turns(
    audio: np.ndarray,
    regions: list[tuple[float, float]] | tuple,
    encoder: SpeakerEncoder,
    options=TurnOptions(),
    stop: threading.Event | None = None,
) -> list[Turn]:
    """Who speaks when in 16-kHz audio whose speech is in `regions` (seconds). Once `stop` is set, it raises
    Stopped between two encoder calls."""
    spans = windows(regions)
    embedded = encoder.embed_windows(audio, spans, TURN_PART, TURN_PART_HOP, stop)
    return turns_of(regions, spans, embedded, cluster(embedded.whole, options.speakers))


def turn_options(value: str | int | None) -> TurnOptions | None:
    """The speaker turns asked for: None for "off" (or None, ""), found from the voices for "auto", or a number."""
    text = str(value).strip().lower() if value is not None else ""
    if text in ("", "off", "none"):
        return None
    if text == "auto":
        return TurnOptions()
    if not text.isdigit():
        raise OptionError("speakers", f"Speakers {value!r}: use auto, off, or a number from 1 to 20")
    return TurnOptions(int(text))
