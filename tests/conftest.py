"""Shared fixtures: real clips from tests/data, the embedded Whisper base as PyTorch and as OpenVINO IR.

The IR is exported once per test session into a temporary cache, so tests never touch the user's cache.
"""

from __future__ import annotations

import csv
import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

import jiwer
import numpy as np
import pytest
from whisper.normalizers import EnglishTextNormalizer

DATA = Path(__file__).parent / "data"
# tests mirror pipeline/'s folders; a test module may borrow another's helpers by name (`from test_video import ocr`)
sys.path[:0] = [str(p) for p in sorted(Path(__file__).parent.iterdir()) if p.is_dir() and p.name != "data"]
ENGLISH = ["en_ls_2412-153948-0000", "en_ljs_LJ001-0001", "en_librivox_sas01_0870", "en_ls_61-70968-0000"]
SPANISH = "es_mls_13697_11991_000000"
LONG = "en_librivox_sonnet001"  # 53 s: two 30-second windows
# the test modules that take longest (`pytest --durations=0`, summed by module), in the order xdist's workers start
# them (`--no-loadscope-reorder`: xdist would otherwise start the modules with the most tests first)
LONGEST_FIRST = [
    "tests/test_utterances.py",
    "tests/test_safety.py",
    "tests/test_browser.py",
    "tests/test_app.py",
    "tests/media/test_media_table.py",
    "tests/test_e2e.py",
    "tests/asr/test_longform.py",
    "tests/jobs/test_jobs.py",
    "tests/speakers/test_speaker_cues.py",
    "tests/asr/test_openvino.py",
]
# (The Ray tests start among the short modules, in path order, and test_ray.py may run alone for the last half minute.
# Started fifth, its two workers ran beside test_app.py's jobs, whose cancel test once waited past its 120 s; started
# beside test_ray_local.py's own Ray instance, that one timed out starting on 2 cores.)


@pytest.fixture(scope="session")
def manifest() -> dict[str, dict[str, str]]:
    with open(DATA / "manifest.tsv", encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f, delimiter="\t")}


def clip_path(clip_id: str) -> Path:
    return next(DATA.glob(f"{clip_id}.*"))


# Gradio keeps uploads in GRADIO_TEMP_DIR, /tmp/gradio by default, under the hash of their bytes, and an app that
# closes deletes what it keeps there (delete_cache): each test process gets its own, so that one xdist worker's app
# cannot delete an upload of the same file by another. (xdist's workers inherit the controller's environment: a folder
# that this file made, marked in _OURS, is not the user's and is replaced. Made in pytest_configure, not on import:
# Ray's workers import this file to unpickle its functions, and would leave a folder each.)
_OURS = "SUBTITLE_TESTS_GRADIO_TEMP"
_GRADIO_TEMP = None


def pytest_configure(config) -> None:
    global _GRADIO_TEMP
    if os.environ.get("GRADIO_TEMP_DIR") in (None, os.environ.get(_OURS)):
        _GRADIO_TEMP = os.environ["GRADIO_TEMP_DIR"] = os.environ[_OURS] = tempfile.mkdtemp(prefix="gradio-tests-")


def pytest_sessionfinish(session, exitstatus) -> None:
    if _GRADIO_TEMP is not None:
        shutil.rmtree(_GRADIO_TEMP, ignore_errors=True)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: a worker a core, at most 4 (each worker compiles its own models and may start a browser)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def pytest_collection_modifyitems(config, items) -> None:
    """The longest test modules first, so that no xdist worker is left with one at the end (`--dist loadfile`: a
    module runs whole on one worker, its module fixtures once)."""
    order = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: order.get(item.nodeid.split("::")[0], len(LONGEST_FIRST)))


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory) -> Path:
    """One model cache for the run, shared by xdist's workers (exports take a file lock)."""
    root = tmp_path_factory.getbasetemp()
    cache = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "model-cache"
    cache.mkdir(exist_ok=True)
    old = os.environ.get("SUBTITLE_CACHE_DIR")
    os.environ["SUBTITLE_CACHE_DIR"] = str(cache)
    yield cache
    if old is None:
        os.environ.pop("SUBTITLE_CACHE_DIR", None)
    else:
        os.environ["SUBTITLE_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def torch_model():
    from convert.checkpoints import resolve_checkpoint

    return resolve_checkpoint("base").load()


@pytest.fixture(scope="session")
def ov_model(model_cache):
    """The IR at f32, the precision that decodes token for token like openai-whisper."""
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import ModelOptions

    return load_model(ModelOptions(precision="f32"))


@pytest.fixture(scope="session")
def auto_model(model_cache):
    """The IR at auto, as the page and the CLI load it unless told otherwise: compiled once per test process and
    given to every app of the process (conftest.serve_app), instead of once per app."""
    from pipeline.asr.cache import load_model
    from pipeline.asr.options import ModelOptions

    return load_model(ModelOptions())


@pytest.fixture(scope="session")
def audio():
    from pipeline.media.audio import load_audio

    cache: dict[str, np.ndarray] = {}

    def get(clip_id: str) -> np.ndarray:
        if clip_id not in cache:
            cache[clip_id] = load_audio(clip_path(clip_id))
        return cache[clip_id]

    return get


def wer(reference: str, hypothesis: str) -> float:
    normalize = EnglishTextNormalizer()
    return jiwer.wer(normalize(reference), normalize(hypothesis))


def ffmpeg(*args: str) -> None:
    from pipeline.media.audio import ffmpeg_exe

    subprocess.run(
        [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args], check=True, timeout=300
    )


def colour_frame(video: Path, at: float):
    """The RGB picture of `video` at `at` s, (height, width, 3) int16."""
    import numpy as np

    from pipeline.media.audio import ffmpeg_exe, probe

    raw = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-ss", f"{at:.3f}", "-i", str(video), "-frames:v", "1", "-f", "rawvideo",
         "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout  # fmt: skip
    info = probe(video)
    return np.frombuffer(raw, np.uint8).reshape(info.height, info.width, 3).astype(np.int16)


def mute_video(path: Path) -> Path:
    """A 2-second H.264 mp4 with no audio stream."""
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=160x120:rate=10",
        "-t",
        "2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        str(path),
    )
    return path


def slow_ass(seconds: int = 20, width: int = 640, height: int = 360) -> str:
    """An ASS script made to be slow to draw: our styles, 300 blurred, bordered, turning lines for `seconds`."""
    from pipeline.subtitles.ass import to_ass
    from pipeline.subtitles.cues import Cue

    head = to_ass([Cue(0, 1, "x")], width, height).split("[Events]")[0]
    fields = "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
    end = f"0:{seconds // 60:02d}:{seconds % 60:02d}.00"
    slow = "".join(f"Dialogue: {i},0:00:00.00,{end},Default,,0,0,0,,{{\\blur40\\bord60\\fs200\\t(\\frz360)}}Slow {i}\n"
                   for i in range(300))  # fmt: skip
    return head + "[Events]\n" + fields + slow


def speech_video(clip_id: str, path: Path) -> Path:
    """An H.264 + AAC mp4 (a plain navy picture) carrying a real speech clip from tests/data."""
    ffmpeg("-i", str(clip_path(clip_id)), "-f", "lavfi", "-i", "color=c=navy:size=320x240:rate=25",
           "-map", "1:v", "-map", "0:a", "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac",
           str(path))  # fmt: skip
    return path


@pytest.fixture(scope="session")
def videos(tmp_path_factory) -> dict[str, Path]:
    """The first two English clips as mp4 videos, by clip id."""
    folder = tmp_path_factory.mktemp("videos")
    return {clip: speech_video(clip, folder / f"{clip}.mp4") for clip in ENGLISH[:2]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a client that hangs up mid-file (a download stopped at the size limit) is expected


@pytest.fixture(scope="session")
def media_server(videos):
    """A local HTTP server (a thread on a loopback port) serving the test videos; yields its base URL."""
    folder = next(iter(videos.values())).parent
    server = _QuietServer(("127.0.0.1", free_port()), functools.partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def app_server(ov_model, auto_model, tmp_path_factory):
    """The web app on a loopback port, sharing the session's compiled models, two jobs at a time.

    Yields (url, jobs_dir, demo)."""
    yield from serve_app(ov_model, auto_model, tmp_path_factory)


def serve_app(ov_model, auto_model, tmp_path_factory):
    """app_server's body, for a module that wants an app of its own (test_browser.py: jobs other modules cancel may
    hold the app's job slots for a while)."""
    import app
    from pipeline.asr.cache import ModelCache
    from pipeline.asr.precision import resolve_precision
    from pipeline.jobs.executors import InProcess

    jobs_dir = tmp_path_factory.mktemp("jobs")
    subtitler = app.SubtitleApp(
        InProcess(ModelCache(loaded={("base", "f32"): ov_model, ("base", resolve_precision("auto").name): auto_model})),
        [("Whisper base (embedded)", "base")],
        # the media server is on loopback; every test's jobs come from this one address
        app.ServerOptions(allow_private_urls=True, jobs_dir=jobs_dir, concurrency=2, per_client=40),
    )
    demo = app.build_ui(subtitler)  # (launch queues it as main() does)
    port = free_port()
    app.launch(demo, subtitler.options, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", jobs_dir, demo
    demo.close()


class RayHead(NamedTuple):
    address: str  # the GCS address, host:port
    client: str  # the Ray Client address, ray://host:port


@pytest.fixture(scope="module")  # (stopped after its module, not left running beside the worker's next modules)
def ray_head(model_cache):
    """A Ray cluster of one local node limited to 2 CPUs (`ray start --head`), for the tests of the Ray executor;
    its workers use the session's model cache. Token authentication is on, as on a real cluster: the token is
    ~/.ray/auth_token, and RAY_AUTH_MODE=token tells this process and its children to send it. Yields its addresses:
    the GCS one (host:port, for drivers in the cluster's network) and the Ray Client one (ray://host:port, for drivers
    outside it); `ray stop` ends it."""
    ray = str(Path(sys.executable).parent / "ray")
    port, client = free_port(), free_port()
    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "token"
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(model_cache), "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([ray, "get-auth-token", "--generate"], check=True, capture_output=True, env=env, timeout=60)
    subprocess.run(
        [ray, "start", "--head", f"--port={port}", f"--ray-client-server-port={client}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats"],
        check=True, capture_output=True, env=env, timeout=180,
    )  # fmt: skip
    try:
        yield RayHead(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client}")
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)
        if old is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old
