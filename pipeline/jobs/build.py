"""One way from a person's choices to a JobSpec, for the CLI and the page alike: flat choices by the page's names
(its API's), each front end passing its own defaults and units already converted (sizes as fractions)."""

from __future__ import annotations

from pathlib import Path

from pipeline.asr.options import ModelOptions, TranscribeOptions
from pipeline.errors import OptionError
from pipeline.jobs.spec import JobSpec, SubtitleText
from pipeline.media.video import PREVIEW_SECONDS, BurnOptions
from pipeline.speakers.turns import turn_options
from pipeline.subtitles.ass import Style
from pipeline.subtitles.cues import CueRules

BURN_CHOICES = ("none", "preview", "full")
_M, _T, _R, _S = ModelOptions(), TranscribeOptions(), CueRules(), Style()


def build_spec(
    *,
    inputs: tuple[Path | str, ...],
    model: str = _M.model,
    precision: str = _M.precision,
    threads: int = _M.threads,
    language: str | None = _T.language,
    task: str = _T.task,
    beam_size: int | None = _T.beam_size,
    initial_prompt: str | None = _T.initial_prompt,
    condition_on_previous_text: bool = _T.condition_on_previous_text,
    word_timestamps: bool = _T.word_timestamps,
    vad: bool = _T.vad,
    vad_threshold: float = _T.vad_threshold,
    batch_size: int = _T.batch_size,
    cue_rules: bool = True,
    max_line_chars: int = _R.max_line_chars,
    max_lines: int = _R.max_lines,
    max_cps: float = _R.max_cps,
    formats: tuple[str, ...] | list[str] = ("srt",),
    burn_in: str = "none",
    preview_seconds: float | None = None,
    font_size: float = _S.font_size,
    position: str = _S.position,
    text_colour: str = _S.text_colour,
    outline_colour: str = _S.outline_colour,
    box: bool = _S.box,
    margin: float | None = _S.margin,
    speaker_colours: bool = _S.speaker_colours,
    highlight_words: bool = _S.highlight_words,
    highlight_colour: str = _S.highlight_colour,
    soft: bool = False,
    subtitles: Path | SubtitleText | None = None,
    overwrite: bool = True,
    preview: bool = False,
    speakers: str | int | None = None,
    speaker_labels: str = "dashes",
) -> JobSpec:
    """The job these choices ask for. `burn_in`: none, preview (the first `preview_seconds`, PREVIEW_SECONDS by
    default) or full; `preview`: also a video a browser plays. An OptionError names the choice that is wrong."""
    if burn_in not in BURN_CHOICES:
        raise OptionError("burn", f"Unknown burn-in choice {burn_in!r}: use none, preview or full")
    if preview_seconds is not None and burn_in != "preview":
        raise OptionError("preview_seconds", "A preview is a burned-in one: add --burn")
    look = Style(
        font_size=font_size,
        position=position,
        text_colour=text_colour,
        outline_colour=outline_colour,
        box=box,
        margin=margin,
        speaker_colours=speaker_colours,
        highlight_words=highlight_words,
        highlight_colour=highlight_colour,
    )
    burn = None
    if burn_in != "none":
        burn = BurnOptions(preview_seconds=(preview_seconds or PREVIEW_SECONDS) if burn_in == "preview" else None)
    return JobSpec(
        inputs=tuple(inputs),
        model=ModelOptions(model=model, precision=precision, threads=threads),
        transcribe=TranscribeOptions(
            language=language,
            task=task,
            beam_size=beam_size,
            initial_prompt=(initial_prompt or "").strip() or None,
            condition_on_previous_text=condition_on_previous_text,
            word_timestamps=word_timestamps,
            vad=vad,
            vad_threshold=vad_threshold,
            batch_size=batch_size,
        ),
        rules=CueRules(max_line_chars=max_line_chars, max_lines=max_lines, max_cps=max_cps) if cue_rules else None,
        formats=tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip())),
        burn=burn,
        style=look,
        soft=soft,
        subtitles=subtitles,
        overwrite=overwrite,
        preview=preview,
        speakers=turn_options(speakers),
        labels=speaker_labels,
    )
