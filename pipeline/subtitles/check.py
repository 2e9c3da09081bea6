"""Check any SRT file against broadcast readability rules: python -m pipeline.subtitles.check FILE.srt [FILE.srt ...]

Prints each broken rule and a summary per file; exits 1 when a rule is broken, 2 when a file can't be read.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from pipeline.errors import SubtitleError
from pipeline.subtitles.cues import SENTENCE_END, Cue, CueRules, is_cjk
from pipeline.subtitles.formats import format_timestamp
from pipeline.subtitles.read import cue_blocks, read_subtitles

SRT_PRECISION = 0.001  # SRT times are whole milliseconds: a rule is broken only beyond that rounding
RULES = ("line length", "lines", "line break", "reading speed", "duration", "gap", "overlap")
# words whose full stop ends no sentence
_ABBREVIATIONS = {"mr.", "mrs.", "ms.", "dr.", "st.", "prof.", "jr.", "sr.", "vs.", "etc.", "e.g.", "i.e.", "no.",
                  "mt.", "ft.", "u.s.", "u.k.", "a.m.", "p.m."}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Problem:
    index: int  # of the cue, 1-based, in file order
    cue: Cue
    rule: str  # one of RULES
    detail: str


def parse_srt(text: str) -> list[Cue]:
    """Cues from SRT (or WebVTT) text, empty ones too: they count in the numbering."""
    return [Cue(start, end, body, None, speaker) for start, end, body, speaker, _ in cue_blocks(text)]


def check(cues: Sequence[Cue], rules: CueRules = CueRules()) -> list[Problem]:
    """Every rule each cue breaks, in cue order."""
    problems = []
    for i, cue in enumerate(cues):
        broken = []  # (rule, detail)
        lines = cue.text.split("\n") if cue.text else []
        for k, line in enumerate(lines, start=1):
            limit = rules.max_line_chars_cjk if is_cjk(line) else rules.max_line_chars
            if len(line) > limit:
                broken.append(("line length", f"line {k} has {len(line)} characters (max {limit})"))
        if len(lines) > rules.max_lines:
            broken.append(("lines", f"{len(lines)} lines (max {rules.max_lines})"))
        elif (better := sentence_break(lines, rules)) is not None:
            broken.append(("line break", f"a sentence ends inside a line: break after {better!r}"))
        duration = cue.end - cue.start
        chars = sum(len(line) for line in lines)
        if duration > 0 and chars / duration > rules.max_cps:
            broken.append(("reading speed", f"{chars / duration:.1f} characters/s (max {rules.max_cps:g})"))
        if duration < rules.min_duration - SRT_PRECISION:
            broken.append(("duration", f"{duration:.3f} s on screen (min {rules.min_duration:.3f})"))
        elif duration > rules.max_duration + SRT_PRECISION:
            broken.append(("duration", f"{duration:.3f} s on screen (max {rules.max_duration:g})"))
        if i + 1 < len(cues):
            gap = cues[i + 1].start - cue.end
            if gap < -SRT_PRECISION / 2:
                broken.append(("overlap", f"overlaps the next cue by {-gap:.3f} s"))
            elif gap < rules.min_gap - SRT_PRECISION:
                broken.append(("gap", f"{gap:.3f} s before the next cue (min {rules.min_gap:.3f})"))
        problems += [Problem(index=i + 1, cue=cue, rule=rule, detail=detail) for rule, detail in broken]
    return problems


def sentence_break(lines: Sequence[str], rules: CueRules = CueRules()) -> str | None:
    """In a cue of two lines, a sentence that ends inside a line where a break there would fit the line length: the
    words before that better break (broadcast style starts a new sentence on a new line); else None."""
    if len(lines) != 2 or any(is_cjk(line) for line in lines):
        return None
    words = " ".join(lines).split(" ")
    ends = len(lines[0].split(" "))  # the words of the first line
    for cut in range(1, len(words)):
        word = words[cut - 1]
        if cut == ends or not SENTENCE_END.search(word) or word.lower() in _ABBREVIATIONS:
            continue
        if not words[cut][:1].isupper() and not words[cut][:1].isdigit():
            continue
        top, bottom = " ".join(words[:cut]), " ".join(words[cut:])
        if max(len(top), len(bottom)) <= rules.max_line_chars:
            return top
    return None


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
    rules = CueRules(**{f.name: getattr(args, f.name) for f in fields(CueRules)})
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
