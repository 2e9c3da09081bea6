"""Re-decoding: speech the detector heard but whisper's text skipped, found and decoded again.

uncovered and skipped find such stretches inside a window, each decoded on its own; take_new keeps what whisper is
sure of, or what passes whisper's own test for made-up words, and did not already write; missed_speech moves the loop
back to speech skipped after the last text.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.asr.decoding import FILLERS, words_pass
from pipeline.asr.longform import Decoded
from pipeline.asr.mel import FRAMES_PER_SECOND
from pipeline.asr.results import normalized
from pipeline.asr.vad import SpeechMap
from pipeline.tuning import COVER_SLACK, LEAD_IN, LONG_WORD, MISSED_SPEECH, SKIPPED_SPEECH, SURE_LOGPROB


def uncovered(speech: SpeechMap, window_start: float, segments: list[Decoded]) -> list[tuple[float, float]]:
    """Stretches of detected speech before the window's last text that no text covers, each with SKIPPED_SPEECH
    s of speech or more: less is not worth an encoder pass (a breath gives nothing, or a filler)."""
    # a timed word covers at most its last LONG_WORD seconds: where whisper skipped speech, its alignment stretches
    # the next word back across what was skipped
    covered = [(max(w.start, w.end - LONG_WORD), w.end) for seg in segments for w in seg.words or ()]
    covered += [(seg.start, seg.end) for seg in segments if not seg.words]
    spans = sorted((a - COVER_SLACK, b + COVER_SLACK) for a, b in covered)
    gaps, t = [], window_start
    for a, b in spans:
        if a > t:
            gaps.append((t, a + COVER_SLACK))
        t = max(t, b)
    return [(a, b) for a, b in gaps if speech.speech_in(a, b) >= SKIPPED_SPEECH]


def skipped(speech: SpeechMap, start: float, found: list[Decoded], end: float) -> list[tuple[float, float]]:
    """What a decode of skipped speech, [start, end], skipped again: uncovered stretches, and speech after its
    text (MISSED_SPEECH or more past COVER_SLACK). Nothing when it found nothing."""
    if not found:
        return []
    gaps = uncovered(speech, start, found)
    onset = speech.next_speech(max(seg.end for seg in found) + COVER_SLACK)
    if onset is not None and onset < end and speech.speech_in(onset, end) >= MISSED_SPEECH:
        gaps.append((onset, end))
    return gaps


def take_new(
    found: list[Decoded], segments: list[Decoded], *, floor: float | None
) -> tuple[list[Decoded], list[Decoded]]:
    """Of a re-decode's segments, the new speech (new_speech, `floor` the decode's logprob_threshold); and
    `segments` with the words the others say again retimed to them (merge_repeat), so no words are written twice."""
    new = []
    for seg in found:
        if not new_speech(seg, floor=floor):
            continue
        retimed = merge_repeat(seg, segments)
        if retimed is None:
            new.append(seg)
        else:
            segments = retimed
    return new, segments


def new_speech(seg: Decoded, *, floor: float | None) -> bool:
    """Whether a segment decoded on its own is speech, not a filler line (alone, whisper makes up lines over breaths
    and hums): whisper is sure of it (avg log-probability over SURE_LOGPROB), or, above `floor` (whisper's own
    logprob_threshold), its timed words pass whisper's test for made-up text (anomalous). An unusual voice read right
    can score under SURE_LOGPROB; a line made up over it is words the alignment does not hear (docs/longform.md)."""
    if FILLERS.match(normalized(seg.text)):
        return False
    return seg.result.avg_logprob > SURE_LOGPROB or words_pass(seg, floor=floor)


def merge_repeat(seg: Decoded, segments: list[Decoded]) -> list[Decoded] | None:
    """If a re-decoded segment says what the words right after (or before) it in `segments` say, `segments`
    with those words at its times; None if it says something else."""
    said = [w for w in seg.words or () if normalized(w.word)]
    if not said:
        return None
    where = sorted(((i, j) for i, s in enumerate(segments) for j, w in enumerate(s.words or ()) if normalized(w.word)),
                   key=lambda ij: segments[ij[0]].words[ij[1]].start)  # fmt: skip
    words = [segments[i].words[j] for i, j in where]
    k = next((k for k, w in enumerate(words) if w.start >= seg.start), len(words))
    for run in (range(k, k + len(said)), range(max(k - len(said), 0), k)):
        run = [r for r in run if r < len(words)]
        if len(run) != len(said) or any(normalized(words[r].word) != normalized(w.word) for r, w in zip(run, said)):
            continue
        retimed = [list(s.words) if s.words else s.words for s in segments]
        for r, w in zip(run, said):
            i, j = where[r]
            retimed[i][j] = replace(retimed[i][j], start=w.start, end=w.end)
        return [replace(s, start=ws[0].start, end=max(s.end, ws[-1].end), words=tuple(ws)) if ws else s
                for s, ws in zip(segments, retimed)]  # fmt: skip
    return None


def split_around(segments: list[Decoded], found: list[Decoded]) -> list[Decoded]:
    """Segments whose words run across re-decoded speech (`found`) split where it starts, so words stay in
    time order; the earlier part keeps all tokens (for the next prompt)."""
    starts = [f.start for f in found]
    out = []
    for seg in segments:
        parts: list[list] = [[]]
        for w in seg.words or ():
            if parts[-1] and any(parts[-1][-1].start < t <= w.start for t in starts):
                parts.append([])
            parts[-1].append(w)
        if len(parts) == 1:
            out.append(seg)
            continue
        for i, words in enumerate(parts):
            text = "".join(w.word for w in words).strip()
            out.append(replace(seg, start=words[0].start, end=words[-1].end, words=tuple(words), text=text,
                               tokens=seg.tokens if i == 0 else ()))  # fmt: skip
    return out


def missed_speech(speech: SpeechMap, seek: int, next_seek: int, decoded_end: float) -> int:
    """Where to continue: whisper's choice, unless speech it skipped lies between its last text and that point
    (whisper sometimes ends a window early with a lone timestamp and drops the rest); then from that speech."""
    onset = speech.next_speech(decoded_end + MISSED_SPEECH)
    if onset is None:
        return next_seek
    next_t = next_seek / FRAMES_PER_SECOND
    if onset < next_t - MISSED_SPEECH and speech.speech_in(onset, next_t) >= MISSED_SPEECH:
        redo = int((onset - LEAD_IN) * FRAMES_PER_SECOND)
        if seek < redo < next_seek:
            return redo
    return next_seek
