"""What speech recognition gives: timed words and segments, and how a language was found. Shared by the decoding,
the subtitle cues and the jobs; imports nothing of ours."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    """One timed word: the only word type (whisper's word timestamps, the cue builder's input, the JSON output)."""

    start: float  # seconds
    end: float
    word: str  # as whisper gives it: with its leading space in spaced languages
    probability: float = 1.0
    speaker: str | None = None  # who says it ("Speaker 1", or the name given on the page); None: not known


@dataclass(frozen=True)
class Segment:
    start: float  # seconds
    end: float
    text: str
    tokens: tuple[int, ...] = ()
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0
    compression_ratio: float = 0.0
    temperature: float = 0.0
    words: tuple[Word, ...] | None = None
    speaker: str | None = None  # who speaks most of it (pipeline/speakers/turns.py: when speaker turns are asked for)


@dataclass(frozen=True, kw_only=True)
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float  # seconds of audio
    task: str = "transcribe"
    language_probs: dict[str, float] = field(default_factory=dict, repr=False)
    # the detector's speech regions (seconds), which speaker turns are found in; None: the detector was off
    speech: tuple[tuple[float, float], ...] | None = field(default=None, repr=False, compare=False)


def normalized(text: str) -> str:
    """Text as compared for sameness: lower case, words only (punctuation and dots out, apostrophes kept)."""
    return " ".join(re.sub(r"[^\w\s.']+", " ", text.lower()).replace(".", " ").split())
