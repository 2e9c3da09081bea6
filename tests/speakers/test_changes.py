"""Where the speaker changes (pipeline/speakers/segmentation.py): change points agreed on by the chunks of
segmentation-3.0 that hear them, from tables; and the model itself on a real phone call."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, clip_path

from pipeline.speakers.segmentation import (
    CENTRE,
    HOP,
    Segmented,
    change_points,
    distinct,
    heard_alone,
    newcomers,
)
from pipeline.tuning import CHUNK_ALONE


def _chunks(frames: int, *chunks) -> Segmented:
    """A recording of `frames` frames heard by chunks of (first frame, [(speaker, first, last) runs], length)."""
    starts, active = [], []
    for first, runs, length in chunks:
        a = np.zeros((length, 3), np.float32)
        for speaker, s, e in runs:
            a[s:e, speaker] = 1
        starts.append(first)
        active.append(a)
    longest = max(len(a) for a in active)
    active = [np.pad(a, ((0, longest - len(a)), (0, 0))) for a in active]
    return Segmented(starts=np.array(starts), active=np.stack(active), frames=frames)


def _at(frame: float) -> float:
    return round(frame * HOP + CENTRE, 3)


@pytest.mark.parametrize(
    ("segmented", "expected"),
    [
        # one chunk: speaker 0 until frame 100, speaker 1 from there: one change, at frame 100
        (_chunks(300, (0, [(0, 10, 100), (1, 100, 250)], 300)), [10, 100, 250]),
        # two chunks agree (a frame apart: within CHANGE_WITHIN): one change between them
        (_chunks(300, (0, [(0, 10, 100), (1, 100, 250)], 300), (0, [(2, 10, 101), (0, 101, 250)], 300)),
         [10, 100.5, 250]),
        # one of two chunks sees a change the other does not: half of them is enough
        (_chunks(300, (0, [(0, 10, 250)], 300), (0, [(1, 10, 100), (2, 100, 250)], 300)), [10, 100, 250]),
        # one of three does not
        (_chunks(300, (0, [(0, 10, 250)], 300), (0, [(0, 10, 250)], 300), (0, [(1, 10, 100), (2, 100, 250)], 300)),
         [10, 250]),
        # a change in a chunk's first or last frames is not heard whole: only the chunks around it count
        (_chunks(600, (0, [(0, 0, 299)], 300), (200, [(0, 0, 99), (1, 99, 300)], 300)), [299]),
        (_chunks(100, (0, [], 100)), []),  # nobody speaks
    ],
)  # fmt: skip
def test_change_points(segmented, expected):
    assert change_points(segmented) == [_at(f) for f in expected]


@pytest.mark.slow
def test_chunks_cover_the_recording():
    """segmentation-3.0 on a real call: chunks every SEGMENT_STEP, the last ending with the audio, none without
    speech, and a change found at each edge of the second woman's first "Hello?" (7.55-8.35 s in the reference's RTTM)."""
    from pipeline.media.audio import load_audio
    from pipeline.speakers.segmentation import CHUNK, RATE, speaker_segmenter
    from pipeline.tuning import SEGMENT_STEP

    audio = load_audio(clip_path("en_pyannote_call"))
    segmented = speaker_segmenter(2).segment(audio)
    step = round(SEGMENT_STEP / HOP)
    assert np.abs(np.diff(segmented.starts) - step).max() <= 1
    assert abs(segmented.starts[-1] * HOP - (len(audio) - CHUNK) / RATE) <= HOP  # (the last ends with it)
    only = speaker_segmenter(2).segment(audio, regions=[(0.0, 4.0)])  # (chunks holding no speech are left out)
    assert only.starts.tolist() == [0]
    cuts = np.array(change_points(segmented))
    hello = [float(x) for x in (DATA / "en_pyannote_call_turns.rttm").read_text().split("\n")[1].split()[3:5]]
    for edge in (hello[0], hello[0] + hello[1]):
        assert np.abs(cuts - edge).min() < 0.15, f"no change found near {edge} s: {cuts.round(2).tolist()}"


ALONE = int(np.ceil(CHUNK_ALONE / HOP))  # frames a talker needs alone to count


def _active(length: int, *runs) -> np.ndarray:
    a = np.zeros((length, 3), np.float32)
    for talker, first, end in runs:
        a[first:end, talker] = 1
    return a


@pytest.mark.parametrize(
    ("active", "expected"),
    [
        (_active(100), []),  # nobody
        (_active(100, (0, 0, ALONE)), [[(0, ALONE)]]),  # just long enough
        (_active(100, (0, 0, ALONE - 1)), []),  # just too short
        # two runs add up; the frames where another talks too are not alone
        (_active(100, (1, 0, ALONE // 2), (1, 50, 50 + ALONE // 2 + 1)), [[(0, ALONE // 2), (50, 51 + ALONE // 2)]]),
        (_active(100, (0, 0, ALONE), (2, 0, ALONE)), []),
        (_active(200, (0, 0, ALONE + 10), (2, ALONE, 2 * ALONE + 10)),
         [[(0, ALONE)], [(ALONE + 10, 2 * ALONE + 10)]]),
    ],
)  # fmt: skip
def test_heard_alone(active, expected):
    assert heard_alone(active) == expected


def _unit(*angles):
    """Unit vectors in a plane at these angles (degrees): cosines are the cosines of their differences."""
    return np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in angles])


@pytest.mark.parametrize(
    ("embeddings", "merge", "count"),
    [
        (_unit(0), 0.5, 1),
        (_unit(0, 90), 0.5, 2),  # cosine 0
        (_unit(0, 59), 0.5, 1),  # cosine 0.52: one voice
        (_unit(0, 61), 0.5, 2),  # 0.48: two
        (_unit(0, 50, 100), 0.5, 1),  # each close to the next: one, transitively
        (_unit(0, 50, 180), 0.5, 2),
        (_unit(0, 90, 180), 0.0, 1),
    ],
)
def test_distinct(embeddings, merge, count):
    assert distinct(embeddings, merge) == count


@pytest.mark.slow
@pytest.mark.parametrize(
    "known, near, found",
    [
        (["lj"], [(9.0, 10.0)], 1),  # a window near the second voice: heard, and it is no voice found
        (["lj"], [], 0),  # no window without a voice: no chunk heard
        (["lj"], [(0.0, 1.0)], 0),  # only the first voice's stretch is near: the second is not embedded
        (["lj", "ls"], [(9.0, 10.0)], 0),  # the second voice is found already
    ],
)
def test_newcomers(known, near, found):
    """Real speech: 8 s of LJ Speech's reader, then 2 s of a LibriSpeech speaker, one chunk hearing each alone. The
    second is a voice of its own when a window near it fits no voice found (cosine under VOICE_APART to each)."""
    from pipeline.media.audio import load_audio
    from pipeline.speakers.embeddings import SpeakerEncoder

    lj = load_audio(clip_path("en_ljs_LJ001-0001"))[: 8 * 16000]
    ls = load_audio(clip_path("en_ls_1995-1837-0001"))[: 2 * 16000]
    audio = np.concatenate([lj, ls])
    switch = int(round((8.0 - CENTRE) / HOP))
    segmented = _chunks(int(10 / HOP) + 1, (0, [(0, 0, switch), (1, switch, int(10 / HOP) - 2)], int(10 / HOP)))
    encoder = SpeakerEncoder(threads=2)
    voices = np.stack([encoder.embed({"lj": lj, "ls": ls}[k]) for k in known])
    new = newcomers(segmented, audio, encoder, voices, near=near)
    assert len(new) == found
    if found:
        assert float((new @ encoder.embed(ls))[0]) > 0.5 > float((new @ voices.T).max())


@pytest.mark.slow
def test_a_voice_that_says_little_in_a_meeting_is_counted():
    """An AMI meeting's first 30 s (trn06): one woman speaks 26 s, a man 3.2 s under her and another woman 1.6 s.
    The windows alone hardly find a second voice (too few windows of the others to cluster: one voice at f32, two at
    bf16); segmentation-3.0 hears two talkers apart in a chunk, so the count is two whatever the windows', and the
    man's 5.95-6.75 s goes to a second speaker, inside his turn in the reference.
    Who speaks when as heard (the RTTM's) adds what segmentation-3.0 hears: most of the speech the detector missed
    (far from the table's microphone) and part of the man's speech under the woman's."""
    from pipeline.asr.vad import VadOptions, speech_map
    from pipeline.media.audio import load_audio
    from pipeline.speakers.segmentation import chunk_voices, speaker_segmenter
    from pipeline.speakers.turns import speaker_encoder, speaker_turns

    audio = load_audio(clip_path("en_ami_trn06"))
    regions = speech_map(audio, VadOptions(), 2).regions
    encoder, segmenter = speaker_encoder(2), speaker_segmenter(2)
    assert chunk_voices(segmenter.segment(audio, regions=regions), audio, encoder, more_than=1, regions=regions) == 2
    found = speaker_turns(audio, regions, encoder, segmenter=segmenter)
    turns = found.turns
    assert len({t.speaker for t in turns}) >= 2
    man = [line.split() for line in (DATA / "en_ami_trn06_turns.rttm").read_text().splitlines() if "MEO082" in line]
    onset, duration = float(man[0][3]), float(man[0][4])
    second = [t for t in turns if t.speaker == 1]
    assert second and all(onset - 0.25 <= t.start and t.end <= onset + duration + 0.25 for t in second), second

    frames = len(audio) // 160  # 10 ms
    reference = np.zeros(frames, int)
    for line in (DATA / "en_ami_trn06_turns.rttm").read_text().splitlines():
        start, length = (float(x) for x in line.split()[3:5])
        reference[int(start * 100) : int((start + length) * 100)] += 1

    def talking(turns) -> np.ndarray:
        at = np.zeros((frames, len({t.speaker for t in turns})), bool)
        for t in turns:
            at[int(t.start * 100) : int(t.end * 100), t.speaker] = True
        return at.sum(axis=1)

    assert (talking(turns)[reference > 0] > 0).mean() < 0.85  # (the detector's speech: 78 % of the reference's)
    heard = talking(found.heard)
    assert (heard[reference > 0] > 0).mean() >= 0.9
    assert (heard[reference > 1] > 1).mean() >= 0.3  # two at once where the reference has two (41 %)


def _turns(*runs):
    """Turns of (speaker, first frame, end frame)."""
    from pipeline.speakers.turns import Turn

    return [Turn(_at(a), _at(b), speaker) for speaker, a, b in runs]


@pytest.mark.parametrize(
    ("turns", "segmented", "expected"),
    [
        # the model hears our two speakers as its talkers 2 and 0, and both at once in frames 90-100: the first's
        # turn goes on to 100, under the second's
        (_turns((0, 10, 90), (1, 90, 200)), _chunks(300, (0, [(2, 10, 100), (0, 90, 200)], 300)),
         _turns((0, 10, 100), (1, 90, 200))),
        # speech in frames 150-180 that the turns lack (the detector missed it): its talker's speaker's
        (_turns((0, 10, 100)), _chunks(300, (0, [(1, 10, 100), (1, 150, 180)], 300)), _turns((0, 10, 100), (0, 150, 180))),
        # a talker matched to none of ours adds nothing; nor does the model hearing less than the turns
        (_turns((0, 10, 100)), _chunks(300, (0, [(1, 150, 180)], 300)), _turns((0, 10, 100))),
        (_turns((0, 10, 100), (1, 100, 200)), _chunks(300, (0, [(0, 10, 50)], 300)), _turns((0, 10, 100), (1, 100, 200))),
        # two chunks: where one hears two talkers and the other one, the mean (1.5) rounds to two
        (_turns((0, 10, 90), (1, 90, 200)),
         _chunks(300, (0, [(0, 10, 100), (1, 90, 200)], 300), (0, [(0, 10, 90), (1, 90, 200)], 300)),
         _turns((0, 10, 100), (1, 90, 200))),
    ],
)  # fmt: skip
def test_heard_turns(turns, segmented, expected):
    from pipeline.speakers.turns import heard_turns

    assert heard_turns(turns, segmented) == expected


def test_heard_turns_end_with_the_recording():
    """A recording shorter than a chunk: the chunk's padding heard as speech ends where the audio does."""
    from pipeline.speakers.turns import Turn, heard_turns

    segmented = _chunks(300, (0, [(0, 10, 300)], 300))
    end = _at(100) + 0.01
    assert heard_turns(_turns((0, 10, 50)), segmented, end=end) == [Turn(_at(10), round(end, 3), 0)]
    assert heard_turns(_turns((0, 10, 50)), _chunks(300, (0, [(0, 10, 50), (0, 200, 250)], 300)), end=end) == _turns(
        (0, 10, 50)
    )


@pytest.mark.parametrize(
    ("spans", "query", "overlaps", "within"),
    [
        ([(0.0, 1.0), (2.0, 3.0)], (1.0, 2.0), False, []),  # between two spans, touching both
        ([(0.0, 1.0), (2.0, 3.0)], (0.5, 2.5), True, [(0.5, 1.0), (2.0, 2.5)]),
        ([(2.0, 3.0), (0.0, 1.0)], (2.9, 9.0), True, [(2.9, 3.0)]),  # unsorted spans
        ([(0.0, 1.0)], (-1.0, 0.0), False, []),
        ([], (0.0, 1.0), False, []),
    ],
)
def test_spans(spans, query, overlaps, within):
    from pipeline.speakers.segmentation import _Spans

    found = _Spans(spans)
    assert found.overlaps(*query) == overlaps
    assert found.within(*query) == within


def test_spans_overlap_a_long_span_that_started_early():
    """A span reaching past later, shorter ones still counts (the furthest end so far, not the last one's)."""
    from pipeline.speakers.segmentation import _Spans

    assert _Spans([(0.0, 10.0), (1.0, 2.0)]).overlaps(5.0, 6.0)
