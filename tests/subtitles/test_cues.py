"""Cue segmentation rules, table-driven: timed words in, cues out; every cue is checked by pipeline.subtitles.check."""

from __future__ import annotations

import pytest

from pipeline.asr.results import Word
from pipeline.subtitles.check import check
from pipeline.subtitles.cues import LATE, Cue, CueRules, _retime, cues_from_words, in_time_order


def words(text: str, start: float = 0.0, per_word: float = 0.3, gap: float = 0.05, pauses: dict | None = None,
          cps: float | None = None):  # fmt: skip
    """Timed words from text: `per_word` seconds each (or as long as their letters take at `cps` characters per
    second), `gap` between, longer `pauses` after given word indexes."""
    out, t = [], start
    for i, w in enumerate(text.split()):
        length = len(w) / cps if cps else per_word
        out.append(Word(round(t, 3), round(t + length, 3), " " + w))
        t += length + gap + (pauses or {}).get(i, 0.0)
    return out


def cjk_words(text: str, start: float = 0.0, per_char: float = 0.2):
    return [
        Word(round(start + i * per_char, 3), round(start + (i + 1) * per_char - 0.02, 3), c) for i, c in enumerate(text)
    ]


def texts(cues):
    return [c.text for c in cues]


def rule_breaks(cues):
    return [p.rule for p in check(cues)]


@pytest.mark.parametrize(
    "timed, expected",
    [
        ([], []),
        ([Word(0, 1, "  ")], []),
        (words("Hello there."), ["Hello there."]),
        # two sentences, each long enough on screen: one cue each
        (words("This is the first sentence here. And this is the second one."),
         ["This is the first sentence here.", "And this is the second one."]),
        # short sentences stay together until the cue has been up for 5/6 s
        (words("Yes. No. Maybe so."), ["Yes. No. Maybe so."]),
        # too long for one line: two balanced lines, broken after the comma
        (words("If the reader will excuse me, I will say nothing of my antecedents"),
         ["If the reader will excuse me,\nI will say nothing of my antecedents"]),
        # a long pause always starts a new cue
        (words("first words here and then after a pause", pauses={3: 1.5}),
         ["first words here and", "then after a pause"]),
        # numbers and symbols are words like any other
        (words("In 1984 it cost $3.50, or 12% more."), ["In 1984 it cost $3.50, or 12% more."]),
        # a word longer than a line is never cut
        (words("Supercalifragilisticexpialidociousnessisnotawordbutstill ok"),
         ["Supercalifragilisticexpialidociousnessisnotawordbutstill", "ok"]),
    ],
)  # fmt: skip
def test_segmentation(timed, expected):
    assert texts(cues_from_words(timed)) == expected


def spoken(*pieces: str):
    """Timed words exactly as given (whisper's, with or without a leading space)."""
    return [Word(0.3 * i, 0.3 * i + 0.25, p) for i, p in enumerate(pieces)]


@pytest.mark.parametrize(
    "timed, expected",
    [
        # a word without its leading space continues the word before: hyphens, abbreviations, split numbers
        (spoken(" all", "-eating", " worms."), "all-eating worms."),
        (spoken(" so", " cold", "-hearted"), "so cold-hearted"),
        (spoken(" that", " is,", " i", ".e.,", " this"), "that is, i.e., this"),
        (spoken(" in", " the", " year", " 14", "62."), "in the year 1462."),
        (spoken(" don", "'t", " go"), "don't go"),
        # ... but a sentence's first word after punctuation gets its space even when whisper gave none
        (spoken(" the", " end.", "So", " we"), "the end. So we"),
        (spoken("First", " word"), "First word"),
    ],
)  # fmt: skip
def test_words_keep_whispers_spacing(timed, expected):
    assert texts(cues_from_words(timed)) == [expected]


def test_long_speech_is_split_into_readable_cues_at_clauses():
    text = ("Printing, in the only sense with which we are at present concerned, differs from most if not from all "
            "the arts and crafts represented in the Exhibition in being comparatively modern, for although the "
            "Chinese took impressions from wood blocks engraved in relief for centuries before the woodcutters of "
            "the Netherlands, by a similar process, produced the block books.")  # fmt: skip
    cues = cues_from_words(words(text, cps=16, gap=0.05))  # about 15 characters per second, like real speech
    assert " ".join(c.text.replace("\n", " ") for c in cues) == text  # nothing lost, nothing added
    assert rule_breaks(cues) == []
    assert all(len(c.text.split("\n")) <= 2 for c in cues)
    # a 97-character clause must break inside; every other cue ends at a comma or full stop
    assert sum(c.text.endswith(",") or c.text.endswith(".") for c in cues) >= len(cues) - 2


def test_cjk_counts_characters_and_adds_no_spaces():
    cues = cues_from_words(
        cjk_words("我们今天讨论字幕的生成。这是一个很长的句子，需要分成两行才能显示完整，否则观众读不完。")
    )
    assert all(" " not in c.text for c in cues)
    assert all(len(line) <= 16 for c in cues for line in c.text.split("\n"))
    assert "".join(c.text.replace("\n", "") for c in cues) == (
        "我们今天讨论字幕的生成。这是一个很长的句子，需要分成两行才能显示完整，否则观众读不完。"
    )
    assert cues[0].text == "我们今天讨论字幕的生成。"  # the sentence end closes the first cue
    assert rule_breaks(cues) == []


def test_cues_end_when_speech_ends_and_keep_their_gap():
    timed = words("A sentence that is spoken here.") + words("Another one after a long silence.", start=10.0)
    first, second = cues_from_words(timed)
    assert first.end == pytest.approx(timed[5].end)  # long enough already: not stretched into the silence
    assert second.start == 10.0
    # too short to read: lengthened to 5/6 s, into the silence after it
    hi = cues_from_words(words("Hi.") + words("Next words after a pause.", start=1.5))
    assert texts(hi) == ["Hi.", "Next words after a pause."] and hi[0].end == pytest.approx(5 / 6 + 0.001)
    # speech that ends right before the next sentence: trimmed to leave 2 frames
    close = words("This first sentence is long enough.") + words("Then the next.", start=2.1)
    a, b = cues_from_words(close)
    assert close[5].end > b.start - 2 / 24 and a.end == pytest.approx(b.start - 2 / 24 - 0.001)
    assert rule_breaks([a, b]) == []


GAP = 2 / 24 + 0.001  # the gap kept before the next cue, and its millisecond of margin


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        # (start, end, characters) of each cue. 30 characters need 1.5 s at 20 per second
        ([(1.0, 2.6, 30)], [(1.0, 2.6)]),  # readable as it is
        ([(1.0, 2.0, 30)], [(1.0, 2.501)]),  # lengthened into the silence after it
        # ... none: up to 0.15 s sooner, then up to 0.3 s of the next cue's time (which starts 0.3 s later)
        ([(1.0, 2.0, 30), (2.1, 4.0, 10)], [(0.85, 2.1 - GAP + LATE), (2.1 + LATE, 4.0)]),
        # no room before it: the next cue's time only
        (
            [(0.0, 0.95, 5), (1.0, 2.0, 30), (2.1, 4.0, 10)],
            [(0.0, 1.0 - GAP), (1.0, 2.1 - GAP + LATE), (2.1 + LATE, 4.0)],
        ),
        # fast speech, three cues in a row: each takes what it needs of the next one's time, up to 0.3 s, and the
        # last one the silence after them
        (
            [(1.0, 2.0, 25), (2.1, 3.5, 34), (3.6, 6.3, 62)],
            [(0.85, 0.85 + 1.251), (0.85 + 1.251 + GAP, 3.6 - GAP + LATE), (3.6 + LATE, 3.6 + LATE + 3.101)],
        ),
        # a cue that needs no more time is trimmed to leave the gap: the next one keeps its start
        ([(1.0, 3.0, 30), (3.05, 5.0, 10)], [(1.0, 3.05 - GAP), (3.05, 5.0)]),
        ([(1.0, 2.4, 30), (2.45, 4.0, 10)], [(2.45 - GAP - 1.501, 2.45 - GAP), (2.45, 4.0)]),  # as much as needed
    ],
)
def test_retime(spans, expected):
    cues = _retime([Cue(a, b, "x" * n) for a, b, n in spans], CueRules())
    assert [(c.start, c.end) for c in cues] == [pytest.approx(e) for e in expected]


def W(start: float, end: float, word: str) -> Word:
    return Word(start, end, " " + word)


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        # whisper skipped a sentence and a later decode filled it in: the segment before it ends with a word that
        # is said after it (held-out seed 11), which goes where it is said
        (
            [
                [W(380.3, 380.7, "letters,"), W(383.9, 384.8, "the"), W(392.6, 392.9, "invention")],
                [W(384.9, 385.1, "This"), W(385.1, 385.3, "kind.")],
                [W(392.7, 393.3, "of"), W(393.3, 393.7, "movable")],
            ],
            "letters, the This kind. invention of movable",
        ),
        # a window's first word timed before the last words of the window before (seed 2): the text's order
        (
            [[W(140.2, 140.6, "And"), W(140.8, 140.9, "it"), W(140.9, 141.1, "is"), W(141.1, 141.3, "worth")],
             [W(140.8, 141.8, "mention"), W(141.8, 142.0, "in")]],
            "And it is worth mention in",
        ),
        # a first word that snapping moved past the next one (seeds 1 and 7): the text's order
        ([[W(253.9, 253.9, "I"), W(253.5, 253.7, "have"), W(253.7, 254.0, "a"), W(254.0, 254.3, "cold,")]],
         "I have a cold,"),
        # a segment that belongs 15 s back (dev seed 3): back by its words' starts
        ([[W(395.7, 396.0, "talk")], [W(411.3, 411.9, "surpassed.")], [W(396.1, 396.5, "like"), W(396.5, 397.0, "this.")]],
         "talk like this. surpassed."),
    ],
)  # fmt: skip
def test_in_time_order(segments, expected):
    assert " ".join(w.word.strip() for w in in_time_order(segments)) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # two decodes of one stretch, both kept: each word once
        ([W(395.7, 396.3, "talk"), W(396.1, 396.5, "like"), W(396.4, 396.6, "like"), W(396.5, 396.9, "this."),
          W(396.6, 396.9, "this.")], ["talk like this."]),
        # a word said twice in a row: both (their times touch, end to start)
        ([W(1.0, 1.3, "very"), W(1.3, 1.6, "very"), W(1.6, 2.0, "good.")], ["very very good."]),
        # the same word again later: both
        ([W(1.0, 1.3, "No."), W(3.0, 3.3, "No.")], ["No.", "No."]),
    ],
)  # fmt: skip
def test_repeats_said_once(given, expected):
    assert texts(cues_from_words(given)) == expected


COMPLAINT = "He began a confused complaint against the wizard who had vanished behind the curtain on the left."


@pytest.mark.parametrize(
    ("per_word", "expected", "breaks"),
    [
        # read at 0.25 s a word: the longest first cue that fits would be read at 21+ characters a second, and the
        # short second one has time to spare; the cut moves so that both can be read
        (0.25, ["He began a confused", "complaint against the wizard who had\nvanished behind the curtain on the left."],
         []),
        # slow enough: the cut stays where the line rules put it
        (0.28, ["He began a confused complaint against\nthe wizard who had vanished behind the", "curtain on the left."],
         []),
        # too fast for any cut (7 words a second): the cut that leaves the fewest characters unread in time, and the
        # checker still says so
        (0.12, ["He began a confused complaint against the", "wizard who had vanished behind\nthe curtain on the left."],
         ["reading speed"]),
    ],
)  # fmt: skip
def test_the_cut_moves_so_that_both_cues_can_be_read(per_word, expected, breaks):
    cues = cues_from_words(words(COMPLAINT, per_word=per_word, gap=0.03))
    assert texts(cues) == expected
    assert rule_breaks(cues) == breaks


@pytest.mark.parametrize(
    "text, lines",
    [
        # a new sentence starts a new line when both fit (issue 50, item 7), even against balance
        ("Chapter 17 of the Crimson Ferry Book. This is a Librevox Recording.",
         "Chapter 17 of the Crimson Ferry Book.\nThis is a Librevox Recording."),
        ("Yes. I think we should go to the store today", "Yes.\nI think we should go to the store today"),
        # when it does not fit, balance and clause punctuation as before
        ("Yes. I think that we should all go down to the old store today",
         "Yes. I think that we should all\ngo down to the old store today"),
        ("We walked for hours, and then we sat down by the river bank",
         "We walked for hours, and then\nwe sat down by the river bank"),
    ],
)  # fmt: skip
def test_a_new_sentence_starts_a_new_line(text, lines):
    from pipeline.subtitles.cues import _lines

    said = [Word(0.3 * i, 0.3 * i + 0.25, (" " if i else "") + w) for i, w in enumerate(text.split())]
    assert _lines(said, 42, False, 2) == lines
