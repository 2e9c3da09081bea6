"""Where a process spends its time, stage by stage (python -m pipeline --timings; benchmarks/speed.py --timings).

Off unless enable() is called: a stage then costs one clock read on each side. The stages are counted process-wide
(the model may load in another thread than the one decoding). Encoder passes and decoder steps are counted where
they run, so they are also inside the stage that asked for them (language detection, decoding, word timing): the
report shows them as "of which" lines.
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import nullcontext

STARTED = time.perf_counter()  # (pipeline/__init__.py imports this module first: the start of the imports)
ORDER = ("imports", "model load", "audio", "detector", "language", "decode", "word timing", "speakers", "cues", "write")
# inside (or beside) the stages above
INNER = ("settings measured", "encoder", "decoder", "aligner", "speakers beside decoding")

_enabled = False
_lock = threading.Lock()
_totals: dict[str, list] = {}  # stage -> [seconds, count]
_notes: dict[str, str] = {}  # what a stage chose, by topic: printed under the table


def enable() -> None:
    global _enabled
    _enabled = True


def add(name: str, seconds: float, count: int = 1) -> None:
    if not _enabled:
        return
    with _lock:
        total = _totals.setdefault(name, [0.0, 0])
        total[0] += seconds
        total[1] += count


def note(topic: str, text: str) -> None:
    """A line under the table (the latest per topic): what was chosen, and why."""
    if _enabled:
        with _lock:
            _notes[topic] = text


def count(name: str) -> int:
    """How many times stage `name` ran so far (0 while timings are off)."""
    return total(name)[1]


def total(name: str) -> tuple[float, int]:
    """Seconds in stage `name` so far, and how many times it ran (zeros while timings are off)."""
    with _lock:
        seconds, times = _totals.get(name, (0.0, 0))
        return seconds, times


def stage(name: str):
    """Time the block as one of `name`; when timings are off, a do-nothing context (the decoder's hot path takes
    this on every step)."""
    return _Stage(name) if _enabled else _OFF


class _Stage:
    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        add(self.name, time.perf_counter() - self.start)


_OFF = nullcontext()


def report() -> str:
    """The table: each stage's seconds and share of the process's time so far, encoder passes and decoder steps."""
    wall = time.perf_counter() - STARTED
    with _lock:
        totals = {name: tuple(value) for name, value in _totals.items()}
        notes = dict(_notes)
    lines = [f"time: {wall:.2f} s since the imports began", "| stage | seconds | share | count | per call |",
             "|---|---|---|---|---|"]  # fmt: skip
    counted = 0.0
    for name in (*ORDER, *sorted(set(totals) - set(ORDER) - set(INNER))):
        if name in totals:
            seconds, count = totals[name]
            counted += seconds
            lines.append(
                f"| {name} | {seconds:.2f} | {100 * seconds / wall:.0f} % | {count} | {_each(seconds, count)} |"
            )
    lines.append(f"| (the rest) | {wall - counted:.2f} | {100 * (wall - counted) / wall:.0f} % | | |")
    for name in INNER:
        if name in totals:
            seconds, count = totals[name]
            lines.append(f"| of which {name} | {seconds:.2f} | {100 * seconds / wall:.0f} % | {count} | "
                         f"{_each(seconds, count)} |")  # fmt: skip
    return "\n".join(lines + [f"{topic}: {text}" for topic, text in notes.items()])


def _each(seconds: float, count: int) -> str:
    each = seconds / max(count, 1)
    return f"{each:.2f} s" if each >= 0.1 else f"{1000 * each:.1f} ms"


def timed(name: str):
    """A decorator: each call of the function is one of stage `name`."""

    def wrap(function):
        @functools.wraps(function)
        def timed_call(*args, **kwargs):
            with stage(name):
                return function(*args, **kwargs)

        return timed_call

    return wrap
