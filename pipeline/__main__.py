"""Command line: python -m pipeline INPUT [INPUT ...] [--output-dir DIR] [--format srt,vtt] [--model base] ..."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from pipeline.cpu import PRECISIONS
from pipeline.errors import SubtitleError
from pipeline.jobs import subtitle_file, write_outputs
from pipeline.media import load_audio, require_audio
from pipeline.model import ModelOptions, OVWhisper, load_model
from pipeline.render import BurnOptions, Style, burn, can_mux_mp4, mux_soft, to_ass
from pipeline.segment import CueRules
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
        "--precision",
        choices=PRECISIONS,
        default=ModelOptions.precision,
        help="int8 weights, bf16 (CPUs with AVX512-BF16 or AMX) or f32; auto picks the fastest for this CPU",
    )
    p.add_argument(
        "--threads", type=int, default=0, help="CPU threads for inference; 0: every core this process may use"
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
    p.add_argument(
        "--batch-size",
        type=int,
        default=TranscribeOptions.batch_size,
        help="windows decoded at once: long recordings are cut at pauses into this many parts, decoded side by side",
    )
    p.add_argument("--initial-prompt", default=None, help="words or style to prime the first window with")
    p.add_argument("--no-condition-on-previous-text", action="store_true", help="decode each window independently")
    p.add_argument(
        "--no-vad",
        action="store_true",
        help="no voice activity detection: fixed 30-s windows, and text is kept wherever whisper finds it",
    )
    p.add_argument(
        "--vad-threshold", type=float, default=TranscribeOptions.vad_threshold, help="speech probability of a frame"
    )
    rules = CueRules()
    p.add_argument("--no-cue-rules", action="store_true", help="keep whisper's segments as cues (no line/CPS rules)")
    p.add_argument("--max-line-chars", type=int, default=rules.max_line_chars, help="characters per line in a cue")
    p.add_argument("--max-lines", type=int, default=rules.max_lines, help="lines per cue")
    p.add_argument("--max-cps", type=float, default=rules.max_cps, help="reading speed, characters per second")
    p.add_argument(
        "--word-timestamps", action="store_true", help="time every word (on whenever the JSON format is written)"
    )
    p.add_argument(
        "--burn", action="store_true", help="also write DIR/<stem>.subtitled.mp4 with the subtitles burned in"
    )
    p.add_argument("--preview", type=float, default=None, metavar="SECONDS", help="burn only the first SECONDS (fast)")
    p.add_argument(
        "--soft",
        action="store_true",
        help="also write DIR/<stem>.subs.mkv and .subs.mp4 with a subtitle track (no re-encode)",
    )
    style = p.add_argument_group("burn-in style")
    style.add_argument(
        "--font-size", type=float, default=Style.font_size, help="text height / the video's shorter side"
    )
    style.add_argument("--position", choices=("bottom", "top"), default=Style.position)
    style.add_argument("--text-colour", default=Style.text_colour, metavar="#RRGGBB")
    style.add_argument("--outline-colour", default=Style.outline_colour, metavar="#RRGGBB", help="outline, or box")
    style.add_argument("--box", action="store_true", help="a translucent box behind the text instead of an outline")
    style.add_argument(
        "--margin", type=float, default=None, help="distance from the edge / the height (default 0.06; 0.15 vertical)"
    )
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
            word_timestamps=args.word_timestamps or "json" in formats,
            vad=not args.no_vad,
            vad_threshold=args.vad_threshold,
            batch_size=args.batch_size,
        )
        if not 0 < args.vad_threshold < 1:
            raise SubtitleError("--vad-threshold is a probability: use a number between 0 and 1, such as 0.5")
        rules = (
            None
            if args.no_cue_rules
            else CueRules(max_line_chars=args.max_line_chars, max_lines=args.max_lines, max_cps=args.max_cps)
        )
        burn_options = BurnOptions(
            style=Style(args.font_size, args.position, args.text_colour, args.outline_colour, args.box, args.margin),
            preview_seconds=args.preview,
        )
        to_ass([], 640, 360, burn_options.style)  # a bad colour or position fails now, not after transcribing
        if args.preview is not None and (args.preview <= 0 or not args.burn):
            raise SubtitleError("--preview takes a positive number of seconds and goes with --burn")
        model_options = ModelOptions(args.model, args.precision, args.threads)
        for path in args.inputs:  # fail in a second, before the model loads, when an input is unusable
            media = require_audio(path)
            if args.burn and not media.has_video:
                raise SubtitleError(f"{path.name} has no picture to burn subtitles into: leave out --burn")
        with ThreadPoolExecutor(1) as pool:  # ffmpeg decodes the next input while the model loads or transcribes
            decoding = pool.submit(load_audio, args.inputs[0])
            model = load_model(model_options, progress=say)
            for k, path in enumerate(args.inputs):
                audio = decoding.result()
                if k + 1 < len(args.inputs):
                    decoding = pool.submit(load_audio, args.inputs[k + 1])
                _subtitle(args, path, audio, model, options, rules, formats, burn_options, say)
    except SubtitleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


def _subtitle(
    args: argparse.Namespace,
    path: Path,
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions,
    rules: CueRules | None,
    formats: list[str],
    burn_options: BurnOptions,
    say: Callable[[str], None],
) -> None:
    """One input: transcribe, write the subtitle files, and burn or mux when asked."""
    started = time.monotonic()
    say(f"{path.name}: transcribing")

    def show(segment, duration):
        say(
            f"  [{format_timestamp(segment.start)} --> {format_timestamp(segment.end)}] {segment.text}"
            f"  ({100 * min(segment.end / max(duration, 1e-9), 1):.0f}%)"
        )

    result = subtitle_file(path, model, options, on_segment=show, rules=rules, audio=audio)
    for written in write_outputs(result, formats, args.output_dir, path.stem):
        say(f"{path.name}: wrote {written}")
    language = result.info.language
    if args.burn:
        say(f"{path.name}: burning in the subtitles")
        target = args.output_dir / f"{path.stem}.subtitled.mp4"
        burned = burn(path, result.segments, target, language, burn_options, duration=result.info.duration)
        say(f"{path.name}: wrote {burned}")
    if args.soft:
        for suffix in (".subs.mkv", ".subs.mp4") if can_mux_mp4(result.media) else (".subs.mkv",):
            muxed = mux_soft(path, result.segments, args.output_dir / (path.stem + suffix), language)
            say(f"{path.name}: wrote {muxed}")
    say(
        f"{path.name}: {result.info.duration:.1f} s of {result.info.language} audio in {time.monotonic() - started:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
