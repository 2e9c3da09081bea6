"""Processes side by side, with OpenVINO's threads pinned to cores or not: why every model we compile is not pinned
(pipeline/asr/compiled.py, cpu_config).

    python benchmarks/pinning.py [--passes 16] [--model base]

Each row starts PROCESSES processes at once; each compiles the f32 encoder with THREADS threads, pinned or not, and
times --passes passes over one real window (the median, after one not counted). OpenVINO pins counting from the first
core and knows nothing of other processes, so processes side by side (Ray workers on one node, a server beside a CLI
job, test workers) can land on the same cores. The CPU heads the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLIP = ROOT / "tests" / "data" / "en_ls_61-70968-0000.flac"


def one(model: str, threads: int, pinned: bool, passes: int) -> float:
    """Median ms of an f32 encoder pass in this process."""
    import openvino as ov

    from convert.checkpoints import resolve_checkpoint
    from convert.export import ensure_ir
    from convert.ir_layout import ExportOptions
    from pipeline.asr.compiled import cpu_config
    from pipeline.asr.measured import median_pass
    from pipeline.asr.mel import log_mel_spectrogram, pad_or_trim
    from pipeline.media.audio import load_audio

    ir = ensure_ir(resolve_checkpoint(model), ExportOptions(weights="f16"))
    config = {**cpu_config(threads), "ENABLE_CPU_PINNING": pinned, "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ov.Core().compile_model(ir / "encoder.xml", "CPU", config)
    mel = log_mel_spectrogram(pad_or_trim(load_audio(CLIP)), 80)[None]
    return 1000 * median_pass(compiled, mel, passes=passes)[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--passes", type=int, default=16)
    p.add_argument("--one", help=argparse.SUPPRESS)  # (a child: threads,pinned)
    args = p.parse_args()
    if args.one:
        threads, pinned = args.one.split(",")
        print(json.dumps(one(args.model, int(threads), pinned == "1", args.passes)))
        return

    from pipeline.cpu import cpu

    cores = cpu().cores
    print(f"CPU: {cpu().describe()}; {args.model}, f32 encoder, median of {args.passes} passes a process")
    print()
    print("| processes × threads | pinned (ms a pass, each process) | not pinned |")
    print("|---|---|---|")
    for processes, threads in sorted({(1, 1), (1, cores), (2, 1), (2, cores), (cores, 1)}):
        cells = []
        for pinned in ("1", "0"):
            command = [sys.executable, __file__, "--model", args.model, "--passes", str(args.passes), "--one"]
            children = [
                subprocess.Popen([*command, f"{threads},{pinned}"], stdout=subprocess.PIPE, text=True)
                for _ in range(processes)
            ]
            cells.append(", ".join(f"{json.loads(c.communicate()[0]):.0f}" for c in children))
        print(f"| {processes} × {threads} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
