"""OpenVINO GenAI's WhisperPipeline as its users run it: a 16-kHz WAV in, plain text out (benchmarks/speed.py).

usage: python run.py MODEL_DIR AUDIO.wav OUT.txt [--beams N] [--threads 2] [--precision default|f32|bf16]
                     [--language en] [--no-timestamps] [--segments SEG.txt]

Runs in its own venv (see setup.sh: openvino-genai, and optimum-intel for the export). Timing lines (load,
generate, GenAI's own metrics) go to stderr; the transcript to OUT.
"""

import argparse
import sys
import time

import numpy as np

SR = 16000


def load_audio(path: str) -> np.ndarray:
    """16-kHz mono float32 from a 16-kHz WAV (benchmarks/speed.py writes them)."""
    import soundfile as sf

    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    if rate != SR:
        raise SystemExit(f"{path}: {rate} Hz, expected {SR}")
    return np.ascontiguousarray(audio.mean(axis=1), dtype=np.float32)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("audio")
    ap.add_argument("out")
    ap.add_argument("--beams", type=int, default=1, help="1 = greedy")
    ap.add_argument("--threads", type=int, default=2, help="INFERENCE_NUM_THREADS")
    ap.add_argument(
        "--precision",
        choices=["default", "f32", "bf16"],
        default="default",
        help="INFERENCE_PRECISION_HINT (+KV_CACHE_PRECISION for f32) for encoder AND decoder; "
        "default = the CPU plugin's own choice (bf16 on CPUs with AMX/AVX512-BF16)",
    )
    ap.add_argument("--language", default="en")
    ap.add_argument("--no-timestamps", action="store_true", help="return_timestamps=False (audio must be <= 30 s)")
    ap.add_argument("--segments", help="also write the timestamped chunks here")
    ap.add_argument(
        "--max-new-tokens", type=int, default=224, help="per 30 s window (openai-whisper: 224); 0 = GenAI default"
    )
    args = ap.parse_args()

    import openvino_genai as ov_genai

    t0 = time.perf_counter()
    audio = load_audio(args.audio)
    t_audio = time.perf_counter() - t0

    props = {"INFERENCE_NUM_THREADS": args.threads}
    if args.precision == "f32":
        props.update(INFERENCE_PRECISION_HINT="f32", KV_CACHE_PRECISION="f32")
    elif args.precision == "bf16":
        props.update(INFERENCE_PRECISION_HINT="bf16")
    t0 = time.perf_counter()
    pipe = ov_genai.WhisperPipeline(args.model_dir, "CPU", **props)
    t_load = time.perf_counter() - t0

    config = pipe.get_generation_config()
    config.language = f"<|{args.language.strip('<|>')}|>"
    config.task = "transcribe"
    config.return_timestamps = not args.no_timestamps
    config.num_beams = args.beams
    if args.beams > 1:
        config.num_return_sequences = 1
    if args.max_new_tokens > 0:  # GenAI applies it per window (one SequenceGroup per 30 s window)
        config.max_new_tokens = args.max_new_tokens  # openai-whisper's sample_len: n_text_ctx // 2

    t0 = time.perf_counter()
    result = pipe.generate(audio, config)
    t_gen = time.perf_counter() - t0

    text = result.texts[0].strip()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    if args.segments and result.chunks:
        with open(args.segments, "w", encoding="utf-8") as f:
            for c in result.chunks:
                f.write(f"[{c.start_ts:7.2f} -> {c.end_ts:7.2f}] {c.text.strip()}\n")

    pm = result.perf_metrics
    print(
        f"audio={len(audio) / SR:.2f}s audio_load={t_audio:.3f}s load={t_load:.3f}s generate={t_gen:.3f}s "
        f"rtf={t_gen / (len(audio) / SR):.4f} beams={args.beams} threads={args.threads} precision={args.precision}",
        file=sys.stderr,
    )
    try:
        print(
            f"genai: features={pm.get_features_extraction_duration().mean:.1f}ms "
            f"ttft={pm.get_ttft().mean:.1f}ms tpot={pm.get_tpot().mean:.2f}ms "
            f"generate_total={pm.get_generate_duration().mean:.1f}ms tokens={pm.get_num_generated_tokens()}",
            file=sys.stderr,
        )
    except Exception as e:  # perf metric accessors differ between versions; never fail the run for them
        print(f"genai perf metrics unavailable: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
