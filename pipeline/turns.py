"""Speaker turns: who speaks when, from speaker embeddings of the detected speech, clustered.

The speech regions (pipeline/vad.py) are covered by windows of TURN_WINDOW seconds every TURN_STEP seconds; each
window is embedded (pipeline/speakers.py: CAM++, on OpenVINO) and the windows are clustered by cosine distance with
SciPy's agglomerative clustering (average linkage, as pyannote's clustering uses SciPy's) until the closest two
clusters are TURN_DISTANCE apart. Clusters holding under TURN_MIN_SHARE of the windows are folded into the nearest large one (a cough, a laugh, a
stretch of noise is not a speaker), as pyannote does; when the number of speakers is given, the clusters left are
merged into that many. Each stretch of speech then belongs to the speaker of the windows centred in it; a turn changes
halfway between two windows of different speakers. Speakers are numbered in the order they first speak.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipeline.errors import OptionError
from pipeline.speakers import SpeakerEncoder
from pipeline.tuning import TURN_DISTANCE, TURN_MAX_CLUSTERED, TURN_MIN_SHARE, TURN_STEP, TURN_WINDOW


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


def turns_from(
    regions: list[tuple[float, float]] | tuple,
    spans: list[tuple[float, float]],
    labels: np.ndarray,
    step: float = TURN_STEP,
) -> list[Turn]:
    """The speech regions cut where the speaker changes (`spans`, `labels`: windows(regions, step) and their
    speakers).
    Within a region each instant belongs to the window whose centre is nearest, so a turn changes halfway between
    the centres of two windows of different speakers."""
    turns: list[Turn] = []
    first = 0
    for a, b in regions:
        count = len(windows([(a, b)], step))
        centres = [(s + e) / 2 for s, e in spans[first : first + count]]
        speakers = [int(k) for k in labels[first : first + count]]
        first += count
        cuts, owners = [a], [speakers[0]]
        for i in range(1, count):
            if speakers[i] != speakers[i - 1]:
                cuts.append(min(max((centres[i - 1] + centres[i]) / 2, a), b))
                owners.append(speakers[i])
        cuts.append(b)
        for s, e, speaker in zip(cuts, cuts[1:], owners):
            if e <= s:
                continue
            if turns and turns[-1].speaker == speaker and s - turns[-1].end < 1e-9:
                turns[-1] = Turn(turns[-1].start, round(e, 3), speaker)
            else:
                turns.append(Turn(round(s, 3), round(e, 3), speaker))
    assert first == len(spans), "spans are not windows(regions, step)"
    return turns


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
    audio: np.ndarray, regions: list[tuple[float, float]] | tuple, encoder: SpeakerEncoder, options=TurnOptions()
) -> list[Turn]:
    """Who speaks when in 16-kHz audio whose speech is in `regions` (seconds)."""
    spans = windows(regions)
    labels = cluster(encoder.embed_spans(audio, spans), options.speakers)
    return turns_from(regions, spans, labels)


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
