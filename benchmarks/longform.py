"""Long-form speed and accuracy: every English clip of ../shared/eval joined into one recording (~9-10 min).

    python benchmarks/longform.py [--eval-dir ../shared/eval] [--engines ours,ours-per-clip,openai,faster-whisper]

Prints a table: engine, WER (whisper's EnglishTextNormalizer, pooled), wall time, real-time factor, peak RSS.
"ours-per-clip" transcribes each clip on its own (the per-clip WER that long-form should match); "ours-no-vad"
turns voice activity detection off. Engines whose name ends in "-cues" run the whole subtitle path (word timing,
cue rules) and add a second table: cues, how many pass `pipeline.subtitles.check`, and how close cue starts are to each clip's
speech onset (benchmarks/composition.py).
All engines use the same weights (the embedded Whisper base). Run them in one invocation: the machine is noisy,
so compare ratios within one run rather than numbers across runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.composition import Composition, compose, load_clips, onset_errors, wer  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE  # noqa: E402

GAP_SECONDS = 1.5


def compose_eval(eval_dir: Path, language: str = "en", gap: float = GAP_SECONDS) -> Composition:
    """Every clip of the language, in manifest order, with `gap` seconds of silence after each."""
    return compose(load_clips(eval_dir, language=language), gap)


def run_ours(audio: np.ndarray, beam_size: int | None, precision: str = "f32", vad: bool = True) -> str:
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import ModelOptions, TranscribeOptions
    from pipeline.asr.transcribe import transcribe

    model = load_model(ModelOptions(precision=precision))
    segments, _ = transcribe(audio, model, TranscribeOptions(language="en", beam_size=beam_size, vad=vad))
    return " ".join(s.text for s in segments)


def run_ours_per_clip(comp: Composition) -> str:
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import TranscribeOptions
    from pipeline.asr.transcribe import transcribe

    model = load_model()
    texts = []
    for clip in comp.clips:
        segments, _ = transcribe(clip.audio, model, TranscribeOptions(language="en"))
        texts += [s.text for s in segments]
    return " ".join(texts)


def run_ours_cues(comp: Composition, vad: bool) -> tuple[str, str]:
    """The CLI's path (word timing and cue rules); returns (text, cue statistics)."""
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import TranscribeOptions
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.subtitles.check import check, parse_srt
    from pipeline.subtitles.formats import to_srt

    result = subtitle_audio(comp.audio, load_model(), TranscribeOptions(language="en", vad=vad))
    cues = parse_srt(to_srt(result.cues))
    broken = len({p.index for p in check(cues)})
    errors = np.abs(onset_errors([c.start for c in result.cues], comp.onsets))
    stats = (
        f"{len(cues)} | {100 * (1 - broken / max(len(cues), 1)):.1f} % | {100 * np.mean(errors <= 0.3):.0f} % | "
        f"{np.median(errors):.2f} | {np.percentile(errors, 90):.2f}"
    )
    return " ".join(c.text.replace("\n", " ") for c in result.cues), stats


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


ENGINES = {  # each takes the Composition and returns the text, or (text, cue statistics)
    "ours": lambda c: run_ours(c.audio, 5),
    "ours-no-vad": lambda c: run_ours(c.audio, 5, vad=False),
    "ours-per-clip": run_ours_per_clip,
    "ours-cues": lambda c: run_ours_cues(c, vad=True),
    "ours-no-vad-cues": lambda c: run_ours_cues(c, vad=False),
    "ours-greedy": lambda c: run_ours(c.audio, None),
    "ours-greedy-bf16": lambda c: run_ours(c.audio, None, "bf16"),
    "openai": lambda c: run_openai(c.audio, 5),
    "openai-greedy": lambda c: run_openai(c.audio, None),
    "faster-whisper": lambda c: run_faster_whisper(c.audio, 5),
    "faster-whisper-greedy": lambda c: run_faster_whisper(c.audio, None),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    p.add_argument("--engines", default="ours,ours-per-clip,openai,faster-whisper", help=",".join(ENGINES))
    p.add_argument("--gap", type=float, default=GAP_SECONDS, help="seconds of silence after each clip")
    args = p.parse_args()
    comp = compose_eval(args.eval_dir, gap=args.gap)
    duration = comp.audio.size / SAMPLE_RATE
    print(f"{len(comp.clips)} clips, {duration / 60:.1f} min of audio", file=sys.stderr)
    rows, cue_rows = [], []
    for name in args.engines.split(","):
        # each engine in a child process, so peak memory and caches do not leak from one to the next
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            started = time.monotonic()
            out = ENGINES[name](comp)
            text, stats = out if isinstance(out, tuple) else (out, "")
            elapsed = time.monotonic() - started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            os.write(w, f"{elapsed}\t{peak}\t{stats}\t{text}".encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.waitpid(pid, 0)
        elapsed, peak, stats, text = data.decode().split("\t", 3)
        rows.append((name, wer(comp.reference, text), float(elapsed), float(peak)))
        if stats:
            cue_rows.append((name, stats))
        print(f"done {name}", file=sys.stderr)
    print(
        f"\nLong-form, {duration / 60:.1f} min English composition ({len(comp.clips)} clips, {args.gap} s gaps), "
        f"{os.cpu_count()} CPU cores\n"
    )
    print("| engine | WER | wall time (s) | real-time factor | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    for name, w_, elapsed, peak in rows:
        print(f"| {name} | {100 * w_:.1f} % | {elapsed:.1f} | {elapsed / duration:.3f} | {peak:.0f} |")
    if cue_rows:
        print(f"\nCues (default rules) and their starts against the {len(comp.clips)} utterance onsets\n")
        print(
            "| engine | cues | pass pipeline.subtitles.check | starts within 0.3 s | median abs error (s) | 90th pct (s) |"
        )
        print("|---|---|---|---|---|---|")
        for name, stats in cue_rows:
            print(f"| {name} | {stats} |")


if __name__ == "__main__":
    main()
