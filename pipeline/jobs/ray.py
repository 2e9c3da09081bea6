"""Jobs on a Ray cluster: a JobSpec's inputs spread over workers (Ray actors) that each hold a compiled model.

`RayExecutor(address, workers).run(spec, out_dir, ...)` keeps run_job's contract: the same events, the same
JobResult, and closing the generator stops the work. What changes is where the work happens:
- One queue feeds every worker, shared by all the jobs of the executor (a web server's concurrent jobs too). A
  worker subtitles one input at a time with run_job, in a folder of its own.
- Inputs travel to the workers as bytes, through Ray's object store; links are downloaded by the worker. Nothing
  depends on a path of the submitting machine except the model: the embedded one installs with the requirements on
  every node, any other must be at a path every node can read.
- A worker sends back its events as they happen, and at the end every output file as bytes. The files are written
  here, each whole (atomic_path), only once the input is complete: a worker that dies leaves nothing behind.
- A worker that dies (a killed process, a lost node) is restarted by Ray, and its input is tried again on the next
  free worker, up to `retries` more times. The cues it had already streamed are not shown a second time.
- An input that fails (unreadable, over a limit, a dead link) fails alone, as in process.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from pipeline.asr.options import ModelOptions
from pipeline.errors import Cancelled, OptionError, SubtitleError
from pipeline.files import atomic_path
from pipeline.jobs.estimate import Countdown, time_left
from pipeline.jobs.outputs import unique_stem
from pipeline.jobs.plan import check_job, input_name, start_job
from pipeline.jobs.ray_connect import join, local_nodes_on_loopback
from pipeline.jobs.ray_worker import Worker, WorkerCrashed, WorkerFinished
from pipeline.jobs.run import brought_subtitles
from pipeline.jobs.spec import (
    CueDecoded,
    Event,
    FileDone,
    FileFailed,
    FileResult,
    FileWritten,
    JobResult,
    JobSpec,
    Policy,
    Progress,
    SourceFound,
    SubtitleText,
)
from pipeline.jobs.stream import stream

with local_nodes_on_loopback():
    import ray
    from ray.exceptions import ActorUnavailableError, RayActorError

log = logging.getLogger(__name__)

RETRIES = 2  # more tries for an input whose worker died under it
PLACE_TIMEOUT = 300.0  # seconds for Ray to start every worker (an autoscaling cluster may first add a node)
_PACKAGES = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2] / "convert")]


class RayExecutor:
    """Jobs on Ray: `workers` actors, each with `options`' model and an equal share of the cluster's CPUs."""

    def __init__(
        self,
        address: str = "auto",
        workers: int | None = None,
        options: ModelOptions = ModelOptions(),
        retries: int = RETRIES,
        place_timeout: float = PLACE_TIMEOUT,
    ):
        self.retries = retries
        self.started = not ray.is_initialized()
        # "auto": RAY_ADDRESS when it is set (inside a cluster), else a new local instance, which listens on
        # 127.0.0.1 alone (ray_connect.local_nodes_on_loopback)
        if self.started:
            join(address, runtime_env={"py_modules": _PACKAGES})  # (this code, for nodes that do not have it)
        cpus = ray.cluster_resources().get("CPU", 1.0)
        if workers is not None and workers < 1:
            raise OptionError("workers", "a number of Ray workers, 1 or more, goes with --ray")
        # two threads a worker by default, half the models in memory (on 2 cores, 2 workers of 1 thread are 1.2x
        # one of 2 for twice the memory: benchmarks/RESULTS.md, Many machines)
        count = workers or max(1, int(cpus) // 2)
        share = cpus / count  # of the CPUs, for each worker (a fraction when there are more workers than CPUs)
        self._actor = ray.remote(Worker).options(
            num_cpus=int(share) if share >= 1 else share, max_restarts=-1, max_concurrency=4
        )
        self._options = replace(options, threads=max(1, int(share)))
        self.workers = [self._actor.remote(self._options) for _ in range(count)]
        placed, waiting = ray.wait([w.pid.remote() for w in self.workers], num_returns=count, timeout=place_timeout)
        if waiting:  # (a cluster whose CPUs are taken, or too small for the share asked: say so, don't hang)
            free = ray.available_resources().get("CPU", 0.0)
            self._release()
            raise SubtitleError(
                f"Ray started {len(placed)} of {count} workers of {share:g} CPUs in {place_timeout:g} s ({free:g} of "
                f"the cluster's {cpus:g} CPUs are free): ask for fewer --workers, or try when its other work is done"
            )
        self.tasks: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._threads = [
            threading.Thread(target=self._serve, args=(k,), name=f"ray-worker-{k}", daemon=True) for k in range(count)
        ]
        for t in self._threads:
            t.start()

    def run(self, spec, out_dir, policy=Policy(), work_dir=None, heartbeat=None) -> Iterator[Event | JobResult]:
        check_job(spec, policy)

        def work(emit: Callable[[Event], None], stop: threading.Event) -> JobResult:
            return _Batch(self, spec, Path(out_dir), Path(work_dir or out_dir), policy, emit, stop).run()

        yield from stream(work, policy, heartbeat)

    def prepare(self, model: str, precision: str = "auto") -> None:
        ray.get([w.prepare.remote(model, precision) for w in self.workers])

    def pids(self) -> list[int]:
        """The workers' process ids (on their nodes), waiting for a worker Ray is restarting."""
        return [_pid_when_up(w, PLACE_TIMEOUT) for w in self.workers]

    def close(self) -> None:
        for _ in self._threads:
            self.tasks.put((2, next(self._order), None))
        self._release()

    def _release(self) -> None:
        for w in self.workers:
            ray.kill(w)
        if self.started:
            ray.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def submit(self, batch: _Batch, index: int, attempt: int) -> None:
        self.tasks.put((0 if attempt else 1, next(self._order), (batch, index, attempt)))  # a retry goes first

    def _serve(self, k: int) -> None:
        """Feed worker k from the queue, one input at a time."""
        while True:
            _, _, task = self.tasks.get()
            if task is None:
                return
            batch, index, attempt = task
            try:
                batch.attempt(self.workers[k], index, attempt)
            except RayActorError:
                batch.lost(index, attempt)
                self._revive(k)
            except Exception as e:
                log.error("input %d of a job failed on worker %d", index, k, exc_info=e)
                batch.fail(index, "Something went wrong on a worker; it is in the server's log. Try again")

    def _revive(self, k: int) -> None:
        """Wait for Ray to restart worker k (it reloads its model on its next input); a new one if it cannot."""
        try:
            _pid_when_up(self.workers[k], PLACE_TIMEOUT)
        except (RayActorError, ray.exceptions.GetTimeoutError):
            self.workers[k] = self._actor.remote(self._options)


def _pid_when_up(worker, timeout: float) -> int:
    """The worker's process id once it answers. While Ray restarts it, a call fails at once with
    ActorUnavailableError rather than waiting: asked again until `timeout`; a worker dead for good raises."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ray.get(worker.pid.remote(), timeout=max(deadline - time.monotonic(), 0.1))
        except ActorUnavailableError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


class _Batch:
    """One job on the executor: its inputs queued, their events merged into one stream, their files written here."""

    def __init__(self, executor: RayExecutor, spec: JobSpec, out_dir: Path, work_dir: Path, policy: Policy, emit, stop):
        self.executor, self.spec, self.out_dir, self.work_dir, self.policy = executor, spec, out_dir, work_dir, policy
        self.emit: Callable[[Event], None] = emit
        self.stop: threading.Event = stop
        self.lock = threading.Condition()
        self.stems: set[str] = set()
        self.stem: dict[int, str] = {}  # of local inputs, taken in input order as run_job takes them
        self.files: dict[int, FileResult] = {}
        self.failed: dict[int, FileFailed] = {}
        self.ended: set[int] = set()  # inputs done, failed or dropped
        self.running: dict[int, tuple] = {}  # input: (worker, key) while a worker has it
        self.shown: dict[int, int] = {}  # cues of each input already streamed (a retry does not show them again)
        self.fraction: dict[int, float] = {}  # of each running input
        self.durations: dict[int, float] = {}
        self.stopped = False
        self.started = time.monotonic()
        self.countdown = Countdown()

    def run(self) -> JobResult:
        spec = self.spec
        plan, failed = start_job(spec, self.out_dir, self.policy, self.stems, self._emit, self.stop)
        self.failed.update((f.index, f) for f in failed)
        self.ended.update([*self.failed, *(s.index for s in plan.skipped)])
        checked, todo = plan.checked, list(plan.todo)
        self.durations = {i: m.duration for i, m in checked.items() if m.duration}
        for i in todo:
            if i in checked:
                self.stem[i] = unique_stem(Path(spec.inputs[i]).stem, self.stems)
            self.executor.submit(self, i, 0)
        with self.lock:
            while not self.ended.issuperset(todo):
                if self.stop.is_set() and not self.stopped:
                    self._stop_all()
                self.lock.wait(0.2)
        if self.stopped:
            raise Cancelled
        failed = tuple(sorted(self.failed.values(), key=lambda f: f.index))
        return JobResult(tuple(self.files[i] for i in sorted(self.files)), failed, plan.skipped)

    def attempt(self, worker, i: int, attempt: int) -> None:
        """Input i on `worker`, its events passed on; RayActorError when the worker dies under it."""
        if self.stopped:
            return self._end(i)
        spec, item = self.spec, self.spec.inputs[i]
        key = uuid.uuid4().hex
        try:
            data = ray.put(item.read_bytes()) if isinstance(item, Path) else None
            # (the text, checked and decoded here: a worker gets it within the limits)
            subtitles = None if spec.subtitles is None else SubtitleText(*brought_subtitles(spec.subtitles))
        except SubtitleError as e:
            return self.fail(i, str(e))
        except OSError as e:
            return self.fail(i, f"Could not read {Path(e.filename or item).name}: {e.strerror}")
        one = replace(spec, inputs=(item,), subtitles=subtitles, overwrite=True)
        with self.lock:
            self.running[i] = (worker, key)
        seen = 0
        try:
            ray.get(worker.start.remote(key, one, data, replace(self.policy, slots=None)))
            while True:
                for event in ray.get(worker.next.remote(key)):
                    if event is None:
                        return self._end(i)  # (stopped, or a worker that ended without a result)
                    if self.stopped:
                        continue  # (the worker was told to stop: its last events are dropped)
                    if isinstance(event, Progress):
                        self._progress(i, event)
                    elif isinstance(event, SourceFound):
                        source = event.source
                        if isinstance(item, Path):
                            source = replace(source, media=item)
                        if source.duration:
                            self.durations[i] = source.duration
                        self._emit(SourceFound(i, source))
                    elif isinstance(event, CueDecoded):
                        seen += 1
                        if seen > self.shown.get(i, 0):
                            self.shown[i] = seen
                            self._emit(replace(event, index=i))
                    elif isinstance(event, FileFailed):
                        self.fail(i, event.message)
                    elif isinstance(event, WorkerFinished):
                        self._finish(i, event)
                    elif isinstance(event, WorkerCrashed):
                        log.error("%s failed on a worker: %s", self._name(i), event.error)
                        self.fail(i, "Something went wrong on a worker; it is in the server's log. Try again")
        finally:
            with self.lock:
                self.running.pop(i, None)

    def lost(self, i: int, attempt: int) -> None:
        """Input i's worker died: the input goes back to the front of the queue, or fails after `retries` more."""
        name = self._name(i)
        if self.stopped:
            return self._end(i)
        if attempt < self.executor.retries:
            log.warning("a worker died on %s; trying again (%d)", name, attempt + 1)
            with self.lock:
                self._emit(Progress(self._fraction(), f"A worker stopped; {name} goes to another one", self._left()))
            self.executor.submit(self, i, attempt + 1)
        else:
            self.fail(i, f"{name}: the workers stopped {attempt + 1} times on it (too big for their memory?)")

    def fail(self, i: int, message: str) -> None:
        event = FileFailed(i, self._name(i), message)
        self.failed[i] = event
        self._emit(event)
        self._end(i)

    def _finish(self, i: int, finished: WorkerFinished) -> None:
        """Write input i's files here, each whole; a file that cannot be written fails the input, and its files go."""
        one = finished.result.files[0]
        theirs = one.outputs[0].name[: -len(self.spec.formats[0]) - 1]  # the worker's stem
        with self.lock:
            stem = self.stem.get(i) or unique_stem(theirs, self.stems)
        source = one.source
        if isinstance(self.spec.inputs[i], Path):  # (a link's media stays on the worker: the preview is what is seen)
            source = replace(source, media=self.spec.inputs[i])
        written: list[Path] = []
        shown = None
        try:
            for name, content in (*finished.files, *([finished.preview] if finished.preview else [])):
                target = self.out_dir / f"{stem}{name[len(theirs) :]}"
                with atomic_path(target) as tmp:
                    tmp.write_bytes(content)
                written.append(target)
            if finished.preview:
                shown = written.pop()
        except OSError as e:
            for path in written:
                path.unlink(missing_ok=True)
            return self.fail(i, f"Could not write the subtitles of {source.title}: {e.strerror}")
        mapped = dict(zip(one.outputs, written))
        result = FileResult(
            source, one.result, tuple(written), mapped.get(one.burned), one.seconds, shown, notes=one.notes
        )
        for path in written:
            self._emit(FileWritten(i, path))
        self.files[i] = result
        self._emit(FileDone(i, result))
        self._end(i)

    def _progress(self, i: int, event: Progress) -> None:
        with self.lock:  # (workers report from threads of their own: the batch's fraction is emitted in order)
            self.fraction[i] = max(self.fraction.get(i, 0.0), event.fraction or 0.0)
            left = event.left if len(self.spec.inputs) == 1 else self._left()
            self._emit(Progress(self._fraction(), event.message, left))

    def _fraction(self) -> float:
        running = sum(f for j, f in self.fraction.items() if j not in self.ended)
        return min(1.0, (len(self.ended) + running) / len(self.spec.inputs))

    def _left(self) -> float | None:
        """The batch's time left: the audio still to do at the rate the batch has gone so far."""
        elapsed = time.monotonic() - self.started
        done = sum(d * (1.0 if j in self.files else self.fraction.get(j, 0.0)) for j, d in self.durations.items())
        total = sum(d for j, d in self.durations.items() if j not in self.failed)
        return self.countdown(
            time_left(total - done, elapsed / done if elapsed >= 5 and done > 0 else None), time.monotonic()
        )

    def _emit(self, event: Event) -> None:
        if self.stopped:
            return
        try:
            self.emit(event)
        except Cancelled:  # the consumer went away
            with self.lock:
                self._stop_all()

    def _stop_all(self) -> None:
        """Stop the job: queued inputs are dropped when their turn comes, running ones are told to stop."""
        self.stopped = True
        for worker, key in self.running.values():
            worker.cancel.remote(key)

    def _end(self, i: int) -> None:
        with self.lock:
            self.ended.add(i)
            self.lock.notify_all()

    def _name(self, i: int) -> str:
        return input_name(self.spec.inputs[i])
