"""A job's work in a thread of its own, its events handed to the consumer's thread through a queue."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pipeline.errors import Cancelled
from pipeline.jobs.spec import Event, JobResult, Policy, Progress


def stream(
    work: Callable[[Callable[[Event], None], threading.Event], JobResult],
    policy: Policy = Policy(),
    heartbeat: float | None = None,
) -> Iterator[Event | JobResult]:
    """`work(emit, stop)` in a thread of its own, once it holds one of the policy's slots: the events it emits, then
    the JobResult it returns (or what it raises). Closing the generator sets `stop` (emit raises Cancelled from then
    on) and returns once the work has stopped. Both executors run their jobs through this."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def emit(event: Event) -> None:
        if stop.is_set():
            raise Cancelled
        events.put(event)

    def worker() -> None:
        slot = False
        try:
            if policy.slots is not None and not (slot := policy.slots.acquire(blocking=False)):
                emit(Progress(0.0, "Waiting for a free slot on the server"))
                while not (slot := policy.slots.acquire(timeout=0.2)):
                    if stop.is_set():
                        raise Cancelled
            threading.current_thread().name = "subtitle-job (working)"  # (how a test counts the work going on)
            events.put(work(emit, stop))
        except BaseException as e:  # handed to the consumer's thread, which raises it there
            events.put(_Raised(e))
        finally:
            if slot:
                policy.slots.release()

    thread = threading.Thread(target=worker, name="subtitle-job", daemon=True)
    thread.start()
    last = Progress(0.0, "Starting")
    try:
        while True:
            try:
                event = events.get(timeout=heartbeat)
            except queue.Empty:
                yield last
                continue
            if isinstance(event, _Raised):
                raise event.error
            if isinstance(event, Progress):
                last = event
            yield event
            if isinstance(event, JobResult):
                return
    finally:
        stop.set()
        thread.join()  # a stopped job has stopped working (at its next event: a window, a download chunk, ...)


@dataclass(frozen=True)
class _Raised:
    error: BaseException
