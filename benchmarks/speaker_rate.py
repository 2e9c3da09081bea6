"""What speaker turns cost in arithmetic on the CPU at hand, and how near the CPU's own ceiling the encoder runs.

    python benchmarks/speaker_rate.py [--threads 1] [--passes 10] [--clip tests/data/en_ami_trn06.flac]

CAM++ (pipeline/speakers/embeddings.py) embeds a 1.6-s window for every second of speech; its multiply-adds are
counted from the IR's convolutions and products at the batch the turns run (BATCH windows of 160 frames). Each row
times that batch (the least of --passes, after one pass not counted) at one inference precision, and one product of
two 2048 x 2048 matrices on the same threads and precision: the rate this CPU reaches on a plain product, the
ceiling a network of convolutions can hope to approach. segmentation-3.0 (pipeline/speakers/segmentation.py) is
timed on the clip's 10-s chunks, 8 at a time, as the turns run it (an LSTM: it does not run at a product's rate).
The last column is the models' CPU time for a minute of speech: a window every TURN_STEP and a chunk every
SEGMENT_STEP (60 and 12). The windows are the clip's speech (repeated if it is under 33 s); the CPU's model and flags
head the table. On 2 cores, compare it with the transcription's CPU time: the turns add theirs (docs/speakers.md,
*What the targets can reach*).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openvino as ov  # noqa: E402
import openvino.opset13 as ops  # noqa: E402

from convert.speaker import ensure_speaker_ir  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import load_audio  # noqa: E402
from pipeline.speakers.embeddings import BATCH, SAMPLE_RATE, SpeakerEncoder, window_features  # noqa: E402
from pipeline.speakers.segmentation import Segmenter  # noqa: E402
from pipeline.speakers.turns import embedding_windows  # noqa: E402
from pipeline.tuning import SEGMENT_STEP, TURN_STEP  # noqa: E402

SIDE = 2048  # the product's matrices


def multiply_adds(model: ov.Model) -> int:
    """The multiply-adds of a model's convolutions and products, at the shapes it has (static ones)."""
    total = 0
    for op in model.get_ordered_ops():
        kind = op.get_type_name()
        if kind not in ("Convolution", "GroupConvolution", "MatMul"):
            continue
        out, weights = int(np.prod(list(op.get_output_shape(0)))), list(op.input(1).get_shape())
        if kind == "Convolution":
            total += out * int(np.prod(weights[1:]))  # (out, in, kernel...)
        elif kind == "GroupConvolution":
            total += out * int(np.prod(weights[2:]))  # (groups, out, in, kernel...)
        else:
            first = list(op.input(0).get_shape())
            total += out * (first[-2] if op.get_attributes().get("transpose_a") else first[-1])
    return total


def window_multiply_adds(frames: int) -> float:
    """CAM++'s multiply-adds for one window of `frames` fbank frames, counted at the turns' batch."""
    model = ov.Core().read_model(ensure_speaker_ir() / "speaker.xml")
    model.reshape({0: [BATCH, frames, 80]})
    return multiply_adds(model) / BATCH


def least(run, passes: int) -> float:
    run()
    times = []
    for _ in range(passes):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def product_rate(precision: str, threads: int, passes: int) -> float:
    """GFLOPS of one SIDE x SIDE product on OpenVINO's CPU plugin."""
    rng = np.random.default_rng(0)
    left = ops.parameter([SIDE, SIDE], np.float32)
    right = ops.constant(rng.standard_normal((SIDE, SIDE)).astype(np.float32))
    compiled = ov.Core().compile_model(
        ov.Model([ops.matmul(left, right, False, False)], [left]),
        "CPU",
        {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision},
    )
    request, x = compiled.create_infer_request(), rng.standard_normal((SIDE, SIDE)).astype(np.float32)
    return 2 * SIDE**3 / least(lambda: request.infer({0: x}), passes) / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1, help="as the turns run beside whisper (default 1)")
    p.add_argument("--passes", type=int, default=10)
    p.add_argument("--clip", type=Path, default=ROOT / "tests" / "data" / "en_ami_trn06.flac")
    args = p.parse_args()

    audio = load_audio(args.clip)
    need = (BATCH + 1) * SAMPLE_RATE  # (a short clip is repeated: still its speech)
    audio = np.tile(audio, -(-need // len(audio)))
    spans = embedding_windows([(0.0, len(audio) / SAMPLE_RATE)])[:BATCH]
    batch = np.stack(window_features(audio, spans))
    macs = window_multiply_adds(batch.shape[1])
    segmenter = Segmenter(args.threads)
    chunks = len(segmenter.segment(audio).starts)
    per_chunk = least(lambda: segmenter.segment(audio), args.passes) / chunks

    info = cpu()
    print(f"CPU: {info.describe()}; OpenVINO {ov.get_version()}; {args.threads} thread(s); clip {args.clip.name}")
    print(f"CAM++: {macs / 1e9:.2f} G multiply-adds a 1.6-s window; segmentation-3.0: {per_chunk * 1e3:.1f} ms a "
          f"10-s chunk (auto precision, {chunks} chunks)\n")  # fmt: skip
    print("| precision | encoder, ms a window | encoder GFLOPS | 2048² product GFLOPS | encoder / product "
          "| CPU s a minute of speech |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for precision in ["bf16", "f32"] if info.has_bf16 else ["f32"]:
        encoder = SpeakerEncoder(args.threads, precision=precision)
        window = least(lambda e=encoder: e.frames(batch), args.passes) / BATCH
        rate, ceiling = 2 * macs / window / 1e9, product_rate(precision, args.threads, args.passes)
        minute = 60 / TURN_STEP * window + 60 / SEGMENT_STEP * per_chunk
        print(
            f"| {precision} | {window * 1e3:.2f} | {rate:.0f} | {ceiling:.0f} | {rate / ceiling:.0%} | {minute:.2f} |"
        )


if __name__ == "__main__":
    main()
