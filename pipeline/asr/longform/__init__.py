"""The speech-driven stages of long-form decoding, around whisper's window loop (pipeline/asr/transcribe.py).

Each window goes through: 1. plan (windows.py); 2. decode (../decoding.py); 3. place (windows.off_the_seams);
4. re-decode skipped speech (redecode.py); 5. snap word times (snap.py); 6. continue from missed speech
(redecode.missed_speech); 7. guard (decoding.Guard). Between stages a segment is a Decoded value; a stage returns
what it changes. Tuned numbers: pipeline/tuning.py; their story: docs/longform.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.asr.mel import FRAMES_PER_SECOND
from pipeline.asr.results import Word
from pipeline.asr.task import DecodingResult


@dataclass(frozen=True)
class Decoded:
    """A segment in the window loop: whisper's text and tokens, the decode it came from (which judges it), and
    its words (None: not timed; (): none found). Times are seconds of the recording."""

    start: float
    end: float
    text: str
    tokens: tuple[int, ...]
    result: DecodingResult
    words: tuple[Word, ...] | None = None


def frame(seconds: float) -> int:
    """A time as a mel frame of the recording (10 ms), never before the first."""
    return max(int(round(seconds * FRAMES_PER_SECOND)), 0)
