"""Command line: python -m pipeline INPUT [INPUT ...] [--output-dir DIR] [--format srt,vtt] [--model base] ...

It builds a JobSpec from its arguments and prints the events of pipeline.jobs.run.run_job, the web app's path too.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from pathlib import Path

from pipeline import timings
from pipeline.asr.options import ModelOptions, TranscribeOptions
from pipeline.cpu import PRECISIONS
from pipeline.errors import OptionError, SubtitleError
from pipeline.files import work_folder
from pipeline.jobs.build import build_spec as job_spec
from pipeline.jobs.executors import add_arguments, executor
from pipeline.jobs.spec import (
    CueDecoded,
    FileDone,
    FileFailed,
    FileSkipped,
    FileWritten,
    JobResult,
    JobSpec,
    Progress,
    SourceFound,
    voices_found,
)
from pipeline.media.audio import hms, media_files
from pipeline.subtitles.ass import Style
from pipeline.subtitles.cues import CueRules
from pipeline.subtitles.formats import LABELS, format_timestamp
from pipeline.subtitles.write import FORMATS

# The flag each option's field comes from, to name it in an error (the options' own messages name no flag)
FLAGS = {"formats": "--format", "language": "--language", "task": "--task", "beam_size": "--beam-size",
         "batch_size": "--batch-size", "vad_threshold": "--vad-threshold", "model": "--model",
         "precision": "--precision", "threads": "--threads", "position": "--position", "text_colour": "--text-colour",
         "outline_colour": "--outline-colour", "font_size": "--font-size", "margin": "--margin",
         "preview_seconds": "--preview", "subtitles": "--subtitles", "highlight_colour": "--highlight-colour",
         "workers": "--workers", "ray": "--ray"}  # fmt: skip


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default in its help, unless it has none or its help says it already."""

    def _get_help_string(self, action):
        if action.default is None or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pipeline" if Path(sys.argv[0]).name == "__main__.py" else Path(sys.argv[0]).name,
        description="Write subtitles for video or audio files with Whisper on OpenVINO (CPU).",
        formatter_class=_Defaults,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="video or audio files, folders of them (searched recursively), or links (http/https)",
    )
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
        help="windows decoded at once: long recordings are cut at pauses into this many parts, decoded side by side "
        "(--beam-size 1 --batch-size 8 is the fast mode)",
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
        "--speakers",
        default="off",
        metavar="auto|N|off",
        help="find who speaks when and start a new cue when the speaker changes: auto finds how many speak",
    )
    p.add_argument(
        "--speaker-labels",
        choices=LABELS,
        default=JobSpec.labels,
        help="how a change of speaker shows: only a new cue, dialogue dashes, or the speaker's name",
    )
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
    style = p.add_argument_group("style: of the burned-in video and of .ass files")
    style.add_argument(
        "--font-size", type=float, default=100 * Style.font_size, metavar="PERCENT",
        help="text height, in %% of the video's shorter side, as on the page",
    )  # fmt: skip
    style.add_argument("--position", choices=("bottom", "top"), default=Style.position)
    style.add_argument("--text-colour", default=Style.text_colour, metavar="#RRGGBB")
    style.add_argument("--outline-colour", default=Style.outline_colour, metavar="#RRGGBB", help="outline, or box")
    style.add_argument("--box", action="store_true", help="a translucent box behind the text instead of an outline")
    style.add_argument("--speaker-colours", action="store_true", help="each speaker's lines in a colour of their own")
    style.add_argument(
        "--highlight-words",
        action="store_true",
        help="light up each word as it is spoken: .ass karaoke, the burned-in video, WebVTT word times",
    )
    style.add_argument("--highlight-colour", default=Style.highlight_colour, metavar="#RRGGBB")
    style.add_argument(
        "--margin", type=float, default=None, metavar="PERCENT",
        help="distance from the edge, in %% of the height (default: 6, or 15 for vertical video)",
    )  # fmt: skip
    p.add_argument(
        "--subtitles",
        type=Path,
        metavar="FILE",
        help="an SRT, WebVTT or ASS file to use instead of transcribing (one input; with --burn, --soft or --format); "
        "an ASS file burns in with its own styles",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="redo inputs whose outputs are already there (by default they are skipped: a stopped batch resumes)",
    )
    add_arguments(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.add_argument("--timings", action="store_true", help="print where the time went, stage by stage, at the end")
    return p.parse_args(argv)


def build_spec(args: argparse.Namespace) -> JobSpec:
    """The job the arguments ask for; an OptionError names the field that is wrong."""
    if args.preview is not None and not args.burn:
        raise OptionError("preview_seconds", "A preview is a burned-in one: add --burn")
    inputs: list[Path | str] = []
    for x in args.inputs:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", x):
            inputs.append(x)
        elif Path(x).is_dir():  # a whole archive: its media files, recursively
            found = media_files(Path(x))
            if not found:
                raise SubtitleError(f"{Path(x).name or x} holds no video or audio files")
            inputs += found
        else:
            inputs.append(Path(x))
    return job_spec(
        inputs=tuple(inputs),
        model=args.model,
        precision=args.precision,
        threads=args.threads,
        language=args.language,
        task=args.task,
        beam_size=args.beam_size,
        initial_prompt=args.initial_prompt,
        condition_on_previous_text=not args.no_condition_on_previous_text,
        word_timestamps=args.word_timestamps,
        vad=not args.no_vad,
        vad_threshold=args.vad_threshold,
        batch_size=args.batch_size,
        cue_rules=not args.no_cue_rules,
        max_line_chars=args.max_line_chars,
        max_lines=args.max_lines,
        max_cps=args.max_cps,
        formats=args.format.split(","),
        burn_in=("preview" if args.preview is not None else "full") if args.burn else "none",
        preview_seconds=args.preview,
        font_size=args.font_size / 100,
        position=args.position,
        text_colour=args.text_colour,
        outline_colour=args.outline_colour,
        box=args.box,
        margin=None if args.margin is None else args.margin / 100,
        speaker_colours=args.speaker_colours,
        highlight_words=args.highlight_words,
        highlight_colour=args.highlight_colour,
        soft=args.soft,
        subtitles=args.subtitles,
        overwrite=args.overwrite,
        speakers=args.speakers,
        speaker_labels=args.speaker_labels,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.timings:
        timings.enable()
        timings.add("imports", time.perf_counter() - timings.STARTED)
    say = (lambda message: None) if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    try:
        spec = build_spec(args)
        if args.workers is not None and (args.ray is None or args.workers < 1):
            raise OptionError("workers", "a number of Ray workers, 1 or more, goes with --ray")
        with (
            work_folder("subtitle-downloads") as downloads,  # links' media, removed after
            executor(args.ray, args.workers, ModelOptions(threads=args.threads)) as runner,
        ):
            result = _print(runner.run(spec, args.output_dir, work_dir=downloads), say, len(spec.inputs))
    except OptionError as e:
        flag = FLAGS.get(e.option)
        where = f"{flag}: " if flag else ""
        print(f"error: {where}{e}", file=sys.stderr)
        return 2
    except SubtitleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    if len(spec.inputs) > 1 or result.skipped:
        say(summary(result))
    if args.timings:
        print(timings.report(), file=sys.stderr)
    return 2 if result.failed else 0


def summary(result: JobResult) -> str:
    """The batch in a few lines: done (with hours of audio), skipped, and each failure with its reason."""
    hours = sum(f.result.info.duration for f in result.files) / 3600
    lines = [f"{len(result.files)} done ({hours:.2f} h of audio), {len(result.skipped)} skipped (done before), "
             f"{len(result.failed)} failed"]  # fmt: skip
    lines += [f"  failed: {f.name}: {f.message}" for f in result.failed]
    return "\n".join(lines)


def _print(events, say, inputs: int) -> JobResult:
    """Show the job's events on stderr; return its result. Failures are printed even with --quiet. A batch gets a
    line each time an input is done: files and hours of audio done, and the time left."""
    names: dict[int, str] = {}
    shown: set[str] = set()  # (stages: with workers side by side, their stages come interleaved)
    ended, audio, left = 0, 0.0, None
    for event in events:
        if isinstance(event, Progress):
            left = event.left
            if event.message not in shown:  # a new stage
                shown.add(event.message)
                say(event.line())
        elif isinstance(event, SourceFound):
            names[event.index] = event.source.title
        elif isinstance(event, CueDecoded):
            segment, share = event.cue, 100 * min(event.cue.end / max(event.duration, 1e-9), 1)
            say(
                f"  [{format_timestamp(segment.start)} --> {format_timestamp(segment.end)}] {segment.text}  ({share:.0f}%)"
            )
        elif isinstance(event, FileWritten):
            say(f"{names.get(event.index, '')}: wrote {event.path}")
        elif isinstance(event, FileFailed):
            print(f"error: {event.message}", file=sys.stderr, flush=True)
        elif isinstance(event, FileDone):
            for note in event.file.notes:
                print(f"note: {note}", file=sys.stderr, flush=True)
        elif isinstance(event, FileSkipped):
            say(f"{event.name}: skipped, its outputs are there from an earlier run (--overwrite to redo)")
        if isinstance(event, FileDone | FileFailed | FileSkipped) and inputs > 1:
            ended += 1
            audio += event.file.result.info.duration if isinstance(event, FileDone) else 0.0
            eta = f" · about {hms(max(left, 1.0))} left" if left is not None and ended < inputs else ""
            say(f"[{ended} of {inputs} inputs done · {hms(audio)} of audio{eta}]")
        elif isinstance(event, JobResult):
            for f in event.files:
                info = f.result.info
                voices = "" if f.result.voices is None else f" · {voices_found(f.result.voices)}"
                say(f"{f.source.title}: {hms(info.duration)} of {info.language} audio in {f.seconds:.1f} s{voices}")
            return event
    raise AssertionError("run_job ends with its JobResult")


def leave(code: int) -> None:
    """End the process. Once main() has returned, the job's files are written and closed, its temporary folders are
    gone and its threads have ended; what is left is the interpreter tearing down torch and OpenVINO (0.3-0.5 s, a
    tenth of a short clip's run) and waiting on OpenVINO's idle telemetry thread. So the process ends at once, unless
    it ran on Ray: Ray's client closes its connection in the background, and a client that vanishes mid-way leaves
    its server on the cluster waiting (the next run's server then failed to start)."""
    if "ray" in sys.modules:
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cli() -> None:
    """The installed command, `subtitle-generator` (pyproject.toml)."""
    leave(main())


if __name__ == "__main__":
    cli()
