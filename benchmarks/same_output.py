"""Behaviour does not change: the subtitles of the development recordings before and after a refactor, compared.

    python benchmarks/same_output.py save DIR  [--eval-dir ../shared/eval] [--seeds 1-13] [--precision f32]
    python benchmarks/same_output.py check DIR [--eval-dir ../shared/eval] [--seeds 1-13] [--precision f32]

`save` writes the SRT and JSON of every development recording into DIR: the speed benchmark's two (continuous and
pauses, benchmarks/speed.py) and benchmarks/composition.py's seeded compositions. Run it at the commit before the
change. `check` decodes them again with the code of today and compares with DIR: the same cues and the same words,
with every time equal to the millisecond. It prints one line per recording and exits 1 at the first difference
shown (with the cue or word where it is). Both run in-process on the subtitle path the CLI takes (word timing, cue
rules), with the model at --precision (f32: the reference; compare on the same machine: other CPUs sum in another
order).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.composition import Composition, generate, load_clips  # noqa: E402
from benchmarks.speed import recordings as speed_recordings  # noqa: E402
from pipeline.asr.cache import load_model  # noqa: E402
from pipeline.asr.options import ModelOptions, TranscribeOptions  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.jobs.subtitling import subtitle_audio  # noqa: E402
from pipeline.subtitles.write import to_format  # noqa: E402

SPEED_SEED = 7  # the speed benchmark's default draw of its pauses recording
OPTIONS = TranscribeOptions(language="en")  # as the benchmarks decode them


def development_recordings(eval_dir: Path, seeds: list[int]) -> dict[str, Composition]:
    clips = [c for c in load_clips(eval_dir, language="en") if "sonnet" not in c.id]
    found = speed_recordings(eval_dir, SPEED_SEED)
    found.update({f"seed-{seed}": generate(clips, seed) for seed in seeds})
    return found


def outputs(comp: Composition, model) -> dict[str, str]:
    result = subtitle_audio(comp.audio, model, OPTIONS)
    return {
        fmt: to_format(fmt, result.cues, language=result.info.language, duration=result.info.duration)
        for fmt in ("srt", "json")
    }


def difference(saved: str, now: str) -> str | None:
    """Where two JSON outputs differ (cue count, a cue's text or times, a word or its times, to the millisecond);
    None when they hold the same cues and words."""
    a, b = json.loads(saved)["segments"], json.loads(now)["segments"]
    if len(a) != len(b):
        return f"{len(a)} cues saved, {len(b)} now"
    for n, (x, y) in enumerate(zip(a, b), start=1):
        where = f"cue {n} ({x['start']:.3f} s)"
        if x["text"] != y["text"]:
            return f"{where}: {x['text']!r} saved, {y['text']!r} now"
        if any(round(x[k] * 1000) != round(y[k] * 1000) for k in ("start", "end")):
            return f"{where}: {x['start']:.3f}-{x['end']:.3f} saved, {y['start']:.3f}-{y['end']:.3f} now"
        wa, wb = x.get("words") or [], y.get("words") or []
        said = [(w["word"], round(w["start"] * 1000), round(w["end"] * 1000)) for w in wa]
        says = [(w["word"], round(w["start"] * 1000), round(w["end"] * 1000)) for w in wb]
        if said != says:
            k = next((k for k, (p, q) in enumerate(zip(said, says)) if p != q), min(len(said), len(says)))
            return f"{where}, word {k + 1}: {said[k : k + 1]} saved, {says[k : k + 1]} now"
    return None


def seeds(text: str) -> list[int]:
    """ "1-13" or "1,2,7" -> the seeds."""
    found = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        found += list(range(int(first), int(last or first) + 1))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("save", "check"))
    p.add_argument("dir", type=Path)
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--seeds", default="1-13", help="composition seeds, e.g. 1-13 or 1,2,7")
    p.add_argument("--precision", default="f32")
    args = p.parse_args(argv)
    model = load_model(ModelOptions(precision=args.precision))
    print(f"CPU: {cpu().describe()}; precision {model.precision.name}")
    args.dir.mkdir(parents=True, exist_ok=True)
    same = True
    for name, comp in development_recordings(args.eval_dir, seeds(args.seeds)).items():
        started = time.monotonic()
        now = outputs(comp, model)
        took = time.monotonic() - started
        if args.action == "save":
            for fmt, text in now.items():
                (args.dir / f"{name}.{fmt}").write_text(text, encoding="utf-8")
            print(f"{name}: saved ({took:.0f} s)")
            continue
        saved = (args.dir / f"{name}.json").read_text(encoding="utf-8")
        found = difference(saved, now["json"])
        if found is None and (args.dir / f"{name}.srt").read_text(encoding="utf-8") != now["srt"]:
            found = "the SRT text differs"
        print(f"{name}: {'the same' if found is None else 'DIFFERENT: ' + found} ({took:.0f} s)")
        same = same and found is None
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
