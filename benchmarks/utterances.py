"""Nothing lost, nothing made up: long-form subtitles checked utterance by utterance on seeded recordings.

    python benchmarks/utterances.py [--eval-dir ../shared/eval] [--seeds 7,11,13] [--modes default,no-vad]
                                    [--precision auto] [--continuous]

Each seed draws a recording from the English clips of ../shared/eval (all but the three 53-s sonnets: read,
spontaneous, fast, whispered and falsetto speech) with benchmarks/composition.py's generate(): pauses of 0.2-3 s, a
30-60 s silence anywhere, quiet (-18 to -26 dB) and fast (1.3x) utterances, music and noise between utterances.
The default seeds are held out: the tests draw theirs from 1-6, so the code is not tuned on these. --continuous
checks the speed benchmark's continuous recording instead (the read-speech clips joined with no gap).

Every mode runs the subtitle path (word timing, cue rules) in-process. Per mode, over all seeds: WER, utterances
with under 90 % of their words written, cue starts within 0.3 s of the utterance's onset, duplicated text, cues in
music/noise/silence, cues passing pipeline.subtitles.check, wall time. Then every miss, utterance by utterance.

Some clips the model mishears even on their own (TIMIT's "greasy wash water": 73 %), and some start with an "uh"
whisper never writes: each clip is also decoded alone, in the same mode, and the table's "lost" and "late" columns
count an utterance only when it does worse than that (Utterance.lost/late); the raw counts are beside them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.composition import compose, cues_in, duplicated, generate, load_clips, utterance_report, wer  # noqa: E402
from benchmarks.speed import READ_SPEECH  # noqa: E402
from pipeline.asr.cache import load_model  # noqa: E402
from pipeline.asr.options import ModelOptions, TranscribeOptions  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.jobs.subtitling import subtitle_audio  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE  # noqa: E402
from pipeline.subtitles.check import check, parse_srt  # noqa: E402
from pipeline.subtitles.formats import to_srt  # noqa: E402

MODES = {
    "default": TranscribeOptions(language="en"),
    "no-vad": TranscribeOptions(language="en", vad=False),
    "greedy": TranscribeOptions(language="en", beam_size=None),
    **{f"batch{n}": TranscribeOptions(language="en", batch_size=n) for n in (2, 3, 4, 8)},
    **{f"greedy-batch{n}": TranscribeOptions(language="en", beam_size=None, batch_size=n) for n in (2, 4, 8)},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--seeds", default="7,11,13")
    p.add_argument("--modes", default="default,no-vad")
    p.add_argument("--precision", default="auto")
    p.add_argument("--continuous", action="store_true", help="the continuous recording instead of the seeds")
    p.add_argument("--no-alone", action="store_true", help="skip decoding each clip alone (raw counts only)")
    args = p.parse_args()
    clips = [c for c in load_clips(args.eval_dir, language="en") if "sonnet" not in c.id]
    if args.continuous:
        clips = [c for c in clips if READ_SPEECH.match(c.id)]
        recordings = {"continuous": compose(clips, 0.0)}
    else:
        recordings = {f"seed {seed}": generate(clips, int(seed)) for seed in args.seeds.split(",")}
    model = load_model(ModelOptions(precision=args.precision))
    hours = sum(r.audio.size for r in recordings.values()) / SAMPLE_RATE
    print(f"CPU: {cpu().describe()}; precision {model.precision.name}")
    print(f"{', '.join(recordings)}: {len(clips)} utterances each, {hours / 60:.1f} min in all\n")
    print("| mode | WER | utterances lost (raw: < 90 % recalled) | cue starts on time (raw: within 0.3 s) | "
          "duplicated | cues in music/noise/silence | cues passing check | wall time (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    misses, alone = [], {}
    for mode in args.modes.split(","):
        errors, lost, on_time, dups, stray, passing, n_cues, wall, words = [], 0, 0, 0, 0, 0, 0, 0.0, 0
        raw_lost = raw_on_time = 0
        for clip in [] if args.no_alone else clips:  # each clip decoded alone: what the model gets right there
            comp = compose([clip], 1.0)
            cues = subtitle(comp.audio, model, MODES[mode])
            alone[(mode, clip.id)] = utterance_report(comp, cues)[0]
        for seed, comp in recordings.items():
            started = time.perf_counter()
            cues = subtitle(comp.audio, model, MODES[mode])
            wall += time.perf_counter() - started
            text = " ".join(c.text.replace("\n", " ") for c in cues)
            n_words = len(comp.reference.split())
            errors.append(wer(comp.reference, text) * n_words)
            words += n_words
            for u in utterance_report(comp, cues):
                own = alone.get((mode, u.id))
                raw_lost += u.recall < 0.9
                raw_on_time += abs(u.onset_error) <= 0.3
                lost += u.lost(own)
                on_time += not u.late(own)
                if u.lost(own) or u.late(own):
                    misses.append((mode, seed, u, own))
            found = duplicated(cues, comp.reference)
            dups += len(found)
            misses += [(mode, seed, f"duplicated: {d!r}") for d in found]
            inside = cues_in(comp, cues)
            stray += len(inside)
            misses += [(mode, seed, f"cue in no speech at {c.start:.1f}: {c.text!r}") for c in inside]
            parsed = parse_srt(to_srt(cues))
            passing += len(parsed) - len({q.index for q in check(parsed)})
            n_cues += len(parsed)
        n = len(clips) * len(recordings)
        print(f"| {mode} | {100 * sum(errors) / words:.1f} % | {lost} of {n} ({raw_lost}) | "
              f"{100 * on_time / n:.0f} % ({100 * raw_on_time / n:.0f} %) | {dups} | {stray} | "
              f"{100 * passing / max(n_cues, 1):.0f} % | {wall:.1f} |", flush=True)  # fmt: skip
    print("\nMisses (lost or late, against the clip decoded alone):\n")
    for mode, seed, *miss in misses:
        if isinstance(miss[0], str):
            print(f"- {mode}, {seed}: {miss[0]}")
        else:
            u, own = miss
            against = f" (alone {100 * own.recall:.0f} %, {own.onset_error:+.2f} s)" if own else ""
            print(
                f"- {mode}, {seed}: {u.id} ({u.kind or 'plain'}): recall {100 * u.recall:.0f} %, cue start "
                f"{u.onset_error:+.2f} s{against}"
            )


def subtitle(audio: np.ndarray, model, options: TranscribeOptions) -> list:
    """The cues the subtitle path writes for this audio."""
    return subtitle_audio(audio, model, options).cues


if __name__ == "__main__":
    np.set_printoptions(precision=2)
    main()
