"""Planning a job: what it may do, decided before any work, and the disk budget it keeps to while it works.

`check_job` refuses a job as a whole (too many inputs, a model not offered or not found); `plan_job` checks each local
input (`check_file`), skips the ones an earlier run finished (`done_before`) and checks that the rest fit the disk
(`check_disk`). What an input's videos may take at most is `video_bytes`; `video_room` bounds each video as it is
written. Every refusal is a SubtitleError whose message says what to do.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import OptionError, SubtitleError
from pipeline.jobs.spec import FileFailed, FileSkipped, JobSpec, Policy
from pipeline.media.audio import Limits, MediaInfo, check_limits, human_size, require_audio
from pipeline.media.video import AUDIO_RATE, BURN_MAX_RATE, PREVIEW_SECONDS, preview_reencodes

_DISK_MARGIN = 200 * 1024**2  # bytes kept free beyond what a job needs


def check_job(spec: JobSpec, policy: Policy) -> None:
    """Refuse a job as a whole (SubtitleError) before any work: too many inputs, a model not offered or not found."""
    limits = policy.limits
    if limits is not None and len(spec.inputs) > limits.max_files:
        raise SubtitleError(
            f"{len(spec.inputs)} files is too many for one job; this server takes up to {limits.max_files}"
        )
    if policy.models is not None and spec.model.model not in policy.models:
        raise OptionError("model", f"Unknown model {spec.model.model!r}: choose one of the list")
    if spec.subtitles is None:
        from convert.checkpoints import resolve_checkpoint  # (convert imports pipeline: imported here)

        resolve_checkpoint(spec.model.model)  # an unknown name or path fails now, not after a download


@dataclass(frozen=True)
class JobPlan:
    """What a job does with its inputs, decided before any work (plan_job)."""

    checked: dict[int, MediaInfo]  # the local inputs that passed their checks, by index (skipped ones left out)
    failed: tuple[tuple[int, str], ...]  # the local inputs refused, each with its one-line reason
    skipped: tuple[FileSkipped, ...]  # the local inputs whose outputs an earlier run wrote (spec.overwrite False)
    todo: tuple[int, ...]  # the inputs to work on, in order: the checked local files and every link


def plan_job(
    spec: JobSpec, out_dir: Path, policy: Policy, stems: set[str], stop: threading.Event | None = None
) -> JobPlan:
    """The start every executor makes: every local file checked (check_file), the ones done before skipped (their
    names taken in `stems`), and the disk budget checked for the rest (SubtitleError: the whole job is refused)."""
    checked: dict[int, MediaInfo] = {}
    failed = []
    for i, item in enumerate(spec.inputs):
        if isinstance(item, Path):
            try:
                checked[i] = check_file(item, policy.limits, stop)
            except SubtitleError as e:
                failed.append((i, str(e)))
    skipped = [] if spec.overwrite else [s for i in list(checked) if (s := done_before(spec, i, out_dir, stems))]
    for s in skipped:
        del checked[s.index]
    check_disk(spec, [(spec.inputs[i].stat().st_size, media) for i, media in checked.items()], out_dir, policy)
    todo = tuple(i for i in range(len(spec.inputs)) if i in checked or not isinstance(spec.inputs[i], Path))
    return JobPlan(checked, tuple(failed), tuple(skipped), todo)


def start_job(
    spec: JobSpec, out_dir: Path, policy: Policy, stems: set[str], emit, stop: threading.Event | None = None
) -> tuple[JobPlan, list[FileFailed]]:
    """The start both executors make: `out_dir` made, the plan, and the inputs it refused or skipped emitted."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = plan_job(spec, out_dir, policy, stems, stop)
    failed = [FileFailed(i, input_name(spec.inputs[i]), message) for i, message in plan.failed]
    for event in (*failed, *plan.skipped):
        emit(event)
    return plan, failed


def input_name(item: Path | str) -> str:
    """An input as messages name it: a file's name, or the link."""
    return item.name if isinstance(item, Path) else str(item)


def check_file(path: Path, limits: Limits | None, stop: threading.Event | None = None) -> MediaInfo:
    """The media of a local input, refused (SubtitleError) when it has no audio or is over the server's limits."""
    info = require_audio(path, stop)
    if limits is not None:  # (a server: the duration must be known; decoding stops at the limit and is checked again)
        check_limits(path.name, limits, size=path.stat().st_size, duration=info.duration, known=True)
    return info


def done_before(spec: JobSpec, i: int, out_dir: Path, stems: set[str]) -> FileSkipped | None:
    """Input i's outputs in out_dir, when an earlier run wrote them all (each newer than the input); its name is
    then taken in `stems`, as it was in that run. Only for local inputs."""

    item = spec.inputs[i]
    stem = Path(item.name).stem
    names = [f"{stem}.{fmt}" for fmt in spec.formats]
    names += [f"{stem}.subtitled.mp4"] if spec.burn else []
    names += [f"{stem}.subs.mkv"] if spec.soft else []
    outputs = tuple(Path(out_dir) / name for name in names)
    if stem.lower() in stems or not all(o.is_file() and o.stat().st_mtime >= item.stat().st_mtime for o in outputs):
        return None
    stems.add(stem.lower())
    return FileSkipped(i, item.name, outputs)


def check_disk(
    spec: JobSpec, inputs: Sequence[tuple[int, MediaInfo]], out_dir: Path, policy: Policy, spent: int = 0
) -> None:
    """Refuse inputs (bytes, media) whose videos would go over the server's per-job budget, or fill the disk, with
    `spent` bytes written already. What each input's videos may take at most (video_bytes), once more for each copy
    the server keeps. The files are bounded again as they are written (ffmpeg's -fs: video_room)."""
    need = (1 + policy.kept_copies) * sum(video_bytes(spec, size, media) for size, media in inputs)
    limits = policy.limits
    if limits is not None and need + spent > limits.max_job_bytes:
        raise SubtitleError(_over_budget(f"This job would write up to {human_size(need + spent)}", policy))
    free = shutil.disk_usage(out_dir).free
    if need + _DISK_MARGIN > free:
        raise SubtitleError(f"The server's disk is too full for this job ({human_size(free)} free): try later")


def video_bytes(spec: JobSpec, size: int, media: MediaInfo) -> int:
    """The most one input of `size` bytes makes as video for `spec`: a burned-in copy is bounded by its duration at
    the burn's bitrate cap (a 200-kB still 1080p clip burns to 10 times its size), plus its share of the audio; soft
    subtitles copy it twice (and may encode AAC); a preview copies it (or re-encodes PREVIEW_SECONDS of it)."""
    seconds = media.duration or 0.0
    audio = seconds * AUDIO_RATE / 8  # (audio that cannot be copied is re-encoded at this rate)
    need = 0.0
    if spec.burn and media.has_video:
        burned = min(seconds, spec.burn.preview_seconds or seconds)
        need += burned * BURN_MAX_RATE / 8 + (size * burned / seconds if seconds else size) + audio
    if spec.soft:
        need += 2 * size + audio
    if spec.preview and not (spec.burn and media.has_video):
        reencoded = PREVIEW_SECONDS * (BURN_MAX_RATE + AUDIO_RATE) / 8
        need += reencoded if preview_reencodes(media) else size + audio
    return int(need)


def video_room(out_dir: Path, policy: Policy, spent: int) -> int:
    """Bytes the next video may take, with `spent` bytes written already: what is left of the job's budget, and of
    the free disk (less a margin), each shared with the copies the server keeps of it."""
    copies = 1 + policy.kept_copies
    free = shutil.disk_usage(out_dir).free
    room = (free - _DISK_MARGIN) // copies
    if room <= 0:
        raise SubtitleError(f"The server's disk is too full for this job ({human_size(free)} free): try later")
    if policy.limits is not None:
        room = min(room, policy.limits.max_job_bytes // copies - spent)
        if room <= 0:
            raise SubtitleError(_over_budget(f"This job has written {human_size(spent)}", policy))
    return room


def _over_budget(written: str, policy: Policy) -> str:
    kept = policy.kept_copies
    copies = f" (with the {'copy' if kept == 1 else f'{kept} copies'} the server keeps of each)" if kept else ""
    return (
        f"{written} of video{copies}; this server allows {human_size(policy.limits.max_job_bytes)} per job: fewer or "
        "shorter files, or no burned-in or soft-subtitled video"
    )
