"""A lever measured, not in the pipeline (benchmarks/speakers.py --overlap; docs/speakers.md, *Overlap*): who speaks
at each instant of 10-s chunks, by pyannote's segmentation-3.0 (convert/segmentation.py) on OpenVINO, adds to the
turns the speech the voice detector missed and the stretches where two speak at once (3D-Speaker's diarization
recipe, its "include overlap" step). None of it changes a cue: words come from the detector's speech, one speaker
each."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RATE = 16000
SEGMENT_STEP = 5.0  # s between the starts of the 10-s chunks
SEGMENT_BATCH = 8  # chunks a call
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
        import openvino as ov

        from convert.segmentation import ensure_segmentation_ir
        from pipeline.asr.compiled import compiled_dir, cpu_config
        from pipeline.cpu import cpu

        precision = "bf16" if cpu().has_bf16 else "f32"
        ir = ensure_segmentation_ir()
        core = ov.Core()
        core.set_property({"CACHE_DIR": str(compiled_dir(f"{ir.name}-{precision}-{threads}t"))})
        config = {**cpu_config(threads), "INFERENCE_PRECISION_HINT": precision}
        self.compiled = core.compile_model(ir / "segmentation.xml", "CPU", config)
        self.request = self.compiled.create_infer_request()

    def segment(self, audio: np.ndarray, *, step: float = SEGMENT_STEP) -> Segmented:
        """The chunks every `step` seconds (the last one ending with the audio; a shorter recording padded)."""
        request = self.request
        n = len(audio)
        starts = list(range(0, max(n - CHUNK, 0) + 1, int(step * RATE)))
        if starts[-1] + CHUNK < n:
            starts.append(n - CHUNK)
        active = []
        for i in range(0, len(starts), SEGMENT_BATCH):
            batch = np.zeros((len(starts[i : i + SEGMENT_BATCH]), 1, CHUNK), np.float32)
            for row, start in enumerate(starts[i : i + SEGMENT_BATCH]):
                piece = audio[start : start + CHUNK]
                batch[row, 0, : len(piece)] = piece
            request.infer({0: batch})
            active.append(POWERSET[request.get_output_tensor(0).data.argmax(axis=-1)])
        at = np.round(np.array(starts) / RATE / HOP).astype(int)
        frames = int(np.ceil(n / RATE / HOP)) + 1
        return Segmented(starts=at, active=np.concatenate(active), frames=frames)


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
