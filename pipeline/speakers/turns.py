"""Who speaks when: windows of speech embedded, clustered into voices, turns placed by parts' votes and cut where
segmentation-3.0 hears the speaker change (docs/speakers.md)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipeline.errors import OptionError
from pipeline.speakers.clustering import centroids, cluster_voices, distinct_voices, voice_count
from pipeline.speakers.embeddings import SAMPLE_RATE, Embedded, SpeakerEncoder
from pipeline.speakers.segmentation import (
    Segmented,
    Segmenter,
    change_points,
    chunk_voices,
    frame_at,
    frame_time,
    newcomers,
)
from pipeline.tuning import (
    TURN_MIN_RUN,
    TURN_PART,
    TURN_PART_HOP,
    TURN_RESOLUTION,
    TURN_STEP,
    TURN_STRAY,
    TURN_WINDOW,
)


@dataclass(frozen=True)
class Turn:
    start: float  # seconds
    end: float
    speaker: int  # 0, 1, ...: in the order the speakers first speak


@dataclass(frozen=True)
class SpeakerTurns:
    """Who speaks when, twice: for the cues, and as heard (the RTTM file and the JSON's "speakers")."""

    turns: list[Turn]  # one speaker at a time, within the detector's speech: whose words are whose
    # the same speakers, and who else segmentation-3.0 hears: a second one where two talk at once, speech the
    # detector missed; turns of two speakers may overlap
    heard: list[Turn]


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
    voices: np.ndarray | None = None,
) -> list[Turn]:
    """The speech regions cut where the speaker changes: each part of a window (`spans`) votes for the voices (the
    rows of `voices`: the means of `labels` in label order, then any voice no window holds; None: those means) for its
    middle half, a step goes to its best mean vote, runs under `min_run` join a neighbour. Speakers are numbered in the
    order they first speak, or (not `ordered`) by their labels, the voices no window holds after the last."""
    if not len(spans):
        return []
    speakers = sorted(set(labels.tolist()))
    if voices is None:
        voices = centroids(embedded.whole, labels, speakers)
    speakers += list(range(speakers[-1] + 1, speakers[-1] + 1 + len(voices) - len(speakers)))
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
) -> SpeakerTurns:
    """Who speaks when in 16-kHz audio whose speech is in `regions`. With a `segmenter`, a count found is at least
    the most voices one of its chunks hears (`chunk_voices`), the turns are cut where it hears the speaker change
    when there are two voices or more, and what it hears besides is added to them (`heard_turns`); Stopped once
    `stop` is set."""
    spans = embedding_windows(regions)
    if not spans:
        return SpeakerTurns([], [])
    embedded = encoder.embed_windows(audio, spans, part=TURN_PART, hop=TURN_PART_HOP, stop=stop)
    segmented = segmenter.segment(audio, regions=regions, stop=stop) if segmenter is not None else None
    count = options.speakers
    if count is None and segmented is not None:
        count = voices_counted(embedded, segmented, audio, regions, encoder, stop=stop)
    labels = cluster_voices(embedded.whole, count)
    found = placed_turns(
        regions, spans, embedded, labels, audio=audio, encoder=encoder, segmented=segmented,
        newcomers_too=options.speakers is None, stop=stop,
    )  # fmt: skip
    if segmented is None:
        return SpeakerTurns(found, found)
    return SpeakerTurns(found, heard_turns(found, segmented, end=len(audio) / SAMPLE_RATE))


def voices_counted(
    embedded: Embedded,
    segmented: Segmented,
    audio: np.ndarray,
    regions: list[tuple[float, float]] | tuple,
    encoder: SpeakerEncoder,
    *,
    stop: threading.Event | None = None,
) -> int:
    """How many voices the windows hold (`voice_count`), or more if one chunk of segmentation-3.0 hears more talkers
    within the speech `regions` (`chunk_voices`) and the windows, clustered into that many, keep them apart
    (`distinct_voices`)."""
    counted = voice_count(embedded.whole)
    raised = chunk_voices(segmented, audio, encoder, more_than=counted, regions=regions, stop=stop)
    if raised == counted:
        return counted
    # (a raise stands if the windows split into that many stand apart, as the count's own clusters must: a chunk can
    # hear one reader's two tones as two talkers)
    return max(counted, distinct_voices(embedded.whole, cluster_voices(embedded.whole, raised)))


def placed_turns(
    regions: list[tuple[float, float]] | tuple,
    spans: Sequence[tuple[float, float]],
    embedded: Embedded,
    labels: np.ndarray,
    *,
    audio: np.ndarray,
    encoder: SpeakerEncoder,
    segmented: Segmented | None,
    newcomers_too: bool,
    step: float = TURN_STEP,
    stop: threading.Event | None = None,
) -> list[Turn]:
    """The turns of the windows' voices (`labels`, dense from 0): with `newcomers_too`, and segmentation-3.0's
    chunks, also the voices its chunks hear alone where no voice fits a window (`newcomers`); placed by the parts'
    votes (`turns_of`), cut where the chunks hear a change when two voices or more speak (`cut_at_changes`), the
    speakers numbered in the order they first speak."""
    voices = centroids(embedded.whole, labels, sorted(set(labels.tolist())))
    if newcomers_too and segmented is not None:
        near = [spans[i] for i in np.flatnonzero((embedded.whole @ voices.T).max(axis=1) < TURN_STRAY).tolist()]
        more = newcomers(segmented, audio, encoder, voices, near=near, regions=regions, stop=stop)
        voices = np.concatenate([voices, more])
    found = turns_of(regions, spans, embedded, labels, step=step, ordered=False, voices=voices)
    if segmented is not None and len({t.speaker for t in found}) > 1:
        found = cut_at_changes(found, regions, change_points(segmented), audio, encoder, voices, stop=stop)
    return _in_order(found)


def heard_turns(turns: Sequence[Turn], segmented: Segmented, *, end: float | None = None) -> list[Turn]:
    """The turns, and a speaker added at each frame where segmentation-3.0 hears two talk and the turns have one, or
    hears one and the turns have none (3D-Speaker's "include overlap" step): the chunk's talker matched to the most
    frames of one of ours (the Hungarian assignment, chunk by chunk) that is most active there. Turns of two speakers
    may then overlap; each speaker's are in order of time, none past `end` (s: the recording's, a padded chunk's
    frames heard no audio)."""
    from scipy.optimize import linear_sum_assignment

    speakers, frames = max((t.speaker for t in turns), default=-1) + 1, segmented.frames
    ours = np.zeros((frames, speakers), np.float32)
    for t in turns:
        ours[frame_at(t.start, frames) : frame_at(t.end, frames), t.speaker] = 1
    votes = np.zeros((frames, speakers), np.float32)
    heard, chunks = np.zeros(frames, np.float32), np.zeros(frames, np.float32)
    for first, active in zip(segmented.starts.tolist(), segmented.active):
        last = min(first + len(active), frames)
        active = active[: last - first]
        common = active.T @ ours[first:last]  # (3, speakers): frames each of the chunk's talkers shares with ours
        common[active.sum(axis=0) == 0] = -1
        for talker, speaker in zip(*linear_sum_assignment(-common)):
            if common[talker, speaker] > 0:
                votes[first:last, speaker] += active[:, talker]
        heard[first:last] += active.sum(axis=1)
        chunks[first:last] += 1
    count = np.rint(heard / np.maximum(chunks, 1))  # how many talk at each frame, the chunks' mean
    others = np.where(ours > 0, -np.inf, votes)
    best = others.argmax(axis=1) if speakers else np.zeros(frames, int)
    said = ours.sum(axis=1)
    extra = (others.max(axis=1, initial=0) > 0) & (((count >= 2) & (said == 1)) | ((count >= 1) & (said == 0)))
    ours[np.flatnonzero(extra), best[extra]] = 1
    out = []
    for speaker in range(speakers):
        edges = np.flatnonzero(np.diff(np.r_[0, ours[:, speaker], 0]))
        out += [Turn(frame_time(a), frame_time(b), speaker) for a, b in zip(edges[::2].tolist(), edges[1::2].tolist())]
    if end is not None:
        out = [Turn(t.start, min(t.end, round(end, 3)), t.speaker) for t in out if t.start < end]
    return sorted(out, key=lambda t: (t.start, t.speaker))


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
