"""The encoder pass under each setting OpenVINO's CPU plugin offers, on the CPU at hand: what to try on a new CPU.

    python benchmarks/encoder.py [--model base] [--threads N] [--passes 8] [--clip tests/data/...]
                                 [--job REC.wav [--job-rounds 3]]

Then a decoder step under each setting, inside a real decode (greedy and with 5 beams, the settings taking turns);
with --job, inside whole transcriptions of REC (the defaults, the settings taking turns again), where the step runs
after prompts of up to 224 tokens, with timestamps and fallbacks; and the setting `auto` chose here (the first load on a machine measures the encoder's hints: pipeline/asr/measured.py).

The encoder is the floor of our time on CPUs without AVX-512 (0.75-1.7 s a window on 2 AVX2 cores, against
0.17-0.29 s on AVX-512 ones): every window, re-decode and word timing needs its pass. Each row compiles the encoder IR
with one setting and times passes over a real window of speech (the median of --passes, after a first pass that is
not counted), and compares its output, the cross-attention keys and values every decoder step reads, with f32's:
- weights: the IR's storage (f16 is the f32/bf16 precisions' IR, int8 the int8 precision's);
- hint: INFERENCE_PRECISION_HINT, where the CPU has it (bf16: AVX512-BF16 or AMX; f16: AVX512-FP16 or AMX-FP16);
- dynamic quantization: DYNAMIC_QUANTIZATION_GROUP_SIZE for int8 weights (activations quantized to int8 in groups
  of that many values, so the matmuls run on VNNI/AMX int8 units; 0 turns it off);
- pinning: ENABLE_CPU_PINNING; streams: NUM_STREAMS 2 of 1 thread each with two windows in flight (throughput for
  side-by-side windows, as --batch-size decodes them), against one request of all threads.
"error" is the difference from f32's output relative to it (the norm of the difference over f32's norm; f16
rounding alone is 3e-4). A setting
that is faster here is a candidate; benchmarks/precision.py then measures its WER clip by clip before `auto`
(pipeline/cpu.py, pipeline/asr/precision.py resolve_precision) adopts it. The CPU's model and flags head the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openvino as ov  # noqa: E402

from pipeline.asr.compiled import cpu_config  # noqa: E402
from pipeline.asr.measured import median_pass  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402


def settings(info, capabilities: list[str]) -> list[tuple[str, str, dict]]:
    """(name, weights, compile config) of every setting this CPU can run."""
    rows = [("f32", "f16", {"INFERENCE_PRECISION_HINT": "f32"})]
    if info.has_bf16:
        rows.append(("bf16", "f16", {"INFERENCE_PRECISION_HINT": "bf16"}))
    if "FP16" in capabilities:
        rows.append(("f16", "f16", {"INFERENCE_PRECISION_HINT": "f16"}))
    rows.append(("int8 weights, f32", "int8", {"INFERENCE_PRECISION_HINT": "f32"}))
    for group in (0, 32, 128, 256):
        rows.append((f"int8 weights, f32, dynamic quantization {group or 'off'}", "int8",
                     {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": group}))  # fmt: skip
    if info.has_bf16:
        rows.append(("int8 weights, bf16", "int8", {"INFERENCE_PRECISION_HINT": "bf16"}))
    for name, weights, config in list(rows):
        if name in ("f32", "int8 weights, f32"):
            rows.append((f"{name}, pinned", weights, {**config, "ENABLE_CPU_PINNING": True}))
            rows.append((f"{name}, not pinned", weights, {**config, "ENABLE_CPU_PINNING": False}))
    return rows


def streams(compiled: ov.CompiledModel, mel: np.ndarray, passes: int) -> float:
    """Seconds per window with two requests in flight at once (the compiled model's streams run them side by side)."""
    queue = ov.AsyncInferQueue(compiled, 2)
    for _ in range(2):
        queue.start_async({0: mel})
    queue.wait_all()
    started = time.perf_counter()
    for _ in range(passes * 2):
        queue.start_async({0: mel})
    queue.wait_all()
    return (time.perf_counter() - started) / (passes * 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--threads", type=int, default=cpu().cores)
    p.add_argument("--passes", type=int, default=8)
    p.add_argument("--clip", type=Path, default=ROOT / "tests" / "data" / "en_ls_61-70968-0000.flac")
    p.add_argument("--job", type=Path, help="also time the decoder settings inside a whole transcription of this file")
    p.add_argument("--job-rounds", type=int, default=3)
    args = p.parse_args()

    from convert.checkpoints import resolve_checkpoint
    from convert.export import ensure_ir
    from convert.ir_layout import ExportOptions
    from pipeline.asr.mel import log_mel_spectrogram, pad_or_trim
    from pipeline.media.audio import load_audio

    info, core = cpu(), ov.Core()
    capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    checkpoint = resolve_checkpoint(args.model)
    irs = {w: ensure_ir(checkpoint, ExportOptions(weights=w)) for w in ("f16", "int8")}
    n_mels = 128 if "large-v3" in args.model or "turbo" in args.model else 80
    mel = log_mel_spectrogram(pad_or_trim(load_audio(args.clip)), n_mels)[None]
    base = cpu_config(args.threads)  # (what the pipeline compiles with; the rows "pinned" turn pinning on)

    print(f"CPU: {info.describe()}; OpenVINO {ov.get_version()}, capabilities {' '.join(capabilities)}; "
          f"{args.threads} threads; {checkpoint.description}; {args.clip.name}, median of {args.passes} passes")  # fmt: skip
    print()
    print("| setting | weights | ms per window | / f32 | error |")
    print("|---|---|---|---|---|")
    reference = reference_time = None
    for name, weights, config in settings(info, capabilities):
        compiled = core.compile_model(irs[weights] / "encoder.xml", "CPU", {**base, **config})
        seconds, output = median_pass(compiled, mel, passes=args.passes)
        if reference is None:
            reference, reference_time = output, seconds
        error = float(np.linalg.norm(output - reference) / np.linalg.norm(reference))
        print(f"| {name} | {weights} | {1000 * seconds:.0f} | {seconds / reference_time:.2f} | {error:.1e} |",
              flush=True)  # fmt: skip
    for name, weights in (("f32", "f16"), ("int8 weights, f32", "int8")):
        throughput = {**base, "PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2, "INFERENCE_PRECISION_HINT": "f32"}
        compiled = core.compile_model(irs[weights] / "encoder.xml", "CPU", throughput)
        seconds = streams(compiled, mel, args.passes)
        print(f"| {name}, 2 streams, 2 windows in flight | {weights} | {1000 * seconds:.0f} per window | "
              f"{seconds / reference_time:.2f} | |", flush=True)  # fmt: skip
    models = decoder_table(irs, mel[0], args.threads, args.passes)
    if args.job:
        job_table(models, load_audio(args.job), args.job_rounds)
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import ModelOptions

    model = load_model(ModelOptions(model=args.model, threads=args.threads))  # (measures on first use)
    print()
    print(
        f"auto here: {model.precision.name}, " + (model.choice.describe() if model.choice else model.precision.encoder)
    )


def decoder_table(irs: dict, mel, threads: int, passes: int) -> None:
    """A decoder step under each setting, inside a real decode of the window (pipeline.timings counts the steps),
    greedy and with 5 beams (the defaults), and whether its tokens are f32's. The settings take turns, round after
    round, forward then backward (a VM's speed drifts more over a run than the settings differ), and each gives the
    median of its rounds after the first."""
    from pipeline import timings
    from pipeline.asr.compiled import compiled_cache_dir
    from pipeline.asr.model import OVWhisper
    from pipeline.asr.precision import Precision
    from pipeline.asr.task import DecodingOptions

    rows = [("f32", "f16", "f32", "f32"), ("int8 weights, f32", "int8", "f32", "f32")]
    if cpu().has_bf16:
        rows += [
            ("int8 weights, bf16", "int8", "bf16", "f32"),
            ("int8 weights, f32, bf16 cache", "int8", "f32", "bf16"),
        ]
    models = {}
    for name, weights, hint, kv in rows:
        precision = Precision(name=name, weights=weights, encoder="f32", decoder=hint, kv_cache=kv)
        models[name] = OVWhisper(irs[weights], precision, threads, compiled_cache_dir(precision, threads))
    modes = {"greedy": None, "5 beams": 5}
    steps = {(name, mode): [] for name in models for mode in modes}
    tokens = {}
    timings.enable()
    for round_ in range(max(passes // 2, 1) + 1):
        for name in list(models) if round_ % 2 == 0 else list(models)[::-1]:
            for mode, beams in modes.items():
                before = timings.total("decoder")
                options = DecodingOptions(language="en", without_timestamps=True, beam_size=beams)
                tokens[name, mode] = models[name].decode(mel, options).tokens
                seconds, count = (after - earlier for after, earlier in zip(timings.total("decoder"), before))
                if round_:  # (the first round sets up; not counted)
                    steps[name, mode].append(seconds / max(count, 1))
    print()
    print(
        "| decoder setting | weights | ms per step, greedy | / f32 | ms per step, 5 beams | / f32 | tokens as f32's |"
    )
    print("|---|---|---|---|---|---|---|")
    first = next(iter(models))
    for name, weights, _, _ in rows:
        cells = []
        for mode in modes:
            step = statistics.median(steps[name, mode])
            cells += [f"{1000 * step:.1f}", f"{step / statistics.median(steps[first, mode]):.2f}"]
        same = all(tokens[name, mode] == tokens[first, mode] for mode in modes)
        print(f"| {name} | {weights} | {' | '.join(cells)} | {'yes' if same else 'no'} |", flush=True)
    return models


def job_table(models: dict, audio: np.ndarray, rounds: int) -> None:
    """The same decoder settings inside a whole transcription (the defaults: 5 beams, timestamps, prompts,
    fallbacks), the settings taking turns round after round: ms per decoder step, decode time, same text."""
    from pipeline import timings
    from pipeline.asr.options import TranscribeOptions
    from pipeline.asr.transcribe import transcribe

    steps, walls, texts = ({name: [] for name in models} for _ in range(3))
    for round_ in range(rounds):
        for name in list(models) if round_ % 2 == 0 else list(models)[::-1]:
            before = timings.total("decoder")
            started = time.perf_counter()
            segments, _ = transcribe(audio, models[name], TranscribeOptions(language="en"))
            texts[name].append(" ".join(s.text for s in segments))
            walls[name].append(time.perf_counter() - started)
            seconds, count = (after - earlier for after, earlier in zip(timings.total("decoder"), before))
            steps[name].append(seconds / max(count, 1))
    print(f"\nInside a transcription of {audio.size / 16000:.0f} s (defaults), {rounds} rounds taking turns:\n")
    print("| decoder setting | ms per step, median (range) | / fastest | decode s, median | text as the first's |")
    print("|---|---|---|---|---|")
    fastest = min(statistics.median(v) for v in steps.values())
    first = next(iter(models))
    for name in models:
        step = statistics.median(steps[name])
        print(f"| {name} | {1000 * step:.2f} ({1000 * min(steps[name]):.2f}-{1000 * max(steps[name]):.2f}) | "
              f"{step / fastest:.2f} | {statistics.median(walls[name]):.1f} | "
              f"{'yes' if texts[name] == texts[first] else 'no'} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
