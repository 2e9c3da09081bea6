"""ffmpeg's words in our messages: its last line of errors, without the heap addresses it prefixes (issue 49); and
the bounds every ffmpeg runs under."""

import os

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


@pytest.mark.parametrize("util_linux", [True, False])
def test_every_ffmpeg_runs_bounded_in_a_group_of_its_own(util_linux, monkeypatch):
    """ffmpeg_popen's ffmpeg holds at most its memory (RLIMIT_DATA, as the kernel reports it) in a process group of its
    own, started through util-linux's setpriv and prlimit, or by a preexec_fn where they are missing."""
    import subprocess
    import time

    from pipeline.media import audio

    if util_linux and audio._guards() is None:
        pytest.skip("util-linux's setpriv and prlimit cannot run here")
    if not util_linux:
        monkeypatch.setattr(audio, "_guards", lambda: None)
    memory = 300 * 2**20
    command, bounds = audio.ffmpeg_popen("-nostdin", "-f", "lavfi", "-i", "anullsrc", "-f", "null", "-", memory=memory)
    assert ("preexec_fn" in bounds) is not util_linux
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **bounds) as proc:
        try:
            limits = ""
            for _ in range(100):  # (setpriv execs prlimit, which execs ffmpeg: one process, ffmpeg at the end)
                program = open(f"/proc/{proc.pid}/cmdline", "rb").read().split(b"\0")[0]
                if b"ffmpeg" in os.path.basename(program):
                    limits = open(f"/proc/{proc.pid}/limits").read()
                    break
                time.sleep(0.05)
            data = next(line for line in limits.splitlines() if line.startswith("Max data size"))
            assert data.split()[3:5] == [str(memory), str(memory)]
            assert os.getpgid(proc.pid) == proc.pid  # its own group
        finally:
            audio.kill_group(proc)
