"""One job: a media file in, segments and subtitle files out. The CLI and the web app both call this."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import SubtitleError
from pipeline.media import MediaInfo, load_audio, require_audio
from pipeline.model import OVWhisper
from pipeline.subtitles import FORMATS, clean_cues, render
from pipeline.transcribe import Segment, TranscribeOptions, TranscriptionInfo, transcribe


@dataclass(frozen=True)
class SubtitleResult:
    segments: tuple[Segment, ...]  # cleaned: ordered, non-overlapping, within the media
    info: TranscriptionInfo
    media: MediaInfo


def subtitle_file(
    path: Path,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
) -> SubtitleResult:
    """Transcribe one media file. `on_segment(segment, duration)` sees each segment as soon as it is decoded."""
    media = require_audio(Path(path))
    audio = load_audio(Path(path))
    segments, info = transcribe(audio, model, options, progress)
    collected = []
    for segment in segments:
        collected.append(segment)
        if on_segment is not None:
            on_segment(segment, info.duration)
    return SubtitleResult(tuple(clean_cues(collected, info.duration)), info, media)


def write_outputs(result: SubtitleResult, formats: Iterable[str], out_dir: Path, stem: str) -> list[Path]:
    """Write `out_dir/stem.<fmt>` for each format, each to a temporary name first and renamed into place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise SubtitleError(f"Unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
        text = render(fmt, result.segments, result.info.language, result.info.duration)
        target = out_dir / f"{stem}.{fmt}"
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".{fmt}.tmp", dir=out_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written
