"""ffmpeg's words in our messages: its last line of errors, without the heap addresses it prefixes (issue 49)."""

import pytest

from pipeline.media.audio import last_line


@pytest.mark.parametrize(
    "stderr, expected",
    [
        ("", "no output"),
        ("\n  \n", "no output"),
        ("one\ntwo\n\n", "two"),
        (
            "[out#0/mp4 @ 0x555dab907b00] Could not write header (incorrect codec parameters ?)\n",
            "Could not write header (incorrect codec parameters ?)",
        ),
        ("[mov,mp4,m4a,3gp,3g2,mj2 @ 0x7f00aa] moov atom not found\nin.mp4: Invalid data", "in.mp4: Invalid data"),
        ("[Parsed_ass_0 @ 0x1] [a @ 0x2] fontselect: failed", "fontselect: failed"),
        ("Error [in] brackets stay", "Error [in] brackets stay"),
    ],
)
def test_last_line(stderr, expected):
    assert last_line(stderr) == expected


def test_last_line_of_nothing_says_what_the_caller_knows():
    assert last_line("", "exit code 1") == "exit code 1"
