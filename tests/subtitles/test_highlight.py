"""Styled .ass files and words that light up as they are spoken: word times (measured, or spread over an edited cue),
the .ass file read back by pysubs2, WebVTT word times read back by us and by Chromium, ASS files people bring, and
the highlight colour found by OCR on the word spoken in a burned-in real clip."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pysubs2
import pytest
from conftest import ENGLISH, clip_path, colour_frame, ffmpeg, free_port

from pipeline.asr.cache import ModelCache
from pipeline.asr.options import ModelOptions
from pipeline.asr.results import Word
from pipeline.errors import SubtitleError
from pipeline.jobs.run import run_job
from pipeline.jobs.spec import JobResult, JobSpec
from pipeline.media.audio import probe
from pipeline.media.video import BurnOptions
from pipeline.subtitles.ass import Style, ass_file, read_ass, style_of, to_ass
from pipeline.subtitles.cues import Cue, timed_words
from pipeline.subtitles.formats import to_vtt
from pipeline.subtitles.read import MAX_CUES, is_ass, parse

TESSERACT = shutil.which("tesseract")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MEASURED = Cue(
    1.0, 3.0, "Hello there\nworld", (Word(1.1, 1.5, " Hello"), Word(1.5, 2.0, " there"), Word(2.2, 2.9, " world"))
)


def spans(words: list[Word]) -> list[tuple[str, float, float]]:
    return [(w.word, round(w.start, 3), round(w.end, 3)) for w in words]


@pytest.mark.parametrize(
    "cue, expected",
    [
        # unedited: the measured times; each word keeps what is before it; the last ends with the cue
        (MEASURED, [("Hello", 1.1, 1.5), (" there", 1.5, 2.2), ("\nworld", 2.2, 3.0)]),
        # an edit changed a word: the cue's time spread over its words by their length
        (Cue(1.0, 3.0, "Hello there\nplanet", MEASURED.words),
         [("Hello", 1.0, 1.625), (" there", 1.625, 2.25), ("\nplanet", 2.25, 3.0)]),
        # only line breaks moved: still the same words, measured times kept
        (Cue(1.0, 3.0, "Hello\nthere world", MEASURED.words),
         [("Hello", 1.1, 1.5), ("\nthere", 1.5, 2.2), (" world", 2.2, 3.0)]),
        # no words (a file without word times)
        (Cue(0.0, 1.0, "a bb", None), [("a", 0.0, 1 / 3), (" bb", 1 / 3, 1.0)]),
        # Chinese: one measured word per character, a line break put in by wrapping
        (Cue(0.0, 1.0, "字幕\n测试", tuple(Word(i / 4, (i + 1) / 4, c) for i, c in enumerate("字幕测试"))),
         [("字", 0.0, 0.25), ("幕", 0.25, 0.5), ("\n测", 0.5, 0.75), ("试", 0.75, 1.0)]),
        # a speaker's name before the words (labels "names"): shown from the start, the words keep their times
        (Cue(1.0, 3.0, "Alice: Hello there\nworld", MEASURED.words),
         [("Alice:", 1.0, 1.1), (" Hello", 1.1, 1.5), (" there", 1.5, 2.2), ("\nworld", 2.2, 3.0)]),
        # measured times outside the cue or out of order are kept within it, in order
        (Cue(1.0, 2.0, "x y", (Word(0.5, 1.2, " x"), Word(0.9, 2.5, " y"))), [("x", 1.0, 1.0), (" y", 1.0, 2.0)]),
    ],
)  # fmt: skip
def test_timed_words(cue, expected):
    assert spans(timed_words(cue)) == [(t, round(a, 3), round(b, 3)) for t, a, b in expected]


@pytest.mark.parametrize(
    "cue, text",
    [
        (MEASURED, "<00:00:01.100>Hello <00:00:01.500>there\n<00:00:02.200>world"),
        (Cue(0.0, 1.0, "a <b> & c", None), "a <00:00:00.167>&lt;b&gt; <00:00:00.667>&amp; <00:00:00.833>c"),
        (Cue(1.0, 2.0, "x y", (Word(0.5, 1.2, " x"), Word(0.9, 2.5, " y"))), "x y"),  # no time inside: none
    ],
)
def test_webvtt_word_times_are_inline_timestamps_and_read_back(cue, text):
    vtt = to_vtt([cue], words=True)
    assert vtt.splitlines()[3:] == text.splitlines()
    back = parse(vtt)[0]
    assert back.text == cue.text
    if "<00:" in vtt:  # the times survive the file (without any, the words are spread by length when read)
        assert spans(timed_words(back)) == spans(timed_words(cue))
        assert to_vtt([back], words=True) == vtt
    assert to_vtt([cue]) == to_vtt([back])  # without --highlight-words: as before, no timestamps
    if cue.words is None:  # no times of its own: none made up unless asked (the page's edited cues)
        assert to_vtt([cue], words=True, spread=False) == to_vtt([cue])


HOSTILE = [
    Cue(0.5, 2.0, "{\\b1}bold{\\b0} and \\N break", (Word(0.6, 1.0, " {\\b1}bold{\\b0}"), Word(1.0, 1.4, " and"),
                                                    Word(1.4, 1.6, " \\N"), Word(1.6, 1.9, " break"))),
    Cue(2.5, 4.0, "edited {\\pos(1,1)} text", None),
    Cue(4.2, 5.0, "one", (Word(4.25, 4.9, " one"),)),
]  # fmt: skip


def test_ass_file_reads_back_with_pysubs2_styles_karaoke_and_no_tags_from_text():
    style = Style(font_size=0.06, position="top", text_colour="#F0F0F0", outline_colour="#102030", margin=0.1,
                  highlight_words=True, highlight_colour="#00FF80")  # fmt: skip
    subs = pysubs2.SSAFile.from_string(ass_file(HOSTILE, 1280, 720, style=style))
    assert (subs.info["PlayResX"], subs.info["PlayResY"]) == ("1280", "720")
    default = subs.styles["Default"]
    assert (default.fontname, default.fontsize, default.alignment, default.marginv) == (
        "DejaVu Sans",
        43,
        pysubs2.Alignment.TOP_CENTER,
        72,
    )
    # karaoke: a word is the text colour (secondary) until its time, then the highlight colour (primary)
    assert (default.secondarycolor, default.primarycolor) == (pysubs2.Color(240, 240, 240), pysubs2.Color(0, 255, 128))
    assert default.outlinecolor == pysubs2.Color(16, 32, 48)
    assert len(subs.events) == len(HOSTILE)
    for event, cue in zip(subs.events, HOSTILE, strict=True):
        blocks = re.findall(r"\{[^}]*\}", event.text)
        assert blocks and all(re.fullmatch(r"\{\\k\d+\}", b) for b in blocks), blocks  # ours only: \k
        ks = sum(int(k) for k in re.findall(r"\\k(\d+)", event.text))
        assert abs(ks - round((cue.end - cue.start) * 100)) <= 1
        # the text as it was (a typed \\N stays text: no line break from it), braces shown as parentheses
        assert event.plaintext.replace("\u2060", "") == cue.text.replace("{", "(").replace("}", ")")
    assert "{" not in "".join(e.plaintext for e in subs.events)  # braces shown as parentheses: no tag in any reader
    plain = pysubs2.SSAFile.from_string(ass_file(HOSTILE, 640, 360, style=Style()))
    assert not any("\\k" in e.text for e in plain.events)  # no highlighting asked: no karaoke
    assert plain.styles["Default"].primarycolor == plain.styles["Default"].secondarycolor


BROUGHT = """[Script Info]
ScriptType: v4.00+
PlayResX: 640
PlayResY: 360

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
Style: Default,DejaVu Sans,36,&H000000FF,&H00FFFFFF,&H00000000,&H80000000,0,0,0,0,100,100,0,0,3,2,0,8,20,20,18,1

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.50,0:00:02.00,Default,,0,0,0,,{\\k50}Karaoke {\\k100}words
Comment: 0,0:00:02.00,0:00:03.00,Default,,0,0,0,,not shown
Dialogue: 0,0:00:02.50,0:00:04.00,Default,,0,0,0,,{\\p1}m 0 0 l 100 0 100 100{\\p0}
Dialogue: 0,0:00:04.50,0:00:06.00,Default,,0,0,0,,Second\\Nline {\\i1}here
"""  # noqa: E501


@pytest.mark.parametrize(
    "info, font_size",
    [
        ("PlayResX: 640\nPlayResY: 360", 0.1),  # 36 px on the shorter side, 360
        ("", 36 / 288),  # none given: ASS's 384 x 288
        ("PlayResX: 0\nPlayResY: 0", 36 / 288),  # zero once divided by zero (issue 49, item 10)
        ("PlayResX: -640\nPlayResY: abc", 36 / 288),
        ("PlayResX: 640\nPlayResY: inf", 36 / 288),
    ],
)
def test_the_style_of_a_script_whatever_picture_size_it_claims(info, font_size):
    script = BROUGHT.replace("PlayResX: 640\nPlayResY: 360", info)
    assert style_of(script).font_size == pytest.approx(font_size)


def test_an_ass_file_people_bring():
    assert is_ass("\ufeff\n[Script Info]\n") and not is_ass("WEBVTT\n\n") and not is_ass("1\n00:00:01,000 --> ")
    cues, script = read_ass(BROUGHT)
    assert [(c.start, c.end, c.text) for c in cues] == [(0.5, 2.0, "Karaoke words"), (4.5, 6.0, "Second\nline here")]
    assert spans(list(cues[0].words)) == [("Karaoke", 0.5, 1.0), (" words", 1.0, 2.0)]  # \k syllables: words
    assert "Style: Default,DejaVu Sans,36,&H000000FF" in script  # burned with its own style
    # its style as ours: size and margin by its picture, a box at the top; karaoke: white text lit in red
    assert style_of(script) == Style(font_size=0.1, position="top", text_colour="#FFFFFF", outline_colour="#000000",
                                     box=True, margin=0.05, highlight_words=True, highlight_colour="#FF0000")  # fmt: skip
    # our own .ass back: the same style (sizes to the pixel; no margin given: the automatic one)
    for style in (Style(), Style(font_size=0.07, text_colour="#00FFFF", box=True, margin=0.1, position="top"),
                  Style(highlight_words=True, highlight_colour="#FF8000")):  # fmt: skip
        for width, height in ((1280, 720), (1080, 1920)):
            back = style_of(ass_file(HOSTILE, width, height, style=style))
            margin = style.margin if style.margin is not None else 0.15 if height > width else 0.06
            assert abs(back.font_size - style.font_size) < 1 / min(width, height)
            assert abs(back.margin - margin) < 1 / height
            assert replace(back, font_size=style.font_size, margin=style.margin) == style
    for broken in ("[Script Info]\nnot ass at all", "[Script Info]\n[Events]\nFormat: Start\n"):
        with pytest.raises(SubtitleError):
            read_ass(broken)


@pytest.fixture(scope="module")
def spoken(ov_model, tmp_path_factory):
    """A real clip as a 640x360 video, subtitled with highlighted words by the whole job: (folder, its outputs)."""
    folder = tmp_path_factory.mktemp("highlight")
    video = folder / "clip.mp4"
    ffmpeg("-i", str(clip_path(ENGLISH[0])), "-f", "lavfi", "-i", "color=c=navy:size=640x360:rate=25",
           "-map", "1:v", "-map", "0:a", "-shortest", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac",
           str(video))  # fmt: skip
    spec = JobSpec(inputs=(video,), formats=("vtt", "ass", "json"), style=Style(highlight_words=True),
                   burn=BurnOptions())  # fmt: skip
    spec = replace(spec, model=ModelOptions(precision="f32"))
    models = ModelCache(loaded={("base", "f32"): ov_model})
    result = next(e for e in run_job(spec, folder / "out", models) if isinstance(e, JobResult))
    assert not result.failed, result.failed
    return folder, result.files[0]


@pytest.mark.slow
@pytest.mark.skipif(TESSERACT is None, reason="no tesseract: apt-get install tesseract-ocr (.ci/run does)")
def test_the_word_spoken_is_drawn_in_the_highlight_colour(spoken, tmp_path):
    from PIL import Image, ImageOps

    _, done = spoken
    words = [w for cue in done.result.cues for w in timed_words(cue) if len(w.word.strip(" ,.\n")) >= 4]
    picked = [words[1], words[len(words) // 2], words[-2]]  # three words, early, middle, late
    for w in picked:
        pixels = colour_frame(done.burned, (w.start + w.end) / 2)
        r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
        lit = (r > 180) & (g > 180) & (b < 110)  # yellow, the default highlight colour
        assert lit[: int(0.6 * 360)].sum() == 0  # only in the subtitle region
        ys, xs = np.nonzero(lit)
        assert len(xs) > 30, f"no highlight at {w.word!r}"
        box = pixels[max(ys.min() - 4, 0) : ys.max() + 5, max(xs.min() - 4, 0) : xs.max() + 5]
        ink = np.clip((box[..., 0] + box[..., 1]) / 2 - box[..., 2], 0, 255)  # yellowness: dark on white
        image = Image.fromarray((255 - ink).astype(np.uint8))
        image = ImageOps.expand(image.resize((image.width * 4, image.height * 4), Image.LANCZOS), 20, fill=255)
        image.save(tmp_path / "word.png")
        read = subprocess.run([TESSERACT, str(tmp_path / "word.png"), "-", "--psm", "8"], capture_output=True,
                              text=True, check=True).stdout  # fmt: skip
        expected = re.sub(r"[^a-z]", "", w.word.lower())
        assert re.sub(r"[^a-z]", "", read.lower()) == expected, (read, w)


@pytest.mark.slow
def test_the_job_writes_karaoke_ass_and_webvtt_word_times_of_a_real_clip(spoken):
    folder, done = spoken
    ass = next(p for p in done.outputs if p.suffix == ".ass")
    subs = pysubs2.SSAFile.from_string(ass.read_text(encoding="utf-8"))
    assert (subs.info["PlayResX"], subs.info["PlayResY"]) == ("640", "360")  # the video's picture
    assert len(subs.events) == len(done.result.cues)
    for event in subs.events:
        assert abs(sum(int(k) for k in re.findall(r"\\k(\d+)", event.text)) - (event.end - event.start) / 10) <= 1
    vtt = next(p for p in done.outputs if p.suffix == ".vtt").read_text(encoding="utf-8")
    measured = [w for cue in done.result.cues for w in cue.words]
    back = [w for cue in parse(vtt) for w in timed_words(cue)]
    assert [w.word.strip() for w in back] == [w.word.strip() for w in measured]
    assert max(abs(a.start - b.start) for a, b in zip(back, measured) if b.start > 0.3) < 0.002


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: apt-get install chromium (.ci/run does)")
def test_chromium_reads_the_word_times_as_timestamps(spoken):
    """The WebVTT with word times, as a <track> in Chromium: each cue's TextTrack text, its timestamps parsed as
    timestamps (processing instructions in getCueAsHTML), not shown as text."""
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from playwright.sync_api import sync_playwright

    folder, done = spoken
    site = folder / "out"
    (site / "page.html").write_text(
        '<video id="v" src="clip.subtitled.mp4" muted><track default kind="subtitles" src="clip.vtt"></video>'
    )
    handler = lambda *a, **k: SimpleHTTPRequestHandler(*a, directory=str(site), **k)  # noqa: E731
    handler.log_message = lambda *a: None
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/page.html")
            page.wait_for_function("document.getElementById('v').textTracks[0].cues?.length > 0", timeout=30_000)
            cues = page.evaluate("""() => Array.from(document.getElementById('v').textTracks[0].cues, c => {
                const html = c.getCueAsHTML();
                const walker = document.createTreeWalker(html, NodeFilter.SHOW_PROCESSING_INSTRUCTION);
                let stamps = 0;
                while (walker.nextNode()) stamps++;
                return {start: c.startTime, text: c.text, shown: html.textContent, stamps};
            })""")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    assert len(cues) == len(done.result.cues)
    for got, cue in zip(cues, done.result.cues, strict=True):
        assert abs(got["start"] - cue.start) < 0.002
        assert "<00:" in got["text"]  # the TextTrack's text: the cue as written, with its word times
        assert got["shown"].split() == cue.text.split()  # shown without them
        assert got["stamps"] == got["text"].count("<00:")  # each parsed as a timestamp


@pytest.mark.slow
def test_an_ass_file_brought_burns_with_its_own_style(spoken, tmp_path):
    """--subtitles FILE.ass: burned as the file draws it (red text in a box at the top), and the .ass the job writes
    takes its Default style as ours."""
    folder, _ = spoken
    brought = tmp_path / "theirs.ass"
    brought.write_text(BROUGHT, encoding="utf-8")
    spec = JobSpec(
        inputs=(folder / "clip.mp4",), formats=("ass",), subtitles=brought, burn=BurnOptions(preview_seconds=5)
    )
    result = next(e for e in run_job(spec, tmp_path / "out", ModelCache()) if isinstance(e, JobResult))
    assert not result.failed, result.failed
    done = result.files[0]
    pixels = colour_frame(done.burned, 1.2)
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    red = (r > 180) & (g < 80) & (b < 80)
    assert red[: int(0.3 * 360)].sum() > 100  # their text, at the top, in their colour
    assert red[int(0.3 * 360) :].sum() == 0
    written = pysubs2.SSAFile.from_string(next(p for p in done.outputs if p.suffix == ".ass").read_text())
    default = written.styles["Default"]
    assert (default.primarycolor, default.alignment) == (pysubs2.Color(255, 0, 0), pysubs2.Alignment.TOP_CENTER)
    assert [e.plaintext for e in written.events] == ["Karaoke words", "Second\nline here"]


@pytest.mark.slow
def test_a_styled_soft_track_is_the_ass_script(spoken, tmp_path):
    """--soft with words lit up: the MKV's subtitle track is our .ass (styles and karaoke), not plain SRT; the MP4's
    stays mov_text."""
    folder, _ = spoken
    given = _vtt_of(folder, tmp_path)  # (the cues of the first job, word times and all: nothing transcribed)
    spec = JobSpec(inputs=(folder / "clip.mp4",), formats=("ass",), soft=True, subtitles=given,
                   style=Style(highlight_words=True, box=True))  # fmt: skip
    result = next(e for e in run_job(spec, tmp_path / "out", ModelCache()) if isinstance(e, JobResult))
    assert not result.failed, result.failed
    outputs = {p.name.split(".", 1)[1]: p for p in result.files[0].outputs}
    track = tmp_path / "track.ass"
    ffmpeg("-i", str(outputs["subs.mkv"]), "-map", "0:s:0", "-c", "copy", str(track))
    assert probe(outputs["subs.mkv"]).duration and "subs.mp4" in outputs
    ours = pysubs2.SSAFile.from_string(outputs["ass"].read_text(encoding="utf-8"))
    muxed = pysubs2.SSAFile.from_string(track.read_text(encoding="utf-8"))
    assert muxed.styles["Default"] == ours.styles["Default"] and muxed.styles["Default"].borderstyle == 3
    assert [e.text for e in muxed.events] == [e.text for e in ours.events] and "\\k" in muxed.events[0].text


def _vtt_of(folder: Path, tmp_path: Path) -> Path:
    """The first job's WebVTT (with its word times), copied out."""
    target = tmp_path / "given.vtt"
    shutil.copy(next((folder / "out").glob("*.vtt")), target)
    return target


@pytest.mark.parametrize(
    "text, fields",
    [
        (BROUGHT, {"font_size": 10.0, "position": "top", "text_colour": "#FFFFFF", "outline_colour": "#000000",
                   "box": True, "margin": 5, "highlight_words": True, "highlight_colour": "#FF0000"}),
        (ass_file(HOSTILE, 1280, 720, style=Style(font_size=0.07, text_colour="#00FFFF")),
         {"font_size": 7.0, "position": "bottom", "text_colour": "#00FFFF", "outline_colour": "#000000", "box": False,
          "margin": 6, "highlight_words": False, "highlight_colour": "#FFFF00"}),
        ("1\n00:00:01,000 --> 00:00:02,000\nan SRT file\n", {}),  # not ASS: the fields stay as they are
        ("[Script Info]\nnot ass at all", {}),  # broken: the same (the job says why)
    ],
)  # fmt: skip
def test_an_ass_file_on_the_page_fills_its_style_fields(text, fields, tmp_path):
    from pipeline.jobs.page import STYLE_FIELDS, style_fields

    path = tmp_path / "brought.ass"
    path.write_text(text, encoding="utf-8")
    got = style_fields(str(path))
    assert got == fields and set(got) in (set(), set(STYLE_FIELDS))


def test_speaker_colours_with_words_lit_up():
    """Each speaker keeps a colour while words light up: burned in, karaoke from the speaker's colour (\\2c) to the
    highlight colour (\\1c), covered once said by the cue in the speaker's colour (\\c); in the .ass, the speaker's
    colour before a word is lit (\\2c)."""
    cues = [Cue(0.0, 1.0, "Hi there", None, "Speaker 1"), Cue(2.0, 3.0, "Yes", None, "Speaker 2")]
    style = Style(speaker_colours=True, highlight_words=True, highlight_colour="#FF00FF")
    burned = pysubs2.SSAFile.from_string(to_ass(cues, 640, 360, style=style, language="en", labels="none"))
    lit, cover = sorted((e for e in burned.events if e.start >= 2000), key=lambda e: e.layer)
    assert lit.text.startswith("{\\1c&HFF00FF&") and "{\\2c&H00FFFF&}{\\k100}Yes" in lit.text  # yellow, lit magenta
    assert "{\\c&H00FFFF&}{\\ko0}Yes" in cover.text  # in yellow again once said (never, for the last word)
    karaoke = pysubs2.SSAFile.from_string(ass_file(cues, 640, 360, style=style, language="en", labels="none"))
    assert karaoke.events[1].text.startswith("{\\2c&H00FFFF&}{\\k")


def test_a_burn_script_with_lit_words_grows_with_the_text_not_its_square():
    """An event per lit word, each carrying its whole cue, made a 517-kB SRT a 267-MB script (issue 49, item 5):
    now a cue is two or three events, each the cue once, with a karaoke tag a word."""
    from pipeline.subtitles.read import parse

    text = " ".join(["a b"] * 249)  # 995 characters, 498 words: the longest cue, of the shortest words
    srt = "".join(f"{n}\n00:00:{n:02d},000 --> 00:00:{n:02d},900\n{text}\n\n" for n in range(1, 51))
    for box in (False, True):
        script = to_ass(parse(srt), 1920, 1080, style=Style(highlight_words=True, box=box))
        assert len(script) < 12 * len(srt)  # 2 or 3 copies, and "{\k1}" or "{\ko1}" a word; it was 500 times


def _script(*texts: str) -> str:
    head = to_ass([Cue(0, 1, "x")], 640, 360).split("[Events]")[0]
    lines = [f"Dialogue: 0,0:00:00.00,0:00:05.00,Default,,0,0,0,,{t}" for t in texts]
    return (
        head
        + "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
        + "\n".join(lines)
    )


@pytest.mark.parametrize(
    "texts, problem",
    [
        (["Hello", "{\\p1}m 0 0 l 10 0 10 10"], None),  # a small drawing: kept, not a cue
        (["Hello", "{\\p1}" + "m 0 0 l 10 0 " * 2000], "Line 2 is a drawing of more than 20000 characters"),
        (["Hello", "{\\an8\\p2}" + "m 0 0 l 10 0 " * 2000], "Line 2 is a drawing"),
        (["Hello {\\p1}" + "m 0 0 l 10 0 " * 2000 + "{\\p0}"], "Line 1 is a drawing"),
        (["Hello"] + ["{\\p1}m 0 0 l 1 1"] * MAX_CUES, f"The subtitles have more than {MAX_CUES} cues"),
        (["{\\pos(10,10)}Hello"], None),  # \pos is not \p
    ],
)
def test_drawings_count_and_are_bounded(texts, problem):
    """pysubs2 calls an event with {\\p1} a drawing: it was neither counted nor measured, and one 1.9-MB drawing took
    1-3 s a frame to burn (issue 49, item 8)."""
    if problem is None:
        cues, script = read_ass(_script(*texts))
        assert [c.text for c in cues] == ["Hello"] and script.count("Dialogue:") == len(texts)
    else:
        with pytest.raises(SubtitleError, match="^" + re.escape(problem)):
            read_ass(_script(*texts))


def test_karaoke_syllables_are_read_in_linear_time():
    """700 events of 400 karaoke syllables (1.7 MB) took 6 s to read, most of it in pysubs2's drawing test."""
    import time

    started = time.monotonic()
    cues, _ = read_ass(_script(*["{\\k5}a" * 400] * 700))
    assert len(cues) == 700 and len(cues[0].words) == 400
    assert time.monotonic() - started < 3.0
