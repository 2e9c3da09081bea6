"""Real-speech compositions with known gaps, and how well subtitles follow them (used by the tests and benchmarks).

A composition joins clips with silence between them, so where each utterance starts is known: the clip's offset
plus its own speech onset. The onset is measured from the clip's energy, independently of the voice activity
detector the transcriber uses: the first 10-ms frame of the first 50 ms that all sit a third of the way from the
clip's noise floor (its 10th-percentile frame level) to its loudest frame. (Several clips are old recordings whose
hiss is only 25 dB below the voice, so a fixed level would not do.)

`generate(clips, seed)` draws a recording the code was not tuned on: pauses of 0.2-3 s, a 30-60 s silence anywhere,
quiet and fast utterances, music and noise between utterances. `utterance_report` then checks each utterance on
its own: were its words written (recall in the cues that overlap it), did a cue start at its onset; `duplicated`
and `cues_in` find repeated text and text where nobody speaks.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.media.audio import SAMPLE_RATE, load_audio

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
    kinds: tuple[str, ...] = ()  # per clip, how generate() altered or placed it ("quiet", "fast", "after silence")
    no_speech: tuple[tuple[float, float, str], ...] = ()  # (start, end, "music" | "noise" | "silence") spans

    @property
    def ends(self) -> tuple[float, ...]:
        return tuple(o + c.audio.size / SAMPLE_RATE for o, c in zip(self.offsets, self.clips))

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


@dataclass(frozen=True)
class Utterance:
    id: str
    kind: str
    recall: float  # share of its reference words found in the cues that overlap it
    onset_error: float  # seconds from its speech onset to the nearest cue start (signed)

    def lost(self, alone: Utterance | None = None) -> bool:
        """Under 90 % of its words written, or, for a clip the model mishears even on its own (`alone`: the same
        clip decoded alone), fewer than it writes there."""
        return self.recall < min(0.9, alone.recall if alone else 1.0) - 1e-9

    def late(self, alone: Utterance | None = None, tolerance: float = 0.3) -> bool:
        """No cue start within `tolerance` s of its onset, nor of where the clip decoded alone starts its cue (whisper
        leaves out a leading "uh")."""
        if abs(self.onset_error) <= tolerance:
            return False
        return alone is None or abs(self.onset_error - alone.onset_error) > tolerance


QUIET_DB = (-26.0, -18.0)  # a quiet utterance's gain
FAST = 1.3  # a fast utterance's tempo (ffmpeg's atempo: pitch kept)


def generate(clips: list[Clip], seed: int, quiet: float = 0.15, fast: float = 0.1, fillers: int = 2) -> Composition:
    """The clips in a seeded order with seeded pauses (0.2-3 s), one 30-60 s silence at a drawn place (possibly
    first), some utterances made quiet (-18 to -26 dB) or fast (1.3x), and `fillers` stretches of music or noise
    (8-20 s) between utterances."""
    rng = np.random.default_rng(seed)
    order = [clips[i] for i in rng.permutation(len(clips))]
    kinds = ["" for _ in order]
    pieces: list[np.ndarray] = []
    gaps: list[tuple[str, np.ndarray]] = []
    for i, clip in enumerate(order):
        samples = clip.audio
        if rng.random() < fast:
            samples, kinds[i] = _tempo(samples, FAST), "fast"
        elif rng.random() < quiet:
            samples, kinds[i] = samples * np.float32(10 ** (rng.uniform(*QUIET_DB) / 20)), "quiet"
        pieces.append(samples.astype(np.float32))
        gaps.append(("silence", np.zeros(int(rng.uniform(0.2, 3.0) * SAMPLE_RATE), np.float32)))
    silence_at = int(rng.integers(0, len(order)))  # the long silence comes before this utterance
    for slot in rng.choice(len(order), size=min(fillers, len(order)), replace=False):
        kind = "music" if rng.random() < 0.5 else "noise"
        gaps[slot] = (kind, music(rng) if kind == "music" else _noise(rng))
    audio, offsets, onsets, no_speech, t = [], [], [], [], 0.0
    for i, (samples, (gap_kind, gap)) in enumerate(zip(pieces, gaps)):
        if i == silence_at:
            long = np.zeros(int(rng.uniform(30, 60) * SAMPLE_RATE), np.float32)
            no_speech.append((t, t + long.size / SAMPLE_RATE, "silence"))
            audio.append(long)
            t += long.size / SAMPLE_RATE
            kinds[i] = kinds[i] or "after silence"
        offsets.append(t)
        onsets.append(t + speech_onset(samples))
        t += samples.size / SAMPLE_RATE
        if gap_kind != "silence":
            no_speech.append((t, t + gap.size / SAMPLE_RATE, gap_kind))
        audio += [samples, gap]
        t += gap.size / SAMPLE_RATE
    clips_out = tuple(Clip(c.id, p, c.reference) for c, p in zip(order, pieces))
    return Composition(np.concatenate(audio), clips_out, tuple(offsets), tuple(onsets), tuple(kinds), tuple(no_speech))


def _tempo(samples: np.ndarray, factor: float) -> np.ndarray:
    """The clip spoken `factor` times faster, pitch kept (ffmpeg's atempo, our pinned ffmpeg)."""
    import subprocess

    from pipeline.media.audio import ffmpeg_exe

    pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes()
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-f", "s16le", "-ar", str(SAMPLE_RATE), "-ac", "1",
           "-i", "-", "-af", f"atempo={factor}", "-f", "s16le", "-"]  # fmt: skip
    out = subprocess.run(cmd, input=pcm, capture_output=True, check=True).stdout
    return np.frombuffer(out, np.int16).astype(np.float32) / 32768


def music(rng: np.random.Generator) -> np.ndarray:
    """8-20 s of synthetic music: plucked notes with harmonics, drawn from a pentatonic scale."""
    seconds, note = rng.uniform(8, 20), rng.uniform(0.25, 0.6)
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    out = np.zeros_like(t)
    scale = [220, 247, 277, 330, 370, 440, 494, 554, 659]
    for i in range(int(seconds / note)):
        f, on = scale[int(rng.integers(0, len(scale)))], (t >= i * note) & (t < (i + 1) * note)
        out[on] = sum(np.sin(2 * np.pi * f * k * t[on]) / k for k in range(1, 6)) * np.exp(-3 * (t[on] - i * note))
    return (rng.uniform(0.1, 0.3) * out / np.abs(out).max()).astype(np.float32)


def _noise(rng: np.random.Generator) -> np.ndarray:
    """8-20 s of brown-ish noise (a fan, traffic) at -30 to -20 dBFS RMS."""
    n = int(rng.uniform(8, 20) * SAMPLE_RATE)
    brown = np.cumsum(rng.standard_normal(n))
    brown -= np.convolve(brown, np.ones(400) / 400, "same")  # no drift: keep the low rumble, lose the DC
    level = 10 ** (rng.uniform(-30, -20) / 20)
    return (brown * level / np.sqrt(np.mean(brown**2))).astype(np.float32)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate after whisper's English normaliser."""
    import jiwer
    from whisper.normalizers import EnglishTextNormalizer

    norm = EnglishTextNormalizer()
    return jiwer.wer(norm(reference), norm(hypothesis))


def _words(text: str) -> list[str]:
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()(text).split()


def utterance_report(comp: Composition, cues: list, slack: float = 0.5) -> list[Utterance]:
    """Each utterance: the share of its reference words found (as many times as they occur) in the cues that overlap
    it (`slack` seconds either side), and how far the nearest cue start is from its onset. Cues need .start, .end,
    .text."""
    report = []
    for clip, onset, end, kind in zip(comp.clips, comp.onsets, comp.ends, comp.kinds or [""] * len(comp.clips)):
        heard = [w for c in cues if c.start < end + slack and c.end > onset - slack for w in _words(c.text)]
        reference = _words(clip.reference)
        found = 0
        for word in reference:
            if word in heard:
                heard.remove(word)
                found += 1
        error = onset_errors([c.start for c in cues], (onset,))[0]
        report.append(Utterance(clip.id, kind, found / max(len(reference), 1), error))
    return report


def duplicated(cues: list, reference: str = "") -> list[str]:
    """Text written twice: a cue whose text (normalised, 3 words or more) another cue already has, or a word doubled
    across two consecutive cues or inside one ("And And") that the reference does not double."""
    spoken = _words(reference)
    allowed = {a for a, b in zip(spoken, spoken[1:]) if a == b}
    seen, out = set(), []
    previous: list[str] = []
    for cue in cues:
        words = _words(cue.text)
        key = " ".join(words)
        if len(words) >= 3 and key in seen:
            out.append(cue.text)
        seen.add(key)
        joined = previous[-1:] + words
        out += [f"{a} {b}" for a, b in zip(joined, joined[1:]) if a == b and len(a) > 1 and a not in allowed]
        previous = words or previous
    return out


def cues_in(comp: Composition, cues: list, margin: float = 0.5) -> list:
    """Cues that lie (beyond `margin` seconds) inside music, noise or a long silence."""
    return [c for c in cues for a, b, _ in comp.no_speech if c.start < b - margin and c.end > a + margin]
