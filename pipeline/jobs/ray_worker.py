"""A Ray worker: one process with its compiled models, subtitling one input at a time with run_job."""

from __future__ import annotations

import os
import queue
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.asr.cache import ModelCache
from pipeline.asr.options import ModelOptions
from pipeline.errors import SubtitleError
from pipeline.files import sweep, work_folder
from pipeline.jobs.run import run_job
from pipeline.jobs.spec import FileDone, FileFailed, FileWritten, JobResult, JobSpec, Policy


@dataclass(frozen=True)
class WorkerCrashed:
    error: str  # an exception of ours on the worker (a bug): logged here, and the input fails


@dataclass(frozen=True)
class WorkerFinished:
    result: JobResult  # of the one-input job, with the worker's paths
    files: tuple[tuple[str, bytes], ...]  # each output's name and content, in the order of the FileResult's outputs
    preview: tuple[str, bytes] | None  # the preview's name and content (JobSpec.preview), else None


class Worker:
    """One worker slot (a Ray actor): a process with its compiled models, subtitling one input at a time.

    The driver starts an input with `start` and collects its events with `next`, a call that waits up to a second for
    some: plain calls and replies, which work through Ray Client (ray://) too, where streaming generators do not."""

    def __init__(self, options: ModelOptions):
        self.models = ModelCache(options)
        self.cancelled: set[str] = set()
        self.queues: dict[str, queue.SimpleQueue] = {}
        sweep(Path(tempfile.gettempdir()))  # what workers killed on this node left

    def pid(self) -> int:
        return os.getpid()

    def prepare(self, model: str, precision: str) -> None:
        self.models.get(model, precision=precision)

    def cancel(self, key: str) -> None:
        self.cancelled.add(key)

    def start(self, key: str, spec: JobSpec, data: bytes | None, policy: Policy) -> None:
        """Subtitle the spec's one input (its bytes, when it is a file) in a thread; its events wait for `next`."""
        events = self.queues[key] = queue.SimpleQueue()

        def work() -> None:
            try:
                for event in self._subtitle(key, spec, data, policy):
                    events.put(event)
            except Exception as e:  # a bug, not the input's fault: the driver logs it
                events.put(WorkerCrashed(f"{type(e).__name__}: {e}"))
            finally:
                events.put(None)

        threading.Thread(target=work, name=f"subtitle-{key}", daemon=True).start()

    def next(self, key: str, wait: float = 1.0) -> list:
        """The input's events since the last call, after waiting up to `wait` seconds for one; None ends them."""
        events = self.queues[key]
        try:
            got = [events.get(timeout=wait)]
        except queue.Empty:
            return []
        while True:
            try:
                got.append(events.get_nowait())
            except queue.Empty:
                break
        if got[-1] is None:
            del self.queues[key]
        return got

    def _subtitle(self, key: str, spec: JobSpec, data: bytes | None, policy: Policy):
        """run_job on the spec's one input: its events (paths on this node left out), then a WorkerFinished."""
        name = str(spec.inputs[0]) if data is None else Path(spec.inputs[0]).name
        try:
            with work_folder("subtitle-worker") as root:  # (a killed worker's is swept by the next one on its node)
                if data is not None:
                    (root / "in").mkdir()
                    (root / "in" / name).write_bytes(data)
                    spec = replace(spec, inputs=(root / "in" / name,))
                events = run_job(spec, root / "out", self.models, policy, work_dir=root / "work", heartbeat=1.0)
                try:
                    for event in events:
                        if key in self.cancelled:
                            return
                        if isinstance(event, JobResult):
                            files = tuple((p.name, p.read_bytes()) for f in event.files for p in f.outputs)
                            shown = event.files[0].preview if event.files else None
                            yield WorkerFinished(event, files, shown and (shown.name, shown.read_bytes()))
                        elif not isinstance(event, FileWritten | FileDone):  # (this node's paths: the driver's say)
                            yield event
                finally:
                    events.close()
        except SubtitleError as e:
            yield FileFailed(0, name, str(e))
        finally:
            self.cancelled.discard(key)
