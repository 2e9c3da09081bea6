"""The web page's side of jobs, without Gradio: admission (jobs per client, a bounded queue), a rate limit on cue
checks, each client's word times of its last cues, server sizing, and the page's text lines."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.asr.languages import LANGUAGES
from pipeline.asr.results import Word
from pipeline.cpu import usable_cores
from pipeline.errors import SubtitleError
from pipeline.files import sweep
from pipeline.jobs.executors import Executor
from pipeline.jobs.outputs import write_outputs, zip_outputs
from pipeline.jobs.page import cue_time, done_line, escape_markdown, media_lines, status_line, style_fields
from pipeline.jobs.spec import CueDecoded, FileFailed, JobResult, JobSpec, Policy, Progress, Source, SourceFound
from pipeline.media.audio import Limits, probe
from pipeline.media.download import SITES
from pipeline.subtitles.cues import Cue
from pipeline.subtitles.formats import to_vtt
from pipeline.subtitles.read import parse
from pipeline.subtitles.table import cue_table
from pipeline.subtitles.write import FORMATS

# The cue checker runs beside the queue on every edit: one address gets this many checks in CHECK_WINDOW seconds
# (a person edits a cell a second at most; a script sending more only gets a message)
log = logging.getLogger("subtitle-generator")
KEEP_OUTPUTS = 300  # seconds a finished job's folder stays: Gradio copies outputs to its cache after the last yield
HEARTBEAT = 1.0  # seconds between yields when nothing happens, so Gradio can close a cancelled job
UPDATE_EVERY = 0.5  # seconds between page updates while cues stream in (each update resends the cue table)
SKIP = object()  # a part of the page an update leaves as it is
CHECKS_PER_WINDOW, CHECK_WINDOW = 20, 10.0
# Word times of the cues a client's last jobs gave, so that a cue left unchanged in the table keeps them when the files
# are made again (an edited cue's words are spread over it by length); counted in bytes, per client and in all
WORD_BYTES = 240  # a Word as Python holds it (object, dict, floats, its str) but its characters: tracemalloc
MAX_CLIENT_WORD_BYTES = 32 * 2**20
MAX_WORD_BYTES = 256 * 2**20
READ_SLOTS = 2  # uploads read at once (probed, or an ASS file's style), beside the job slots; one a client
# Memory a job takes beyond the shared model, from the speed benchmark's hour (1.53 GB peak with 0.45 GB of libraries
# and model): about 1.1 GB per hour of audio (its samples, mel windows, decoder caches), plus 0.25 GB of working room.
JOB_BASE_BYTES, JOB_BYTES_PER_HOUR = 0.25e9, 1.1e9


@dataclass(frozen=True)
class Shown:
    """What the page's player shows: a video our ffmpeg wrote, with a subtitle track or none (burned in)."""

    video: Path
    subtitles: Path | None


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    limits: Limits = Limits()
    allow_private_urls: bool = False  # let links point at localhost/LAN (only for a server on a private machine)
    sites: tuple[str, ...] | None = SITES  # yt-dlp extractors links may use; None: every one yt-dlp has
    jobs_dir: Path = Path(tempfile.gettempdir()) / "subtitle-generator-jobs"  # per-job working folders, removed after
    concurrency: int = 1  # jobs working at once (a cancelled job's slot is free only once its work has stopped)
    queue_size: int = 20  # jobs that may wait for a slot; more are turned away
    per_client: int = 2  # jobs one client (address) may have working or waiting


def _remove_own_jobs(jobs_dir: Path) -> None:
    for folder in Path(jobs_dir).glob(f"job-{os.getpid()}-*"):
        shutil.rmtree(folder, ignore_errors=True)


def memory_problem(concurrency: int, max_duration: float, available: float) -> str | None:
    """Why --concurrency jobs of --max-duration seconds would not fit in `available` bytes; None when they do."""
    need = 0.5e9 + concurrency * (JOB_BASE_BYTES + JOB_BYTES_PER_HOUR * max_duration / 3600)
    if need <= available:
        return None
    return (
        f"--concurrency {concurrency} with --max-duration {max_duration / 60:.0f} needs about {need / 1e9:.1f} GB of "
        f"memory; this machine has {available / 1e9:.1f} GB available: lower one of them"
    )


def core_share(concurrency: int) -> int:
    """Threads for each of `concurrency` jobs working side by side (0: one job, every core)."""
    return 0 if concurrency == 1 else max(1, usable_cores() // concurrency)


def available_memory() -> float:
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return float("inf")


class WordTimes:
    """The measured words of clients' last cues, by the cue as the table shows it: each client's oldest go past
    `per_client` bytes, and the oldest client's past `total`, so one client never evicts another's but to stay
    under the total."""

    def __init__(self, per_client: int = MAX_CLIENT_WORD_BYTES, total: int = MAX_WORD_BYTES):
        self.per_client, self.total = per_client, total
        self._kept: dict[str, OrderedDict[tuple, tuple[tuple[Word, ...], int]]] = {}  # client -> cue -> (words, bytes)
        self._bytes: Counter[str] = Counter()
        self._lock = threading.Lock()

    @staticmethod
    def size(words: tuple[Word, ...]) -> int:
        return sum(WORD_BYTES + len(w.word) for w in words)

    @property
    def bytes(self) -> int:
        return sum(self._bytes.values())

    def remember(self, client: str, cues: Sequence[Cue]) -> None:
        with self._lock:
            kept = self._kept[client] = self._kept.pop(client, OrderedDict())  # (the newest client last)
            for cue in cues:
                if cue.words and (size := self.size(cue.words)) <= self.per_client:
                    key = _cue_key(cue)
                    self._bytes[client] += size - kept.pop(key, ((), 0))[1]
                    kept[key] = (cue.words, size)
            self._trim(client, self.per_client)
            while self.bytes > self.total:
                self._trim(next(iter(self._kept)), 0)

    def words(self, client: str, cue: Cue) -> tuple[Word, ...] | None:
        with self._lock:
            found = self._kept.get(client, {}).get(_cue_key(cue))
        return found[0] if found else None

    def _trim(self, client: str, limit: int) -> None:
        kept = self._kept[client]
        while kept and self._bytes[client] > limit:
            self._bytes[client] -= kept.popitem(last=False)[1][1]
        if not kept:
            del self._kept[client], self._bytes[client]


class Service:
    """What the page's requests share: the executor, the models offered, the policy, the jobs each client has,
    and the word times of their last cues."""

    def __init__(self, runner: Executor, model_choices: list[tuple[str, str]], options: ServerOptions):
        self.runner = runner  # in this process, or on a Ray cluster (--ray)
        # the page offers models by an id, not by where they are on the server: a name stays itself ("base"), a
        # path becomes its last part ("whisper-small-ct2")
        self.model_ids: dict[str, str] = {}
        for _, spec in model_choices:
            base = Path(spec).name if ("/" in spec or os.sep in spec) else spec
            name, n = base, 2
            while name in self.model_ids:
                name, n = f"{base} ({n})", n + 1
            self.model_ids[name] = spec
        ids = {spec: name for name, spec in self.model_ids.items()}
        self.model_choices = [(label, ids[spec]) for label, spec in model_choices]
        self.options = options
        self.word_times = WordTimes()
        self.policy = Policy(
            limits=options.limits,
            allow_private_urls=options.allow_private_urls,
            models=tuple(spec for _, spec in model_choices),
            extractors=options.sites,
            # jobs working side by side share the cores: each burn-in encodes with its share
            threads=core_share(options.concurrency),
            slots=threading.BoundedSemaphore(options.concurrency),
            kept_copies=1,  # Gradio's cache keeps a copy of every file a job hands the page, for up to 2 hours
        )
        self._clients: Counter[str] = Counter()  # jobs working or waiting, by client address
        self._checks: dict[str, deque[float]] = {}  # when each client's last cue checks came, for CHECKS_PER_WINDOW
        self._reading: set[str] = set()  # clients with an upload being read
        self._read_slots = threading.BoundedSemaphore(READ_SLOTS)
        self._lock = threading.Lock()
        sweep(options.jobs_dir)  # the job folders of a server that was killed (their names carry its process id)
        atexit.register(_remove_own_jobs, options.jobs_dir)  # and this one's, when it stops (kept ones included)

    def admit(self, client: str) -> None:
        """Count the job in, or refuse it: one client may have `per_client` jobs working or waiting, and the server
        `concurrency + queue_size` in all."""
        o = self.options
        with self._lock:
            if self._clients[client] >= o.per_client:
                raise SubtitleError(
                    f"You have {self._clients[client]} jobs working or waiting on this server: wait for one to finish"
                )
            if sum(self._clients.values()) >= o.concurrency + o.queue_size:
                raise SubtitleError("The server is busy: try again in a few minutes")
            self._clients[client] += 1

    def release(self, client: str) -> None:
        with self._lock:
            self._clients[client] -= 1

    @contextlib.contextmanager
    def reading(self, client: str) -> Iterator[None]:
        """Around reading an upload: one at a time for a client (SubtitleError for a second), READ_SLOTS for all."""
        with self._lock:
            if client in self._reading:
                raise SubtitleError("Your last upload is still being read: wait for it, then drop the next")
            self._reading.add(client)
        try:
            with self._read_slots:
                yield
        finally:
            with self._lock:
                self._reading.discard(client)

    def describe(self, files: list[str] | None, seen: list[str] | None = None, client: str = "") -> tuple[list, str]:
        """On upload: (the files, their media line: titles and durations, before any job). The files of this upload
        replace those `seen` before (the file box would add them to the list): at most max_files, read in a read
        slot (reading)."""
        files = [f for f in files or [] if f not in set(seen or [])] or list(files or [])
        try:
            if len(files) > self.options.limits.max_files:
                raise SubtitleError(f"{len(files)} files: drop at most {self.options.limits.max_files} at once")
            with self.reading(client):
                return files, media_lines([Source(Path(f).name, Path(f).name, Path(f), probe(Path(f))) for f in files])
        except SubtitleError as e:
            return files, f"**Error:** {escape_markdown(str(e))}"

    def style(self, path: str | None, client: str = "") -> dict[str, Any]:
        """style_fields of an uploaded file, read in a read slot; empty when the client has a read going already."""
        try:
            with self.reading(client):
                return style_fields(path)
        except SubtitleError:
            return {}

    def allow_check(self, client: str) -> bool:
        """Whether `client` may check its cues now: CHECKS_PER_WINDOW in CHECK_WINDOW seconds."""
        now = time.monotonic()
        with self._lock:
            recent = self._checks.setdefault(client, deque())
            while recent and now - recent[0] > CHECK_WINDOW:
                recent.popleft()
            if len(recent) >= CHECKS_PER_WINDOW:
                return False
            recent.append(now)
            for other in [c for c, times in self._checks.items() if now - times[-1] > CHECK_WINDOW]:
                del self._checks[other]  # (the map holds only the clients of the last CHECK_WINDOW)
        return True

    def remember(self, result: JobResult, client: str) -> None:
        """Keep the word times of the job's cues for this client (WordTimes bounds them)."""
        self.word_times.remember(client, [cue for f in result.files for cue in f.result.cues])

    def with_word_times(self, text: str, client: str) -> str:
        """The table's subtitles, as WebVTT with word times when some cues are as one of this client's jobs gave
        them (same times, same words): those keep their measured word times. Otherwise the text as it is."""
        cues = parse(text)
        known = [self.word_times.words(client, cue) for cue in cues]
        if not any(known):
            return text
        cues = [replace(c, words=w) if w else c for c, w in zip(cues, known)]
        return to_vtt(cues, None, "none", words=True, spread=False)  # (edited cues: no times made up in the file)

    def updates(self, spec: JobSpec, client: str = "") -> Iterator[tuple]:
        """The job's events as page updates (about, status, cue table, preview, downloads; SKIP: unchanged): the status line (stage, %, elapsed, time left) at least every second,
        the cues in bursts (each update resends the whole table), the results at the end."""
        self.options.jobs_dir.mkdir(parents=True, exist_ok=True)
        job_dir = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=self.options.jobs_dir))
        several = len(spec.inputs) > 1
        sources: dict[int, Source] = {}
        rows: list[list[str]] = []
        line, last, unseen, finished = "Starting", 0.0, False, False
        started = time.monotonic()
        log.info("job %s: %d input(s), model %s", job_dir.name, len(spec.inputs), spec.model.model)
        events = self.runner.run(spec, job_dir, self.policy, heartbeat=HEARTBEAT)
        try:
            yield SKIP, status_line(line, 0.0), SKIP, SKIP, SKIP
            for event in events:
                if isinstance(event, Progress):
                    line = event.line()
                elif isinstance(event, SourceFound):
                    sources[event.index] = event.source
                    unseen = True
                elif isinstance(event, CueDecoded):
                    name = [sources[event.index].title] if several else []
                    rows.append([*name, cue_time(event.cue.start), cue_time(event.cue.end), "", event.cue.text.strip()])
                    unseen = True
                elif isinstance(event, FileFailed):
                    log.info("job %s: %s failed: %s", job_dir.name, event.name, event.message)
                elif isinstance(event, JobResult):
                    took = time.monotonic() - started
                    if not event.files:
                        raise SubtitleError(event.failed[0].message)
                    log.info("job %s: done in %.1f s (%d failed)", job_dir.name, took, len(event.failed))
                    self.remember(event, client)
                    final = self._final(event, job_dir, spec, took)
                    # Gradio reads the last yield's files again after the generator returns, then serves its copies
                    timer = threading.Timer(KEEP_OUTPUTS, shutil.rmtree, (job_dir,), {"ignore_errors": True})
                    timer.daemon = True
                    timer.start()
                    finished = True
                    yield final
                    return
                # (a closed page can stop this generator only at a yield: run_job's heartbeat brings one each second)
                # cues come in bursts (a 30-second window at a time): a burst is shown once the progress after it comes
                burst_over = unseen and isinstance(event, Progress)
                if burst_over or time.monotonic() - last >= UPDATE_EVERY:
                    last = time.monotonic()
                    status = status_line(line, last - started)
                    if unseen:
                        unseen = False
                        yield media_lines(list(sources.values())), status, cue_table(rows, several), SKIP, SKIP
                    else:
                        yield SKIP, status, SKIP, SKIP, SKIP
        except SubtitleError:
            log.info("job %s: failed after %.1f s", job_dir.name, time.monotonic() - started)
            raise
        except Exception as e:
            log.error("job %s failed", job_dir.name, exc_info=e)
            raise SubtitleError("Something went wrong on the server; it is in the server's log. Try again") from None
        finally:
            # A job still running stops at its next event, or at once in ffmpeg; closing returns when the work has
            # stopped, and a failed or cancelled job's folder goes then. That happens beside the page's request, so
            # Cancel answers at once (the job's slot stays taken until its work has stopped).
            def close() -> None:
                events.close()
                if not finished:
                    shutil.rmtree(job_dir, ignore_errors=True)

            threading.Thread(target=close, name="subtitle-job-close").start()

    def _final(self, result: JobResult, job_dir: Path, spec: JobSpec, took: float) -> tuple:
        first, several, labels = result.files[0], len(spec.inputs) > 1, spec.shown_labels
        languages = [LANGUAGES.get(f.result.info.language, "").title() for f in result.files]  # ("und": given cues)
        about = media_lines([f.source for f in result.files], languages)
        # Only files our ffmpeg wrote reach the player: never an upload or a download, which Gradio would hand to the
        # system's ffmpeg when it judges them unplayable (with no whitelist, no timeout, outside the job's slot)
        if first.burned is not None:  # the burned-in video is the preview (a track on top would draw the text twice)
            preview = Shown(first.burned, None)
        elif first.preview is not None:
            vtt = write_outputs(first.result, ["vtt"], job_dir / "preview", "preview", labels)[0]
            preview = Shown(first.preview, vtt)
        else:
            preview = None
        status = done_line(result, spec, took)
        rows = [  # the final cues (re-cut by the readability rules), not the raw segments streamed while decoding
            [*([f.source.title] if several else []), cue_time(c.start), cue_time(c.end), c.speaker or "",
             c.text.replace("\n", " / ")]
            for f in result.files
            for c in f.result.cues
        ]  # fmt: skip
        outputs = [p for f in result.files for p in f.outputs]
        subtitles = [p for p in outputs if p.suffix.lstrip(".") in FORMATS]  # (the videos are not zipped again)
        several_files = len(result.files) > 1 or several
        downloads = (
            [zip_outputs(subtitles, job_dir), *(p for p in outputs if p not in subtitles)] if several_files else outputs
        )
        return about, status, cue_table(rows, several), preview, [str(p) for p in downloads]


def _cue_key(cue: Cue) -> tuple:
    """A cue as the cue table shows it: times to the millisecond, text without its line breaks."""
    return round(cue.start * 1000), round(cue.end * 1000), " ".join(cue.text.split())
