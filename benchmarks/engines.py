"""The other engines as their users run them, for benchmarks/speed.py: one process per transcription.

    python benchmarks/engines.py faster-whisper|openai-whisper COMPUTE_TYPE BEAM_SIZE THREADS AUDIO OUT_DIR [BATCH]

With BATCH, faster-whisper runs as its BatchedInferencePipeline (the mode Whisper-WebUI and WhisperX run: its own
voice activity detection cuts the audio into chunks of up to 30 s, decoded BATCH at a time, without timestamps).
Both load the embedded Whisper base (the weights ours uses): faster-whisper from its CTranslate2 directory,
openai-whisper from the same weights converted to PyTorch. Writes OUT_DIR/transcript.txt and prints each segment on
stderr as `[HH:MM:SS.mmm --> ...] text`, as it is decoded.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def stamp(seconds: float) -> str:
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}"


def main() -> None:
    engine, compute_type, beam_size, threads, audio, out = sys.argv[1:7]
    batch = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    texts = []
    if engine == "faster-whisper":
        from faster_whisper import WhisperModel

        from convert.checkpoints import write_embedded_ct2_dir

        with tempfile.TemporaryDirectory() as d:
            write_embedded_ct2_dir(Path(d))
            model = WhisperModel(d, device="cpu", compute_type=compute_type, cpu_threads=int(threads))
            if batch:
                from faster_whisper import BatchedInferencePipeline

                pipeline = BatchedInferencePipeline(model)
                segments, _ = pipeline.transcribe(audio, language="en", beam_size=int(beam_size), batch_size=batch)
            else:
                segments, _ = model.transcribe(audio, language="en", beam_size=int(beam_size))
            for s in segments:  # lazy: each segment as it is decoded
                print(f"[{stamp(s.start)} --> {stamp(s.end)}] {s.text}", file=sys.stderr, flush=True)
                texts.append(s.text)
    elif engine == "openai-whisper":
        import torch
        import whisper

        from convert.checkpoints import resolve_checkpoint
        from pipeline.media.audio import load_audio

        torch.set_num_threads(int(threads))
        model = resolve_checkpoint("base").load()
        samples = load_audio(Path(audio))  # whisper would call a system ffmpeg; this is the same decode, ours
        result = whisper.transcribe(
            model, samples, language="en", beam_size=int(beam_size), best_of=5, fp16=False, verbose=None
        )
        texts = [s["text"] for s in result["segments"]]
    else:
        sys.exit(f"unknown engine {engine}")
    Path(out, "transcript.txt").write_text(" ".join(texts), encoding="utf-8")


if __name__ == "__main__":
    main()
