"""Check any SRT file against broadcast readability rules: python -m pipeline.subtitles.check FILE.srt [FILE.srt ...]

Prints every cue that breaks a rule (line length, number of lines, reading speed, duration, gap to the next cue,
overlap) and a summary per file; exits 1 when any rule is broken, 2 when a file can't be read. It works on any SRT,
ours or not. The defaults are the common broadcast/streaming rules (Netflix's timed-text style guide, BBC): 42
characters per line (16 for Chinese/Japanese/Korean, which count characters), 2 lines, 20 characters per second,
5/6 s to 7 s on screen, 2 frames at 24 fps between cues.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import SubtitleError
from pipeline.subtitles.cues import Cue, CueRules, is_cjk
from pipeline.subtitles.formats import cue_blocks, format_timestamp, read_subtitles

SRT_PRECISION = 0.001  # SRT times are whole milliseconds: a rule is broken only beyond that rounding
RULES = ("line length", "lines", "reading speed", "duration", "gap", "overlap")


@dataclass(frozen=True)
class Problem:
    index: int  # of the cue, 1-based, in file order
    cue: Cue
    rule: str  # one of RULES
    detail: str


def parse_srt(text: str) -> list[Cue]:
    """Cues from SRT (or WebVTT) text, in file order (empty ones too: they count in the numbering); tolerant of a BOM,
    CRLF, '.' for ',', missing or wrong numbers and extra blank lines (pipeline.subtitles.formats.cue_blocks)."""
    return [Cue(start, end, body, None, speaker) for start, end, body, speaker, _ in cue_blocks(text)]


def check(cues: Sequence[Cue], rules: CueRules = CueRules()) -> list[Problem]:
    """Every rule each cue breaks, in cue order."""
    problems = []
    for i, cue in enumerate(cues):
        n = i + 1
        lines = cue.text.split("\n") if cue.text else []
        for k, line in enumerate(lines, start=1):
            limit = rules.max_line_chars_cjk if is_cjk(line) else rules.max_line_chars
            if len(line) > limit:
                problems.append(Problem(n, cue, "line length", f"line {k} has {len(line)} characters (max {limit})"))
        if len(lines) > rules.max_lines:
            problems.append(Problem(n, cue, "lines", f"{len(lines)} lines (max {rules.max_lines})"))
        duration = cue.end - cue.start
        chars = sum(len(line) for line in lines)
        if duration > 0 and chars / duration > rules.max_cps:
            problems.append(
                Problem(n, cue, "reading speed", f"{chars / duration:.1f} characters/s (max {rules.max_cps:g})")
            )
        if duration < rules.min_duration - SRT_PRECISION:
            problems.append(Problem(n, cue, "duration", f"{duration:.3f} s on screen (min {rules.min_duration:.3f})"))
        elif duration > rules.max_duration + SRT_PRECISION:
            problems.append(Problem(n, cue, "duration", f"{duration:.3f} s on screen (max {rules.max_duration:g})"))
        if i + 1 < len(cues):
            gap = cues[i + 1].start - cue.end
            if gap < -SRT_PRECISION / 2:
                problems.append(Problem(n, cue, "overlap", f"overlaps the next cue by {-gap:.3f} s"))
            elif gap < rules.min_gap - SRT_PRECISION:
                problems.append(Problem(n, cue, "gap", f"{gap:.3f} s before the next cue (min {rules.min_gap:.3f})"))
    return problems


def summary(cues: Sequence[Cue], problems: Sequence[Problem]) -> str:
    broken = len({p.index for p in problems})
    share = 100 * (len(cues) - broken) / len(cues) if cues else 100.0
    counts = Counter(p.rule for p in problems)
    by_rule = ", ".join(f"{rule} {counts[rule]}" for rule in RULES)
    return f"{len(cues)} cues, {broken} break a rule, {share:.1f}% pass ({by_rule})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pipeline.subtitles.check",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE.srt")
    defaults = CueRules()
    p.add_argument("--max-line-chars", type=int, default=defaults.max_line_chars)
    p.add_argument("--max-line-chars-cjk", type=int, default=defaults.max_line_chars_cjk)
    p.add_argument("--max-lines", type=int, default=defaults.max_lines)
    p.add_argument("--max-cps", type=float, default=defaults.max_cps)
    p.add_argument("--min-duration", type=float, default=defaults.min_duration)
    p.add_argument("--max-duration", type=float, default=defaults.max_duration)
    p.add_argument("--min-gap", type=float, default=defaults.min_gap)
    args = p.parse_args(argv)
    rules = CueRules(args.max_line_chars, args.max_line_chars_cjk, args.max_lines, args.max_cps,
                     args.min_duration, args.max_duration, args.min_gap)  # fmt: skip
    any_broken = False
    for path in args.files:
        try:
            cues = parse_srt(read_subtitles(path))
        except SubtitleError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        problems = check(cues, rules)
        for problem in problems:
            cue = problem.cue
            first = cue.text.split("\n")[0] if cue.text else ""
            print(f"{path.name}: cue {problem.index} {format_timestamp(cue.start)} --> {format_timestamp(cue.end)}: "
                  f"{problem.rule}: {problem.detail}  | {first[:60]}")  # fmt: skip
        print(f"{path.name}: {summary(cues, problems)}")
        any_broken = any_broken or bool(problems)
    return 1 if any_broken else 0


if __name__ == "__main__":
    sys.exit(main())
