"""Speaker turns (pipeline/speakers/turns.py): windows over the speech, clustering of their embeddings, turns; and a real
four-voice recording from the tests' clips."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, clip_path

from pipeline.errors import OptionError
from pipeline.speakers.embeddings import Embedded, part_offsets
from pipeline.speakers.turns import (
    Turn,
    TurnOptions,
    embedding_windows,
    merge_short_runs,
    pieces,
    speaker_turns,
    stepped,
    turns_of,
)


@pytest.mark.parametrize(
    ("regions", "spans"),
    [
        # a long region: every 1 s, the last one ending with it
        ([(0.0, 3.0)], [(0.0, 1.6), (1.0, 2.6), (1.4, 3.0)]),
        ([(0.0, 4.6)], [(0.0, 1.6), (1.0, 2.6), (2.0, 3.6), (3.0, 4.6)]),
        ([(2.0, 2.6)], [(1.5, 3.1)]),  # shorter than a window: one, centred on it
        ([(0.2, 0.6)], [(0.0, 1.6)]),  # (not before the recording's start)
        ([(1.0, 2.6)], [(1.0, 2.6)]),  # exactly a window
        ([(0.0, 2.0), (5.0, 5.5)], [(0.0, 1.6), (0.4, 2.0), (4.45, 6.05)]),  # two regions
        ([], []),
    ],
)
def test_embedding_windows(regions, spans):
    got = embedding_windows(regions)
    assert len(got) == len(spans) and all(g == pytest.approx(s) for g, s in zip(got, spans))


@pytest.mark.parametrize(
    ("regions", "cuts", "expected"),
    [
        ([(0.0, 3.0)], [1.0, 2.0], [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]),
        # cuts in any order; those outside the region or on its edges cut nothing
        ([(0.0, 3.0)], [2.0, 1.0, 5.0, 0.0, 3.0], [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]),
        ([(0.0, 3.0)], [1.0, 1.2], [(0.0, 1.2), (1.2, 3.0)]),  # a piece under 0.3 s joins the one before it
        ([(0.0, 3.0)], [0.2, 1.0], [(0.0, 1.0), (1.0, 3.0)]),  # the first one, the one after
        ([(0.0, 3.0)], [2.8], [(0.0, 3.0)]),  # the last one, the one before
        ([(0.0, 0.2)], [0.1], [(0.0, 0.2)]),  # a short region stays whole
        ([(0.0, 2.0), (2.5, 4.0)], [1.0, 2.2, 3.0], [(0.0, 1.0), (1.0, 2.0), (2.5, 3.0), (3.0, 4.0)]),  # per region
        ([], [1.0], []),
    ],
)
def test_pieces(regions, cuts, expected):
    got = pieces(regions, cuts)
    assert len(got) == len(expected) and all(g == pytest.approx(e) for g, e in zip(got, expected))


@pytest.mark.parametrize(
    ("votes", "min_steps", "labels"),
    [
        # a 0.2-s run joins the neighbour it favours (two steps of 0.1 s, under three)
        ([[1, 0, 0]] * 4 + [[0, 1, 0.5]] * 2 + [[0, 0, 1]] * 4, 3, [0] * 4 + [2] * 6),
        ([[1, 0, 0]] * 4 + [[0.5, 1, 0]] * 2 + [[0, 0, 1]] * 4, 3, [0] * 6 + [2] * 4),
        # a 0.3-s run stays
        ([[1, 0]] * 4 + [[0, 1]] * 3 + [[1, 0]] * 4, 3, [0] * 4 + [1] * 3 + [0] * 4),
        # the shortest goes first: the one-step run joins, then the run it made long enough stays
        ([[1, 0]] * 3 + [[0, 1]] * 2 + [[1, 0]] + [[0, 1]] * 3, 3, [0] * 3 + [1] * 6),
        ([[0, 1]] * 2, 3, [1, 1]),  # one run, however short, stays
        ([[0, 1], [1, 0]], 3, None),  # two short runs: one voice for both (either)
    ],
)
def test_merge_short_runs(votes, min_steps, labels):
    got = merge_short_runs(np.array(votes, float), min_steps).tolist()
    if labels is None:
        assert len(set(got)) == 1
    else:
        assert got == labels


@pytest.mark.parametrize(
    ("a", "b", "times", "votes", "reach", "expected"),
    [
        # each vote reaches the steps within 0.1 s of its time; steps reached by two take their mean
        (0.0, 0.5, [0.1, 0.3], [[1, 0], [0, 1]], 0.1, [[1, 0], [1, 0], [0.5, 0.5], [0, 1], [0, 1]]),
        # a step no vote reaches takes the nearest reached step's votes
        (0.0, 0.6, [0.05], [[1, 0]], 0.0, [[1, 0]] * 6),
        (2.0, 2.3, [2.25], [[0, 1]], 0.0, [[0, 1]] * 3),
        # between two reached steps, the nearer one's; the earlier on a tie
        (0.0, 0.5, [0.05, 0.45], [[1, 0], [0, 1]], 0.0, [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1]]),
        (0.0, 0.6, [0.05, 0.55], [[1, 0], [0, 1]], 0.0, [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1]]),
        # votes outside the region count for its first or last step
        (1.0, 1.2, [0.7, 1.5], [[1, 0], [0, 1]], 0.0, [[1, 0], [0, 1]]),
    ],
)
def test_stepped(a, b, times, votes, reach, expected):
    got = stepped(a, b, np.array(times), np.array(votes, float), reach=reach, resolution=0.1)
    np.testing.assert_allclose(got, np.array(expected, float))


def test_stepped_memory_is_linear_in_the_steps():
    """20 minutes as one region (voice detection off), a vote a second: 12,000 steps, nearly all reached. Finding
    each step's nearest reached step once took a steps x reached-steps array (2 GB here, 22 GB for an hour)."""
    import tracemalloc

    # each vote reaches 9 of its second's 10 steps: the tenth takes the nearer neighbour's (the earlier on a tie)
    times = np.arange(0.5, 1200.0, 1.0)
    votes = np.where((times < 600.0)[:, None], [1.0, 0.0], [0.0, 1.0])
    tracemalloc.start()
    try:
        got = stepped(0.0, 1200.0, times, votes, reach=0.45, resolution=0.1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.shape == (12_000, 2)
    assert peak < 20e6, f"{peak / 1e6:.0f} MB"
    np.testing.assert_allclose(got[[0, 6000, 6001, -1]], [[1, 0], [1, 0], [0, 1], [0, 1]])


@pytest.mark.parametrize(
    ("frames", "offsets"),
    [
        (79, [0, 10, 20, 30, 40, 50, 59]),  # a 1.6-s window: 0.4-s parts every 0.2 s, the last ending with it
        (30, [0, 10]),
        (20, [0]),  # as long as a part: one
        (5, [0]),  # shorter: one, all of it
    ],
)
def test_part_offsets(frames, offsets):
    assert part_offsets(frames, 0.4, 0.2) == offsets


def embedded(spans, voice_of_part, dims=4):
    """Embedded windows whose parts (every 0.1 s through each window, one-hot voices) say who speaks, and whose
    whole embedding is the voice of the window's middle part."""
    eye = np.eye(dims)
    whole, parts, times, of = [], [], [], []
    for i, (s, e) in enumerate(spans):
        middles = np.arange(s + 0.05, e, 0.1)
        voices = [voice_of_part(t) for t in middles]
        whole.append(eye[voices[len(voices) // 2]])
        parts += [eye[v] for v in voices]
        times += list(middles)
        of += [i] * len(middles)
    return Embedded(
        whole=np.reshape(whole, (-1, dims)),
        parts=np.reshape(parts, (-1, dims)),
        part_times=np.array(times),
        part_of=np.array(of, int),
    )


@pytest.mark.parametrize(
    ("regions", "voice_at", "turns"),
    [
        # a voice in the middle of a region: its turn is found to the step, finer than the windows
        ([(0.0, 5.0)], lambda t: 1 if 2.0 <= t < 3.0 else 0, [Turn(0.0, 2.0, 0), Turn(2.0, 3.0, 1), Turn(3.0, 5.0, 0)]),
        ([(0.0, 3.0)], lambda t: 0, [Turn(0.0, 3.0, 0)]),
        # a 0.2-s blip is no turn of its own
        ([(0.0, 5.0)], lambda t: 1 if 2.0 <= t < 2.2 else 0, [Turn(0.0, 5.0, 0)]),
        # two regions: a turn each, the pause between them nobody's; speakers numbered as they first speak
        ([(0.0, 2.0), (5.0, 5.5)], lambda t: 2 if t < 3 else 1, [Turn(0.0, 2.0, 0), Turn(5.0, 5.5, 1)]),
        ([(0.0, 2.0), (5.0, 5.5)], lambda t: 1, [Turn(0.0, 2.0, 0), Turn(5.0, 5.5, 0)]),
        ([], lambda t: 0, []),
    ],
)
def test_turns_of(regions, voice_at, turns):
    spans = embedding_windows(regions)
    found = embedded(spans, voice_at)
    labels = found.whole.argmax(axis=1)
    assert turns_of(regions, spans, found, labels) == turns


@pytest.mark.parametrize("speakers", [0, 21, -1])
def test_turn_options_check_the_count(speakers):
    with pytest.raises(OptionError):
        TurnOptions(speakers=speakers)


@pytest.mark.slow
@pytest.mark.parametrize("speakers", [None, 4])
def test_four_voices_found(speakers):
    """Four real voices in eight turns (LJ Speech's reader, a LibriVox reader, JFK, a LibriSpeech speaker), 0.5 s
    apart: found without being told how many, each turn's speech given to one speaker, a different one per voice."""
    order = [("en_ljs_LJ001-0001", "lj"), ("en_librivox_sas01_0870", "sas"), ("en_jfk", "jfk"),
             ("en_ljs_LJ001-0003", "lj"), ("en_librivox_sas01_0880", "sas"), ("en_ls_2412-153948-0000", "ls"),
             ("en_ljs_LJ001-0008", "lj"), ("en_librivox_sas01_0890", "sas")]  # fmt: skip
    audio, spans = _joined(order)
    turns = _turns(audio, speakers=speakers, segmented=False)
    assert _each_voice_its_speaker(turns, spans) == 4
    assert len({turn.speaker for turn in turns}) == 4


@pytest.mark.slow
def test_seven_voices_of_six_minutes_are_seven_speakers():
    """A long recording of many voices (350 s, 294 windows): three of Shakespeare's sonnets read by one LibriVox
    reader, fourteen clips of LJ Speech's reader, and five voices with 8-27 s each, in turns. Found without being told
    how many: seven speakers, each turn given to one, a different one per voice. Each window's nearest 20 % of
    affinities (59 here) outnumbered the small voices' windows: three speakers were found, LJ Speech's reader and the
    sonnets' one as one."""
    lj = [(f"en_ljs_LJ001-00{n:02d}", "lj") for n in (1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 17, 18)]
    order = [("en_librivox_sonnet001", "sonnets"), ("en_ls_2412-153948-0000", "ls2412"), *lj[:5],
             ("en_librivox_sas01_0870", "sas"), ("en_librivox_sonnet002", "sonnets"), ("en_jfk", "jfk"), *lj[5:10],
             ("en_librivox_sas01_0880", "sas"), ("en_mfa_acoustic_corpus", "mfa"), ("en_librivox_sonnet003", "sonnets"),
             ("en_ls_1995-1837-0001", "ls1995"), *lj[10:], ("en_librivox_sas01_0890", "sas")]  # fmt: skip
    audio, spans = _joined(order)
    turns = _turns(audio)
    assert _each_voice_its_speaker(turns, spans) == 7
    assert len({turn.speaker for turn in turns}) == 7


@pytest.mark.slow
def test_a_voice_that_says_one_sentence_is_a_speaker():
    """Three real voices in seven turns (54 s) and a fourth that says one sentence of 2 s in the middle (a LibriSpeech
    speaker): its two windows are too few to be a cluster and joined the nearest voice, three speakers; the chunk of
    segmentation-3.0 that hears it alone finds it a voice of its own."""
    order = [("en_ljs_LJ001-0001", "lj"), ("en_librivox_sas01_0870", "sas"), ("en_ls_2412-153948-0000", "ls"),
             ("en_ljs_LJ001-0003", "lj"), ("en_librivox_sas01_0880", "sas"), ("en_ls_1995-1837-0001", "rare"),
             ("en_ljs_LJ001-0008", "lj"), ("en_librivox_sas01_0890", "sas")]  # fmt: skip
    audio, spans = _joined(order, cut={"rare": 2.0})
    turns = _turns(audio)
    assert _each_voice_its_speaker(turns, spans) == 4
    assert len({turn.speaker for turn in turns}) == 4


@pytest.mark.slow
def test_one_voice_with_music_and_noise_between_is_one_speaker():
    """A LibriVox reader's three clips (real speech), 8-20 s of music after the first and of noise after the third
    (benchmarks/composition.py's), then the first again. segmentation-3.0 heard the music's edge as a second talker,
    apart from the voice, the count went to two and the voice was split; only the frames the detector calls speech
    are embedded to count, and one speaker is found."""
    from benchmarks.composition import _noise, music
    from pipeline.media.audio import load_audio

    rng = np.random.default_rng(0)
    music_, noise = ((f * (0.3 / np.abs(f).max())).astype(np.float32) for f in (music(rng), _noise(rng)))
    clips = [load_audio(clip_path(f"en_librivox_sas01_08{n}0")) for n in (7, 8, 9)]
    audio = np.concatenate([clips[0], music_, clips[1], clips[2], noise, clips[0]])
    turns = _turns(audio)
    assert len({turn.speaker for turn in turns}) == 1


def _turns(audio: np.ndarray, *, speakers: int | None = None, segmented: bool = True) -> list:
    """speaker_turns' turns of the detector's speech in `audio`, on 2 threads, with segmentation-3.0 unless not
    `segmented`."""
    from pipeline.asr.vad import VadOptions, speech_map
    from pipeline.speakers.embeddings import SpeakerEncoder
    from pipeline.speakers.segmentation import speaker_segmenter

    regions = speech_map(audio, VadOptions(), 2).regions
    segmenter = speaker_segmenter(2) if segmented else None
    options = TurnOptions(speakers=speakers)
    return speaker_turns(audio, regions, SpeakerEncoder(threads=2), options=options, segmenter=segmenter).turns


def _joined(
    order: list[tuple[str, str]], cut: dict[str, float] | None = None
) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """The clips one after another, 0.5 s apart (a voice's clips cut to its seconds in `cut`), and (start, end, voice)
    of each."""
    from pipeline.media.audio import load_audio

    pieces, spans, t = [], [], 0.0
    for clip, who in order:  # (tests/data/long: clips kept out of the seeded compositions of tests/data)
        samples = load_audio(next(DATA.glob(f"{clip}.*"), None) or next((DATA / "long").glob(f"{clip}.*")))
        samples = samples[: int((cut or {}).get(who, len(samples)) * 16000)]
        pieces += [samples, np.zeros(8000, np.float32)]
        spans.append((t, t + len(samples) / 16000, who))
        t += len(samples) / 16000 + 0.5
    return np.concatenate(pieces), spans


def _each_voice_its_speaker(turns, spans) -> int:
    """Asserts that one speaker holds 90 % of each span's speech and that a voice is always the same speaker; the
    number of speakers the voices are."""
    owner: dict[str, set[int]] = {}
    for a, b, who in spans:
        time: dict[int, float] = {}
        for turn in turns:
            overlap = min(b, turn.end) - max(a, turn.start)
            if overlap > 0:
                time[turn.speaker] = time.get(turn.speaker, 0.0) + overlap
        main = max(time, key=time.get)
        assert time[main] >= 0.9 * sum(time.values()), (who, time)  # one speaker holds the turn
        owner.setdefault(who, set()).add(main)
    assert all(len(found) == 1 for found in owner.values()), owner  # a voice is always the same speaker
    return len({next(iter(found)) for found in owner.values()})


@pytest.mark.slow
def test_a_phone_call_of_two_voices_on_one_line():
    """A real call (pyannote.audio's sample): two women through one telephone channel, closer together than voices
    of two recordings ever are. Both are found, and each frame of speech that the reference gives one of them goes
    to hers (the speakers matched to the voices by the most time in common) in at least 95 % of it."""
    from pipeline.media.audio import load_audio

    audio = load_audio(clip_path("en_pyannote_call"))
    turns = _turns(audio)
    assert len({t.speaker for t in turns}) == 2

    def speaker_at(t: float) -> int | None:
        return next((turn.speaker for turn in turns if turn.start <= t < turn.end), None)

    # the second woman's first "Hello?" (7.55-8.35 s), between two of the first's, is hers: cut out where the
    # segmentation hears the change, embedded alone (the windows around it mix both voices and gave it to the first)
    assert speaker_at(6.9) != speaker_at(7.95) != speaker_at(9.0)

    frames = int(len(audio) / 160)  # 10 ms
    reference = np.zeros((frames, 2), bool)
    voices: list[str] = []
    for line in (DATA / "en_pyannote_call_turns.rttm").read_text().splitlines():
        _, _, _, onset, duration, _, _, voice, *_ = line.split()
        voices += [voice] if voice not in voices else []
        reference[int(float(onset) * 100) : int((float(onset) + float(duration)) * 100), voices.index(voice)] = True
    ours = np.zeros((frames, 2), bool)
    for t in turns:
        ours[int(t.start * 100) : int(t.end * 100), t.speaker] = True
    alone = reference.sum(axis=1) == 1  # (overlapped speech is not scored)
    common = reference[alone].T.astype(int) @ ours[alone].astype(int)  # voice x speaker: frames in common
    right = max(common[0, 0] + common[1, 1], common[0, 1] + common[1, 0])
    assert right / alone.sum() >= 0.95, f"{right / alone.sum():.0%} of the speech went to its speaker"


@pytest.mark.slow
def test_a_chunk_that_hears_one_reader_as_two_leaves_one_voice():
    """A real reader (LibriVox, Shakespeare's sonnets, all three of tests/data) cut and joined as the benchmark's
    one-voice recording of seed 33 (174 s): the windows count one voice, but one segmentation chunk hears the reader
    as two talkers (embedded at cosine 0.44). The windows split into two are at cosine 0.85, one voice by TURN_MERGE:
    the raise does not stand. At the parent commit 29 % of the speech went to a second speaker."""
    from benchmarks.speakers import Voice, monologue, speech_frames
    from pipeline.media.audio import load_audio

    paths = [DATA / "en_librivox_sonnet001.mp3", *(DATA / "long" / f"en_librivox_sonnet00{k}.mp3" for k in (2, 3))]
    clips = [(p.stem, load_audio(p)) for p in paths]
    voice = Voice("sonnets", tuple((name, audio, speech_frames(audio)) for name, audio in clips))
    assert len({t.speaker for t in _turns(monologue(voice, 33).audio)}) == 1


@pytest.mark.slow
def test_one_reader_through_a_phone_codec_stays_one_voice():
    """A real reader (LibriVox, Spanish) cut and joined as the benchmark's one-voice recordings are (seeds 1-10, 26-55
    s each), through AMR-NB 12.2 kbit/s, as a phone's voice memo: one voice in every one. The codec spreads one
    voice's windows, and the eigengap on 20-40 windows split four of them in two or three; under
    TURN_SPECTRAL_FROM windows average linkage counts instead (3D-Speaker's short-audio clustering)."""
    from benchmarks.codecs import through
    from benchmarks.speakers import Voice, monologue, speech_frames
    from pipeline.media.audio import load_audio

    audio = load_audio(DATA / "codec" / "es_librivox_capitan_veneno.mp3")
    voice = Voice("veneno", (("veneno", audio, speech_frames(audio)),))
    found = {
        seed: len({t.speaker for t in _turns(through(monologue(voice, seed).audio, "amr"))}) for seed in range(1, 11)
    }
    assert set(found.values()) == {1}, found
