"""Throughput of a batch: hours of audio per hour of wall time, in process against Ray on the same cores.

    python benchmarks/cluster.py [--eval-dir ../shared/eval] [--files 8] [--minutes 2] [--seed 21]

An archive of --files recordings of about --minutes each: the English read speech of ../shared/eval, in an order
drawn from --seed, with pauses of 0.3-1.5 s, written as 16-kHz WAV files. Then whole CLI processes, one after the
other, as a user types them, all with the same defaults (model, precision, beam):
- in process: `python -m pipeline DIR` (one model, every core);
- Ray: `python -m pipeline DIR --ray auto --workers N` (a local Ray instance, N workers of cores/N threads each),
  for N = 1 and N = cores.
Each Ray run is also timed on one 10-s file, which is its fixed cost (starting Ray, the workers compiling their
models); the rate after it is what a long batch, or each further machine of a cluster, gets. The table gives wall
time, throughput, the ratio to in process and the WER over the archive. The CPU's model and flags head it; compare
figures within one run only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
import srt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.composition import compose, load_clips, wer  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE  # noqa: E402


def write_wav(audio: np.ndarray, path: Path) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes((np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes())


def archive(eval_dir: Path, folder: Path, files: int, minutes: float, seed: int) -> tuple[float, dict[str, str]]:
    """`files` WAV recordings in `folder`; returns their total seconds and each one's reference text by stem."""
    rng = np.random.default_rng(seed)
    clips = [c for c in load_clips(eval_dir) if c.id.startswith(("en_librivox", "en_ls", "en_ljs"))]
    total, references = 0.0, {}
    for n in range(files):
        chosen, seconds = [], 0.0
        for k in rng.permutation(len(clips)):
            chosen.append(clips[k])
            seconds += clips[k].audio.size / SAMPLE_RATE
            if seconds >= minutes * 60:
                break
        comp = compose(chosen, list(rng.uniform(0.3, 1.5, len(chosen))))
        write_wav(comp.audio, folder / f"rec{n:02d}.wav")
        total += comp.audio.size / SAMPLE_RATE
        references[f"rec{n:02d}"] = " ".join(c.reference for c in chosen)
    return total, references


def timed(command: list[str], env: dict) -> float:
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    return time.monotonic() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=21)
    args = p.parse_args()
    machine = cpu()
    cores = machine.cores
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp:
        work = Path(tmp)
        (work / "batch").mkdir()
        (work / "one").mkdir()
        seconds, references = archive(args.eval_dir, work / "batch", args.files, args.minutes, args.seed)
        first = load_clips(args.eval_dir)[0]
        write_wav(first.audio[: 10 * SAMPLE_RATE], work / "one" / "ten.wav")
        size = sum(f.stat().st_size for f in (work / "batch").iterdir())
        base = [sys.executable, "-m", "pipeline", "-l", "en", "-q"]
        runs = {"in process": []} | {f"Ray, {n} worker{'s' if n > 1 else ''}": ["--ray", "auto", "--workers", str(n)]
                                     for n in dict.fromkeys([1, cores])}  # fmt: skip
        rows = []
        timed(base + [str(work / "one"), "-o", str(work / "warm")], env)  # the model exported and compiled once
        for name, extra in runs.items():
            out = work / f"out-{len(rows)}"
            fixed = timed(base + [str(work / "one"), "-o", str(out / "one"), *extra], env)
            wall = timed(base + [str(work / "batch"), "-o", str(out), *extra], env)
            hyp = " ".join(c.content for s in sorted(references) for c in srt.parse((out / f"{s}.srt").read_text()))
            rows.append((name, wall, fixed, wer(" ".join(references[s] for s in sorted(references)), hyp)))
    print(f"CPU: {machine.describe()}")
    print(f"Batch: {args.files} files, {seconds / 60:.1f} min of audio ({size / 1e6:.0f} MB of WAV), seed {args.seed}")
    print()
    print("| run | wall (s) | h of audio per h | vs in process | 10-s file (s) | rate after it (h/h) | WER |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    reference = rows[0][1]
    for name, wall, fixed, error in rows:
        rate = seconds / max(wall - fixed, 1e-9)
        print(f"| {name} | {wall:.1f} | {seconds / wall:.1f} | {reference / wall:.2f}x | {fixed:.1f} | {rate:.1f} | "
              f"{100 * error:.1f} % |")  # fmt: skip


if __name__ == "__main__":
    main()
