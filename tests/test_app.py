"""The web app on a loopback port, called through gradio_client like any API user would (README's example)."""

from __future__ import annotations

import statistics
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import srt
from conftest import ENGLISH, LONG, clip_path, mute_video, wer
from gradio_client import Client, handle_file

pytestmark = pytest.mark.slow  # end-to-end: real speech through real models


def cue_rows(output: tuple) -> list:
    """The cue table's rows in one streamed update (empty for updates that leave the table as it is)."""
    return output[2].get("data", []) if isinstance(output[2], dict) else []


def srt_text(path: str) -> str:
    return " ".join(c.content for c in srt.parse(open(path, encoding="utf-8").read()))


@pytest.fixture
def client(app_server):
    return Client(app_server[0], verbose=False)


def folders_become(folder: Path, expected: set, timeout: float = 10.0) -> bool:
    """Whether `folder` holds exactly `expected` within `timeout` s (a failed job's folder goes once its work has
    stopped, beside the request)."""
    deadline = time.monotonic() + timeout
    while set(folder.iterdir()) != expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_upload_gives_srt_preview_and_cues_as_they_come(client, videos, manifest):
    job = client.submit(files=[handle_file(str(videos[ENGLISH[0]]))], api_name="/subtitle")
    about, status, cues, preview, downloads = job.result()
    reference = manifest[ENGLISH[0]]["reference_text"]
    assert [p.rsplit("/", 1)[-1] for p in downloads] == [f"{ENGLISH[0]}.srt"]
    assert wer(reference, srt_text(downloads[0])) <= 0.10
    title = ENGLISH[0].replace("_", "\\_")  # titles are escaped: a file or page name never becomes Markdown
    assert about.startswith(f"**{title}.mp4** · 0:") and about.endswith("English")
    assert [row[2] for row in cues["data"]] and cues["headers"] == ["Start", "End", "Text"]
    assert preview["value"].endswith(".mp4") and open(preview["subtitles"], encoding="utf-8").read().startswith(
        "WEBVTT"
    )
    # The page got cues before the job was done: an earlier update carried some rows and no files yet.
    partial = [out for out in job.outputs()[:-1] if cue_rows(out)]
    assert partial and not isinstance(partial[0][4], list)  # rows shown, no file to download yet
    assert status.startswith("Done: 0:1")  # 0:1x of audio


def test_several_files_give_a_zip_of_each_format(client, videos, manifest):
    files = [handle_file(str(videos[c])) for c in ENGLISH[:2]]
    _, _, cues, _, downloads = client.predict(files=files, formats=["srt", "json"], api_name="/subtitle")
    assert [d.rsplit("/", 1)[-1] for d in downloads] == ["subtitles.zip"]
    with zipfile.ZipFile(downloads[0]) as z:
        assert sorted(z.namelist()) == sorted(f"{c}.{ext}" for c in ENGLISH[:2] for ext in ("srt", "json"))
        for c in ENGLISH[:2]:
            text = " ".join(s.content for s in srt.parse(z.read(f"{c}.srt").decode()))
            assert wer(manifest[c]["reference_text"], text) <= 0.10
    assert cues["headers"] == ["File", "Start", "End", "Text"]
    assert {row[0] for row in cues["data"]} == {f"{c}.mp4" for c in ENGLISH[:2]}


def test_two_concurrent_calls_get_their_own_subtitles(app_server, videos, manifest):
    """The server runs two jobs at once on one shared model; each caller gets the text of its own video."""

    def call(clip):
        return clip, Client(app_server[0], verbose=False).predict(
            files=[handle_file(str(videos[clip]))], api_name="/subtitle"
        )

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(call, ENGLISH[:2]))
    for clip, (*_, downloads) in results:
        other = ENGLISH[1] if clip == ENGLISH[0] else ENGLISH[0]
        text = srt_text(downloads[0])
        assert wer(manifest[clip]["reference_text"], text) <= 0.10
        assert wer(manifest[other]["reference_text"], text) > 0.5


def test_failed_link_is_a_message_and_the_app_keeps_working(client, app_server, media_server, manifest):
    jobs_dir = app_server[1]
    before = set(jobs_dir.iterdir())
    with pytest.raises(Exception, match=r"The link gives 404 Not Found: check the URL"):
        client.predict(url=f"{media_server}/gone.mp4", api_name="/subtitle")
    assert folders_become(jobs_dir, before)  # the failed job left nothing behind
    about, *_, downloads = client.predict(url=f"{media_server}/{ENGLISH[1]}.mp4", api_name="/subtitle")
    assert wer(manifest[ENGLISH[1]]["reference_text"], srt_text(downloads[0])) <= 0.10
    assert about.startswith(f"**{ENGLISH[1]}** · 0:".replace("_", "\\_"))  # the link's title and duration


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: mute_video(d / "mute.mp4"), r"mute.mp4 has no audio track: choose a file with sound"),
        (lambda d: d / "notes.txt", r"notes.txt is not a video or audio file"),
    ],
)
def test_bad_uploads_are_messages(client, app_server, tmp_path, make, message):
    (tmp_path / "notes.txt").write_text("not a video")
    before = set(app_server[1].iterdir())
    with pytest.raises(Exception, match=message):
        client.predict(files=[handle_file(str(make(tmp_path)))], api_name="/subtitle")
    assert folders_become(app_server[1], before)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "Upload a video or audio file, or paste a link, first"),
        ({"url": "ftp://example.com/a.mp4"}, "starts with http:// or https://"),
    ],
)
def test_missing_or_bad_input_is_a_message(client, kwargs, message):
    with pytest.raises(Exception, match=message):
        client.predict(**kwargs, api_name="/subtitle")


@pytest.mark.parametrize(
    "limits, message",
    [
        ({"max_duration": 5.0}, r"is 0:\d\d long; this server takes up to 0:05: use a shorter one"),
        ({"max_bytes": 50_000}, r"is \d+\.\d kB; this server takes up to 50.0 kB: use a smaller file"),
    ],
)
def test_limits_are_a_message_before_any_work(videos, tmp_path, limits, message):
    """The server's limits, through the same function the page and the API call (no server needed)."""
    import gradio as gr

    import app
    from pipeline.asr.cache import ModelCache
    from pipeline.jobs.executors import InProcess
    from pipeline.media.audio import Limits

    subtitler = app.SubtitleApp(
        InProcess(ModelCache()),
        [("base", "base")],
        app.ServerOptions(limits=Limits(**limits), jobs_dir=tmp_path / "jobs"),
    )
    with pytest.raises(gr.Error, match=message):
        list(subtitler.subtitle(files=[str(videos[ENGLISH[0]])]))
    assert not subtitler.runner.models.is_loaded("base") and folders_become(tmp_path / "jobs", set())


def test_cancelled_job_stops_and_leaves_nothing(client, app_server, tmp_path):
    """Cancel (as closing the page does) after the first cues: the job stops early and its folder goes."""
    import time

    from conftest import ffmpeg

    clips = [LONG, *ENGLISH]  # one after the other: 86 s, three 30-second windows
    long_video = tmp_path / "long.mp4"
    inputs = [arg for clip in clips for arg in ("-i", str(clip_path(clip)))]
    joined = "".join(f"[{i}:a]aresample=16000,aformat=channel_layouts=mono[a{i}];" for i in range(len(clips)))
    joined += "".join(f"[a{i}]" for i in range(len(clips))) + f"concat=n={len(clips)}:v=0:a=1[a]"
    ffmpeg(*inputs, "-f", "lavfi", "-i", "color=c=navy:size=160x120:rate=10", "-filter_complex", joined,
           "-map", f"{len(clips)}:v", "-map", "[a]", "-shortest", "-c:v", "libx264", "-preset", "ultrafast",
           "-c:a", "aac", str(long_video))  # fmt: skip
    jobs_dir = app_server[1]
    before = set(jobs_dir.iterdir())
    job = client.submit(files=[handle_file(str(long_video))], api_name="/subtitle")
    deadline = time.monotonic() + 120
    while not any(cue_rows(out) for out in job.outputs()):
        assert time.monotonic() < deadline and not job.done()
        time.sleep(0.2)
    job.cancel()
    while set(jobs_dir.iterdir()) != before:  # the worker notices at its next progress report and cleans up
        assert time.monotonic() < deadline, "the cancelled job's folder was not removed"
        time.sleep(0.2)
    assert not any(isinstance(out[4], list) for out in job.outputs())  # it never finished


def test_burned_preview_and_soft_tracks(client, videos, manifest):
    """Burn-in (fast preview) and soft subtitles through the API: the videos come with the SRT, and the page's
    preview is the burned video (no extra track, which would draw the text twice)."""
    from pipeline.media.audio import probe

    about, status, cues, preview, downloads = client.predict(
        files=[handle_file(str(videos[ENGLISH[0]]))], burn_in="preview", box=True, soft=True, api_name="/subtitle"
    )
    names = [d.rsplit("/", 1)[-1] for d in downloads]
    stem = ENGLISH[0]
    assert names == [f"{stem}.srt", f"{stem}.subtitled.mp4", f"{stem}.subs.mkv", f"{stem}.subs.mp4"]
    burned = probe(downloads[1])
    assert (burned.video_codec, burned.audio_codec) == ("h264", "aac")
    assert preview["value"].endswith(".subtitled.mp4") and not preview.get("subtitles")
    assert wer(manifest[stem]["reference_text"], srt_text(downloads[0])) <= 0.10


def test_api_takes_a_video_and_its_subtitles(client, videos, tmp_path):
    """The same endpoint with `subtitles`: the given cues are burned and written as asked, nothing transcribed."""
    from pipeline.media.audio import probe

    given = tmp_path / "given.srt"
    given.write_text("1\n00:00:01,000 --> 00:00:03,000\nOur own words\n", encoding="utf-8")
    _, status, cues, _, downloads = client.predict(
        files=[handle_file(str(videos[ENGLISH[0]]))], subtitles=handle_file(str(given)), formats=["srt", "vtt"],
        burn_in="preview", api_name="/subtitle",
    )  # fmt: skip
    names = [d.rsplit("/", 1)[-1] for d in downloads]
    assert names == [f"{ENGLISH[0]}.srt", f"{ENGLISH[0]}.vtt", f"{ENGLISH[0]}.subtitled.mp4"]
    assert open(downloads[0], encoding="utf-8").read() == "1\n00:00:01,000 --> 00:00:03,000\nOur own words\n"
    assert cues["data"] == [["00:00:01.000", "00:00:03.000", "Our own words"]]
    assert probe(downloads[2]).has_video
    assert status.startswith("Made the files from given.srt and burned them into the video in 0:")  # no audio
    # the table back, edited: the files are made from it (times and text), nothing transcribed
    cues["data"][0] = ["00:00:01.500", "00:00:04.000", "Our own words, corrected / on two lines"]
    _, status, cues, _, downloads = client.predict(
        table=cues, files=[handle_file(str(videos[ENGLISH[0]]))], api_name="/apply_edits"
    )
    assert open(downloads[0], encoding="utf-8").read() == (
        "1\n00:00:01,500 --> 00:00:04,000\nOur own words, corrected\non two lines\n"
    )
    assert cues["data"] == [["00:00:01.500", "00:00:04.000", "Our own words, corrected / on two lines"]]
    assert status.startswith("Made the files from your edited cues in 0:")  # a remake claims no transcription


def test_unchanged_cues_keep_their_word_times_when_the_files_are_made_again(client, videos):
    """Words lit up (WebVTT word times), then the table back with one cue's words changed: the other cues keep the
    measured times, the changed one gets its time spread over its words by their length."""
    from pipeline.subtitles.cues import Cue, timed_words
    from pipeline.subtitles.read import parse

    video = handle_file(str(videos[ENGLISH[0]]))
    _, _, cues, _, downloads = client.predict(
        files=[video], formats=["vtt"], highlight_words=True, api_name="/subtitle"
    )
    first = parse(open(downloads[0], encoding="utf-8").read())
    assert len(first) >= 2 and all(c.words for c in first)  # each cue with its word times
    cues["data"][0][-1] = cues["data"][0][-1].rsplit(" ", 1)[0] + " changed"
    _, _, _, _, downloads = client.predict(
        table=cues, files=[video], formats=["vtt"], highlight_words=True, api_name="/apply_edits"
    )
    again = parse(open(downloads[0], encoding="utf-8").read())

    def times(cue):  # (to the millisecond, as WebVTT writes them)
        return [(w.word, round(w.start, 3), round(w.end, 3)) for w in timed_words(cue)]

    assert [times(c) for c in again[1:]] == [times(c) for c in first[1:]]  # unchanged: measured
    edited = Cue(first[0].start, first[0].end, again[0].text)
    assert again[0].text.endswith(" changed") and times(again[0]) == times(edited)  # spread by length
    assert [w[1] for w in times(again[0])] != [w[1] for w in times(first[0])]


def test_submit_and_cancel_eight_times_never_works_more_than_the_slots(client, app_server, tmp_path):
    """Cancel frees the page at once, but a job's slot only when its work has stopped: at no moment do more jobs
    work than the server's concurrency (2 here), and afterwards no job thread, ffmpeg or folder is left."""
    import threading
    import time

    from conftest import LONG, speech_video
    from test_safety import _ffmpeg_children

    video = handle_file(str(speech_video(LONG, tmp_path / "long.mp4")))
    jobs_dir = app_server[1]
    before = set(jobs_dir.iterdir())
    working = lambda: sum(t.name == "subtitle-job (working)" for t in threading.enumerate())  # noqa: E731
    most, jobs = 0, []
    for _ in range(8):
        job = client.submit(files=[video], api_name="/subtitle")
        jobs.append(job)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            most = max(most, working())
            time.sleep(0.02)
        job.cancel()
    deadline = time.monotonic() + 120
    while working() or set(jobs_dir.iterdir()) != before or _ffmpeg_children():
        most = max(most, working())
        assert time.monotonic() < deadline, f"cancelled jobs are still working: {_left_working(jobs_dir, before)}"
        time.sleep(0.1)
    assert 1 <= most <= 2
    assert not [t for t in threading.enumerate() if t.name.startswith("subtitle-job")]


def _left_working(jobs_dir, before) -> str:
    """What is still at work after the cancels, for the failure's message: the job threads and where each stands, the
    job folders left, the ffmpeg processes (a hang under load was seen twice, its cause unknown)."""
    import sys
    import threading
    import traceback

    from test_safety import _ffmpeg_children

    frames = sys._current_frames()
    stacks = ["".join(traceback.format_stack(frames[t.ident])[-4:]) for t in threading.enumerate()
              if t.name.startswith("subtitle-job") and t.ident in frames]  # fmt: skip
    return (
        f"folders {sorted(p.name for p in set(jobs_dir.iterdir()) - before)}, ffmpeg {_ffmpeg_children()}, "
        f"job threads {len(stacks)}:\n" + "\n".join(stacks)
    )


def test_one_client_may_have_only_so_many_jobs(videos, tmp_path):
    """The third job from one address while two work or wait is refused at once, with the reason."""
    import gradio as gr

    import app
    from pipeline.asr.cache import ModelCache
    from pipeline.jobs.executors import InProcess

    subtitler = app.SubtitleApp(
        InProcess(ModelCache()), [("base", "base")], app.ServerOptions(jobs_dir=tmp_path, per_client=2)
    )
    first, second = (subtitler.subtitle("10.0.0.7", files=[str(videos[ENGLISH[0]])]) for _ in range(2))
    next(first), next(first), next(second), next(second)  # both admitted (one works, one waits for the slot)
    with pytest.raises(gr.Error, match="You have 2 jobs working or waiting on this server: wait for one to finish"):
        list(subtitler.subtitle("10.0.0.7", files=[str(videos[ENGLISH[0]])]))
    admitted(subtitler.subtitle("10.0.0.8", files=[str(videos[ENGLISH[0]])]))  # another address is let in
    first.close(), second.close()
    admitted(subtitler.subtitle("10.0.0.7", files=[str(videos[ENGLISH[0]])]))  # and the first one again


def test_the_page_names_models_by_id_not_by_server_path(tmp_path):
    import app
    from pipeline.asr.cache import ModelCache
    from pipeline.jobs.executors import InProcess

    choices = [("Whisper base", "base"), ("Small", "/srv/models/whisper-small-ct2"), ("Tuned", "/a/b/model.pt"),
               ("Tuned too", "/c/model.pt")]  # fmt: skip
    subtitler = app.SubtitleApp(InProcess(ModelCache()), choices, app.ServerOptions(jobs_dir=tmp_path))
    assert [value for _, value in subtitler.model_choices] == ["base", "whisper-small-ct2", "model.pt", "model.pt (2)"]
    assert subtitler.model_ids["model.pt (2)"] == "/c/model.pt"
    assert subtitler.policy.models == tuple(spec for _, spec in choices)


def ping_while(url: str, going) -> list[float]:
    """GET `url` every 0.1 s while `going()`: the time each answer took."""
    import urllib.request

    took = []
    while going():
        started = time.monotonic()
        urllib.request.urlopen(url, timeout=30).read()
        took.append(time.monotonic() - started)
        time.sleep(0.1)
    return took


def _colour(video: str) -> tuple[int, int, int]:
    """The mean colour of a video's first frame (our ffmpeg)."""
    import subprocess

    from pipeline.media.audio import ffmpeg_exe

    raw = subprocess.run(
        [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-i", video, "-frames:v", "1", "-s", "16x16",
         "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return tuple(round(sum(raw[k::3]) / (len(raw) / 3)) for k in range(3))


def _polyglot(folder: Path, live: bool) -> Path:
    """A blue MPEG-TS video with sound whose first 188 bytes (one TS packet) are an HLS playlist naming a red local
    video: our whitelisted probe reads the TS; a player or an ffmpeg without the whitelist may read the playlist."""
    from conftest import ffmpeg

    ffmpeg("-f", "lavfi", "-i", "color=red:size=320x240:rate=10", "-t", "3", "-c:v", "libx264", "-pix_fmt", "yuv420p",
           str(folder / "secret.mp4"))  # fmt: skip
    ffmpeg("-f", "lavfi", "-i", "color=blue:size=320x240:rate=10", "-i", str(clip_path(ENGLISH[0])), "-t", "3",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mpegts", str(folder / "blue.ts"))  # fmt: skip
    head = f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:{folder / 'secret.mp4'}\n"
    head += "" if live else "#EXT-X-ENDLIST\n"
    ts = (folder / "blue.ts").read_bytes()
    path = folder / ("live.mp4" if live else "playlist.mp4")
    path.write_bytes(head.encode() + b"#" * (187 - len(head)) + b"\n" + ts[188:])
    return path


def _cover_first(folder: Path) -> Path:
    """An MP4 whose first video stream is a cover picture (64x64 PNG), then the real 320x240 H.264 picture."""
    from conftest import ffmpeg

    ffmpeg("-f", "lavfi", "-i", "color=yellow:size=64x64", "-frames:v", "1", str(folder / "cover.png"))
    ffmpeg("-f", "lavfi", "-i", "color=green:size=320x240:rate=10", "-i", str(clip_path(ENGLISH[0])), "-t", "3",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", str(folder / "plain.mp4"))  # fmt: skip
    ffmpeg("-i", str(folder / "cover.png"), "-i", str(folder / "plain.mp4"), "-map", "0", "-map", "1", "-c", "copy",
           "-disposition:v:0", "attached_pic", str(folder / "cover.mp4"))  # fmt: skip
    return folder / "cover.mp4"


def _made(folder: Path, name: str) -> Path:
    """Other uploads: a Matroska and an MP4 of H.264 (remuxed), MPEG-4 part 2 in AVI (re-encoded), audio alone."""
    from conftest import ffmpeg

    picture = ["-f", "lavfi", "-i", "color=green:size=320x240:rate=10"]
    sound = ["-i", str(clip_path(ENGLISH[0])), "-t", "3"]
    codec = {"talk.mkv": ["-c:v", "libx264"], "talk.mp4": ["-c:v", "libx264"], "talk.avi": ["-c:v", "mpeg4"]}
    args = [*picture, *sound, *codec[name], "-pix_fmt", "yuv420p"] if name in codec else sound
    ffmpeg(*args, str(folder / name))
    return folder / name


@pytest.mark.parametrize(
    "make, size, colour",
    [
        (lambda d: _polyglot(d, live=False), (320, 240), "blue"),
        (lambda d: _polyglot(d, live=True), (320, 240), "blue"),  # a live playlist: it would be read for ever
        (_cover_first, (320, 240), "green"),  # the picture, not the cover in front of it
        (lambda d: _made(d, "talk.mp4"), (320, 240), "green"),
        (lambda d: _made(d, "talk.mkv"), (320, 240), "green"),
        (lambda d: _made(d, "talk.avi"), (320, 240), "green"),
        (lambda d: _made(d, "talk.wav"), None, None),
    ],
)
def test_the_preview_is_always_a_file_our_ffmpeg_wrote(make, size, colour, client, tmp_path, monkeypatch):
    """Whatever is uploaded, the player gets a file our ffmpeg wrote in the job's folder (remuxed, or re-encoded),
    never the upload, which Gradio would hand to the system's ffmpeg when it judges it unplayable. Stand-ins for the
    system's ffmpeg and ffprobe on PATH log what Gradio runs them on: never the upload."""
    import os
    import stat

    from pipeline.media.audio import probe

    spies, log = tmp_path / "bin", tmp_path / "spied.log"
    spies.mkdir()
    for name in ("ffmpeg", "ffprobe"):
        (spies / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexit 1\n', encoding="utf-8")
        (spies / name).chmod((spies / name).stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{spies}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "up").mkdir()
    upload = make(tmp_path / "up")
    given = tmp_path / "given.srt"
    given.write_text("1\n00:00:00,500 --> 00:00:02,000\nOur own words\n", encoding="utf-8")
    started = time.monotonic()
    _, status, _, preview, _ = client.predict(
        files=[handle_file(str(upload))], subtitles=handle_file(str(given)), api_name="/subtitle"
    )
    assert status.startswith("Made the files from given.srt in ") and time.monotonic() - started < 60
    shown = preview["value"]
    assert Path(shown).name == f"{upload.stem}.preview.mp4"
    assert Path(shown).read_bytes()[4:8] == b"ftyp"  # an MP4 our ffmpeg wrote, not the upload's bytes
    spied = log.read_text(encoding="utf-8") if log.exists() else ""
    assert upload.name not in spied
    info = probe(Path(shown))
    assert info.has_audio and info.duration == pytest.approx(3, abs=0.3)
    if size is None:
        assert not info.has_video
    else:
        assert (info.width, info.height) == size and info.video_codec == "h264"
        r, g, b = _colour(shown)
        assert {"blue": b > 150 > r + g, "green": g > 100 > r + b}[colour], (r, g, b)


@pytest.mark.slow
def test_eight_concurrent_jobs_all_complete_with_their_own_words(app_server, videos, manifest, tmp_path):
    """8 callers at once on a server that works 2 jobs at a time: every job gets its own text and exactly the word
    times its video gets alone; no job folder is left behind. Prints the server process's peak RSS."""
    import json
    import resource

    def call(clip: str) -> dict:
        *_, downloads = Client(app_server[0], verbose=False).predict(
            files=[handle_file(str(videos[clip]))], formats=["json"], api_name="/subtitle"
        )
        return json.loads(open(downloads[0], encoding="utf-8").read())

    alone = {clip: call(clip) for clip in ENGLISH[:2]}
    clips = [ENGLISH[i % 2] for i in range(8)]
    with ThreadPoolExecutor(10) as pool:
        jobs = pool.map(call, clips)
        # meanwhile, one caller sends the cue checker small tables, then backtracking cells (2 MB bodies, the most a
        # check takes), and another asks the server for its page every 0.1 s: the cells take no longer to check than
        # the small tables, and the page answers as fast beside them (medians: single answers wait on pauses of the
        # busy process, jobs and all, on some runs by 0.9 s; a regex that backtracked would stall them all)
        latencies, checked = {}, {}
        for name, cell in (("small tables", "Hi"), ("backtracking cells", "<a" * 499)):
            table = {"headers": ["Start", "End", "Text"], "data": [["00:00:01.000", "00:00:02.000", cell]] * 2000}
            checks: list[float] = []
            pinging = pool.submit(ping_while, app_server[0], lambda checks=checks: len(checks) < 10)
            for _ in range(10):
                started = time.monotonic()
                Client(app_server[0], verbose=False).predict(table, api_name="/check_cues")
                checks.append(time.monotonic() - started)
            latencies[name], checked[name] = pinging.result(), max(checks)
            print(f"cue checks of {name}: {max(checks):.2f} s at most; page requests meanwhile: "
                  f"{statistics.median(latencies[name]):.2f} s median, {max(latencies[name]):.2f} s at most")  # fmt: skip
        results = list(jobs)
    assert checked["backtracking cells"] <= 2 * checked["small tables"] + 1
    assert statistics.median(latencies["backtracking cells"]) <= statistics.median(latencies["small tables"]) + 0.25
    for clip, got in zip(clips, results):
        assert got["segments"] == alone[clip]["segments"]
        text = " ".join(s["text"].replace("\n", " ") for s in got["segments"])
        assert wer(manifest[clip]["reference_text"], text) <= 0.10
    leftovers = [p.name for p in app_server[1].rglob("*") if p.name.endswith(".tmp") or p.name.startswith(("burn-", "mux-"))]  # fmt: skip
    assert leftovers == []  # no temporary file or work folder in any job's folder (a link's download is its preview)
    print(f"peak RSS of the server process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


@pytest.mark.parametrize(
    "concurrency, minutes, available_gb, refused",
    [
        (1, 180, 24, False),  # the defaults on this 24 GB machine
        (8, 180, 24, True),  # 8 jobs of 3 h: about 29 GB
        (8, 30, 24, False),
        (2, 180, 4, True),
    ],
)
def test_concurrency_is_checked_against_memory(concurrency, minutes, available_gb, refused):
    import app

    problem = app.memory_problem(concurrency, minutes * 60, available_gb * 1e9)
    assert (problem is not None) == refused
    if refused:
        assert problem.startswith(f"--concurrency {concurrency} with --max-duration {minutes} needs about")


def test_a_full_server_turns_jobs_away_as_busy(videos, tmp_path):
    """One working and one waiting fill a server with --concurrency 1 --queue-size 1: the next job, from any
    address, is refused at once as busy; once one ends, a job is let in again."""
    import gradio as gr

    import app
    from pipeline.asr.cache import ModelCache
    from pipeline.jobs.executors import InProcess

    options = app.ServerOptions(jobs_dir=tmp_path, concurrency=1, queue_size=1, per_client=5)
    subtitler = app.SubtitleApp(InProcess(ModelCache()), [("base", "base")], options)
    jobs = [subtitler.subtitle(f"10.0.0.{n}", files=[str(videos[ENGLISH[0]])]) for n in (1, 2)]
    for job in jobs:
        next(job), next(job)  # admitted
    with pytest.raises(gr.Error, match="The server is busy: try again in a few minutes"):
        list(subtitler.subtitle("10.0.0.3", files=[str(videos[ENGLISH[0]])]))
    jobs[0].close()
    admitted(subtitler.subtitle("10.0.0.3", files=[str(videos[ENGLISH[0]])]))
    jobs[1].close()


def admitted(job) -> None:
    """The job gets past its admission (its second update: the first is the clean page), then is closed."""
    next(job), next(job)
    job.close()
