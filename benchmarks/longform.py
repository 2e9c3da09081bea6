"""Long-form speed and accuracy: every English clip of ../shared/eval joined into one recording (~9-10 min).

    python benchmarks/longform.py [--eval-dir ../shared/eval] [--engines ours,ours-greedy,openai,faster-whisper]

Prints a table: engine, WER (whisper's EnglishTextNormalizer, pooled), wall time, real-time factor, peak RSS.
All engines use the same weights (the embedded Whisper base). Run them in one invocation: the machine is noisy,
so compare ratios within one run rather than numbers across runs.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.media import SAMPLE_RATE, load_audio  # noqa: E402

GAP_SECONDS = 1.5


def compose(eval_dir: Path, language: str = "en") -> tuple[np.ndarray, list[str]]:
    rows = list(csv.DictReader(open(eval_dir / "manifest.tsv", encoding="utf-8"), delimiter="\t"))
    pieces, refs = [], []
    gap = np.zeros(int(GAP_SECONDS * SAMPLE_RATE), np.float32)
    for row in rows:
        if row["language"] != language:
            continue
        pieces += [load_audio(eval_dir / row["file"]), gap]
        refs.append(row["reference_text"])
    return np.concatenate(pieces), refs


def wer(reference: str, hypothesis: str) -> float:
    import jiwer
    from whisper.normalizers import EnglishTextNormalizer

    norm = EnglishTextNormalizer()
    return jiwer.wer(norm(reference), norm(hypothesis))


def run_ours(audio: np.ndarray, beam_size: int | None, precision: str = "f32") -> str:
    from pipeline.model import ModelOptions, load_model
    from pipeline.transcribe import TranscribeOptions, transcribe

    model = load_model(ModelOptions(precision=precision))
    segments, _ = transcribe(audio, model, TranscribeOptions(language="en", beam_size=beam_size))
    return " ".join(s.text for s in segments)


def run_openai(audio: np.ndarray, beam_size: int | None) -> str:
    import whisper

    from convert.checkpoints import resolve_checkpoint

    model = resolve_checkpoint("base").load()
    result = whisper.transcribe(model, audio, language="en", beam_size=beam_size, best_of=5, fp16=False)
    return " ".join(s["text"] for s in result["segments"])


def run_faster_whisper(audio: np.ndarray, beam_size: int | None) -> str:
    from faster_whisper import WhisperModel

    from convert.checkpoints import write_embedded_ct2_dir

    with tempfile.TemporaryDirectory() as d:
        write_embedded_ct2_dir(Path(d))
        model = WhisperModel(d, device="cpu", compute_type="float32", cpu_threads=os.cpu_count() or 2)
        segments, _ = model.transcribe(audio, language="en", beam_size=beam_size or 1)
        return " ".join(s.text for s in segments)


ENGINES = {
    "ours": lambda a: run_ours(a, 5),
    "ours-greedy": lambda a: run_ours(a, None),
    "ours-greedy-bf16": lambda a: run_ours(a, None, "bf16"),
    "openai": lambda a: run_openai(a, 5),
    "openai-greedy": lambda a: run_openai(a, None),
    "faster-whisper": lambda a: run_faster_whisper(a, 5),
    "faster-whisper-greedy": lambda a: run_faster_whisper(a, None),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    p.add_argument("--engines", default="ours,ours-greedy,openai,faster-whisper", help=",".join(ENGINES))
    args = p.parse_args()
    audio, refs = compose(args.eval_dir)
    duration = len(audio) / SAMPLE_RATE
    print(f"{len(refs)} clips, {duration / 60:.1f} min of audio", file=sys.stderr)
    rows = []
    for name in args.engines.split(","):
        # each engine in a child process, so peak memory and caches do not leak from one to the next
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            started = time.monotonic()
            text = ENGINES[name](audio)
            elapsed = time.monotonic() - started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            os.write(w, f"{elapsed}\t{peak}\t{text}".encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.waitpid(pid, 0)
        elapsed, peak, text = data.decode().split("\t", 2)
        rows.append((name, wer(" ".join(refs), text), float(elapsed), float(peak)))
        print(f"done {name}", file=sys.stderr)
    print(f"\nLong-form, {duration / 60:.1f} min English composition ({len(refs)} clips), {os.cpu_count()} CPU cores\n")
    print("| engine | WER | wall time (s) | real-time factor | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    for name, w_, elapsed, peak in rows:
        print(f"| {name} | {100 * w_:.1f} % | {elapsed:.1f} | {elapsed / duration:.3f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
