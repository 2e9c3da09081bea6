"""Snapping: word times moved onto the speech the detector heard, each by a bounded amount.

Whisper's alignment is often late on the first word after a pause, or draws a word back over the pause before it;
a word on a sound the detector missed (a whisper) stays where whisper put it.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.asr.longform import Decoded
from pipeline.asr.results import Word
from pipeline.asr.vad import SpeechMap
from pipeline.tuning import LONG_WORD, ONSET_EARLY_MAX, QUIET_BELOW, SENTENCE_PAUSE, SNAP_MAX, STRETCHED_WORD


def snap_to_speech(segments: list[Decoded], speech: SpeechMap) -> list[Decoded]:
    """The segments with their word times on the detected speech (first_word for a region's first word,
    snap for the others, a rise after an unheard pause); without words, a start moves by SNAP_MAX at most."""
    out, after = [], float("-inf")  # (where the last word so far ends)
    for seg in segments:
        if not seg.words:
            out.append(replace(seg, start=snap(seg.start, seg.end, speech, SNAP_MAX)[0]))
            after = seg.end
            continue
        words = list(unstretch(seg.words, speech))
        for i, w in enumerate(words):
            start, end = first_word(w.start, w.end, after, speech) or snap(w.start, w.end, speech)
            if start - after >= SENTENCE_PAUSE and speech.fraction(start, end) == 0:
                start = speech.rise(start, end)
            words[i], after = replace(w, start=start, end=end), end
        out.append(replace(seg, start=words[0].start, end=words[-1].end, words=tuple(words)))
    return out


def snap(start: float, end: float, speech: SpeechMap, limit: float = float("inf")) -> tuple[float, float]:
    """Word times onto the detected speech: a start before the speech moves to its start, an end after it to its
    end, neither by more than `limit` s."""
    at_start, at_end = speech.region_at(start), speech.region_at(end)
    if at_end is not None and at_start != at_end and start < at_end[0] < min(end, start + limit):
        start = at_end[0]
    elif at_end is None and at_start is not None and max(start, end - limit) < at_start[1] < end:
        end = at_start[1]
    return start, end


def first_word(start: float, end: float, after: float, speech: SpeechMap) -> tuple[float, float] | None:
    """A region's first word (none since `after`) onto the region's start: later when all of it lies in the
    pause, earlier by ONSET_EARLY_MAX at most. None: not a region's first word, or left to snap."""
    region = speech.region_at(end)
    if region is None and speech.region_at(start) is None:  # all in a pause: the speech right after it, if silent
        following = speech.next_speech(end)
        region = speech.region_at(following) if following is not None and following - end <= LONG_WORD else None
        if region is None or after >= start or not _quieter(speech, (start, end), region):
            return None
        if region[0] - speech.speech_end_before(start) < SENTENCE_PAUSE:  # a gap between words: leave it there
            return None
        return region[0], region[0]
    if region is None or after >= region[0] or speech.region_at(start) != region:
        return None
    if 0 < start - region[0] <= ONSET_EARLY_MAX:
        return region[0], end
    return None


def unstretch(words: tuple[Word, ...], speech: SpeechMap) -> tuple[Word, ...]:
    """The words, the first moved to the next word's speech when it is stretched over STRETCHED_WORD s from
    inside a region and that speech begins within ONSET_EARLY_MAX of its end (drawn back over the sentence before)."""
    if len(words) < 2 or words[0].end - words[0].start < STRETCHED_WORD:
        return words
    region = speech.region_at(words[1].end)  # (its start may lie in the pause: snap moves it)
    before = speech.region_at(words[0].start)  # the speech it starts in began well before it
    if region is None or before is None or before == region or before[0] > words[0].start - ONSET_EARLY_MAX:
        return words
    if 0 <= region[0] - words[0].end <= ONSET_EARLY_MAX and region[0] > words[0].start:
        return (replace(words[0], start=region[0], end=region[0]), *words[1:])
    return words


def _quieter(speech: SpeechMap, span: tuple[float, float], region: tuple[float, float]) -> bool:
    """Whether span is QUIET_BELOW dB under the speech of region, or more (the loudest tenth of their 10-ms frames)."""
    here, there = speech.loudness(*span), speech.loudness(region[0], min(region[1], region[0] + 1.0))
    return here is not None and there is not None and here <= there - QUIET_BELOW
