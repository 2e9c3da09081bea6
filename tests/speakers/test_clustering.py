"""How many voices and whose windows (pipeline/speakers/clustering.py), from tables of embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.speakers.clustering import cluster_voices, distinct_voices, voice_count


def voices(rng, spec: list[tuple[int, float]], dims: int = 256) -> np.ndarray:
    """Unit vectors: for each (count, spread), `count` windows of one voice, each at cosine distance `spread` from
    the others of its voice (orthogonal offsets from its centre); the voices' centres orthogonal to each other."""
    basis = np.linalg.qr(rng.standard_normal((dims, dims)))[0]
    rows, k = [], 0
    for v, (count, spread) in enumerate(spec):
        centre = basis[v]
        r = np.sqrt(spread / (1 - spread)) if spread else 0.0  # |c + r e_i| offsets: pairwise cosine 1 / (1 + r^2)
        for _ in range(count):
            rows.append(centre + r * basis[len(spec) + k])
            k += 1
    out = np.array(rows)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def two_voices_apart(rng, distance: float, count: int = 10) -> np.ndarray:
    a, b = np.linalg.qr(rng.standard_normal((256, 2)))[0].T
    second = (1 - distance) * a + np.sqrt(1 - (1 - distance) ** 2) * b  # cosine 1 - distance from the first
    return np.array([a] * count + [second] * count)


def halves(rng, closeness: float, count: int, spread: float = 0.35) -> np.ndarray:
    """One voice heard two ways (a codec, a room): two halves of `count` windows each, their centres at cosine
    `closeness`, each window at cosine distance `spread` from the others of its half."""
    basis = np.linalg.qr(rng.standard_normal((256, 256)))[0]
    centres = (basis[0], closeness * basis[0] + np.sqrt(1 - closeness**2) * basis[1])
    r = np.sqrt(spread / (1 - spread))
    out = np.array([c + r * basis[2 + k + i * count] for i, c in enumerate(centres) for k in range(count)])
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def small_voice_near(rng, closeness: float) -> np.ndarray:
    """Two voices of 12 windows and one of 3, the small one's windows drawn toward the first voice until their
    centroid is at cosine `closeness` (or just past it) from the first's."""
    out = voices(rng, [(12, 0.3), (12, 0.3), (3, 0.3)])
    first = out[:12].mean(axis=0) / np.linalg.norm(out[:12].mean(axis=0))
    for w in np.linspace(0, 1, 201):
        small = (1 - w) * out[24:] + w * first
        small /= np.linalg.norm(small, axis=1, keepdims=True)
        if small.mean(axis=0) @ first / np.linalg.norm(small.mean(axis=0)) >= closeness:
            break
    out[24:] = small
    return out


@pytest.mark.parametrize(
    ("make", "speakers", "expected"),
    [
        # two voices 0.75 apart: two speakers; 0.5 apart too, in 40 windows (two voices of one phone line: counted by
        # the eigengap, not thresholded); in 20, average linkage counts one (segmentation's chunks count them)
        (lambda rng: two_voices_apart(rng, 0.75), None, [0] * 10 + [1] * 10),
        (lambda rng: two_voices_apart(rng, 0.5, count=20), None, [0] * 20 + [1] * 20),
        (lambda rng: two_voices_apart(rng, 0.5), None, [0] * 20),
        (lambda rng: two_voices_apart(rng, 0.1), None, [0] * 20),  # closer than TURN_MERGE: one
        (lambda rng: two_voices_apart(rng, 0.1), 2, [0] * 10 + [1] * 10),  # unless two are asked for
        # one voice, spread 0.6: one speaker
        (lambda rng: voices(rng, [(6, 0.6)]), None, [0] * 6),
        # a stray window joins the nearest voice (3 of 80 windows, far from both voices)
        (lambda rng: voices(rng, [(50, 0.0), (27, 0.0), (3, 0.0)]), None, None),
        # a voice with a tenth of the windows stays (6 of 100: above 5 %)
        (lambda rng: voices(rng, [(50, 0.0), (44, 0.0), (6, 0.0)]), None, [0] * 50 + [1] * 44 + [2] * 6),
        # two asked for, three stray windows beside two voices: the strays join a voice, not a speaker of their own
        (lambda rng: voices(rng, [(50, 0.0), (27, 0.0), (3, 0.0)]), 2, None),
        # three voices found, two asked for: the two closest merge
        (lambda rng: np.concatenate([two_voices_apart(rng, 0.75), voices(rng, [(10, 0.0)])]), 2, [0] * 20 + [1] * 10),
        (lambda rng: voices(rng, [(3, 0.0), (1, 0.0)]), 1, [0] * 4),
        (lambda rng: voices(rng, [(1, 0.0)]), None, [0]),
    ],
)
def test_cluster_voices(make, speakers, expected):
    embeddings = make(np.random.default_rng(0))
    labels = cluster_voices(embeddings, speakers).tolist()
    if expected is None:  # (the stray windows' nearest voice is a tie: either)
        assert labels[:77] == [0] * 50 + [1] * 27 and set(labels[77:]) <= {0, 1}
    else:
        assert labels == expected


@pytest.mark.parametrize(
    ("make", "count"),
    [
        (lambda rng: voices(rng, [(12, 0.0), (12, 0.0)]), 2),
        (lambda rng: two_voices_apart(rng, 0.5, count=20), 2),  # one phone line's two voices (cosine 0.5)
        # under TURN_SPECTRAL_FROM windows, average linkage to TURN_SHORT_DISTANCE (3D-Speaker's short audio): one
        (lambda rng: two_voices_apart(rng, 0.5, count=8), 1),
        (lambda rng: two_voices_apart(rng, 0.7, count=8), 2),  # two voices further apart than it: two
        # one voice heard two ways, its halves' centroids at cosine 0.72 (under TURN_MERGE): one in 30 windows (the
        # eigengap on so few split a phone codec's voice in two); in 40 the eigengap counts two
        (lambda rng: halves(rng, 0.75, count=15), 1),
        (lambda rng: halves(rng, 0.75, count=20), 2),
        # halves at cosine 0.83 are one voice (TURN_MERGE, 3D-Speaker's mer_cos), at 0.78 two
        (lambda rng: halves(rng, 0.85, count=20), 1),
        (lambda rng: halves(rng, 0.8, count=20), 2),
        (lambda rng: halves(rng, 0.85, count=15), 1),
        (lambda rng: two_voices_apart(rng, 0.1, count=8), 1),  # cosine 0.9: above TURN_MERGE, one
        (lambda rng: voices(rng, [(20, 0.6)]), 1),  # one voice, its windows spread
        (lambda rng: voices(rng, [(5, 0.0), (4, 0.0)]), 1),  # under TURN_MIN_WINDOWS windows: one
        (lambda rng: voices(rng, [(12, 0.0), (12, 0.0), (4, 0.0)]), 3),  # TURN_MIN_CLUSTER windows make a voice
        # fewer join the nearest, unless apart from every voice (below): three windows far from both, 11 % of them
        (lambda rng: voices(rng, [(12, 0.0), (12, 0.0), (3, 0.0)]), 3),
        (lambda rng: voices(rng, [(3, 0.0), (3, 0.0), (2, 0.0), (2, 0.0)]), 1),  # none has enough: one
        # fewer, apart from both (a voice that says a sentence or two): a voice, if a share of TURN_MIN_SHARE
        (lambda rng: voices(rng, [(12, 0.3), (12, 0.3), (3, 0.3)]), 3),
        (lambda rng: voices(rng, [(40, 0.3), (37, 0.3), (3, 0.3)]), 2),
        (lambda rng: small_voice_near(rng, 0.2), 3),  # under VOICE_APART to the nearest voice: apart
        (lambda rng: small_voice_near(rng, 0.3), 2),  # above: a stretch of that voice
        (lambda rng: voices(rng, [(6, 0.3)] * 5), 5),
    ],
)
def test_voice_count(make, count):
    assert voice_count(make(np.random.default_rng(0))) == count


@pytest.mark.parametrize(
    ("make", "labels", "count"),
    [
        (lambda rng: two_voices_apart(rng, 0.1), [0] * 10 + [1] * 10, 1),  # centroids at cosine 0.9: one voice
        (lambda rng: two_voices_apart(rng, 0.17), [0] * 10 + [1] * 10, 1),  # 0.83: one
        (lambda rng: two_voices_apart(rng, 0.23), [0] * 10 + [1] * 10, 2),  # 0.77, under TURN_MERGE (0.8): two
        (lambda rng: two_voices_apart(rng, 0.1), [0] * 20, 1),
        # three clusters: the two near ones merge, the far one stays
        (
            lambda rng: np.concatenate([two_voices_apart(rng, 0.1), voices(rng, [(5, 0.0)])]),
            [0] * 10 + [1] * 10 + [2] * 5,
            2,
        ),
        # one voice's windows split into three (one voice, spread 0.1): one
        (lambda rng: voices(rng, [(12, 0.1)]), [0] * 4 + [1] * 4 + [2] * 4, 1),
    ],
)
def test_distinct_voices(make, labels, count):
    points = make(np.random.default_rng(0))
    assert distinct_voices(points, np.array(labels)) == count


def test_cluster_of_a_long_recording_is_bounded():
    """Twice TURN_MAX_CLUSTERED windows of three voices (one with a tenth of them): an even sample is clustered and
    the rest join its voices; every window still goes to its own voice."""
    from pipeline.tuning import TURN_MAX_CLUSTERED

    n = 2 * TURN_MAX_CLUSTERED
    rng = np.random.default_rng(1)
    truth = rng.permutation(np.repeat([0, 1, 2], [n // 2, n // 2 - n // 10, n // 10]))
    centres = np.linalg.qr(rng.standard_normal((256, 3)))[0].T
    windows = centres[truth] + rng.standard_normal((n, 256)) * 0.04  # each about 0.8 alike to its voice's centre
    labels = cluster_voices(windows / np.linalg.norm(windows, axis=1, keepdims=True))
    assert len(set(labels.tolist())) == 3
    assert all(len(set(labels[truth == k].tolist())) == 1 for k in range(3))


@pytest.mark.parametrize(
    ("n", "kept", "long"),
    [
        (10, 6, False),  # TURN_MIN_NEIGHBOURS at least
        (40, 8, False),  # TURN_PRUNE's share of a minute of speech
        (60, 12, False),
        (65, 12, True),  # the share past TURN_MAX_NEIGHBOURS: a long recording's graph
        (1000, 12, True),
    ],
)
def test_neighbours_kept(n, kept, long):
    from pipeline.speakers.clustering import _long, _neighbours

    assert (_neighbours(n), _long(n)) == (kept, long)
