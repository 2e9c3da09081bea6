"""Subtitle files from cues: SRT, WebVTT, plain text, JSON (and ASS: pipeline/subtitles/ass.py). Pure functions, text in, text
out.

Every writer first passes the cues through `clean_cues`, which guarantees what players and editors rely on:
cues are in order, never go backwards, never overlap, never pass the end of the media, and have text.

SRT and WebVTT are written and read here, not by pysubs2 (which writes ASS): its SRT and WebVTT writers leave "<",
"&" and "-->" in cue text as they are (a tag or a timing line to the next reader) and know no voice spans or word
times, and its readers have no bounds for untrusted files.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.asr.results import Word
from pipeline.errors import OptionError, SubtitleError
from pipeline.subtitles.cues import Cue, CueRules, timed_words
from pipeline.tuning import DIALOGUE_LEAD

FORMATS = ("srt", "vtt", "txt", "json", "ass")
# How a change of speaker shows in the text of cues that carry speakers (Cue.speaker): not at all (a new cue only),
# as dialogue cues ("- " before each of two speakers' lines in one cue, the broadcast convention), or by name
# ("Speaker 1: " where the speaker changes)
LABELS = ("none", "dashes", "names")
# Subtitles from outside (an upload, the page's cue table) are bounded before they are parsed: every step below is
# linear in these, so a hostile file costs milliseconds, not minutes.
MAX_SUBTITLE_CHARS = 2_000_000  # characters of one subtitle file or cue table (a 3-hour film's SRT: about 200 k)
MAX_CUES = 20_000  # cues in one file or table (a 3-hour film: about 2,000)
MAX_CUE_CHARS = 1_000  # characters of one cue's text (a readable cue: under 100)
MAX_HOUR_DIGITS = 4  # digits of a time's hours (9999 h); more is not a time but a number that breaks float()
# <i>, <font ...>, {\an8}: not shown, not counted. A tag's body stops at the next "<" or "{", so no input makes the
# pattern go back over what it has read (on "<a<a<a..." the old [^>]* did: quadratic, 25 minutes for 2 MB).
_OVERRIDE = re.compile(r"\{\\[^{}]*\}")  # an SSA override block ({\an8}): never cue text, in any format
_TAG = re.compile(rf"</?[a-zA-Z][^<>]*>|{_OVERRIDE.pattern}")
_VTT_TAG = re.compile(r"<[^<>]*>")  # in WebVTT every "<" opens a tag (<i>, <c.x>, <v Anna>, <00:00:01.000>)
_TAG_START = re.compile(r"<(?=[a-zA-Z/])")  # what would open a tag in SRT text
_VOICE = re.compile(r"<v(?:\.[^\s<>]*)?[ \t]+([^<>]+)>")  # a WebVTT voice span's start: <v Anna>, <v.loud Bob>
_STAMP = r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{1,3})"  # (hours bounded in _seconds, with a message)
_CUE_TIMES = re.compile(rf"^\s*{_STAMP}\s*-->\s*{_STAMP}(?:\s.*)?$")
_WORD_TIME = re.compile(rf"<{_STAMP}>")  # a WebVTT cue timestamp: when the text after it is spoken


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
    """Drop empty cues; clamp to [0, duration]; make starts non-decreasing and ends not past the next start.

    A cue that starts inside the previous one cuts the previous one short; a cue that starts before the previous
    one's start is moved after it.
    """
    out: list[Cue] = []
    for seg in cues:
        text = "\n".join(" ".join(line.split()) for line in seg.text.splitlines() if line.strip())  # keeps lines
        if not text:
            continue
        start = max(seg.start, 0.0)
        if out and start < out[-1].start:  # starts before the previous cue: it goes after it instead
            start = out[-1].end
        end = seg.end if seg.end is not None and math.isfinite(seg.end) else start
        if duration is not None:
            start, end = min(start, duration), min(end, duration)
        if out and out[-1].end > start:  # overlap: the earlier cue gives way
            out[-1] = replace(out[-1], end=start)
            if out[-1].end <= out[-1].start:
                out.pop()
        if end <= start:
            continue
        out.append(replace(seg, start=start, end=end, text=text))
    return out


@dataclass(frozen=True)
class Labels:
    """How a change of speaker shows in the text of cues that carry speakers."""

    kind: str = "none"  # one of LABELS
    rules: CueRules = CueRules()  # what a dialogue cue keeps: the length of its lines, its time on screen

    def __post_init__(self):
        if self.kind not in LABELS:
            raise OptionError("labels", f"Unknown speaker labels {self.kind!r}: use {', '.join(LABELS)}")


def shown(cues: Sequence[Cue], labels: Labels | str = Labels()) -> list[tuple[Cue, ...]]:
    """The cues as they are shown, each a tuple of the cues it is made of: one, or two for a dialogue cue. With
    labels "dashes", a cue and the next one of another speaker are one dialogue cue (`dialogue`) when each is one
    line that fits with its dash, the second starts within DIALOGUE_LEAD seconds of the first, and the two together
    last at most max_duration. With "names", a cue whose speaker is not the one before's starts with "Name: ".
    Cues without a speaker are shown as they are."""
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
    """One shown cue (`shown`) as a single cue: a dialogue cue's lines each start with "- "."""
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
    words: bool = False,
    spread: bool = True,
) -> str:
    """WebVTT; a cue with a speaker is a voice span (<v Speaker 1>), each line of a dialogue cue its own. With
    `words`, each word is preceded by the time it is spoken (<00:00:01.250>, timed_words), which browsers and
    YouTube use to light the words up; without `spread`, only in cues whose words carry times."""
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
    """A cue's text as WebVTT with a timestamp before each word spoken after the cue starts (timed_words): times
    inside the cue and increasing, as WebVTT requires; a word whose time is not is joined to the one before."""
    out, last = [], cue.start
    for w in timed_words(cue):
        word = w.word.lstrip()
        stamp = ""
        if last < w.start < cue.end and round(w.start, 3) > round(last, 3):
            stamp, last = f"<{format_timestamp(w.start, '.')}>", w.start
        out.append(w.word[: len(w.word) - len(word)] + stamp + vtt_text(word))
    return "".join(out)


def voice_tag(speaker: str | None) -> str:
    """A WebVTT voice span's start tag, or nothing: a name cannot hold "<", ">", "&" or a line break."""
    if speaker is None:
        return ""
    return f"<v {vtt_text(' '.join(speaker.split()))}>"


def srt_text(text: str) -> str:
    """Cue text as SRT text, where it cannot be read as more than text: SRT has no escapes, so an arrow "-->" (a
    timing line to a parser) becomes "->", a "<" that would open a tag ("<i", "</", "<font") becomes "‹", and the
    "{\\" that opens an override block for players that read SSA tags in SRT (libass, VLC) gets a word joiner after
    its backslash, so no tag name follows it (as burn-in does)."""
    return _TAG_START.sub("‹", text.replace("-->", "->").replace("{\\", "{\\\u2060"))


def vtt_text(text: str) -> str:
    """Cue text as WebVTT text: &, < and > escaped (so neither a tag nor "-->" can be read in it)."""
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


def to_json(cues: Sequence[Cue], language: str, duration: float) -> str:
    out = []  # (under "segments", as whisper's own JSON has them)
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
    return (
        json.dumps({"language": language, "duration": duration, "segments": out}, ensure_ascii=False, indent=1) + "\n"
    )


def render(
    fmt: str,
    cues: Sequence[Cue],
    language: str,
    duration: float,
    labels: Labels | str = Labels(),
    style=None,
    size: tuple[int, int] | None = None,
) -> str:
    """The text of one subtitle file in format `fmt` (one of FORMATS); `labels`: how speakers show (LABELS);
    `style` (pipeline.subtitles.ass.Style): the look of an ASS file on a picture of `size` (width, height), and whether words
    light up (ASS karaoke, WebVTT word times)."""
    if fmt == "srt":
        return to_srt(cues, duration, labels)
    if fmt == "vtt":
        return to_vtt(cues, duration, labels, words=bool(style and style.highlight_words))
    if fmt == "ass":
        from pipeline.subtitles.ass import DEFAULT_SIZE, Style, ass_file  # (pipeline.subtitles.ass imports this module)

        width, height = size or DEFAULT_SIZE
        return ass_file(clean_cues(cues, duration), width, height, style or Style(), language, labels)
    if fmt == "txt":
        return to_txt(cues, duration, labels)
    if fmt == "json":
        return to_json(cues, language, duration)
    raise ValueError(f"unknown subtitle format {fmt!r}")


def parse(text: str) -> list[Cue]:
    """The cues of an SRT or WebVTT file, in file order. Cue numbers, VTT headers, NOTE/STYLE blocks, cue settings
    and inline tags (<i>, <c.x>, {\\an8}) are dropped, and so are cues without text; a cue's line breaks are kept.
    Raises SubtitleError when the text holds no cue at all, or is over the limits (MAX_*)."""
    cues = [Cue(start, end, body, words, speaker) for start, end, body, speaker, words in cue_blocks(text) if body]
    if not cues:
        raise SubtitleError("No cues found: the subtitles must be an SRT or WebVTT file")
    return cues


def is_ass(text: str) -> bool:
    """Whether subtitle text is an ASS or SSA script (pipeline.subtitles.ass.read_ass reads it), not SRT or WebVTT."""
    return text.lstrip("\ufeff \t\r\n").lower().startswith("[script info]")


def read_subtitles(path: Path) -> str:
    """The text of a subtitle file (decode_subtitles), its size checked before it is read."""
    path = Path(path)
    try:
        if path.stat().st_size > 4 * MAX_SUBTITLE_CHARS:
            raise _too_long(path.name)
        return decode_subtitles(path.read_bytes(), path.name)
    except OSError as e:
        raise SubtitleError(f"Could not read {path.name}: {e.strerror}") from None


def decode_subtitles(data: bytes, name: str = "The subtitle file") -> str:
    """The text of a subtitle file: UTF-8, or what its byte order mark says (UTF-8, UTF-16, UTF-32), else the
    encoding chardet finds (cp1252, cp1251, Shift JIS, UTF-16 without a mark, ...). Refused before decoding when it is over
    MAX_SUBTITLE_CHARS bytes (UTF-32: four times that)."""
    if len(data) > 4 * MAX_SUBTITLE_CHARS or (len(data) > MAX_SUBTITLE_CHARS and not data.startswith(_WIDE_BOMS)):
        raise _too_long(name)
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    import chardet  # (only for files that are not UTF-8)

    # (the encodings of today's systems and the web: the older eras' guesses were wrong on short French cp1252 text)
    found = chardet.detect(data, encoding_era=chardet.EncodingEra.MODERN_WEB).get("encoding")
    try:
        return data.decode(found or "", errors="replace")
    except LookupError:
        raise SubtitleError(f"{name} is not text in an encoding we know: save it as UTF-8") from None


_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),  # (before UTF-16 LE, whose mark it starts with)
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


def cue_blocks(text: str) -> Iterator[tuple[float, float, str, str | None, tuple[Word, ...] | None]]:
    """(start, end, text, speaker, words) of each cue of SRT or WebVTT text, empty ones too (the speaker: a WebVTT
    cue's first voice span's name, else None; words: timed by a WebVTT cue's timestamps, else None); tolerant of a
    BOM, CRLF, '.' for ',', missing or wrong cue numbers and extra blank lines. SubtitleError when the text is over MAX_SUBTITLE_CHARS, has
    more than MAX_CUES cues or a cue longer than MAX_CUE_CHARS (checked before the cue is parsed), or a time out of
    range."""
    if len(text) > MAX_SUBTITLE_CHARS:
        raise _too_long("The subtitle text")
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    vtt = text.startswith("WEBVTT")
    n = 0
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.strip("\n").split("\n")
        at = next((i for i, line in enumerate(lines[:2]) if "-->" in line and _CUE_TIMES.match(line)), None)
        if at is None:
            continue
        n += 1
        if n > MAX_CUES:
            raise SubtitleError(f"The subtitles have more than {MAX_CUES} cues: split them into shorter files")
        body = lines[at + 1 :]
        if sum(len(line) for line in body) > MAX_CUE_CHARS:
            raise cue_too_long(n)
        m = _CUE_TIMES.match(lines[at])
        start, end = _seconds(n, m.group(1, 2, 3, 4)), _seconds(n, m.group(5, 6, 7, 8))
        voice = next((v for line in body if vtt and (v := _VOICE.search(line))), None)
        words = _vtt_word_times(n, start, end, body) if vtt else None
        if vtt:  # WebVTT's tags, then its entities (SRT has none): "&lt;i&gt;" is text, "&#123;\\an8&#125;" is not
            body = [_vtt_plain(line) for line in body]
        body = [(line if vtt else _TAG.sub("", line)).strip() for line in body]
        speaker = " ".join(html.unescape(voice.group(1)).split()) or None if voice else None
        yield start, end, "\n".join(line for line in body if line), speaker, words


def _vtt_plain(line: str) -> str:
    return _OVERRIDE.sub("", html.unescape(_VTT_TAG.sub("", line)))


def _vtt_word_times(n: int, start: float, end: float, body: list[str]) -> tuple[Word, ...] | None:
    """The words of a WebVTT cue's lines timed by its cue timestamps (<00:00:01.250>: the text after it is spoken
    from then; the text before the first, from the cue's start); None when it has none."""
    if not any(_WORD_TIME.search(line) for line in body):
        return None
    out: list[tuple[float, str]] = []
    for line in body:
        at, times = 0, [(m.start(), m.end(), _seconds(n, m.groups())) for m in _WORD_TIME.finditer(line)]
        when = out[-1][0] if out else start
        for first, last, t in [*times, (len(line), len(line), None)]:
            text = " ".join(_vtt_plain(line[at:first]).split())
            if text:
                out.append((min(max(when, start), end), f" {text}" if out else text))
            when, at = (t if t is not None else when), last
    return tuple(Word(t, out[i + 1][0] if i + 1 < len(out) else end, text) for i, (t, text) in enumerate(out))


def _seconds(n: int, fields: tuple[str | None, ...]) -> float:
    """Seconds of one parsed time (hours or None, minutes, seconds, fraction) of cue n."""
    h, m, s, fraction = fields
    if h is not None and len(h) > MAX_HOUR_DIGITS:
        raise SubtitleError(f"Cue {n} has a time of {h[:12]}{'…' if len(h) > 12 else ''} hours: fix its timing line")
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(fraction) / 10 ** len(fraction)


def cue_too_long(n: int) -> SubtitleError:
    """The message for cue n over MAX_CUE_CHARS (a file's, or a row of the page's table)."""
    return SubtitleError(f"Cue {n} has more than {MAX_CUE_CHARS} characters of text: shorten it")


def _too_long(name: str) -> SubtitleError:
    return SubtitleError(f"{name} is over {MAX_SUBTITLE_CHARS // 1_000_000} MB of text: split it into shorter files")
