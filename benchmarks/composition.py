"""Real-speech compositions with known gaps, and how well subtitles follow them (used by the tests and benchmarks).

A composition joins clips with silence between them, so where each utterance starts is known: the clip's offset
plus its own speech onset. The onset is measured from the clip's energy, independently of the voice activity
detector the transcriber uses: the first 10-ms frame of the first 50 ms that all sit a third of the way from the
clip's noise floor (its 10th-percentile frame level) to its loudest frame. (Several clips are old recordings whose
hiss is only 25 dB below the voice, so a fixed level would not do.)
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.media import SAMPLE_RATE, load_audio

FRAME = SAMPLE_RATE // 100  # 10 ms
RUN = 5  # 50 ms of frames above the level


@dataclass(frozen=True)
class Clip:
    id: str
    audio: np.ndarray
    reference: str


@dataclass(frozen=True)
class Composition:
    audio: np.ndarray
    clips: tuple[Clip, ...]
    offsets: tuple[float, ...]  # where each clip starts, seconds
    onsets: tuple[float, ...]  # where each clip's speech starts, seconds

    @property
    def reference(self) -> str:
        return " ".join(c.reference for c in self.clips)


def load_clips(folder: Path, ids: list[str] | None = None, language: str = "en") -> list[Clip]:
    """Clips listed in folder/manifest.tsv (a file column relative to the folder), in manifest order or ids order."""
    with open(folder / "manifest.tsv", encoding="utf-8") as f:
        rows = {row["id"]: row for row in csv.DictReader(f, delimiter="\t")}
    chosen = ids if ids is not None else [i for i, r in rows.items() if r["language"] == language]
    return [Clip(i, load_audio(folder / rows[i]["file"]), rows[i]["reference_text"]) for i in chosen]


def compose(clips: list[Clip], gaps: list[float] | float) -> Composition:
    """Clips joined with digital silence: gaps[i] seconds after clip i (a single number for all)."""
    gaps = [gaps] * len(clips) if isinstance(gaps, int | float) else gaps
    pieces, offsets, onsets, t = [], [], [], 0.0
    for clip, gap in zip(clips, gaps, strict=True):
        offsets.append(t)
        onsets.append(t + speech_onset(clip.audio))
        silence = np.zeros(int(round(gap * SAMPLE_RATE)), np.float32)
        pieces += [clip.audio, silence]
        t += (clip.audio.size + silence.size) / SAMPLE_RATE
    return Composition(np.concatenate(pieces), tuple(clips), tuple(offsets), tuple(onsets))


def speech_onset(samples: np.ndarray) -> float:
    """Seconds from the start of a clean recording to its first speech (see the module docstring)."""
    n = samples.size // FRAME
    frames = samples[: n * FRAME].reshape(n, FRAME).astype(np.float64)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    floor = np.percentile(level, 10)
    loud = level >= floor + (level.max() - floor) / 3
    runs = np.convolve(loud, np.ones(RUN), "valid") == RUN
    return float(np.argmax(runs)) * FRAME / SAMPLE_RATE


def onset_errors(cue_starts: list[float], onsets: tuple[float, ...]) -> list[float]:
    """For each true onset, the signed error (seconds) of the cue start nearest to it."""
    starts = np.asarray(sorted(cue_starts))
    if starts.size == 0:
        return [float("inf")] * len(onsets)
    return [float(starts[np.argmin(np.abs(starts - t))] - t) for t in onsets]


def onset_summary(errors: list[float], tolerance: float = 0.3) -> str:
    e = np.abs(np.asarray(errors))
    within = float(np.mean(e <= tolerance))
    return (
        f"{len(errors)} utterances: {100 * within:.0f} % of cue starts within {tolerance} s of the speech onset; "
        f"|error| median {np.median(e):.2f} s, 90th percentile {np.percentile(e, 90):.2f} s, max {e.max():.2f} s"
    )
