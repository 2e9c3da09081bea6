"""The files a job writes: names that are safe and unique within the job, and subtitle files and a zip written whole.

A page title becomes a file name stem (`title_stem`), every stem is made unique within the job (`unique_stem`), and
each file is written whole or not at all (`atomic_path`): `write_outputs` for the subtitle formats, `zip_outputs` for
the web app's one download.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import OptionError
from pipeline.files import atomic_path
from pipeline.jobs.spec import SubtitleResult
from pipeline.speakers.turns import speaker_name
from pipeline.subtitles.formats import Labels
from pipeline.subtitles.write import FORMATS, to_format
from pipeline.timings import timed


@timed("write")
def write_outputs(
    result: SubtitleResult,
    formats: Sequence[str],
    out_dir: Path,
    stem: str,
    labels: Labels | str = Labels(),
    style=None,
) -> list[Path]:
    """Write `out_dir/stem.<fmt>` for each format, each whole or not at all (atomic_path); `labels`: how speakers
    show in the text (pipeline.subtitles.formats.LABELS); `style` (pipeline.subtitles.ass.Style): the look of .ass files (on the
    video's picture size) and whether words light up."""
    media = result.media
    size = (media.width, media.height) if media.has_video and media.width and media.height else None
    written = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise OptionError("formats", f"Unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
        text = to_format(
            fmt,
            result.cues,
            language=result.info.language,
            duration=result.info.duration,
            labels=labels,
            style=style,
            size=size,
            turns=[(t.start, t.end, speaker_name(t.speaker)) for t in result.turns] if result.turns else None,
            name=stem,
        )
        target = Path(out_dir) / f"{stem}.{fmt}"
        with atomic_path(target) as tmp:
            tmp.write_text(text, encoding="utf-8", newline="\n")
        written.append(target)
    return written


def zip_outputs(files: Sequence[Path], out_dir: Path) -> Path:
    """One zip of `files` (by their names), written whole or not at all. (The web app zips only the subtitle files:
    a video in a zip would be one more copy of it on the disk.)"""
    target = Path(out_dir) / "subtitles.zip"
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f, f.name)
    return target


def title_stem(title: str) -> str:
    """A file name stem from a page title: no path separators, control or shell-special characters."""
    return "".join(c if c.isprintable() and c not in '/\\:*?"<>|' else "_" for c in title).strip(" .")


def unique_stem(stem: str, taken: set[str]) -> str:
    """`stem`, short enough for the longest suffix we add, and unique within the job: "talk", "talk (2)", ..."""
    stem = stem.encode("utf-8")[:120].decode("utf-8", "ignore").strip() or "subtitles"  # (names are 255 bytes at most)
    unique, n = stem, 2
    while unique.lower() in taken:
        unique, n = f"{stem} ({n})", n + 1
    taken.add(unique.lower())
    return unique
