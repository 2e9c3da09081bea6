"""What a job is and what it gives: `JobSpec` (what to do), `Policy` (what the server allows), the events a job
emits and its results. The bottom of pipeline/jobs/: it imports no other module of it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.asr.options import ModelOptions, TranscribeOptions
from pipeline.asr.results import TranscriptionInfo
from pipeline.errors import OptionError
from pipeline.media.audio import Limits, MediaInfo, hms
from pipeline.media.video import BurnOptions
from pipeline.speakers.turns import Turn, TurnOptions
from pipeline.subtitles.ass import Style
from pipeline.subtitles.cues import Cue, CueRules
from pipeline.subtitles.formats import Labels
from pipeline.subtitles.write import FORMATS


@dataclass(frozen=True)
class SubtitleText:
    """Subtitles given as text (the page's edited cue table, a file a worker was sent) rather than as a file."""

    text: str  # SRT, WebVTT or ASS
    name: str = "The subtitles"  # what messages call it


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    inputs: tuple[Path | str, ...]  # local files (Path) and links (str)
    model: ModelOptions = ModelOptions()
    transcribe: TranscribeOptions = TranscribeOptions()
    rules: CueRules | None = CueRules()  # readability rules for the cues; None: whisper's segments as they are
    formats: tuple[str, ...] = ("srt",)  # subtitle files to write, from FORMATS
    burn: BurnOptions | None = None  # also <stem>.subtitled.mp4 with the cues burned in (inputs with a picture)
    soft: bool = False  # also <stem>.subs.mkv (and .subs.mp4 when the codecs allow) with a subtitle track
    # an SRT, WebVTT or ASS file or text: the cues, instead of transcribing (one input)
    subtitles: Path | SubtitleText | None = None
    preview: bool = False  # also <stem>.preview.mp4 (or .webm) that a browser plays, when no video is burned in
    overwrite: bool = True  # False: a local input whose outputs are all there, newer than it, is skipped (a resume)
    speakers: TurnOptions | None = None  # find who speaks when, and cut cues where the speaker changes; None: off
    labels: str = "dashes"  # how a change of speaker shows in the cues' text (LABELS)
    # the look of .ass files and burned-in video; style.highlight_words lights the words up as they are spoken
    style: Style = Style()

    def __post_init__(self):
        Labels(self.labels)  # (checks it)
        if not isinstance(self.inputs, tuple) or not self.inputs:
            raise OptionError("inputs", "Upload a video or audio file, or paste a link, first")
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown:
            raise OptionError(
                "formats", f"Unknown format {unknown[0]!r}: use {', '.join(FORMATS[:-1])} or {FORMATS[-1]}"
            )
        if not self.formats or len(set(self.formats)) != len(self.formats):
            raise OptionError("formats", f"Choose each output format once, at least one: {', '.join(FORMATS)}")
        if self.subtitles is not None and len(self.inputs) != 1:
            raise OptionError("subtitles", "Existing subtitles go with exactly one video")
        if "rttm" in self.formats and self.speakers is None and self.subtitles is None:
            raise OptionError("formats", "An RTTM file says who speaks when: set Speakers to auto or a number too")

    @property
    def decoding(self) -> TranscribeOptions:
        """The transcription options, with word times when an output needs them (JSON carries every word's timing;
        lit-up words need their own times)."""
        if ("json" in self.formats or self.style.highlight_words) and not self.transcribe.word_timestamps:
            return replace(self.transcribe, word_timestamps=True)
        return self.transcribe

    @property
    def shown_labels(self) -> Labels:
        """How the files show speakers: the labels asked for, dialogue cues within the job's cue rules."""
        return Labels(self.labels, self.rules or CueRules())


@dataclass(frozen=True, kw_only=True)
class Policy:
    """What the server allows the people who use it. The CLI trusts its user: no limits, links anywhere."""

    limits: Limits | None = None  # None: no limits
    allow_private_urls: bool = True  # links to localhost / LAN addresses (safe only when the server is private)
    models: tuple[str, ...] | None = None  # the models a job may ask for; None: any
    extractors: tuple[str, ...] | None = (
        None  # yt-dlp extractors links may use (pipeline.media.download.SITES); None: any
    )
    threads: int = 0  # CPU threads one job's video encoding may use (a server's cores / its concurrency); 0: all
    # copies of each output that the server keeps beside the job's own (the web app: 1, Gradio's cache): they count
    # in the job's disk budget too
    kept_copies: int = 0
    # Jobs that may work at once, shared by every job of a server. A job holds its slot until its work has really
    # stopped (a cancelled job's ffmpeg killed, its window finished), not until its consumer went away.
    slots: threading.Semaphore | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Source:
    name: str  # what the person gave: a file name or a link
    title: str  # the page title for links, the file name for files
    media: Path  # the local media file (the input, or what was downloaded)
    info: MediaInfo

    @property
    def duration(self) -> float | None:
        return self.info.duration


@dataclass(frozen=True)
class SubtitleResult:
    cues: tuple[Cue, ...]  # cleaned: ordered, non-overlapping, within the media
    info: TranscriptionInfo
    media: MediaInfo
    voices: int | None = None  # how many voices the speaker turns found; None: speakers were not asked for
    turns: tuple[Turn, ...] = ()  # who speaks when, as heard (SpeakerTurns.heard): the RTTM file's and the JSON's


@dataclass(frozen=True)
class FileResult:
    source: Source
    result: SubtitleResult
    outputs: tuple[Path, ...]  # one per format, then the videos made, in out_dir
    burned: Path | None = None  # the video with the cues burned in, when asked for
    seconds: float = 0.0  # wall time this input took
    preview: Path | None = None  # a video a browser plays (JobSpec.preview), in out_dir, not among the outputs
    notes: tuple[str, ...] = ()  # videos that could not be made, one line each: the subtitles are delivered anyway


@dataclass(frozen=True)
class Progress:
    fraction: float | None  # of the whole job, 0..1; None when not known (an indeterminate bar)
    message: str  # the stage: "Transcribing talk.mp4"
    left: float | None = None  # seconds the job is expected to take still; None: no estimate yet

    def line(self) -> str:
        """One line for a person: "Transcribing talk.mp4 · 42% · about 1:10 left"."""
        parts = [self.message]
        if self.fraction is not None:
            parts.append(f"{100 * self.fraction:.0f}%")
        if self.left is not None:
            parts.append(f"about {hms(max(self.left, 1.0))} left")
        return " · ".join(parts)


@dataclass(frozen=True)
class SourceFound:
    index: int  # of the input in spec.inputs
    source: Source


@dataclass(frozen=True)
class CueDecoded:
    index: int
    cue: Cue  # a segment as decoded (the final cues, cut by the rules, are in the FileResult)
    duration: float  # of the input's audio


@dataclass(frozen=True)
class FileWritten:
    index: int
    path: Path


@dataclass(frozen=True)
class FileFailed:
    index: int
    name: str  # the input as given
    message: str  # one line that says what to do


@dataclass(frozen=True)
class FileDone:
    index: int
    file: FileResult  # every file of the input is written


@dataclass(frozen=True)
class FileSkipped:
    index: int
    name: str  # the input as given
    outputs: tuple[Path, ...]  # its outputs, complete from an earlier run


@dataclass(frozen=True)
class JobResult:
    files: tuple[FileResult, ...]  # the inputs that succeeded, in input order
    failed: tuple[FileFailed, ...] = ()
    skipped: tuple[FileSkipped, ...] = ()


Event = Progress | SourceFound | CueDecoded | FileWritten | FileDone | FileFailed | FileSkipped


def voices_found(n: int) -> str:
    """ "1 voice", "2 voices": what the speaker turns found, as the CLI and the page say it."""
    return f"{n} voice{'s' * (n != 1)}"
