"""SRT, WebVTT, plain text and JSON from cues, each through `clean_cues` first, and RTTM from who speaks when. Pure
functions.

Not pysubs2's writers (ass.py uses it): they leave "<", "&" and "-->" in cue text and know no voices or word times.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pipeline.errors import OptionError
from pipeline.subtitles.cues import Cue, CueRules, timed_words
from pipeline.tuning import DIALOGUE_LEAD

# How a change of speaker shows: a new cue only, dialogue cues ("- " before each speaker's line), or "Speaker 1: "
LABELS = ("none", "dashes", "names")
Heard = tuple[float, float, str]  # a turn of who speaks when: start, end (seconds), the speaker's name
_TAG_START = re.compile(r"<(?=[a-zA-Z/])")  # what would open a tag in SRT text


def format_timestamp(seconds: float | None, separator: str = ",") -> str:
    """HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (VTT); hours are not limited to two digits."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    ms = round(seconds * 1000)
    h, ms = divmod(ms, 3_600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{separator}{ms:03d}"


def clean_cues(cues: Iterable[Cue], duration: float | None = None) -> list[Cue]:
    """The cues players rely on: with text, within [0, duration], in order, not overlapping (the earlier gives way)."""
    out: list[Cue] = []
    for seg in cues:
        text = "\n".join(" ".join(line.split()) for line in seg.text.splitlines() if line.strip())
        if not text:
            continue
        start = max(seg.start, 0.0)
        if out and start < out[-1].start:
            start = out[-1].end
        end = seg.end if seg.end is not None and math.isfinite(seg.end) else start
        if duration is not None:
            start, end = min(start, duration), min(end, duration)
        if out and out[-1].end > start:
            out[-1] = replace(out[-1], end=start)
            if out[-1].end <= out[-1].start:
                out.pop()
        if end <= start:
            continue
        out.append(replace(seg, start=start, end=end, text=text))
    return out


@dataclass(frozen=True)
class Labels:
    kind: str = "none"  # one of LABELS
    rules: CueRules = CueRules()  # the line length and time on screen a dialogue cue keeps

    def __post_init__(self):
        if self.kind not in LABELS:
            raise OptionError("labels", f"Unknown speaker labels {self.kind!r}: use {', '.join(LABELS)}")


def shown(cues: Sequence[Cue], labels: Labels | str = Labels()) -> list[tuple[Cue, ...]]:
    """The cues as shown, each a tuple of one cue, or of two for a dialogue cue ("dashes": two speakers' one-line
    cues that fit with a dash, the second within DIALOGUE_LEAD seconds, both within max_duration). With "names", a
    cue whose speaker differs from the one before starts with "Name: "."""
    labels = Labels(labels) if isinstance(labels, str) else labels
    out: list[tuple[Cue, ...]] = []
    before = None
    for cue in cues:
        if labels.kind == "names" and cue.speaker is not None and cue.speaker != before:
            cue = replace(cue, text=f"{cue.speaker}: {cue.text}")
        before = cue.speaker
        if labels.kind == "dashes" and out and len(out[-1]) == 1 and _pairs(out[-1][0], cue, labels.rules):
            out[-1] = (out[-1][0], cue)
        else:
            out.append((cue,))
    return out


def _pairs(a: Cue, b: Cue, rules: CueRules) -> bool:
    if a.speaker is None or b.speaker is None or a.speaker == b.speaker:
        return False
    lines = all("\n" not in c.text and len(c.text) + 2 <= rules.max_line_chars for c in (a, b))
    return lines and b.start - a.start <= DIALOGUE_LEAD and b.end - a.start <= rules.max_duration


def dialogue(group: tuple[Cue, ...]) -> Cue:
    """A shown cue as one cue: a dialogue cue's lines each start with "- "."""
    if len(group) == 1:
        return group[0]
    text = "\n".join(f"- {c.text}" for c in group)
    return replace(group[0], end=group[-1].end, text=text, words=None)


def to_srt(cues: Sequence[Cue], duration: float | None = None, labels: Labels | str = Labels()) -> str:
    blocks = [
        f"{i}\n{format_timestamp(s.start)} --> {format_timestamp(s.end)}\n{srt_text(s.text)}\n"
        for i, s in enumerate((dialogue(g) for g in shown(clean_cues(cues, duration), labels)), start=1)
    ]
    return "\n".join(blocks)


def to_vtt(
    cues: Sequence[Cue],
    duration: float | None = None,
    labels: Labels | str = Labels(),
    *,
    words: bool = False,
    spread: bool = True,
) -> str:
    """WebVTT; a speaker is a voice span (<v Speaker 1>) per line. With `words`, a timestamp before each word, which
    browsers and YouTube use to light words up; without `spread`, only in cues whose words carry times."""
    blocks = []
    for group in shown(clean_cues(cues, duration), labels):
        dash = "- " if len(group) > 1 else ""
        timed = [words and (spread or bool(c.words)) for c in group]
        lines = "\n".join(
            voice_tag(c.speaker) + dash + (vtt_words(c) if t else vtt_text(c.text)) for c, t in zip(group, timed)
        )
        blocks.append(f"{format_timestamp(group[0].start, '.')} --> {format_timestamp(group[-1].end, '.')}\n{lines}\n")
    return "WEBVTT\n\n" + "\n".join(blocks)


def vtt_words(cue: Cue) -> str:
    """A cue's text with a timestamp before each word whose time is inside the cue and later, as WebVTT requires."""
    out, last = [], cue.start
    for w in timed_words(cue):
        word = w.word.lstrip()
        stamp = ""
        if last < w.start < cue.end and round(w.start, 3) > round(last, 3):
            stamp, last = f"<{format_timestamp(w.start, '.')}>", w.start
        out.append(w.word[: len(w.word) - len(word)] + stamp + vtt_text(word))
    return "".join(out)


def voice_tag(speaker: str | None) -> str:
    """A WebVTT voice span's start tag, or nothing; the name escaped and on one line."""
    if speaker is None:
        return ""
    return f"<v {vtt_text(' '.join(speaker.split()))}>"


def srt_text(text: str) -> str:
    """Cue text that SRT readers cannot take for more than text. SRT has no escapes, so "-->" becomes "->", a "<"
    that would open a tag becomes "‹", and "{\\" (an SSA override to libass and VLC) gets a word joiner."""
    return _TAG_START.sub("‹", text.replace("-->", "->").replace("{\\", "{\\\u2060"))


def vtt_text(text: str) -> str:
    """Cue text as WebVTT text: &, < and > escaped, so neither a tag nor "-->" can be read in it."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_txt(cues: Sequence[Cue], duration: float | None = None, labels: Labels | str = Labels()) -> str:
    """A line per cue; with speakers (and labels), a paragraph per turn, starting with "Speaker 1: "."""
    cues = clean_cues(cues, duration)
    labels = Labels(labels) if isinstance(labels, str) else labels
    if labels.kind == "none" or all(c.speaker is None for c in cues):
        return "".join(f"{' '.join(s.text.splitlines())}\n" for s in cues)
    turns: list[list[Cue]] = []
    for cue in cues:
        if turns and turns[-1][0].speaker == cue.speaker:
            turns[-1].append(cue)
        else:
            turns.append([cue])
    return "\n".join(
        (f"{turn[0].speaker}: " if turn[0].speaker is not None else "")
        + " ".join(" ".join(c.text.split()) for c in turn)
        + "\n"
        for turn in turns
    )


def to_json(cues: Sequence[Cue], language: str, duration: float, turns: Sequence[Heard] = ()) -> str:
    """whisper's JSON (its cues under "segments", each word's time and probability), and with `turns` who speaks when
    under "speakers" (start, end, speaker: turns of two speakers may overlap)."""
    out = []
    for s in clean_cues(cues, duration):
        cue = {"start": s.start, "end": s.end, "text": s.text}
        if s.speaker is not None:
            cue["speaker"] = s.speaker
        if s.words is not None:
            cue["words"] = [
                {"start": w.start, "end": w.end, "word": w.word, "probability": w.probability}
                | ({"speaker": w.speaker} if w.speaker is not None else {})
                for w in s.words
            ]
        out.append(cue)
    whole = {"language": language, "duration": duration, "segments": out}
    if turns:
        whole["speakers"] = [{"start": start, "end": end, "speaker": who} for start, end, who in sorted(turns)]
    return json.dumps(whole, ensure_ascii=False, indent=1) + "\n"


def to_rttm(turns: Sequence[Heard], name: str) -> str:
    """NIST's RTTM, as pyannote and md-eval read it: a SPEAKER line per turn (the file `name`, channel 1, onset and
    duration in seconds, the speaker), in order of time. Its fields are split at spaces: names keep none."""

    def bare(text: str) -> str:
        return "_".join(text.split()) or "_"

    return "".join(
        f"SPEAKER {bare(name)} 1 {start:.3f} {end - start:.3f} <NA> <NA> {bare(who)} <NA> <NA>\n"
        for start, end, who in sorted(turns)
    )
