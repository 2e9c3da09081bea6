"""SRT and WebVTT from outside read into cues: bounded (MAX_*) before parsing, and linear (docs/subtitles.md)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

from pipeline.asr.results import Word
from pipeline.errors import SubtitleError
from pipeline.subtitles.cues import Cue

MAX_SUBTITLE_CHARS = 2_000_000  # characters of one subtitle file or cue table
MAX_CUES = 20_000  # cues in one file or table
MAX_CUE_CHARS = 1_000  # characters of one cue's text
MAX_HOUR_DIGITS = 4  # digits of a time's hours; more is not a time but a number that breaks float()
# (a tag's body stops at the next "<" or "{": no input makes a pattern go back over what it has read)
_OVERRIDE = re.compile(r"\{\\[^{}]*\}")  # an SSA override block ({\an8}): never cue text, in any format
_TAG = re.compile(rf"</?[a-zA-Z][^<>]*>|{_OVERRIDE.pattern}")
_VTT_TAG = re.compile(r"<[^<>]*>")  # in WebVTT every "<" opens a tag (<i>, <c.x>, <v Anna>, <00:00:01.000>)
# a WebVTT voice span's start: <v Anna>, <v.loud Bob>; the name starts with no space, so a miss is linear
_VOICE = re.compile(r"<v(?:\.[^\s<>]*)?[ \t]+([^\s<>][^<>]*)>")
_STAMP = r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{1,3})"  # (hours bounded in _seconds, with a message)
_CUE_TIMES = re.compile(rf"^\s*{_STAMP}\s*-->\s*{_STAMP}(?:\s.*)?$")
_WORD_TIME = re.compile(rf"<{_STAMP}>")  # a WebVTT cue timestamp: when the text after it is spoken


def parse(text: str) -> list[Cue]:
    """The cues of an SRT or WebVTT file with text, without tags; SubtitleError when there are none."""
    cues = [Cue(start, end, body, words, speaker) for start, end, body, speaker, words in cue_blocks(text) if body]
    if not cues:
        raise SubtitleError("No cues found: the subtitles must be an SRT or WebVTT file")
    return cues


def is_ass(text: str) -> bool:
    """Whether subtitle text is an ASS or SSA script (ass.read_ass reads it), not SRT or WebVTT."""
    return text.lstrip("\ufeff \t\r\n").lower().startswith("[script info]")


def read_subtitles(path: Path) -> str:
    """The text of a subtitle file, its size checked before it is read."""
    path = Path(path)
    try:
        if path.stat().st_size > 4 * MAX_SUBTITLE_CHARS:
            raise _too_long(path.name)
        return decode_subtitles(path.read_bytes(), path.name)
    except OSError as e:
        raise SubtitleError(f"Could not read {path.name}: {e.strerror}") from None


def decode_subtitles(data: bytes, name: str = "The subtitle file") -> str:
    """The text of a subtitle file: UTF-8, else its byte order mark's encoding, else chardet's; size-checked first."""
    if len(data) > 4 * MAX_SUBTITLE_CHARS or (len(data) > MAX_SUBTITLE_CHARS and not data.startswith(_WIDE_BOMS)):
        raise _too_long(name)
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            if len(text) > MAX_SUBTITLE_CHARS:  # (2 or 4 bytes a character: the bytes were let in up to 4x)
                raise _too_long(name)
            return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    import chardet

    # (today's encodings only: older eras' guesses were wrong on short French cp1252 text)
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
    """(start, end, text, speaker, words) of each cue, empty ones too; tolerant of a BOM, CRLF, '.' for ',' and wrong
    numbers. Each MAX_* is checked before what it bounds is parsed."""
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
    """The words of a WebVTT cue timed by its timestamps (<00:00:01.250>); None without any."""
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
    h, m, s, fraction = fields
    if h is not None and len(h) > MAX_HOUR_DIGITS:
        raise SubtitleError(f"Cue {n} has a time of {h[:12]}{'…' if len(h) > 12 else ''} hours: fix its timing line")
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(fraction) / 10 ** len(fraction)


def cue_too_long(n: int) -> SubtitleError:
    return SubtitleError(f"Cue {n} has more than {MAX_CUE_CHARS} characters of text: shorten it")


def _too_long(name: str) -> SubtitleError:
    return SubtitleError(f"{name} is over {MAX_SUBTITLE_CHARS // 1_000_000} MB of text: split it into shorter files")
