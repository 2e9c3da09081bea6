"""How long a job still takes: seconds of work per second of audio, a prior by model size until jobs measure it."""

from __future__ import annotations

import threading
from pathlib import Path

from pipeline.jobs.spec import JobSpec

# Seconds of work per second of audio before anything was measured (beam 5, 2 cores: benchmarks/RESULTS.md)
PRIOR_RATE = {"tiny": 0.03, "base": 0.06, "small": 0.2, "medium": 0.6, "turbo": 0.5, "large": 1.2}
UNKNOWN_RATE = 0.2  # a model of no known size
MIN_MEASURED = 10.0  # seconds of audio a transcription must have for its rate to be kept


class Rates:
    """The rates jobs measured, by model and decoding settings; shared by the jobs of one executor."""

    def __init__(self):
        self._measured: dict[tuple, float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(spec: JobSpec) -> tuple:
        return (spec.model.model, spec.model.precision, spec.transcribe.beam_size, spec.transcribe.batch_size)

    def rate(self, spec: JobSpec) -> float:
        """The last measured rate of these settings, else the prior for the model's size."""
        with self._lock:
            if (known := self._measured.get(self.key(spec))) is not None:
                return known
        size = next((k for k in PRIOR_RATE if Path(spec.model.model).name.startswith(k)), None)
        return PRIOR_RATE.get(size, UNKNOWN_RATE)

    def record(self, spec: JobSpec, seconds: float, audio: float) -> None:
        if audio >= MIN_MEASURED:
            with self._lock:
                self._measured[self.key(spec)] = seconds / audio


def time_left(audio_left: float, rate: float | None) -> float | None:
    """Seconds still to come for `audio_left` seconds of audio at `rate`; None when the rate is not known yet."""
    return None if rate is None else max(0.0, audio_left) * rate


class Countdown:
    """A time left that counts down as a person expects: a new estimate may fall at once, but rises over the last
    one (less the time since) by at most RISE of it, or MIN_RISE seconds: no "0:07 left", then "0:19 left"."""

    RISE, MIN_RISE = 0.15, 2.0

    def __init__(self):
        self.last: tuple[float, float] | None = None  # (seconds left, when)

    def __call__(self, estimate: float | None, now: float) -> float | None:
        if estimate is None:
            return None
        if self.last is not None:
            left, at = self.last
            expected = max(0.0, left - (now - at))
            estimate = min(estimate, expected + max(self.MIN_RISE, self.RISE * expected))
        self.last = (estimate, now)
        return estimate
