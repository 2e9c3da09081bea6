"""The judge of speed: whole processes, as a user would type them, on the same weights and threads, in one run.

    python benchmarks/speed.py [--eval-dir ../shared/eval] [--seed 7] [--threads N] [--engines a,b,...]
                               [--recordings continuous,pauses] [--no-first-cue] [--rounds N]

Two recordings are built from the real English speech of ../shared/eval:
- continuous: the read-speech clips (LibriVox, LibriSpeech, LJ Speech) joined with no gap, as an audiobook chapter;
- pauses: every English clip but the three 53-s sonnets, in an order drawn from --seed, with pauses of 0.2-3 s
  between them and one silence of 30-60 s at a drawn place (speech right after a long silence).
Keep the seeds the tests use (tests/asr/test_longform.py) out of this benchmark's runs: the default seed is not one.

Each engine runs as its own process: ours is `python -m pipeline REC.wav` (defaults, greedy, each precision);
faster-whisper (int8 greedy, int8 beam 5, f32 beam 5, and its BatchedInferencePipeline at int8 with batches of 8
and 16, its defaults otherwise) and openai-whisper (beam 5) run through
`benchmarks/engines.py`, a plain script of the kind their users write; with --genai DIR, OpenVINO GenAI's
WhisperPipeline too (int8 greedy and beam 5, its own venv: benchmarks/genai/setup.sh). All get the embedded Whisper base weights,
--language en and the same thread count. The table gives wall time, x realtime, the ratio to faster-whisper int8
greedy, WER (whisper's English normaliser) and peak RSS (the process's maximum resident set), and the first-cue
table the time from the command to its first cue printed for a 10-s clip, cold (no compiled-model or DTW cache)
and warm, and the warm run's whole process. The CPU's model and flags head every table; compare figures within one run only.

With --rounds N each recording runs every engine N times, in alternating order (forward, then backward), and the
table gives each engine's median wall time, the range, and the median of its per-round ratios to the reference
engine: on a machine whose speed drifts by ±20 % from one run to the next, a ratio taken within a round, in both
orders, is what can be compared (the detector's cost, defaults over --no-vad, is such a ratio).

Each of our runs also prints where its process spent its time (python -m pipeline --timings): imports, model load,
audio, detector, language detection, decoding (of which encoder passes and decoder steps), word timing, cues.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.composition import Composition, compose, load_clips, wer  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE, ffmpeg_exe  # noqa: E402

READ_SPEECH = re.compile(r"^en_(librivox|ls|ljs)_")
OURS = [sys.executable, "-m", "pipeline"]
OTHERS = [sys.executable, str(ROOT / "benchmarks" / "engines.py")]

# name -> command after the recording and output paths are filled in ({audio}, {out}, {threads})
ENGINES = {
    "ours (defaults)": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q"],
    "ours --beam-size 1": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                  "--beam-size", "1"],
    "ours --beam-size 1 --batch-size 4": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}",
                                                 "-q", "--beam-size", "1", "--batch-size", "4"],
    "ours --beam-size 1 --batch-size 8": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}",
                                                 "-q", "--beam-size", "1", "--batch-size", "8"],
    "ours --batch-size 4": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                   "--batch-size", "4"],
    "ours --precision int8": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                     "--precision", "int8"],
    "ours --precision bf16": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                     "--precision", "bf16"],
    "ours --precision f32": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                    "--precision", "f32"],
    "ours --speakers auto": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q",
                                    "--speakers", "auto"],
    "ours --beam-size 1 --batch-size 8 --speakers auto": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads",
                                                                 "{threads}", "-q", "--beam-size", "1",
                                                                 "--batch-size", "8", "--speakers", "auto"],
    "ours --no-vad": OURS + ["{audio}", "-o", "{out}", "-l", "en", "--threads", "{threads}", "-q", "--no-vad"],
    "faster-whisper int8 greedy": OTHERS + ["faster-whisper", "int8", "1", "{threads}", "{audio}", "{out}"],
    "faster-whisper int8 beam 5": OTHERS + ["faster-whisper", "int8", "5", "{threads}", "{audio}", "{out}"],
    "faster-whisper f32 beam 5": OTHERS + ["faster-whisper", "float32", "5", "{threads}", "{audio}", "{out}"],
    # (its defaults: beam 5, its own VAD, no timestamps inside a chunk)
    "faster-whisper int8 batched 8": OTHERS + ["faster-whisper", "int8", "5", "{threads}", "{audio}", "{out}", "8"],
    "faster-whisper int8 batched 8 greedy": OTHERS + ["faster-whisper", "int8", "1", "{threads}", "{audio}", "{out}",
                                                      "8"],
    "faster-whisper int8 batched 16": OTHERS + ["faster-whisper", "int8", "5", "{threads}", "{audio}", "{out}", "16"],
    "openai-whisper beam 5": OTHERS + ["openai-whisper", "float32", "5", "{threads}", "{audio}", "{out}"],
}  # fmt: skip
BASELINE = "faster-whisper int8 greedy"


@dataclass(frozen=True)
class Run:
    wall: float
    peak_mib: float
    text: str
    failed: str = ""
    stages: str = ""  # ours: where the process spent its time (python -m pipeline --timings)


def recordings(eval_dir: Path, seed: int) -> dict[str, Composition]:
    clips = [c for c in load_clips(eval_dir, language="en")]
    read = [c for c in clips if READ_SPEECH.match(c.id)]
    rest = [c for c in clips if "sonnet" not in c.id]
    rng = np.random.default_rng(seed)
    order = [rest[i] for i in rng.permutation(len(rest))]
    gaps = list(rng.uniform(0.2, 3.0, len(order)))
    gaps[int(rng.integers(0, len(order) - 1))] = float(rng.uniform(30, 60))
    return {"continuous": compose(read, 0.0), "pauses": compose(order, gaps)}


def write_wav(audio: np.ndarray, path: Path) -> None:
    pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-f", "s16le", "-ar", str(SAMPLE_RATE),
           "-ac", "1", "-i", "-", str(path)]  # fmt: skip
    subprocess.run(cmd, input=pcm, check=True)


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stderr) of one whole process."""
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}): {stderr.strip()[-500:]}")
    return wall, usage.ru_maxrss / 1024, stderr


def transcript(out: Path) -> str:
    """The text of the SRT (ours) or TXT (engines.py) written into `out`."""
    srt = list(out.glob("*.srt"))
    if srt:
        import srt as srt_lib

        return " ".join(c.content.replace("\n", " ") for c in srt_lib.parse(srt[0].read_text(encoding="utf-8")))
    return (out / "transcript.txt").read_text(encoding="utf-8")


def first_cue(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from starting `command` to the first cue line it prints on stderr, and to the process's end."""
    started = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True) as proc:
        seen = None
        for line in proc.stderr:
            if seen is None and re.match(r"\s*\[\d\d:\d\d", line):
                seen = time.monotonic() - started
        if proc.wait() or seen is None:
            raise RuntimeError(f"{' '.join(command)} printed no cue")
    return seen, time.monotonic() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--seed", type=int, default=7, help="draws the pauses recording (not a seed the tests use)")
    p.add_argument("--threads", type=int, default=cpu().cores)
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, from: " + ", ".join(ENGINES))
    p.add_argument("--recordings", default="continuous,pauses")
    p.add_argument("--no-first-cue", action="store_true", help="skip the 10-s first-cue table")
    p.add_argument("--rounds", type=int, default=1, help="run every engine this many times, in alternating order, "
                   "and report medians and per-round ratios")  # fmt: skip
    p.add_argument("--genai", type=Path, help="also run OpenVINO GenAI's WhisperPipeline, set up in this folder by "
                   "benchmarks/genai/setup.sh (int8 weights, greedy and beam 5)")  # fmt: skip
    args = p.parse_args()
    if args.genai:
        runner = [str(args.genai / "venv" / "bin" / "python"), str(ROOT / "benchmarks" / "genai" / "run.py"),
                  str(args.genai / "ov-base-int8"), "{audio}", "{out}/transcript.txt", "--threads", "{threads}"]  # fmt: skip
        ENGINES["openvino-genai int8 greedy"] = runner + ["--beams", "1"]
        ENGINES["openvino-genai int8 beam 5"] = runner + ["--beams", "5"]
        if args.engines == p.get_default("engines"):
            args.engines += ",openvino-genai int8 greedy,openvino-genai int8 beam 5"
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        p.error(f"unknown engines {unknown}: choose from {list(ENGINES)}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(args.threads)}
    machine = cpu().describe()
    print(f"CPU: {machine}; {args.threads} threads for every engine", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="speed-") as tmp:
        work = Path(tmp)
        comps = recordings(args.eval_dir, args.seed)
        for rec in args.recordings.split(","):
            comp = comps[rec]
            duration = comp.audio.size / SAMPLE_RATE
            audio = work / f"{rec}.wav"
            write_wav(comp.audio, audio)
            rounds: list[dict[str, Run]] = []
            for number in range(args.rounds):
                results: dict[str, Run] = {}
                for name in engines if number % 2 == 0 else engines[::-1]:
                    out = work / f"{rec}-{number}-{len(results)}"
                    out.mkdir()
                    fill = {"audio": str(audio), "out": str(out), "threads": str(args.threads)}
                    command = [part.format(**fill) for part in ENGINES[name]]
                    if command[: len(OURS)] == OURS:
                        command.append("--timings")  # (a clock read on each side of a stage)
                    try:
                        wall, peak, stderr = run(command, env)
                        stages = stderr[stderr.find("time: ") :] if "time: " in stderr else ""
                        results[name] = Run(wall, peak, transcript(out), stages=stages.strip())
                    except RuntimeError as e:
                        results[name] = Run(0.0, 0.0, "", str(e))
                    print(f"{rec}: {name}: {results[name].wall:.1f} s {results[name].failed}", file=sys.stderr)
                rounds.append({name: results[name] for name in engines})
            if args.rounds == 1:
                print(table(rec, comp, duration, rounds[0], machine, args.threads) + "\n", flush=True)
                for name, result in rounds[0].items():
                    if result.stages:
                        print(f"Where **{name}** spent its time on {rec}:\n\n{result.stages}\n", flush=True)
            else:
                print(rounds_table(rec, comp, duration, rounds, machine, args.threads) + "\n", flush=True)
        if not args.no_first_cue:
            print(first_cue_table(args, work, comps, env, machine))


WHAT = {
    "continuous": "read speech joined with no gaps",
    "pauses": "utterances with 0.2-3 s pauses and one 30-60 s silence",
}


def table(rec: str, comp: Composition, duration: float, results: dict[str, Run], machine: str, threads: int) -> str:
    baseline = results.get(BASELINE)
    lines = [
        f"**{rec}**: {duration:.0f} s, {len(comp.clips)} clips, {WHAT[rec]}. CPU: {machine}; {threads} threads.",
        "",
        f"| engine | wall time (s) | x realtime | / {BASELINE} | WER | peak RSS (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if r.failed:
            lines.append(f"| {name} | failed: {r.failed[:80]} | | | | |")
            continue
        ratio = f"{r.wall / baseline.wall:.2f}" if baseline and not baseline.failed else ""
        lines.append(
            f"| {name} | {r.wall:.1f} | {duration / r.wall:.1f} | {ratio} | "
            f"{100 * wer(comp.reference, r.text):.1f} % | {r.peak_mib:.0f} |"
        )
    return "\n".join(lines)


def paired(rounds: list[dict[str, float]], reference: str) -> dict[str, tuple[float, float]]:
    """Each engine's (median wall time, median ratio to `reference`) over rounds of wall times: the ratio is taken
    within each round, so a machine that runs slower for a round slows both sides of it."""
    return {
        name: (float(np.median([r[name] for r in rounds])), float(np.median([r[name] / r[reference] for r in rounds])))
        for name in rounds[0]
    }


def rounds_table(
    rec: str, comp: Composition, duration: float, rounds: list[dict[str, Run]], machine: str, threads: int
) -> str:
    """Medians over rounds, against the reference: faster-whisper int8 greedy when it ran, else the first engine."""
    engines = list(rounds[0])
    reference = BASELINE if BASELINE in engines else engines[0]
    lines = [
        f"**{rec}**: {duration:.0f} s, {len(comp.clips)} clips, {WHAT[rec]}, {len(rounds)} rounds in alternating "
        f"order. CPU: {machine}; {threads} threads.",
        "",
        f"| engine | median wall time (s) | range (s) | median / {reference} | ratios by round | WER | "
        "peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|",
    ]
    failed = {name: next((r[name].failed for r in rounds if r[name].failed), "") for name in engines}
    for name in engines:
        if failed[name]:
            lines.append(f"| {name} | failed: {failed[name][:80]} | | | | | |")
    if failed[reference]:
        return "\n".join(lines)
    ok = [name for name in engines if not failed[name]]
    medians = paired([{name: r[name].wall for name in ok} for r in rounds], reference)
    for name in ok:
        runs = [r[name] for r in rounds]
        walls = [r.wall for r in runs]
        ratios = ", ".join(f"{r[name].wall / r[reference].wall:.2f}" for r in rounds)
        wers = ", ".join(sorted({f"{100 * wer(comp.reference, r.text):.1f} %" for r in runs}))
        wall, ratio = medians[name]
        lines.append(
            f"| {name} | {wall:.1f} | {min(walls):.1f}-{max(walls):.1f} | {ratio:.2f} | {ratios} | {wers} | "
            f"{max(r.peak_mib for r in runs):.0f} |"
        )
    return "\n".join(lines)


def first_cue_table(args, work: Path, comps: dict[str, Composition], env: dict[str, str], machine: str) -> str:
    """Command -> first cue on a 10-s clip: cold (empty compiled-model and numba caches; the IR is exported
    already, as after installation's first run) and warm (the same command again)."""
    clip = work / "clip10.wav"
    write_wav(comps["continuous"].audio[: 10 * SAMPLE_RATE], clip)
    from convert.export import cache_root

    rows = []
    for name in ("ours (defaults)", "ours --beam-size 1", "faster-whisper int8 greedy", "faster-whisper int8 beam 5"):
        # a folder of its own for each run: the CLI skips a recording whose outputs are there
        commands = []
        for run in ("cold", "warm"):
            out = work / f"first-{len(rows)}-{run}"
            out.mkdir()
            command = [x.format(audio=str(clip), out=str(out), threads=str(args.threads)) for x in ENGINES[name]]
            commands.append([x for x in command if x != "-q"])  # ours prints cues on stderr unless quiet
        cold_env = dict(env, NUMBA_CACHE_DIR=str(work / f"numba-{len(rows)}"))
        if name.startswith("ours"):  # a copy of the model cache without its compiled blobs
            cache = work / f"cache-{len(rows)}"
            shutil.copytree(cache_root(), cache, ignore=shutil.ignore_patterns("compiled"))
            cold_env["SUBTITLE_CACHE_DIR"] = str(cache)
        cold, _ = first_cue(commands[0], cold_env)
        warm, whole = first_cue(commands[1], cold_env)
        rows.append(f"| {name} | {cold:.1f} | {warm:.1f} | {whole:.1f} |")
    return "\n".join(
        [
            f"**Command to first cue**, a 10-s clip. CPU: {machine}; {args.threads} threads.",
            "",
            "| engine | first cue, cold (s) | first cue, warm (s) | whole process, warm (s) |",
            "|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    main()
