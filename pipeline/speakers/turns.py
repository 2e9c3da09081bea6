"""Who speaks when: windows of speech embedded, clustered into voices, turns placed by parts' votes and cut where
segmentation-3.0 hears the speaker change (docs/speakers.md)."""

from __future__ import annotations

import bisect
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipeline.errors import OptionError
from pipeline.speakers.embeddings import Embedded, SpeakerEncoder
from pipeline.speakers.segmentation import Segmenter, change_points, chunk_voices
from pipeline.tuning import (
    TURN_DISTANCE,
    TURN_MAX_CLUSTERED,
    TURN_MAX_COUNTED,
    TURN_MAX_SPEAKERS,
    TURN_MERGE,
    TURN_MIN_CLUSTER,
    TURN_MIN_NEIGHBOURS,
    TURN_MIN_RUN,
    TURN_MIN_SHARE,
    TURN_MIN_WINDOWS,
    TURN_PART,
    TURN_PART_HOP,
    TURN_PRUNE,
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


def embedding_windows(regions: list[tuple[float, float]] | tuple, step: float = TURN_STEP) -> list[tuple[float, float]]:
    """(start, end) of windows every `step` seconds over each speech region; a short region gets one, centred."""
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


def cluster_voices(
    embeddings: np.ndarray,
    speakers: int | None = None,
    *,
    distance: float = TURN_DISTANCE,
    min_share: float = TURN_MIN_SHARE,
) -> np.ndarray:
    """A label per embedding, in order of first appearance. The number of voices is `speakers`, or else
    `voice_count`'s; the windows are clustered into that many: merged to `distance`, clusters under `min_share` folded
    into the nearest (a cough is not a speaker), then merged or split into the count."""
    n = len(embeddings)
    if n == 0:
        return np.zeros(0, int)
    if speakers is None:
        speakers = voice_count(embeddings)
    if n == 1 or speakers == 1:
        return np.zeros(n, int)
    if n <= TURN_MAX_CLUSTERED:
        labels = _agglomerative(embeddings, distance=distance)
    else:  # (memory grows with the square of the windows: a sample is clustered, the rest join its centroids)
        sample = _sample(n)
        found = _agglomerative(embeddings[sample], distance=distance)
        labels = _nearest(embeddings, _centroids(embeddings[sample], found))
        labels[sample] = found
    labels = _fold_small(embeddings, labels, min_share * n)
    found = sorted(set(labels.tolist()))
    if len(found) > speakers:
        centroids = np.stack([embeddings[labels == k].mean(axis=0) for k in found])
        into = dict(zip(found, _agglomerative(centroids, count=speakers).tolist()))
        labels = np.array([into[k] for k in labels.tolist()])
    elif len(found) < speakers and n <= TURN_MAX_CLUSTERED:
        labels = _agglomerative(embeddings, count=min(speakers, n))
    order = {label: i for i, label in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[label] for label in labels.tolist()])


def voice_count(embeddings: np.ndarray) -> int:
    """How many voices the windows hold, by 3D-Speaker's spectral clustering (as senko uses it): each window's
    affinities pruned to its nearest `TURN_PRUNE` share (at least `TURN_MIN_NEIGHBOURS`), the count at the largest
    gap between the Laplacian's eigenvalues, clusters under `TURN_MIN_CLUSTER` windows folded into the nearest, and
    clusters whose centroids are closer than `TURN_MERGE` merged. The gap is relative to the recording: voices of
    one room or one phone line, closer together than any fixed threshold allows, still stand apart."""
    from scipy.cluster.vq import kmeans2
    from scipy.linalg import eigh

    n = len(embeddings)
    if n < TURN_MIN_WINDOWS:
        return 1
    points = np.asarray(embeddings[_sample(n, TURN_MAX_COUNTED)] if n > TURN_MAX_COUNTED else embeddings, np.float64)
    n = len(points)
    affinity = points @ points.T
    dropped = min(int((1 - TURN_PRUNE) * n), n - TURN_MIN_NEIGHBOURS)
    if dropped > 0:
        np.put_along_axis(affinity, np.argsort(affinity, axis=1)[:, :dropped], 0.0, axis=1)
    affinity = (affinity + affinity.T) / 2
    np.fill_diagonal(affinity, 0.0)
    top = min(TURN_MAX_SPEAKERS, n - 1)  # (only the smallest eigenvalues: a fraction of the full decomposition)
    values, vectors = eigh(np.diag(np.abs(affinity).sum(axis=1)) - affinity, subset_by_index=[0, top])
    count = int(np.argmax(np.diff(values))) + 1
    if count == 1:
        return 1
    spectral = vectors[:, :count]
    with warnings.catch_warnings():  # (an empty cluster from one start is only a worse start)
        warnings.simplefilter("ignore")
        tries = [kmeans2(spectral, count, minit="++", seed=seed) for seed in range(5)]  # (k-means++, 5 starts)
    centres, labels = min(tries, key=lambda t: float(((spectral - t[0][t[1]]) ** 2).sum()))
    if np.bincount(labels).max() < TURN_MIN_CLUSTER:  # (no cluster is a voice: one voice, as 3D-Speaker says)
        return 1
    labels = _fold_small(points, labels, TURN_MIN_CLUSTER)
    while len(set(labels.tolist())) > 1:
        found = sorted(set(labels.tolist()))
        centroids = _centroids(points, labels, found)
        closeness = np.triu(centroids @ centroids.T, 1)
        i, j = np.unravel_index(np.argmax(closeness), closeness.shape)
        if closeness[i, j] < TURN_MERGE:
            break
        labels[labels == found[j]] = found[i]
    return len(set(labels.tolist()))


def _sample(n: int, most: int = TURN_MAX_CLUSTERED) -> np.ndarray:
    """`most` indices spread evenly over n."""
    return np.linspace(0, n - 1, most).round().astype(int)


def _centroids(points: np.ndarray, labels: np.ndarray, found: Sequence[int] | None = None) -> np.ndarray:
    """Unit centroids of each label (of `found`, or of 0..max)."""
    found = range(labels.max() + 1) if found is None else found
    centroids = np.stack([points[labels == k].mean(axis=0) for k in found])
    return centroids / np.linalg.norm(centroids, axis=1, keepdims=True)


def _nearest(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return (points @ centroids.T).argmax(axis=1)


def _agglomerative(points: np.ndarray, distance: float | None = None, count: int | None = None) -> np.ndarray:
    """Labels of SciPy's agglomerative clustering, cosine, average linkage (as pyannote's), to `distance` or `count`."""
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(np.asarray(points, dtype=np.float64), method="average", metric="cosine")
    if count is not None:
        return fcluster(tree, t=count, criterion="maxclust") - 1
    return fcluster(tree, t=distance, criterion="distance") - 1


def _fold_small(embeddings: np.ndarray, labels: np.ndarray, least: float) -> np.ndarray:
    """Windows of clusters of fewer than `least` windows go to the large cluster whose centroid is closest."""
    counts = np.bincount(labels)
    large = [k for k in range(len(counts)) if counts[k] >= least]
    if not large or len(large) == len([c for c in counts if c]):
        return labels
    nearest = np.array(large)[_nearest(embeddings, _centroids(embeddings, labels, large))]
    return np.where(np.isin(labels, large), labels, nearest)


def turns_of(
    regions: list[tuple[float, float]] | tuple,
    spans: Sequence[tuple[float, float]],
    embedded: Embedded,
    labels: np.ndarray,
    *,
    step: float = TURN_STEP,
    resolution: float = TURN_RESOLUTION,
    min_run: float = TURN_MIN_RUN,
    ordered: bool = True,
) -> list[Turn]:
    """The speech regions cut where the speaker changes: each part of a window (`spans`) votes for the voices (means
    of `labels`) for its middle half, a step goes to its best mean vote, runs under `min_run` join a neighbour.
    Speakers are numbered in the order they first speak, or (not `ordered`) by their labels."""
    if not len(spans):
        return []
    speakers = sorted(set(labels.tolist()))
    voices = voice_centroids(embedded.whole, labels)
    counts = [len(embedding_windows([region], step)) for region in regions]
    assert sum(counts) == len(spans), "spans are not embedding_windows(regions, step)"
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
            stepped(a, b, times[mine], votes[mine], reach=reach, resolution=resolution),
            max(1, round(min_run / resolution)),
        )
        for first, last, owner in label_runs(owners):
            start, end = round(a + first * resolution, 3), round(min(a + last * resolution, b), 3)
            speaker = speakers[owner]
            if out and out[-1].speaker == speaker and start - out[-1].end < 1e-9:
                out[-1] = Turn(out[-1].start, end, speaker)
            elif end > start:
                out.append(Turn(start, end, speaker))
    return _in_order(out) if ordered else out


def voice_centroids(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(voices, 192): each label's mean embedding as a unit vector, labels in sorted order."""
    voices = np.stack([embeddings[labels == k].mean(axis=0) for k in sorted(set(labels.tolist()))])
    return voices / np.linalg.norm(voices, axis=1, keepdims=True)


def _in_order(turns: list[Turn]) -> list[Turn]:
    """The turns with their speakers numbered in the order they first speak."""
    order = {speaker: i for i, speaker in enumerate(dict.fromkeys(t.speaker for t in turns))}
    return [Turn(t.start, t.end, order[t.speaker]) for t in turns]


def pieces(regions, cuts: Sequence[float], *, shortest: float = TURN_MIN_RUN) -> list[tuple[float, float]]:
    """The speech regions cut at `cuts`; a piece shorter than `shortest` joins the one before it (the first one, the
    one after), as a run under TURN_MIN_RUN does."""
    cuts, out = sorted(cuts), []
    for a, b in regions:
        points = [a, *cuts[bisect.bisect_right(cuts, a) : bisect.bisect_left(cuts, b)], b]
        mine: list[tuple[float, float]] = []
        for start, end in zip(points, points[1:]):
            if mine and end - start < shortest:
                mine[-1] = (mine[-1][0], end)
            else:
                mine.append((start, end))
        if len(mine) > 1 and mine[0][1] - mine[0][0] < shortest:
            mine[:2] = [(mine[0][0], mine[1][1])]
        out += mine
    return out


def cut_at_changes(
    turns: Sequence[Turn],
    regions,
    cuts: Sequence[float],
    audio: np.ndarray,
    encoder: SpeakerEncoder,
    voices: np.ndarray,
    *,
    stop: threading.Event | None = None,
) -> list[Turn]:
    """`turns` (their speakers the rows of `voices`) cut at `cuts`, where segmentation-3.0 hears a change: each
    piece of a turn so cut is given the voice nearest its own embedding (of its middle, a window's length at most, in
    whole TURN_PARTs, so that pieces share a few lengths, batched in one encoder call each). A window's context mixes
    the voices on both sides of a change: a call's first short "Hello?" lost to its neighbours' votes stands out
    alone. Speakers are then numbered in the order they first speak."""
    spans = pieces(regions, [*(t.start for t in turns), *(t.end for t in turns), *cuts])
    whole = {(t.start, t.end): t.speaker for t in turns}
    speakers = [whole.get((round(a, 3), round(b, 3))) for a, b in spans]
    cut = [i for i, speaker in enumerate(speakers) if speaker is None]
    lengths = [min(spans[i][1] - spans[i][0], TURN_WINDOW) for i in cut]
    lengths = [TURN_PART * int(n / TURN_PART + 1e-9) if n > TURN_PART else n for n in lengths]
    middles = [((spans[i][0] + spans[i][1] - n) / 2, (spans[i][0] + spans[i][1] + n) / 2) for i, n in zip(cut, lengths)]
    if cut:
        nearest = (encoder.embed_windows(audio, middles, stop=stop).whole @ voices.T).argmax(axis=1).tolist()
        for i, speaker in zip(cut, nearest):
            speakers[i] = speaker
    out: list[Turn] = []
    for (a, b), speaker in zip(spans, speakers):
        if out and out[-1].speaker == speaker and a - out[-1].end < 1e-9:
            out[-1] = Turn(out[-1].start, round(b, 3), speaker)
        else:
            out.append(Turn(round(a, 3), round(b, 3), speaker))
    return _in_order(out)


def stepped(
    a: float, b: float, times: np.ndarray, votes: np.ndarray, *, reach: float, resolution: float = TURN_RESOLUTION
) -> np.ndarray:
    """(steps, voices): the mean of the votes (a row per time) within `reach` of each step of [a, b]; a step no vote
    reaches takes the nearest step's."""
    steps = max(1, int(np.ceil((b - a) / resolution - 1e-9)))
    votes = np.asarray(votes, dtype=np.float64).reshape(len(times), -1)
    times = np.asarray(times, dtype=np.float64)
    centre = np.clip(((times - a) / resolution).astype(int), 0, steps - 1)
    low = np.clip(np.ceil((times - reach - a) / resolution - 1e-9).astype(int), 0, centre)
    high = np.clip(np.floor((times + reach - a) / resolution + 1e-9).astype(int), centre, steps - 1)
    change = np.zeros((steps + 1, votes.shape[1]))  # each vote added from its low step to its high one
    np.add.at(change, low, votes)
    np.add.at(change, high + 1, -votes)
    total = np.cumsum(change, axis=0)[:steps]
    count = np.cumsum(np.bincount(low, minlength=steps + 1) - np.bincount(high + 1, minlength=steps + 1))[:steps]
    filled = np.flatnonzero(count)
    if not len(filled):
        return total
    # the nearest filled step of each step (the earlier on a tie), found by bisection: memory linear in the steps
    at = np.arange(steps)
    after = np.searchsorted(filled, at)
    left, right = filled[np.maximum(after - 1, 0)], filled[np.minimum(after, len(filled) - 1)]
    nearest = np.where(right - at < at - left, right, left)
    return total[nearest] / count[nearest][:, None]


def label_runs(labels: Sequence[int]) -> list[tuple[int, int, int]]:
    """(first, end, label) of each run of equal labels."""
    out, first = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[first]:
            out.append((first, i, int(labels[first])))
            first = i
    return out


def merge_short_runs(votes: np.ndarray, min_steps: int) -> np.ndarray:
    """Each step's best voice; then, shortest first, runs under `min_steps` go to the neighbour their votes favour."""
    labels = votes.argmax(axis=1)
    while True:
        found = label_runs(labels)
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
    """The speaker of each (start, end) span: whose turns overlap it most, else the nearest turn's."""
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
    """One compiled speaker encoder per thread count, for the life of the process."""
    return SpeakerEncoder(threads)


def speaker_turns(
    audio: np.ndarray,
    regions: list[tuple[float, float]] | tuple,
    encoder: SpeakerEncoder,
    *,
    options=TurnOptions(),
    segmenter: Segmenter | None = None,
    stop: threading.Event | None = None,
) -> list[Turn]:
    """Who speaks when in 16-kHz audio whose speech is in `regions`. With a `segmenter`, a count found is at least
    the most voices one of its chunks hears (`chunk_voices`), and the turns are cut where it hears the speaker
    change when there are two voices or more; Stopped once `stop` is set."""
    spans = embedding_windows(regions)
    embedded = encoder.embed_windows(audio, spans, part=TURN_PART, hop=TURN_PART_HOP, stop=stop)
    segmented = segmenter.segment(audio, regions=regions, stop=stop) if segmenter is not None and spans else None
    count = options.speakers
    if count is None and segmented is not None:
        count = chunk_voices(segmented, audio, encoder, more_than=voice_count(embedded.whole), stop=stop)
    labels = cluster_voices(embedded.whole, count)
    found = turns_of(regions, spans, embedded, labels, ordered=False)
    if segmented is None or len({t.speaker for t in found}) < 2:
        return _in_order(found)
    voices = voice_centroids(embedded.whole, labels)
    return cut_at_changes(found, regions, change_points(segmented), audio, encoder, voices, stop=stop)


def turn_options(value: str | int | None) -> TurnOptions | None:
    """The speaker turns asked for: None for "off", found from the voices for "auto", or a number."""
    text = str(value).strip().lower() if value is not None else ""
    if text in ("", "off", "none"):
        return None
    if text == "auto":
        return TurnOptions()
    if not text.isdigit():
        raise OptionError("speakers", f"Speakers {value!r}: use auto, off, or a number from 1 to 20")
    return TurnOptions(int(text))
