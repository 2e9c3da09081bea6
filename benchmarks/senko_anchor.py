"""The field's method on our speaker-turn sets: senko (3D-Speaker's diarization recipe with the same CAM++ encoder:
Silero's speech, 1.5-s windows, spectral clustering with the eigengap count, centroids merged) scored exactly as
benchmarks/speakers.py scores our turns, so the two tables compare row for row.

    pip install --target /tmp/senko --no-deps senko umap-learn pynndescent hdbscan colour-science termcolor \\
        soundfile pyyaml
    PYTHONPATH=/tmp/senko python benchmarks/senko_anchor.py [--seeds 1-10 | --single | --panel | --real [DIR]]

senko is not a dependency (its wheel is built for one Python and platform, and brings UMAP, HDBSCAN and torch);
it runs here on the CPU with its defaults. The same sets as benchmarks/speakers.py: seeds 101-110 and the real
held-out recordings are held out, run only to compare.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.conversations import real_recordings  # noqa: E402
from benchmarks.speakers import (  # noqa: E402
    SINGLE_MIN,
    _seed_range,
    annotations,
    conversation,
    load_voices,
    monologue,
    panel,
)
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE  # noqa: E402
from pipeline.speakers.turns import Turn  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--seeds", default="1-10")
    p.add_argument("--single", action="store_true")
    p.add_argument("--panel", action="store_true")
    cache = Path.home() / ".cache" / "subtitle-benchmarks" / "real"
    p.add_argument("--real", type=Path, nargs="?", const=cache)
    args = p.parse_args()
    try:
        from senko import Diarizer
    except ImportError:
        sys.exit("senko is not installed: see this file's docstring for the two commands.")
    from pyannote.metrics.diarization import DiarizationErrorRate

    seeds = [s for part in args.seeds.split(",") for s in _seed_range(part)]
    if args.real:
        recs = real_recordings(args.real.expanduser())
    else:
        voices = load_voices(args.eval_dir)
        if args.single:
            recs = [monologue(v, seed) for seed in seeds for v in voices.values() if v.speech >= SINGLE_MIN]
        elif args.panel:
            recs = [panel(voices, seed) for seed in seeds]
        else:
            recs = [conversation(voices, seed) for seed in seeds]
    diarizer = Diarizer(device="cpu", warmup=True, quiet=True)
    der, skipped = DiarizationErrorRate(collar=0.5), DiarizationErrorRate(collar=0.5, skip_overlap=True)
    print(f"CPU: {cpu().describe()}")
    print("\n| recording | speakers found / true | DER | speech to its speaker |\n|---|---|---|---|")
    off, correct, total = [], 0.0, 0.0
    for rec in recs:
        out = diarizer.diarize_samples(rec.audio, SAMPLE_RATE, source_name=rec.name) or {}
        names: dict[str, int] = {}
        found = [
            Turn(s["start"], s["end"], names.setdefault(s["speaker"], len(names) + 1))
            for s in out.get("merged_segments") or ()
        ]
        reference, hypothesis, uem = annotations(rec, found)
        parts = der(reference, hypothesis, uem=uem, detailed=True)
        alone = skipped(reference, hypothesis, uem=uem, detailed=True)
        correct, total = correct + alone["correct"], total + alone["total"]
        off.append(len(hypothesis.labels()) - len(rec.voices))
        print(f"| {rec.name} | {len(hypothesis.labels())} / {len(rec.voices)} | "
              f"{100 * parts['diarization error rate']:.1f} % | {100 * alone['correct'] / alone['total']:.0f} % |")  # fmt: skip
    print(f"\nAll: DER {100 * abs(der):.1f} %, speech to its speaker {100 * correct / total:.0f} %, count right "
          f"{sum(o == 0 for o in off)} of {len(off)}, within 1 {sum(abs(o) <= 1 for o in off)} of {len(off)}; "
          f"found - true {' '.join(f'{o:+d}' for o in off)}")  # fmt: skip


if __name__ == "__main__":
    main()
