"""The Ray executor on one machine: a local Ray node limited to 2 CPUs (conftest.ray_head), real clips, real models.

Two workers each hold a compiled model with one thread; the in-process run they are compared with uses one thread
too, so both decode the same numbers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
import srt
from conftest import ENGLISH, LONG, clip_path, free_port, wer

from pipeline.asr.cache import ModelCache
from pipeline.asr.options import ModelOptions
from pipeline.jobs.executors import InProcess
from pipeline.jobs.spec import CueDecoded, FileDone, JobResult, JobSpec, Progress

pytestmark = pytest.mark.slow  # real speech through real models, on Ray

ROOT = Path(__file__).resolve().parents[2]
BATCH = JobSpec(inputs=tuple(clip_path(c) for c in ENGLISH))  # 4 clips


def run(executor, spec: JobSpec, out: Path) -> tuple[list, JobResult]:
    events = list(executor.run(spec, out))
    assert isinstance(events[-1], JobResult)
    return events[:-1], events[-1]


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}


@pytest.fixture(scope="module")
def in_process(model_cache, tmp_path_factory) -> dict[str, str]:
    """The 4 clips' SRT files from the in-process executor, by name."""
    out = tmp_path_factory.mktemp("in-process")
    run(InProcess(ModelCache(ModelOptions(threads=1))), BATCH, out)
    return contents(out)


@pytest.fixture(scope="module")
def cluster(ray_head):
    from pipeline.jobs.ray import RayExecutor

    with RayExecutor(ray_head.address, workers=2) as executor:
        yield executor


def test_the_web_app_sends_its_jobs_to_the_cluster(ray_head, model_cache, manifest, videos):
    """(First in this module: the module's two workers, once started, hold both CPUs of the node.)"""
    from gradio_client import Client, handle_file

    port = free_port()
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(model_cache)}
    server = subprocess.Popen(
        [sys.executable, "app.py", "--ray", ray_head.address, "--workers", "1", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
                time.sleep(0.5)
        *_, downloads = Client(url, verbose=False).predict(files=[handle_file(str(videos[ENGLISH[0]]))],
                                                            api_name="/subtitle")  # fmt: skip
        assert [Path(p).name for p in downloads] == [f"{ENGLISH[0]}.srt"]
        text = " ".join(c.content for c in srt.parse(Path(downloads[0]).read_text(encoding="utf-8")))
        assert wer(manifest[ENGLISH[0]]["reference_text"], text) <= 0.10
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_cli_subtitles_a_folder_on_ray(ray_head, model_cache, manifest, tmp_path):
    """test_jobs.py's folder test on a local Ray node, through Ray Client (ray://), with one worker: the other CPU
    runs another test module. (Before the tests of `cluster`: its two workers hold the node's two CPUs while the
    module runs. The resume is checked on `cluster`, without a second driver and worker to start.)"""
    from test_jobs import folder_and_resume

    folder_and_resume(model_cache, manifest, tmp_path, ("--ray", ray_head.client, "--workers", "1"), resume=False)


def test_four_clips_through_two_workers_give_the_in_process_subtitles(cluster, in_process, manifest, tmp_path):
    started, timed = time.monotonic(), []
    for event in cluster.run(BATCH, tmp_path):
        timed.append((time.monotonic() - started, event))
    *events, result = [event for _, event in timed]
    assert isinstance(result, JobResult)
    assert contents(tmp_path) == in_process and len(in_process) == 4
    for clip in ENGLISH:
        text = " ".join(c.content for c in srt.parse(in_process[f"{clip}.srt"]))
        assert wer(manifest[clip]["reference_text"], text) <= 0.10
    assert [f.outputs for f in result.files] == [(tmp_path / f"{c}.srt",) for c in ENGLISH]  # in input order
    assert {e.index for e in events if isinstance(e, CueDecoded)} == {0, 1, 2, 3}  # cues streamed as decoded
    assert sorted(e.index for e in events if isinstance(e, FileDone)) == [0, 1, 2, 3]
    fractions = [e.fraction for e in events if isinstance(e, Progress)]
    assert fractions == sorted(fractions) and fractions[-1] > 0.9  # the batch's progress only grows
    # with a time left once a file is done and the batch has run 5 s (its rate is known then; unpinned workers may
    # finish the whole batch sooner)
    first_done = next(at for at, e in timed if isinstance(e, FileDone))
    assert all(e.left is not None for at, e in timed if isinstance(e, Progress) and at > max(first_done, 6))
    assert len(set(cluster.pids())) == 2
    # run again after deleting one output: that input alone goes to a worker, the others are skipped
    kept = (tmp_path / f"{ENGLISH[0]}.srt").stat().st_mtime_ns
    (tmp_path / f"{ENGLISH[2]}.srt").unlink()
    events, result = run(cluster, replace(BATCH, overwrite=False), tmp_path)
    assert [s.index for s in result.skipped] == [0, 1, 3] and not result.failed
    assert [f.outputs for f in result.files] == [(tmp_path / f"{ENGLISH[2]}.srt",)]
    assert contents(tmp_path) == in_process and (tmp_path / f"{ENGLISH[0]}.srt").stat().st_mtime_ns == kept


def test_videos_and_links_come_back_from_the_workers(cluster, videos, media_server, tmp_path):
    """A burned-in and a soft-subtitled video are made on a worker and written here under the job's names; a link
    is downloaded by the worker, and its preview comes back for the page."""
    from pipeline.media.audio import probe
    from pipeline.media.video import BurnOptions

    video, link = videos[ENGLISH[0]], f"{media_server}/{ENGLISH[1]}.mp4"
    spec = JobSpec(inputs=(video, link), burn=BurnOptions(), soft=True)
    _, result = run(cluster, spec, tmp_path / "out")
    assert not result.failed
    names = [[p.name for p in f.outputs] for f in result.files]
    assert names == [[f"{c}.srt", f"{c}.subtitled.mp4", f"{c}.subs.mkv", f"{c}.subs.mp4"] for c in ENGLISH[:2]]
    assert result.files[0].burned == tmp_path / "out" / f"{ENGLISH[0]}.subtitled.mp4"
    for f, original in zip(result.files, (video, video.parent / f"{ENGLISH[1]}.mp4")):
        for path in f.outputs[1:]:
            assert probe(path).duration == pytest.approx(probe(original).duration, abs=0.2)
    assert result.files[0].source.media == video
    # the page's preview of a link, made by the worker from its download, comes back beside the subtitles
    _, result = run(cluster, JobSpec(inputs=(link,), preview=True), tmp_path / "previewed")
    shown = result.files[0].preview
    assert shown == tmp_path / "previewed" / f"{ENGLISH[1]}.preview.mp4" and shown not in result.files[0].outputs
    assert probe(shown).duration == pytest.approx(probe(videos[ENGLISH[1]]).duration, abs=0.2)


def test_workers_the_cluster_cannot_start_are_a_message_not_a_hang(cluster, ray_head, tmp_path):
    """The module's two workers hold both CPUs: one more worker of 2 CPUs cannot start. One line, and nothing left."""
    from pipeline.errors import SubtitleError
    from pipeline.jobs.ray import RayExecutor

    with pytest.raises(SubtitleError) as refused:
        RayExecutor(ray_head.address, workers=1, place_timeout=5)
    assert str(refused.value) == (
        "Ray started 0 of 1 workers of 2 CPUs in 5 s (0 of the cluster's 2 CPUs are free): ask for fewer --workers, or "
        "try when its other work is done"
    )
    _, result = run(cluster, JobSpec(inputs=(clip_path(ENGLISH[0]),)), tmp_path)  # the module's workers go on
    assert len(result.files) == 1


def test_closing_a_job_stops_its_worker_and_leaves_nothing(cluster, tmp_path):
    events = cluster.run(JobSpec(inputs=(clip_path(LONG),)), tmp_path / "out")  # 53 s: two windows
    for event in events:
        if isinstance(event, CueDecoded):  # the first window is done, the second is being decoded
            break
    started = time.monotonic()
    events.close()
    assert time.monotonic() - started < 15  # the worker stopped at its next event
    assert not list((tmp_path / "out").iterdir())
    pids = cluster.pids()
    assert not [p for pid in pids for p in Path(tempfile.gettempdir()).glob(f"subtitle-worker-{pid}-*")]
    events, result = run(cluster, JobSpec(inputs=(clip_path(ENGLISH[0]),)), tmp_path / "next")  # the workers are free
    assert [f.name for f in (tmp_path / "next").iterdir()] == [f"{ENGLISH[0]}.srt"]


def test_a_worker_killed_mid_job_is_retried_and_every_output_is_whole(cluster, in_process, tmp_path):
    victim = cluster.pids()[0]
    killed, events, two = False, [], replace(BATCH, inputs=BATCH.inputs[:2])  # one input a worker
    for event in cluster.run(two, tmp_path):
        events.append(event)
        if not killed and isinstance(event, Progress) and event.message.startswith("Transcribing"):
            os.kill(victim, signal.SIGKILL)  # both workers have an input now
            killed = True
    assert any(isinstance(e, Progress) and e.message.startswith("A worker stopped") for e in events)
    result = events[-1]
    assert isinstance(result, JobResult) and not result.failed and len(result.files) == 2
    # every output whole, once, and no temporary file beside them
    assert contents(tmp_path) == {f"{c}.srt": in_process[f"{c}.srt"] for c in ENGLISH[:2]}
    assert victim not in cluster.pids()  # Ray restarted it: a new process
    assert not list(Path(tempfile.gettempdir()).glob(f"subtitle-worker-{victim}-*"))  # its folder swept
