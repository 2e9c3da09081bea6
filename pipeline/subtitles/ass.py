"""ASS subtitles, over pysubs2: the styled .ass file, the script libass burns in, and .ass files people bring.

Lit words are karaoke (`\\k`) in the file. Burned in, a cue is two events: karaoke alone would leave every word
already spoken lit, so a second layer draws each word unlit again from its end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pipeline.asr.results import Word
from pipeline.errors import OptionError, SubtitleError
from pipeline.subtitles.cues import CJK, CJK_LANGUAGES, Cue, timed_words
from pipeline.subtitles.formats import Labels, clean_cues, dialogue, shown
from pipeline.subtitles.read import MAX_CUE_CHARS, MAX_CUES, MAX_SUBTITLE_CHARS, cue_too_long

LATIN_FONT = "DejaVu Sans"
CJK_FONT = "Noto Sans CJK SC Regular"  # the name-table family (ID 1) libass matches; it also has Latin and Cyrillic
CJK_SCALE = 1.2  # Noto CJK's tall ascent and descent draw it smaller than DejaVu at one size (docs/subtitles.md)

# Speakers' colours in the BBC guidelines' order, after the text colour (which the first speaker keeps)
SPEAKER_COLOURS = ("#FFFFFF", "#FFFF00", "#00FFFF", "#00FF00")
_COLOUR = re.compile(r"^#?([0-9a-fA-F]{6})$")
_BREAK_AFTER = set("。，、！？；：」』）)!?,;:. ")


@dataclass(frozen=True, kw_only=True)
class Style:
    font_size: float = 0.055  # text height as a fraction of the video's shorter side
    position: Literal["bottom", "top"] = "bottom"
    text_colour: str = "#FFFFFF"
    outline_colour: str = "#000000"  # the outline, or the box when `box` is on
    box: bool = False  # a translucent box behind the text instead of an outline
    margin: float | None = None  # from the edge, as a fraction of the height; None: 6 %, or 15 % for vertical video
    speaker_colours: bool = False  # each speaker's lines in a colour of their own (SPEAKER_COLOURS), when known
    highlight_words: bool = False  # the word being spoken lights up (ASS karaoke, burn-in, WebVTT word times)
    highlight_colour: str = "#FFFF00"  # ... in this colour

    def __post_init__(self):
        if self.position not in ("bottom", "top"):
            raise OptionError("position", f"Unknown position {self.position!r}: use bottom or top")
        for name in ("text_colour", "outline_colour", "highlight_colour"):
            if not _COLOUR.match(getattr(self, name).strip()):
                raise OptionError(name, f"Colour {getattr(self, name)!r} is not valid: use #RRGGBB, e.g. #FFFFFF")
        if not 0 < self.font_size <= 0.5:
            raise OptionError("font_size", "The text size is a fraction of the picture's shorter side: 0 to 0.5")
        if self.margin is not None and not 0 <= self.margin <= 0.5:
            raise OptionError("margin", "The margin is a fraction of the picture's height: 0 to 0.5")


MAX_DRAWING_CHARS = 20_000  # of one drawing (\\p1) in an ASS file: a sign's outline; libass draws it every frame
DEFAULT_SIZE = (1920, 1080)  # an .ass file's picture for audio: players scale it to the video they show
_KARAOKE = re.compile(r"\\(?:k|K|kf|ko)(\d+)")  # \k12, \K12, \kf12, \ko12: a syllable's centiseconds
_BLOCK = re.compile(r"\{[^{}]*\}")  # an override block
_DRAWING = re.compile(r"\{[^{}]*\\p0*[1-9]")  # drawing mode on (\p1…) in a block: pysubs2's is_drawing, in linear time


def _ass_styles(style: Style, width: int, height: int, karaoke: bool) -> dict:
    """The Default and CJK SSAStyles; with `karaoke`, words turn from SecondaryColour to the highlight colour."""
    from pysubs2 import Alignment, SSAStyle

    text = _rgb(style.text_colour)
    lit = _rgb(style.highlight_colour) if karaoke else text
    size, margin_h, margin_v = _layout(style, width, height)
    outline = _rgb(style.outline_colour)
    if style.box:  # BorderStyle 3: a box in the outline colour, translucent by its alpha
        border_style, border, shadow, outline = 3, max(2, size // 6), 0.0, replace(outline, a=0x40)
    else:
        border_style, border, shadow = 1, round(max(1.0, size / 16), 1), round(max(0.5, size / 40), 1)
    common = dict(
        primarycolor=lit, secondarycolor=text, outlinecolor=outline, backcolor=_rgb("#000000", 0x80),
        borderstyle=border_style, outline=border, shadow=shadow, marginl=margin_h, marginr=margin_h,
        marginv=margin_v, encoding=1,
        alignment=Alignment.BOTTOM_CENTER if style.position == "bottom" else Alignment.TOP_CENTER,
    )  # fmt: skip
    return {
        "Default": SSAStyle(fontname=LATIN_FONT, fontsize=size, **common),
        "CJK": SSAStyle(fontname=CJK_FONT, fontsize=round(size * CJK_SCALE), **common),
    }


def _assembled(width: int, height: int, styles: dict, events: list) -> str:
    from pysubs2 import SSAFile

    subs = SSAFile()
    subs.info.update({"PlayResX": str(width), "PlayResY": str(height), "WrapStyle": "0",
                      "ScaledBorderAndShadow": "yes", "YCbCr Matrix": "TV.709"})  # fmt: skip
    subs.styles = styles
    subs.events = events
    return subs.to_string("ass")


def _event(start_cs: int, end_cs: int, style: str, text: str, layer: int = 0):
    from pysubs2 import SSAEvent

    return SSAEvent(start=10 * start_cs, end=10 * end_cs, style=style, text=text, layer=layer)


def to_ass(
    cues: Sequence[Cue],
    width: int,
    height: int,
    *,
    style: Style = Style(),
    language: str = "en",
    labels: Labels | str = Labels(),
) -> str:
    """The ASS script libass burns into a `width` x `height` video (speakers as `labels` says, formats.shown)."""
    return _script_text(cues, width=width, height=height, style=style, language=language, labels=labels, file=False)


def ass_file(
    cues: Sequence[Cue],
    width: int,
    height: int,
    *,
    style: Style = Style(),
    language: str = "en",
    labels: Labels | str = Labels(),
) -> str:
    """The .ass file, to edit in Aegisub or mux as a styled track; lit words are karaoke syllables (\\k)."""
    return _script_text(cues, width=width, height=height, style=style, language=language, labels=labels, file=True)


def _script_text(cues, *, width, height, style, language, labels, file: bool) -> str:
    """to_ass (libass's escapes, lit words on two layers) or, with `file`, ass_file (portable text, karaoke)."""
    escape = _file_text if file else _ass_text
    karaoke = file and style.highlight_words
    lit = "&H" + _ass_colour(style.highlight_colour)[4:] + "&"
    events = []
    for group, style_name, pieces, colours in _groups(
        cues, width=width, height=height, style=style, language=language, labels=labels, karaoke=karaoke
    ):
        start, end = _cs(group[0].start), _cs(group[-1].end)
        if not style.highlight_words or not pieces:
            events.append(_event(start, end, style_name, _compose(pieces, colours, escape)))
            continue
        starts = _syllable_starts(pieces, start, end)
        ks = [b - a for a, b in zip(starts, starts[1:])]
        if karaoke:
            lead = f"{{\\k{starts[0] - start}}}" if starts[0] > start else ""
            events.append(_event(start, end, style_name, lead + _compose(pieces, colours, escape, ks=ks)))
            continue
        # two events a cue, each the length of the cue (an event per word would carry the whole cue each time):
        # under, karaoke that lights each word from its start; over, the cue in its own colours, each word drawn from
        # its end on (\\ko: nothing before, outline included), so only the word being spoken shows lit. A box comes
        # from a plain event under both: libass boxes each syllable, and translucent boxes overlap in dark bars.
        lit_colours = [c.replace("{\\c&H", "{\\2c&H") for c in colours]
        unboxed = "\\bord0\\shad0" if style.box else ""
        if style.box:
            events.append(_event(start, end, style_name, _compose(pieces, colours, escape)))
        lead = f"{{\\1c{lit}{unboxed}\\k{starts[0] - start}}}"
        events.append(_event(start, end, style_name, lead + _compose(pieces, lit_colours, escape, ks=ks), layer=1))
        cover = f"{{\\2a&HFF&\\shad0{unboxed}\\ko{starts[1] - start}}}"
        ends = _compose(pieces, colours, escape, ks=[*ks[1:], 0], k="ko")
        events.append(_event(start, end, style_name, cover + ends, layer=2))
    return _assembled(width, height, _ass_styles(style, width, height, karaoke), events)


def _layout(style: Style, width: int, height: int) -> tuple[int, int, int]:
    """(font size, side margin, vertical margin) in pixels; vertical video's clears the phone apps' buttons."""
    size = max(8, round(style.font_size * min(width, height)))
    vertical = height > width
    margin_v = round((style.margin if style.margin is not None else 0.15 if vertical else 0.06) * height)
    return size, round(0.05 * width), margin_v


@dataclass(frozen=True, kw_only=True)
class _Piece:
    """A timed word of a shown cue; the first of a dialogue cue's line carries the dash."""

    before: str  # " ", a line break, or nothing
    text: str
    start: float
    cue: int  # which cue of the shown group
    dash: str = ""


def _groups(cues, *, width, height, style, language, labels, karaoke: bool):
    """Each shown cue (formats.shown): its cues, style name, timed pieces and each cue's colour tag."""
    size, margin_h, _ = _layout(style, width, height)
    cjk_per_line = max(4, (width - 2 * margin_h) // max(1, round(size * CJK_SCALE)))  # CJK glyphs are 1 em wide
    palette = [style.text_colour.upper()] + [c for c in SPEAKER_COLOURS if c != style.text_colour.upper()]
    known: dict[str, str] = {}
    for group in shown(clean_cues(cues), labels):
        style_name = _style_for(dialogue(group).text, language)
        pieces, colours = [], []
        for n, cue in enumerate(group):
            if style_name == "CJK":
                cue = replace(cue, text=wrap_cjk(cue.text, cjk_per_line))
            colour = ""
            if style.speaker_colours and cue.speaker is not None:
                rgb = known.setdefault(cue.speaker, palette[len(known) % len(palette)])
                tag = "\\2c" if karaoke else "\\c"  # (karaoke lights the primary colour)
                colour = "{" + tag + "&H" + _ass_colour(rgb)[4:] + "&}"  # (\c takes &HBBGGRR&)
            colours.append(colour)
            for k, w in enumerate(timed_words(cue)):
                before = w.word[: len(w.word) - len(w.word.lstrip())] if k else "\n" if n else ""
                dash = "- " if k == 0 and len(group) > 1 else ""
                pieces.append(_Piece(before=before, text=w.word.strip(), start=w.start, cue=n, dash=dash))
        yield group, style_name, pieces, colours


def _compose(pieces, colours, escape, *, ks=None, k="k") -> str:
    """A shown cue's text; with `ks`, a karaoke tag (`k`: \\k, \\ko) before each piece."""
    out, cue = [], None
    for i, p in enumerate(pieces):
        out.append(p.before.replace("\n", "\\N"))
        if p.cue != cue:
            cue = p.cue
            out.append(colours[cue])
        if ks is not None:
            out.append(f"{{\\{k}{ks[i]}}}")
        out.append(p.dash + escape(p.text))
    return "".join(out)


def _syllable_starts(pieces: Sequence[_Piece], start: int, end: int) -> list[int]:
    """Centiseconds where each piece's karaoke syllable starts, from `start`, then where the last one ends (`end`):
    each at least 1 after the one before, since libass joins a syllable of 0 to the one before it."""
    out: list[int] = []
    for p in pieces:
        out.append(max(_cs(p.start), out[-1] + 1 if out else start))
    return out + [max(end, out[-1] + 1)] if out else [start, end]


def _cs(seconds: float) -> int:
    return max(0, round(seconds * 100))


def _rgb(colour: str, alpha: int = 0):
    from pysubs2 import Color

    m = _COLOUR.match(colour.strip())  # (Style checked it)
    return Color(int(m.group(1)[0:2], 16), int(m.group(1)[2:4], 16), int(m.group(1)[4:6], 16), alpha)


def _file_text(text: str) -> str:
    """Cue text as literal text for every ASS reader: braces become parentheses (VSFilter and Aegisub have no
    escape for them), a word joiner follows each backslash."""
    return text.replace("\\", "\\\u2060").replace("{", "(").replace("}", ")")


def read_ass(text: str, name: str = "The subtitle file"):
    """(cues, script) of an ASS or SSA file: its dialogue events as plain cues (karaoke syllables as timed words),
    and the script to burn as it is, without embedded fonts or pictures; SubtitleError over the limits."""
    import pysubs2

    if len(text) > MAX_SUBTITLE_CHARS:
        raise SubtitleError(f"{name} is over {MAX_SUBTITLE_CHARS // 1_000_000} MB of text: split it into shorter files")
    try:
        subs = pysubs2.SSAFile.from_string(text, format_="ass" if "[V4+ Styles]" in text else "ssa")
    except Exception:  # (pysubs2 raises its own and ValueError on a broken file)
        raise SubtitleError(f"{name} is not an ASS or SSA file Aegisub could open: check it there") from None
    shown = [e for e in subs.events if not e.is_comment]  # (drawings too: libass draws them all)
    if len(shown) > MAX_CUES:
        raise SubtitleError(f"The subtitles have more than {MAX_CUES} cues: split them into shorter files")
    drawings = {id(e) for e in shown if _DRAWING.search(e.text)}
    for n, e in enumerate(shown, start=1):
        if id(e) in drawings and len(e.text) > MAX_DRAWING_CHARS:
            raise SubtitleError(f"Line {n} is a drawing of more than {MAX_DRAWING_CHARS} characters: simplify it")
    events = sorted((e for e in shown if id(e) not in drawings), key=lambda e: e.start)
    cues = []
    for n, e in enumerate(events, start=1):
        if len(e.text) > 4 * MAX_CUE_CHARS:
            raise cue_too_long(n)
        body = "\n".join(" ".join(line.split()) for line in e.plaintext.splitlines() if line.strip())
        if len(body) > MAX_CUE_CHARS:
            raise cue_too_long(n)
        if body:
            cues.append(Cue(e.start / 1000, e.end / 1000, body, _syllables(e.text, e.start / 1000)))
    if not cues:
        raise SubtitleError(f"{name} has no dialogue lines: the subtitles must be an ASS, SSA, SRT or WebVTT file")
    subs.fonts_opaque, subs.graphics_opaque = {}, {}  # (libass would load embedded fonts: not from strangers)
    return cues, subs.to_string("ass")


def _syllables(raw: str, start: float) -> tuple[Word, ...] | None:
    if not _KARAOKE.search(raw):
        return None
    chunks, blocks = _BLOCK.split(raw), _BLOCK.findall(raw)
    words, at, length, gap = [], start, None, False  # (length: the open syllable's, from the last \\k)
    for i, chunk in enumerate(chunks):
        text = chunk.replace("\\h", " ").replace("\\n", "\n").replace("\\N", "\n")  # (pysubs2's plaintext)
        if text.strip():  # (a leading space when one separates it from the word before, as whisper's words)
            spaced = words and (text[0].isspace() or gap)
            words.append(Word(at, at + (length or 0.0), (" " if spaced else "") + " ".join(text.split())))
        gap = text[-1:].isspace() if text.strip() else gap or bool(text)
        if text.strip() or length is not None:
            at, length = at + (length or 0.0), None
        found = _KARAOKE.findall(blocks[i]) if i < len(blocks) else []
        if found:
            if length is not None:
                at += length
            length = int(found[-1]) / 100
    return tuple(words) or None


def style_of(script: str) -> Style:
    """Our Style nearest an ASS script's Default style (or its first); karaoke lights words in PrimaryColour."""
    import pysubs2

    subs = pysubs2.SSAFile.from_string(script, format_="ass")
    found = subs.styles.get("Default") or next(iter(subs.styles.values()), None)
    if found is None:
        return Style()
    height = _play_res(subs.info.get("PlayResY"), 288)  # (ASS's defaults when a script gives none)
    shorter = min(_play_res(subs.info.get("PlayResX"), height * 4 / 3), height)
    karaoke = any(_KARAOKE.search(e.text) for e in subs.events)
    text, lit = (found.secondarycolor, found.primarycolor) if karaoke else (found.primarycolor, None)
    return Style(
        font_size=min(max(found.fontsize / shorter, 0.01), 0.5),
        position="top" if int(found.alignment) in (7, 8, 9) else "bottom",
        text_colour=_hex(text),
        outline_colour=_hex(found.outlinecolor),
        box=found.borderstyle == 3,
        margin=min(found.marginv / height, 0.5),
        highlight_words=karaoke,
        highlight_colour=_hex(lit) if lit else Style.highlight_colour,
    )


def _play_res(value: str | None, default: float) -> float:
    """A script's picture size in pixels; its default when it gives none, zero, a negative or not a number."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return default
    return size if 0 < size < float("inf") else default


def _hex(colour) -> str:
    return f"#{colour.r:02X}{colour.g:02X}{colour.b:02X}"


def _ass_colour(colour: str) -> str:
    m = _COLOUR.match(colour.strip())  # (Style checked it)
    rr, gg, bb = m.group(1)[0:2], m.group(1)[2:4], m.group(1)[4:6]
    return f"&H00{bb}{gg}{rr}".upper()  # ASS is &HAABBGGRR


def wrap_cjk(text: str, per_line: int) -> str:
    """Lines longer than `per_line` broken into balanced lines, after punctuation when one is near: libass wraps
    only at spaces, which Chinese and Japanese lack."""
    out = []
    for line in text.splitlines() or [""]:
        while len(line) > per_line:
            lines_left = -(-len(line) // per_line)
            target = -(-len(line) // lines_left)
            near = [i + 1 for i in range(max(1, target - 4), min(per_line, target + 3)) if line[i] in _BREAK_AFTER]
            cut = min(near, key=lambda c: abs(c - target), default=target)
            if cut < len(line) and line[cut] in _BREAK_AFTER and cut < per_line:  # no line starts with punctuation
                cut += 1
            out.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        out.append(line)
    return "\n".join(out)


def _style_for(text: str, language: str) -> str:
    """The CJK font for a cue with any CJK character: libass's fallback fonts ignore `fontsdir`."""
    return "CJK" if language in CJK_LANGUAGES or CJK.search(text) else "Default"


def _ass_text(text: str) -> str:
    """Cue text as literal libass text: line breaks as \\N, braces escaped, and a word joiner after each backslash
    so a typed `\\N` or `\\h` stays text."""
    text = text.replace("\\", "\\\u2060").replace("{", "\\{").replace("}", "\\}")
    return "\\N".join(line.strip() for line in text.strip().splitlines() if line.strip())
