"""The speech-driven stages of long-form decoding, around whisper's window loop (pipeline/asr/transcribe.py).

Given where the voice activity detector heard speech (pipeline/asr/vad.py, a SpeechMap), each window of the loop goes
through these stages, in this order:

1. plan (windows.py): the next window starts just before speech, holds up to 30 s of it with long silences left
   out, and ends in a pause; a quiet sentence beside a loud one is made louder (gains, leveled);
2. decode (pipeline/asr/decoding.py): whisper's rules, in batches: fallback, silence, repetition, echoes, loops;
3. place (windows.py, off_the_seams): times from the joined window back onto the recording;
4. re-decode (redecode.py): speech whisper skipped inside the window is decoded again on its own, and what it
   repeats of the window's words only retimes them;
5. snap (snap.py): word times onto the detected speech;
6. continue (redecode.py, missed_speech): from speech whisper skipped after its last text, if any;
7. guard (pipeline/asr/decoding.py, Guard): no text where nobody speaks unless whisper is sure of it.

Between stages a segment is a Decoded value; a stage returns the segments it changes. Every tuned number of these
stages is in pipeline/tuning.py; how each came to be, in docs/longform.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from whisper.audio import FRAMES_PER_SECOND
from whisper.decoding import DecodingResult

from pipeline.asr.results import Word


@dataclass(frozen=True)
class Decoded:
    """A segment as the window loop holds it: whisper's text and tokens, the result of the decode it came from (its
    log-probability, no-speech probability and compression ratio judge it), and its words when they are timed
    (None: not timed; (): timed, and whisper's alignment found none). Times are seconds of the recording."""

    start: float
    end: float
    text: str
    tokens: tuple[int, ...]
    result: DecodingResult
    words: tuple[Word, ...] | None = None


def frame(seconds: float) -> int:
    """A time as a mel frame of the recording (10 ms), never before the first."""
    return max(int(round(seconds * FRAMES_PER_SECOND)), 0)
