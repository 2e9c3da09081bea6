"""Where jobs run: in this process (the default), or on a Ray cluster (pipeline.jobs.ray, imported only when asked).

Both take a JobSpec and give run_job's events and JobResult, so the CLI and the web app do not know which one they
drive. The in-process one is run_job with one shared ModelCache; the Ray one spreads the inputs over workers that
each hold a compiled model, and writes every input's files here, whole, once its worker has finished them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pipeline.asr.options import ModelOptions
from pipeline.errors import SubtitleError
from pipeline.jobs.estimate import Rates
from pipeline.jobs.spec import Event, JobResult, JobSpec, Policy

if TYPE_CHECKING:  # (torch, whisper and OpenVINO come with a job, not with `--help`)
    from pipeline.asr.cache import ModelCache


class Executor(Protocol):
    def run(
        self,
        spec: JobSpec,
        out_dir: Path,
        policy: Policy = Policy(),
        work_dir: Path | None = None,
        heartbeat: float | None = None,
    ) -> Iterator[Event | JobResult]:
        """run_job's contract: the job's events, then its JobResult; closing the generator stops the work."""
        ...

    def prepare(self, model: str, precision: str = "auto") -> None:
        """Load and compile `model` now, so the first job does not wait for it."""
        ...

    def close(self) -> None: ...


class InProcess:
    """run_job in this process, its models compiled once and shared by every job, as are the rates they measure."""

    def __init__(self, models: ModelCache):
        self.models = models
        self.rates = Rates()

    def run(self, spec, out_dir, policy=Policy(), work_dir=None, heartbeat=None) -> Iterator[Event | JobResult]:
        from pipeline.jobs.run import run_job

        return run_job(spec, out_dir, self.models, policy, work_dir=work_dir, heartbeat=heartbeat, rates=self.rates)

    def prepare(self, model: str, precision: str = "auto") -> None:
        self.models.get(model, precision=precision)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def executor(ray: str | None = None, workers: int | None = None, options: ModelOptions = ModelOptions()) -> Executor:
    """In process when `ray` is None; else Ray at `ray` ("auto": the cluster in RAY_ADDRESS, or a new local one) with
    `workers` model-holding workers (None: one per 2 CPUs of the cluster)."""
    if ray is None:
        from pipeline.asr.cache import ModelCache

        return InProcess(ModelCache(options))
    try:
        from pipeline.jobs.ray import RayExecutor  # (imports ray: only a Ray run needs it installed)
    except ImportError as e:
        if e.name != "ray":
            raise
        raise SubtitleError("--ray needs Ray: pip install -r requirements-ray.txt") from None
    return RayExecutor(ray, workers, options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--ray and --workers, for the CLI and the web app alike."""
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: 'auto' (RAY_ADDRESS, or a new local instance), or the address of a running one "
        "(ray://host:10001, host:6379); needs pip install -r requirements-ray.txt",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="with --ray: model-holding workers (default: one per 2 CPUs)"
    )
