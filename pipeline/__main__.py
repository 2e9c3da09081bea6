"""Command line: python -m pipeline INPUT [INPUT ...] [--output-dir DIR] [--format srt,vtt] [--model base] ..."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pipeline.errors import SubtitleError
from pipeline.jobs import subtitle_file, write_outputs
from pipeline.media import require_audio
from pipeline.model import ModelOptions, load_model
from pipeline.subtitles import FORMATS, format_timestamp
from pipeline.transcribe import TranscribeOptions, normalize_language


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pipeline",
        description="Write subtitles for video or audio files with Whisper on OpenVINO (CPU).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="video or audio files")
    p.add_argument("--output-dir", "-o", type=Path, default=Path("."), help="where DIR/<input stem>.<ext> is written")
    p.add_argument("--format", "-f", default="srt", help=f"comma-separated: {','.join(FORMATS)}")
    p.add_argument(
        "--model",
        "-m",
        default="base",
        help="model name (tiny … large-v3, turbo), .pt file, or faster-whisper directory",
    )
    p.add_argument(
        "--language", "-l", default="auto", help="spoken language: auto, or a code/name such as en, de, Spanish"
    )
    p.add_argument(
        "--task", choices=("transcribe", "translate"), default="transcribe", help="translate gives English text"
    )
    p.add_argument(
        "--beam-size", type=int, default=TranscribeOptions.beam_size, help="beam width; 1 for greedy (faster)"
    )
    p.add_argument("--initial-prompt", default=None, help="words or style to prime the first window with")
    p.add_argument("--no-condition-on-previous-text", action="store_true", help="decode each window independently")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    say = (lambda message: None) if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    try:
        formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
        if not formats or any(f not in FORMATS for f in formats):
            raise SubtitleError(f"--format {args.format!r} is not valid: choose from {','.join(FORMATS)}")
        options = TranscribeOptions(
            language=normalize_language(args.language),
            task=args.task,
            beam_size=None if args.beam_size <= 1 else args.beam_size,
            initial_prompt=args.initial_prompt,
            condition_on_previous_text=not args.no_condition_on_previous_text,
        )
        for path in args.inputs:  # fail in a second, before the model loads, when an input is unusable
            require_audio(path)
        model = load_model(ModelOptions(model=args.model), progress=say)
        for path in args.inputs:
            started = time.monotonic()
            say(f"{path.name}: transcribing")

            def show(segment, duration):
                say(
                    f"  [{format_timestamp(segment.start)} --> {format_timestamp(segment.end)}] {segment.text}"
                    f"  ({100 * min(segment.end / max(duration, 1e-9), 1):.0f}%)"
                )

            result = subtitle_file(path, model, options, on_segment=show)
            for written in write_outputs(result, formats, args.output_dir, path.stem):
                say(f"{path.name}: wrote {written}")
            say(
                f"{path.name}: {result.info.duration:.1f} s of {result.info.language} audio in {time.monotonic() - started:.1f} s"
            )
    except SubtitleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
