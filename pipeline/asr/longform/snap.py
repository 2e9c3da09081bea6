"""Snapping: word times moved onto the speech the voice activity detector heard.

Whisper's alignment (cross-attention and dynamic time warping) is often late on the first word after a pause, draws
a word back across the pause or the noise before it, and stretches a first word over the tail of the sentence
before. Each rule here moves a word onto the detected speech, by a bounded amount; a word on a sound the detector
missed (a whisper) stays where whisper put it.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.asr.longform import Decoded
from pipeline.asr.results import Word
from pipeline.asr.vad import SpeechMap
from pipeline.tuning import LONG_WORD, ONSET_EARLY_MAX, QUIET_BELOW, SENTENCE_PAUSE, SNAP_MAX, STRETCHED_WORD


def snap_to_speech(segments: list[Decoded], speech: SpeechMap) -> list[Decoded]:
    """The segments (in time order) with their word times on the detected speech (first_word for each word that
    begins a region, snap for the others; a word after a pause that the detector heard none of starts where its
    sound rises: whisper's alignment draws it back over the noise before it); a segment without words only moves its
    start, by at most SNAP_MAX (a segment's times are coarse, and the detector misses some speech, such as
    whispers)."""
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
    """Word times onto the detected speech. A word that ends in speech but starts before it (in the pause, or in
    the speech before the pause) starts where that speech starts: whisper's alignment stretches the first word
    after a pause back across it. A word that starts in speech and ends after it ends where the speech ends.
    Neither moves by more than `limit` seconds."""
    at_start, at_end = speech.region_at(start), speech.region_at(end)
    if at_end is not None and at_start != at_end and start < at_end[0] < min(end, start + limit):
        start = at_end[0]
    elif at_end is None and at_start is not None and max(start, end - limit) < at_start[1] < end:
        end = at_start[1]
    return start, end


def first_word(start: float, end: float, after: float, speech: SpeechMap) -> tuple[float, float] | None:
    """The times of a word that begins a region of speech (no word since `after` reached it), put onto the region's
    start: later when whisper's alignment put all of the word in the silent pause before it, earlier by
    ONSET_EARLY_MAX at most when the word starts inside the region (the alignment is often late on the first word
    after a pause). None: the word does not begin a region, or is left where it is (snap)."""
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
    """The words, with the first one moved to where the next word's speech starts when it is stretched over
    STRETCHED_WORD seconds or more from well inside a region of speech and the next word ends in a later region that
    begins within ONSET_EARLY_MAX of the first word's end: whisper's alignment drew the word back over the end of
    the speech before (often the last sentence's tail, where the detector heard no pause)."""
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
