"""ffmpeg's words in our messages: its last line of errors, without the heap addresses it prefixes (issue 49)."""

import pytest

from pipeline.errors import SubtitleError
from pipeline.media.audio import last_line, probe


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


@pytest.mark.parametrize(
    "name, content",
    [
        ("notes.mp4", b"a text file renamed"),
        ("empty.mkv", b""),
        ("noise.mp3", bytes(range(256)) * 64),
        ("page.webm", b"<!doctype html><html><body>404</body></html>"),
    ],
)
def test_a_file_that_is_not_media_gets_a_message_in_our_words(name, content, tmp_path):
    """Issue 50, item 5: ffmpeg's own text ("Error opening input files: Invalid data found...") reached the user,
    with "this server" on the CLI too. It goes to the log; the message says what to do."""
    (tmp_path / name).write_bytes(content)
    with pytest.raises(SubtitleError) as caught:
        probe(tmp_path / name)
    assert str(caught.value) == f"{name} is not a video or audio file: use MP4, MKV, WebM, MOV, MP3, WAV, …"
