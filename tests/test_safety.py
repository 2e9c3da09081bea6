"""Safe on a network (issue 13): media from strangers gets bounded work and reaches nothing but itself.

Real ffmpeg on real files; a local HTTP server stands in for the internet and logs every request, so a test can
prove that nothing was fetched.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import ENGLISH, clip_path, ffmpeg, free_port

from pipeline.errors import Cancelled, SubtitleError
from pipeline.jobs import JobResult, JobSpec, Policy, run_job
from pipeline.media import Limits, ffmpeg_exe, load_audio, probe, run_ffmpeg
from pipeline.model import ModelCache


@pytest.fixture
def logged_server(tmp_path):
    """An HTTP server on loopback that serves tmp_path/www and records each path asked for."""
    www = tmp_path / "www"
    www.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(www), **kwargs)

        def log_message(self, *args) -> None:
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", www, requests
    server.shutdown()
    server.server_close()


def no_duration_mkv(path: Path, seconds: float) -> Path:
    """Speech in a Matroska file written to a pipe: the container does not say how long it is ("Duration: N/A")."""
    with open(path, "wb") as out:
        subprocess.run(
            [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin", "-stream_loop", "-1",
             "-i", str(clip_path(ENGLISH[0])), "-t", str(seconds), "-c:a", "aac", "-f", "matroska", "-live", "1", "-"],
            stdout=out, check=True, timeout=120,
        )  # fmt: skip
    return path


def test_a_file_that_does_not_say_its_length_is_refused_by_a_server_and_decoded_to_the_limit_at_most(tmp_path):
    mkv = no_duration_mkv(tmp_path / "endless.mkv", 40)
    assert probe(mkv).duration is None
    limits = Limits(max_duration=20)
    events = run_job(JobSpec((mkv,), subtitles=None), tmp_path / "out", ModelCache(), Policy(limits))
    result = [e for e in events if isinstance(e, JobResult)][0]
    assert [f.message for f in result.failed] == [
        "endless.mkv does not say how long it is, so this server does not take it: remux it (ffmpeg -i IN -c copy "
        "OUT.mp4) or use another file"
    ]
    # whatever a container claims, decoding stops 1 s past the limit and the decoded length is checked again
    with pytest.raises(SubtitleError, match=r"^endless.mkv is 0:21 long; this server takes up to 0:20"):
        load_audio(mkv, limits=limits)
    assert len(load_audio(mkv)) / 16000 == pytest.approx(40, abs=0.1)  # (the CLI: no limits)


@pytest.mark.parametrize(
    "playlist",
    [
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + "#EXTINF:0.001,\n{url}/a.ts\n" * 500 + "#EXT-X-ENDLIST\n",
        "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{url}/live.ts\n",  # live: no end, polled for ever
        "#EXTM3U\n#EXTINF:10,\n{local}\n",  # a file on the server
    ],
)
def test_playlists_are_refused_before_anything_is_read(playlist, logged_server, tmp_path):
    url, www, requests = logged_server
    ffmpeg("-i", str(clip_path(ENGLISH[0])), "-c:a", "aac", "-f", "mpegts", str(www / "a.ts"))
    path = tmp_path / "upload.m3u8"
    path.write_text(playlist.format(url=url, local=www / "a.ts"), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(SubtitleError, match=r"^upload.m3u8 is not a media file this server reads"):
        probe(path)
    with pytest.raises(SubtitleError):
        load_audio(path, limits=Limits())
    assert time.monotonic() - started < 30 and requests == []


def test_a_name_is_never_a_protocol(tmp_path, monkeypatch):
    """A file whose name looks like an ffmpeg protocol ("concat:...", "http:...") is opened as that file."""
    inner = tmp_path / "inner.wav"
    ffmpeg("-i", str(clip_path(ENGLISH[0])), str(inner))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "concat:inner.wav|inner.wav").write_bytes(b"not media")
    with pytest.raises(SubtitleError, match=r"^concat:inner.wav\|inner.wav is not a media file this server reads"):
        probe(Path("concat:inner.wav|inner.wav"))
    assert probe(inner).has_audio


@pytest.mark.parametrize(
    "stop_after, timeout, error",
    [
        (0.5, None, Cancelled),  # Cancel: killed at once
        (None, 1.0, SubtitleError),  # too slow: killed at the deadline
    ],
)
def test_ffmpeg_is_killed_with_its_process_group(stop_after, timeout, error):
    stop = threading.Event()
    if stop_after:
        threading.Timer(stop_after, stop.set).start()
    endless = ["-re", "-f", "lavfi", "-i", "sine=frequency=440", "-f", "null", "-"]
    started = time.monotonic()
    with pytest.raises(error):
        run_ffmpeg(endless, timeout, stop, "Decoding")
    assert time.monotonic() - started < 3
    assert not _ffmpeg_children()


def _ffmpeg_children() -> list[int]:
    """ffmpeg processes whose parent is this test process."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if "ffmpeg" in name and int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(int(pid))
    return found
