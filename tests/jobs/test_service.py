"""The page's memory of word times (issue 49, item 4): counted in bytes, bounded per client and in all, and one
client's cues never evict another's while the total has room."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from pipeline.asr.results import Word
from pipeline.jobs.service import WordTimes
from pipeline.subtitles.cues import Cue


def cues(n: int, words: int, at: float = 0.0) -> list[Cue]:
    """n cues of `words` timed words each."""
    out = []
    for i in range(n):
        start = at + 10.0 * i
        said = tuple(Word(start + k * 0.05, start + k * 0.05 + 0.04, f" w{k}") for k in range(words))
        out.append(Cue(start, start + 9.0, "".join(w.word for w in said).strip(), said))
    return out


def test_word_bytes_is_what_python_holds_for_a_word():
    tracemalloc.start()
    try:
        held = tuple(Word(0.1 * k, 0.1 * k + 0.05, f" w{k:05d}", 0.9) for k in range(20_000))
        measured = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0.75 * WordTimes.size(held) <= measured <= 1.25 * WordTimes.size(held)


def test_a_client_keeps_its_own_cues_words():
    kept = WordTimes()
    mine = cues(3, 4)
    kept.remember("a", mine)
    assert [kept.words("a", c) for c in mine] == [c.words for c in mine]
    assert kept.words("b", mine[0]) is None  # another client's table does not get them
    assert kept.words("a", Cue(mine[0].start, mine[0].end, "edited")) is None


def test_one_client_is_held_to_its_share_and_evicts_only_its_own_oldest():
    kept = WordTimes(per_client=200_000, total=1_000_000)
    other = cues(2, 10)
    kept.remember("other", other)
    flood = cues(400, 110, at=1000.0)  # a WebVTT with 110 word stamps a cue, 40 times what fits
    kept.remember("flood", flood)
    assert kept.bytes <= 200_000 + WordTimes.size(other[0].words) * 2
    assert kept.words("flood", flood[0]) is None and kept.words("flood", flood[-1]) == flood[-1].words
    assert [kept.words("other", c) for c in other] == [c.words for c in other]


def test_the_total_evicts_the_oldest_client_first():
    kept = WordTimes(per_client=100_000, total=80_000)
    first, second = cues(20, 10), cues(20, 10, at=500.0)
    kept.remember("first", first)
    kept.remember("second", second)
    assert kept.bytes <= 80_000
    assert kept.words("first", first[0]) is None and kept.words("second", second[0]) == second[0].words


def service(tmp_path, **limits):
    from pipeline.asr.cache import ModelCache
    from pipeline.jobs.executors import InProcess
    from pipeline.jobs.service import ServerOptions, Service
    from pipeline.media.audio import Limits

    return Service(
        InProcess(ModelCache()), [("base", "base")], ServerOptions(limits=Limits(**limits), jobs_dir=tmp_path)
    )


DATA = Path(__file__).parents[1] / "data"


def test_uploads_are_read_one_at_a_time_for_a_client_and_in_read_slots(tmp_path):
    """/describe probed outside any slot, any number of files (issue 49, item 6; one request, 300 probes). Now at
    most max_files are read, one upload a client at a time, READ_SLOTS for the whole server."""
    import threading

    from pipeline.jobs.service import READ_SLOTS

    app = service(tmp_path, max_files=3)
    flac, wav = str(DATA / "en_jfk.flac"), str(DATA / "en_mfa_whisper.flac")
    files, line = app.describe([flac, wav], client="a")
    assert (files, line) == ([flac, wav], "**en\\_jfk.flac** · 0:11\n\n**en\\_mfa\\_whisper.flac** · 0:06")
    assert app.describe([flac] * 4, client="a")[1] == "**Error:** 4 files: drop at most 3 at once"
    with app.reading("a"):
        assert app.describe([flac], client="a")[1].startswith("**Error:** Your last upload is still being read")
        assert app.style(str(DATA / "en_jfk.flac"), client="a") == {}
        assert app.describe([flac], client="b")[1] == "**en\\_jfk.flac** · 0:11"  # another client is read meanwhile
    held = [threading.Event() for _ in range(READ_SLOTS)]
    release = threading.Event()

    def hold(n: int) -> None:
        with app.reading(f"holder{n}"):
            held[n].set()
            release.wait(10)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(READ_SLOTS)]
    for t in threads:
        t.start()
    for h in held:
        assert h.wait(10)
    waited = threading.Thread(target=app.describe, args=([flac], None, "c"))
    waited.start()
    waited.join(0.5)
    assert waited.is_alive()  # every read slot taken: the next upload waits
    release.set()
    waited.join(10)
    assert not waited.is_alive()
    for t in threads:
        t.join()


@pytest.mark.slow
def test_ffmpeg_reading_an_upload_holds_a_bounded_memory(tmp_path):
    """A 400-MB MKV of two 200-MB attachments took 1.8 GB of RSS a probe, three at once 6.2 GB (issue 49, item 6):
    every ffmpeg now runs with a bound on its data (RLIMIT_DATA), and the probe still reads the streams."""
    import random
    import subprocess
    import sys

    from conftest import ffmpeg

    from pipeline.media.audio import PROBE_MEMORY

    # The same bytes every run: past the bound the demuxer skips an attachment and reads on through its bytes, which
    # some contents derail ("Error opening input": 1 in 15 os.urandom files). A bigger bound would not bound.
    blobs = []
    for n in range(2):
        blobs.append(tmp_path / f"font{n}.ttf")
        blobs[-1].write_bytes(random.Random(n).randbytes(150 * 2**20))
    mkv = tmp_path / "attached.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=s=320x240:d=2", "-f", "lavfi", "-i", "sine=d=2", "-shortest",
           "-c:v", "libx264", "-threads", "1", "-c:a", "aac", "-attach", str(blobs[0]), "-attach", str(blobs[1]),
           "-metadata:s:t", "mimetype=application/x-truetype-font", "-fflags", "+bitexact", str(mkv))  # fmt: skip
    child = (
        "import resource, sys\nfrom pipeline.media.audio import probe\n"
        "info = probe(sys.argv[1])\nprint(info.has_audio, info.has_video, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", child, str(mkv)], cwd=Path(__file__).parents[2], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    assert out[:2] == ["True", "True"]
    assert int(out[2]) * 1024 < PROBE_MEMORY  # (the 300 MB of attachments would be read whole)


def test_a_server_that_stops_removes_its_job_folders(tmp_path):
    """A finished job's folder stays KEEP_OUTPUTS seconds for Gradio to copy its files: a server stopped meanwhile
    left them (34 after the load test) until the next start. Now they go as it stops; another server's stay."""
    import subprocess
    import sys

    child = f"""
import os
from pathlib import Path
from pipeline.asr.cache import ModelCache
from pipeline.jobs.executors import InProcess
from pipeline.jobs.service import ServerOptions, Service
Service(InProcess(ModelCache()), [("base", "base")], ServerOptions(jobs_dir=Path({str(tmp_path)!r})))
(Path({str(tmp_path)!r}) / f"job-{{os.getpid()}}-kept").mkdir()
"""
    (tmp_path / f"job-{os.getpid()}-alive").mkdir()
    subprocess.run([sys.executable, "-c", child], cwd=Path(__file__).parents[2], check=True)
    assert [p.name for p in tmp_path.iterdir()] == [f"job-{os.getpid()}-alive"]


@pytest.mark.parametrize(
    "made_from, files, url, problem",
    [
        (None, ["/tmp/x/b.mp4"], "", ""),  # cues from no job (typed, or the API's): any input
        (["a.mp4"], ["/tmp/gradio/1/a.mp4"], "", ""),  # the same file, dropped again
        (["a.mp4"], ["/tmp/gradio/2/b.mp4"], None, "These cues are from a.mp4, not b.mp4: press Generate"),
        (["a.mp4"], ["/tmp/a.mp4"], " https://x.org/v ", "These cues are from a.mp4, not a.mp4, https://x.org/v:"),
        (["https://x.org/v"], [], "https://x.org/v", ""),
        (["a.mp4"], [], "", "These cues are from a.mp4, not the new file:"),
    ],
)
def test_cues_go_only_on_the_inputs_they_came_from(made_from, files, url, problem):
    from pipeline.jobs.page import origin_problem

    found = origin_problem(made_from, files, url)
    assert found.startswith(problem) and bool(found) == bool(problem)


@pytest.mark.parametrize(
    "reports, shown",
    [
        ([(7, 0), (19, 6)], [7, 3]),  # the jump: 0:07, then 0:19 six seconds on -> 1 + 2 s at most
        ([(30, 0), (28, 1), (20, 2)], [30, 28, 20]),  # falling: as it comes
        ([(100, 0), (120, 1)], [100, 99 + 0.15 * 99]),  # rising: by 15 % of what was left at most
        ([(None, 0), (10, 1)], [None, 10]),
        ([(5, 0), (5, 10)], [5, 2]),  # past its time: up to MIN_RISE over zero
    ],
)
def test_the_time_left_counts_down(reports, shown):
    from pipeline.jobs.estimate import Countdown

    countdown = Countdown()
    got = [countdown(estimate, now) for estimate, now in reports]
    assert got == pytest.approx(shown)
