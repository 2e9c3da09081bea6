"""Values the stage tables of long-form decoding build their rows from: frame levels, decode results, segments."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.asr.longform import Decoded
from pipeline.asr.results import Word
from pipeline.asr.task import DecodingResult
from pipeline.asr.vad import SpeechMap


def levels(sounds, seconds: float = 100.0, floor: float = -90.0, level: float = -45.0) -> np.ndarray:
    """10-ms frame levels (dBFS): `floor` everywhere, `level` inside each (start, end) sound, or the sound's own
    (start, end, level)."""
    found = np.full(int(seconds * 100), floor, np.float32)
    for a, b, *own in sounds:
        found[int(a * 100) : int(b * 100)] = own[0] if own else level
    return found


def result(no_speech: float = 0.1, logprob: float = -0.3, ratio: float = 1.5) -> DecodingResult:
    """A decode's result, as whisper judges it."""
    return DecodingResult(language="en", avg_logprob=logprob, no_speech_prob=no_speech,
                          compression_ratio=ratio)  # fmt: skip


def segment(text: str, start: float, end: float, decode: DecodingResult | None = None) -> Decoded:
    """A segment without timed words."""
    return Decoded(start, end, text, (1, 2), decode or result())


def said(*words: tuple[str, float, float], logprob: float = -0.3) -> Decoded:
    """A segment of timed words, (word, start, end) each, as whisper writes them (with their leading space)."""
    timed = tuple(Word(a, b, w) for w, a, b in words)
    text = "".join(w for w, _, _ in words).strip()
    return Decoded(timed[0].start, timed[-1].end, text, (1, 2), result(logprob=logprob), timed)


def heard(seg: Decoded, probabilities: tuple[float, ...], *, no_speech: float | None = None) -> Decoded:
    """`seg` with its words' probabilities as the aligner gives them, in order (later words keep theirs, 1.0), and
    whisper's no-speech probability if given."""
    words = tuple(replace(w, probability=p) for w, p in zip(seg.words, probabilities)) + seg.words[len(probabilities) :]
    decode = seg.result if no_speech is None else replace(seg.result, no_speech_prob=no_speech)
    return replace(seg, words=words, result=decode)


def spans(seg: Decoded) -> list[tuple[float, float]]:
    return [(w.start, w.end) for w in seg.words]


# detected speech at 1-4 s and 10-12 s of 20 s
SPEECH = SpeechMap(((1.0, 4.0), (10.0, 12.0)), 20.0)
