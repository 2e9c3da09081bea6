"""The web app, launched on a loopback port and called through gradio_client like any API user would."""

from __future__ import annotations

import socket

import pytest
import srt
from conftest import ENGLISH, clip_path, ffmpeg, mute_video, wer
from gradio_client import Client, handle_file

import app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(ov_model):
    subtitler = app.Subtitler()
    subtitler._model = ov_model  # share the session's compiled model instead of compiling a second copy
    demo = app.build_ui(subtitler).queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    out = tmp_path_factory.mktemp("app") / "clip.mp4"
    ffmpeg("-i", str(clip_path(ENGLISH[0])), "-f", "lavfi", "-i", "color=c=navy:size=320x240:rate=25",
           "-map", "1:v", "-map", "0:a", "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", str(out))  # fmt: skip
    return out


def test_upload_gives_srt_and_subtitled_preview(server, video, manifest):
    client = Client(server, verbose=False)
    preview, srt_file = client.predict(handle_file(str(video)), "auto", "transcribe", api_name="/subtitle")
    cues = list(srt.parse(open(srt_file, encoding="utf-8").read()))
    assert wer(manifest[ENGLISH[0]]["reference_text"], " ".join(c.content for c in cues)) <= 0.10
    assert preview["value"].endswith(".mp4") and preview["subtitles"]  # the preview carries the subtitles as a track
    assert open(preview["subtitles"], encoding="utf-8").read().startswith("WEBVTT")


def test_file_without_audio_is_a_message_not_a_traceback(server, tmp_path):
    mute = mute_video(tmp_path / "mute.mp4")
    client = Client(server, verbose=False)
    with pytest.raises(Exception, match="has no audio track: choose a file with sound"):
        client.predict(handle_file(str(mute)), "auto", "transcribe", api_name="/subtitle")
