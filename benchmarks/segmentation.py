"""A lever measured, not in the pipeline (benchmarks/speakers.py --overlap; docs/speakers.md, *Overlap*): who
speaks at each instant of 10-s chunks, by pyannote's segmentation-3.0 (pipeline/speakers/segmentation.py, whose
change points the pipeline uses), adds to the turns the speech the voice detector missed and the stretches where two
speak at once (3D-Speaker's diarization recipe, its "include overlap" step). None of it changes a cue: words come
from the detector's speech, one speaker each."""

from __future__ import annotations

import numpy as np

from pipeline.speakers.segmentation import CENTRE, HOP, Segmented


def with_overlap(turns, segmented: Segmented, speakers: int) -> list:
    """The turns, each instant kept with its speaker, and a second speaker added where the model hears two (or a
    first where it hears speech and the turns have none): the one of the chunk's speakers matched to ours (the most
    frames in common, the Hungarian assignment) that is most active there. Turns of two speakers may overlap."""
    from scipy.optimize import linear_sum_assignment

    from pipeline.speakers.turns import Turn

    frames = segmented.frames
    ours = np.zeros((frames, speakers), np.float32)
    for t in turns:
        ours[_frame(t.start, frames) : _frame(t.end, frames), t.speaker] = 1
    votes = np.zeros((frames, speakers), np.float32)
    heard, chunks = np.zeros(frames, np.float32), np.zeros(frames, np.float32)
    for first, active in zip(segmented.starts, segmented.active):
        last = min(first + len(active), frames)
        active = active[: last - first]
        common = active.T @ ours[first:last]  # (3, speakers): frames each of the chunk's speakers shares with ours
        common[active.sum(axis=0) == 0] = -1
        rows, cols = linear_sum_assignment(-common)
        for r, c in zip(rows, cols):
            if common[r, c] > 0:
                votes[first:last, c] += active[:, r]
        heard[first:last] += active.sum(axis=1)
        chunks[first:last] += 1
    count = np.rint(heard / np.maximum(chunks, 1))  # how many speak at each frame, the chunks' mean
    others = np.where(ours > 0, -np.inf, votes)
    best = others.argmax(axis=1)
    has = others[np.arange(frames), best] > 0
    said = ours.sum(axis=1)
    extra = has & (((count >= 2) & (said == 1)) | ((count >= 1) & (said == 0)))
    ours[np.flatnonzero(extra), best[extra]] = 1
    out = []
    for speaker in range(speakers):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], ours[:, speaker], [0]])))
        out += [
            Turn(round(a * HOP + CENTRE, 3), round(b * HOP + CENTRE, 3), speaker)
            for a, b in zip(edges[::2], edges[1::2])
        ]
    return sorted(out, key=lambda t: (t.start, t.speaker))


def _frame(t: float, frames: int) -> int:
    return min(max(int(round((t - CENTRE) / HOP)), 0), frames)
