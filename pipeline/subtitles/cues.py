"""Cues from timed words, by the rules a broadcaster ships (`CueRules`; check.py checks any SRT against them).

A cue breaks at a sentence end, else clause punctuation, else the longest pause; it ends with its speech, lengthened
only to be readable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipeline.asr.results import Word, normalized
from pipeline.tuning import (
    EARLIEST_CUT,
    EARLY,
    LATE,
    OUT_OF_ORDER,
    PAUSE,
    PUNCTUATION_BREAK,
    REPEAT_OVERLAP,
    REPEAT_REACH,
)

CJK_LANGUAGES = {"zh", "ja", "ko", "yue"}
# Han, kana, Hangul, CJK punctuation and full-width forms
CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]")
SENTENCE_END = re.compile(r"[.!?…。！？]['\"”’»)\]]*$")
CLAUSE_END = re.compile(r"[,;:—–，、；：]['\"”’»)\]]*$")


@dataclass(frozen=True, kw_only=True)
class CueRules:
    """Readability rules; the defaults are Netflix's and the BBC's."""

    max_line_chars: int = 42  # characters per line
    max_line_chars_cjk: int = 16  # for Chinese, Japanese and Korean lines, which have no spaces
    max_lines: int = 2
    max_cps: float = 20.0  # characters per second on screen, line breaks not counted
    min_duration: float = 5 / 6  # seconds
    max_duration: float = 7.0
    min_gap: float = 2 / 24  # seconds between one cue's end and the next one's start (2 frames at 24 fps)


@dataclass(frozen=True)
class Cue:
    """One subtitle: the only cue type (made from words, read, written, burned, checked)."""

    start: float  # seconds
    end: float
    text: str  # lines joined with "\n"
    words: tuple[Word, ...] | None = None  # None: no word timings (whisper's own segments, or read from a file)
    speaker: str | None = None  # who speaks it (pipeline/speakers/turns.py); None: not known


def cues_from_words(words: Sequence[Word], rules: CueRules = CueRules(), cjk: bool | None = None) -> list[Cue]:
    """Timed words as cues that keep every rule the words allow, never across a change of speaker."""
    words = _unrepeated([w for w in words if w.word.strip()])
    if not words:
        return []
    cjk = is_cjk("".join(w.word for w in words)) if cjk is None else cjk
    line_chars = rules.max_line_chars_cjk if cjk else rules.max_line_chars
    groups, current = [], []
    for i, word in enumerate(words):
        # (dialogue cues, two voices in one, are made when the file is written: formats.shown)
        paused = bool(current) and (word.start - current[-1].end >= PAUSE or word.speaker != current[-1].speaker)
        if current and (paused or not _fits([*current, word], rules, line_chars, cjk)):
            cut = len(current) if paused else _best_cut(current, rules)
            groups.append(current[:cut])
            current = current[cut:]
            if current and not _fits([*current, word], rules, line_chars, cjk):
                groups.append(current)  # the rest cannot take this word either
                current = []
        current.append(word)
        following = words[i + 1] if i + 1 < len(words) else None
        if SENTENCE_END.search(word.word.strip()) and (
            following is None
            or current[-1].end - current[0].start >= rules.min_duration
            or not _fits([*current, following], rules, line_chars, cjk)
        ):
            groups.append(current)  # a sentence end closes a cue that has been on screen long enough
            current = []
    if current:
        groups.append(current)
    groups = _rebalance(groups, rules, line_chars, cjk)
    cues = [
        Cue(g[0].start, g[-1].end, _lines(g, line_chars, cjk, rules.max_lines), tuple(g), g[0].speaker) for g in groups
    ]
    return _retime(cues, rules)


def in_time_order(segments: Sequence[Sequence[Word]]) -> list[Word]:
    """The words of whisper's segments in the order said: a word over OUT_OF_ORDER seconds before one given ahead of
    it (a skipped sentence decoded later) goes back by its start; smaller disagreements keep the text's order."""
    keyed = []
    latest = key = float("-inf")
    for words in segments:
        for w in words:
            key = w.start if w.start < latest - OUT_OF_ORDER else max(w.start, key)
            latest = max(latest, w.start)
            keyed.append((key, len(keyed), w))
    return [w for *_, w in sorted(keyed, key=lambda k: k[:2])]


def _unrepeated(words: list[Word]) -> list[Word]:
    """Without a word that repeats one of the REPEAT_REACH before it over more than REPEAT_OVERLAP of the same sound
    (two decodes of one stretch); a word said twice in a row only touches itself, and stays."""
    kept: list[tuple[str, Word]] = []
    for w in words:
        said = normalized(w.word)
        if not any(
            said == s and min(w.end, k.end) - max(w.start, k.start) > REPEAT_OVERLAP for s, k in kept[-REPEAT_REACH:]
        ):
            kept.append((said, w))
    return [w for _, w in kept]


def _text(words: Sequence[Word], cjk: bool) -> str:
    """The words as one line. A word without its own leading space continues the one before ("all" + "-eating"),
    unless it starts a sentence after punctuation (a window can start a word without its space)."""
    if cjk:
        return "".join(w.word.strip() for w in words)
    out = ""
    for w in words:
        text = w.word.strip()
        glued = out and not w.word[:1].isspace() and not (out[-1] in ".!?,;:" and text[:1].isalnum())
        out += text if glued or not out else " " + text
    return out


def _fits(words: Sequence[Word], rules: CueRules, line_chars: int, cjk: bool) -> bool:
    text = _text(words, cjk)
    lines = _lines(words, line_chars, cjk, rules.max_lines).split("\n")
    if len(lines) > rules.max_lines or any(len(line) > line_chars for line in lines):
        return False
    if words[-1].end - words[0].start > rules.max_duration:
        return False
    # reading speed over the time the cue may take, not just the speech
    return len(text) <= rules.max_cps * rules.max_duration


def _rebalance(groups: list[list[Word]], rules: CueRules, line_chars: int, cjk: bool) -> list[list[Word]]:
    """The cut between two cues of one stretch of speech moved where both are readable, or least too fast."""

    def overshoot(words: list[Word], until: float) -> float:
        shown = max(min(until - rules.min_gap, words[0].start + rules.max_duration) - words[0].start, 0.0)
        if shown < rules.min_duration:
            return float("inf")
        return max(0.0, len(_text(words, cjk)) - rules.max_cps * shown)

    groups = [list(g) for g in groups]
    for i in range(len(groups) - 1):
        a, b = groups[i], groups[i + 1]
        if b[0].start - a[-1].end >= PAUSE or b[0].speaker != a[-1].speaker:
            continue
        after = groups[i + 2][0].start if i + 2 < len(groups) else float("inf")
        words = a + b
        best, best_cost = len(a), overshoot(a, b[0].start) + overshoot(b, after)
        if best_cost == 0.0 or best_cost == float("inf"):
            continue
        for cut in range(1, len(words)):
            first, second = words[:cut], words[cut:]
            if not (_fits(first, rules, line_chars, cjk) and _fits(second, rules, line_chars, cjk)):
                continue
            cost = overshoot(first, second[0].start) + overshoot(second, after)
            if cost < best_cost - 1e-9:
                best, best_cost = cut, cost
        groups[i], groups[i + 1] = words[:best], words[best:]
    return groups


def _best_cut(words: Sequence[Word], rules: CueRules) -> int:
    """Where to end a full cue: after the latest sentence end, else clause end, else at the longest pause (the later
    on ties); not before EARLIEST_CUT of its words when avoidable."""
    n = len(words)
    if n == 1:
        return 1
    candidates = range(1, n)  # cut before words[cut]
    for pattern in (SENTENCE_END, CLAUSE_END):
        found = [c for c in candidates if pattern.search(words[c - 1].word.strip()) and c >= n * EARLIEST_CUT]
        if found:
            return found[-1]
    gaps = [(words[c].start - words[c - 1].end, c) for c in candidates if c >= n * EARLIEST_CUT] or [
        (words[c].start - words[c - 1].end, c) for c in candidates
    ]
    return max(gaps)[1]


def _lines(words: Sequence[Word], line_chars: int, cjk: bool, max_lines: int) -> str:
    """One line if it fits, else two: after a sentence end when both lines fit (a new sentence starts a new line),
    else balanced, a break after clause punctuation worth PUNCTUATION_BREAK characters of balance; else more."""
    text = _text(words, cjk)
    if len(text) <= line_chars or len(words) == 1:
        return text
    best = None
    for cut in range(1, len(words)):
        top, bottom = _text(words[:cut], cjk), _text(words[cut:], cjk)
        over = max(0, len(top) - line_chars) + max(0, len(bottom) - line_chars)
        sentence = 0 if SENTENCE_END.search(top) and over == 0 else 1
        punctuation = 0 if CLAUSE_END.search(top) or SENTENCE_END.search(top) else 1
        score = (over, sentence, abs(len(top) - len(bottom)) + PUNCTUATION_BREAK * punctuation)
        if best is None or score < best[0]:
            best = (score, cut)
    cut = best[1]
    if best[0][0] == 0 or max_lines <= 2:
        return _text(words[:cut], cjk) + "\n" + _text(words[cut:], cjk)
    return _text(words[:cut], cjk) + "\n" + _lines(words[cut:], line_chars, cjk, max_lines - 1)


def _retime(cues: list[Cue], rules: CueRules) -> list[Cue]:
    """Cues too short or too fast lengthened into the silence after them, never within `min_gap` of the next. One
    still too fast starts up to EARLY seconds sooner, then takes up to LATE seconds of the next cue's time, which
    starts that much later and passes the debt on until a silence pays it."""
    out: list[Cue] = []
    for i, cue in enumerate(cues):
        start = max(cue.start, out[-1].end + rules.min_gap + 0.001) if out else cue.start
        # (1 ms of margin both ways: subtitle files round times to whole milliseconds)
        limit = cues[i + 1].start - rules.min_gap - 0.001 if i + 1 < len(cues) else float("inf")
        chars = len(cue.text.replace("\n", ""))  # as pipeline.subtitles.check counts them
        needed = max(rules.min_duration, chars / rules.max_cps) + 0.001
        longest = max(cue.end, start + rules.max_duration)
        end = min(max(cue.end, start + needed), longest, limit)
        end = end if end > start else max(cue.end, start + 0.001)
        if end - start < needed:
            floor = out[-1].end + rules.min_gap + 0.001 if out else 0.0
            start = min(start, max(end - needed, start - EARLY, floor))
        if end - start < needed:
            end = max(end, min(start + needed, limit + LATE, longest))
        out.append(replace(cue, start=start, end=end))
    return out


def is_cjk(line: str) -> bool:
    visible = [c for c in line if not c.isspace()]
    return bool(visible) and sum(bool(CJK.match(c)) for c in visible) >= len(visible) / 2


def timed_words(cue: Cue) -> list[Word]:
    """The cue's text as timed words that join back into it. Words that still spell the text keep their times; after
    an edit, or without words, the cue's time is spread by length. A label ("Speaker 1: ") shows from the start."""
    measured = [w for w in cue.words or () if w.word.strip()]
    flat = "".join(cue.text.split())
    spelled = "".join("".join(w.word.split()) for w in measured)
    if spelled and flat != spelled and flat.endswith(spelled):  # a label before the words: its own words, untimed
        label, need = "", len(flat) - len(spelled)
        for ch in cue.text:
            if need == 0:
                break
            label += ch
            need -= not ch.isspace()
        measured = [Word(cue.start, cue.start, token) for token in label.split()] + measured
        spelled = flat
    if measured and spelled == flat:
        out, at = [], 0
        for w in measured:
            token = "".join(w.word.split())
            gap = re.match(r"\s*", cue.text[at:]).group()
            # (a token may hold a line break where CJK wrapping cut it: its characters are found one by one)
            piece, need = "", len(token)
            rest = cue.text[at + len(gap) :]
            for ch in rest:
                piece += ch
                need -= not ch.isspace()
                if need == 0:
                    break
            out.append((("\n" if "\n" in gap else " " if gap else "") + piece, w.start))
            at += len(gap) + len(piece)
    else:
        found = [(m.group(1), m.group(2)) for m in re.finditer(r"(\s*)(\S+)", cue.text)]
        total = sum(len(t) for _, t in found) or 1
        out, done = [], 0
        for gap, token in found:
            out.append(
                (
                    ("\n" if "\n" in gap else " " if gap else "") + token,
                    cue.start + (cue.end - cue.start) * done / total,
                )
            )
            done += len(token)
    words, last = [], cue.start
    for i, (text, start) in enumerate(out):
        start = min(max(start, last), cue.end)
        words.append(Word(start, cue.end, text if i else text.lstrip()))
        if i:
            words[-2] = replace(words[-2], end=start)
        last = start
    return words
