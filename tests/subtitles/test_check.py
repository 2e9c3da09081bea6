"""The SRT checker: parsing any SRT, each readability rule, and the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.subtitles.check import check, parse_srt, summary
from pipeline.subtitles.cues import Cue, CueRules

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text, cues",
    [
        ("1\n00:00:01,000 --> 00:00:02,500\nHello\n", [(1.0, 2.5, "Hello")]),
        ("\ufeff1\r\n00:00:01,000 --> 00:00:02,000\r\nBOM and CRLF\r\n\r\n", [(1.0, 2.0, "BOM and CRLF")]),
        ("00:00:01.5 --> 00:00:02.25\nno index, dots\n", [(1.5, 2.25, "no index, dots")]),
        ("7\n01:02:03,004 --> 10:00:00,000\n<i>two</i>\n{\\an8}lines\n", [(3723.004, 36000.0, "two\nlines")]),
        ("1\n00:00:01,000 --> 00:00:02,000\na\n\n\n\n2\n00:00:03,000 --> 00:00:04,000\nb\n",
         [(1.0, 2.0, "a"), (3.0, 4.0, "b")]),
        ("not a subtitle\n\n1\n00:00:01,000 --> 00:00:02,000\n\n", [(1.0, 2.0, "")]),
        ("", []),
    ],
)  # fmt: skip
def test_parse_srt(text, cues):
    assert [(c.start, c.end, c.text) for c in parse_srt(text)] == cues


def cue(start, end, text):
    return Cue(start, end, text)


@pytest.mark.parametrize(
    "cues, rules",
    [
        ([cue(0, 3, "A short, readable line.")], []),
        ([cue(0, 3, "x" * 43)], ["line length"]),
        ([cue(0, 3, "x" * 42)], []),
        ([cue(0, 3, "字" * 17)], ["line length"]),  # CJK lines count characters, 16 at most
        ([cue(0, 3, "字" * 16)], []),
        ([cue(0, 3, "one\ntwo\nthree")], ["lines"]),
        ([cue(0, 2, "x" * 41)], ["reading speed"]),  # 20.5 characters per second
        ([cue(0, 2, "x" * 20 + "\n" + "x" * 20)], []),  # the line break is not read
        ([cue(0, 0.5, "Hi")], ["duration"]),
        ([cue(0, 8, "A long time on screen")], ["duration"]),
        ([cue(0, 5 / 6, "Hi")], []),
        ([cue(0, 2, "a"), cue(2.04, 4, "b")], ["gap"]),
        ([cue(0, 2, "a"), cue(2.0, 4, "b")], ["gap"]),  # back to back: no break for the eye
        ([cue(0, 2, "a"), cue(2.1, 4, "b")], []),
        ([cue(0, 3, "a"), cue(2, 4, "b")], ["overlap"]),
        ([cue(0, 3, "")], []),  # empty text breaks no reading rule
        ([cue(0, 1, "x" * 50 + "\n" + "y" * 50 + "\nz")], ["line length", "line length", "lines", "reading speed"]),
        # a sentence that ends inside a line where a break there fits: the cue, and its fix
        ([cue(0, 5, "Chapter 17 of the Crimson Ferry\nBook. This is a Librevox Recording.")], ["line break"]),
        ([cue(0, 5, "Chapter 17 of the Crimson Ferry Book.\nThis is a Librevox Recording.")], []),
        ([cue(0, 5, "Yes. I will be there when the\nsun comes up over the hill")], []),  # the break would not fit
        ([cue(0, 5, "I met Mr. Smith at the\nstation at nine")], []),  # an abbreviation ends no sentence
        ([cue(0, 5, "Yes. No.")], []),  # one line: short sentences may share it
        ([cue(0, 5, "it was late. and\nthen we left")], []),  # no capital after it: not a new sentence
    ],
)
def test_rules(cues, rules):
    assert [p.rule for p in check(cues)] == rules


def test_rules_are_configurable():
    assert check([cue(0, 3, "x" * 43)], CueRules(max_line_chars=50)) == []
    assert [p.rule for p in check([cue(0, 3, "x" * 30)], CueRules(max_line_chars=20))] == ["line length"]


def test_summary():
    cues = [cue(0, 3, "ok"), cue(3.5, 4, "short"), cue(5, 6, "x" * 45)]
    assert summary(cues, check(cues)) == (
        "3 cues, 2 break a rule, 33.3% pass (line length 1, lines 0, line break 0, reading speed 1, duration 1, gap 0, overlap 0)"
    )


def run(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """`python -m pipeline.subtitles.check` with each list of arguments, the processes side by side (each one spends seconds
    importing the pipeline package, torch included, before it reads a file)."""
    started = [
        subprocess.Popen([sys.executable, "-m", "pipeline.subtitles.check", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for args in commands
    ]  # fmt: skip
    done = []
    for proc in started:
        stdout, stderr = proc.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return done


def test_command_line(tmp_path):
    good = tmp_path / "good.srt"
    good.write_text("1\n00:00:01,000 --> 00:00:03,000\nA fine cue.\n\n2\n00:00:03,500 --> 00:00:06,000\nAnother.\n")
    bad = tmp_path / "bad.srt"
    bad.write_text("1\n00:00:01,000 --> 00:00:01,400\nThis line is far too long to read comfortably on screen\n")
    ok, broken, missing = run([str(good)], [str(good), str(bad)], [str(tmp_path / "nope.srt")])
    assert ok.returncode == 0 and ok.stdout.strip() == (
        "good.srt: 2 cues, 0 break a rule, 100.0% pass "
        "(line length 0, lines 0, line break 0, reading speed 0, duration 0, gap 0, overlap 0)"
    )
    assert broken.returncode == 1
    lines = broken.stdout.strip().splitlines()
    assert lines[1] == (
        "bad.srt: cue 1 00:00:01,000 --> 00:00:01,400: line length: line 1 has 55 characters (max 42)"
        "  | This line is far too long to read comfortably on screen"
    )
    assert [line.split(": ")[2] for line in lines[1:4]] == ["line length", "reading speed", "duration"]
    assert lines[-1].startswith("bad.srt: 1 cues, 1 break a rule, 0.0% pass")
    assert missing.returncode == 2 and missing.stderr.startswith("error: Could not read")
