"""Window planning: where each 30-s window starts and ends, what it leaves out, and how loud.

A window starts just before detected speech, holds up to 30 s of it with long silences left out (faster-whisper's
VAD mode, planned a window at a time) and ends in a pause (plan_window); quiet runs are raised (gains, leveled);
times map back to the recording (Window.time); parts cut the recording for batches (parts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pipeline.asr.longform import Decoded, frame
from pipeline.asr.mel import FRAMES_PER_SECOND, HOP_LENGTH, N_FRAMES
from pipeline.asr.vad import SOUND_BRIDGE, SpeechMap, frame_levels
from pipeline.tuning import (
    FILL,
    GAP_KEPT,
    LEAD_IN,
    LOUDNESS_STEP,
    MAX_GAIN,
    MIN_PART,
    MISSED_SPEECH,
    PAUSE_TAIL,
    SENTENCE_PAUSE,
    SOUND_ALONE,
    SOUND_TAIL,
    UNHEARD,
)


@dataclass(frozen=True)
class Window:
    """What is decoded as one 30-s window: stretches of the recording, [first, last) frames in order, joined.
    Silences of UNHEARD s or more between them are left out but for GAP_KEPT. heard: the detector found speech in it."""

    pieces: tuple[tuple[int, int], ...]
    heard: bool = True

    @property
    def start(self) -> int:
        return self.pieces[0][0]

    @property
    def end(self) -> int:
        return self.pieces[-1][1]

    @property
    def frames(self) -> int:
        return sum(b - a for a, b in self.pieces)

    def within(self, first: int, last: int) -> Window:
        """The part of this window between two frames of the recording (what it left out stays out)."""
        pieces = tuple((max(a, first), min(b, last)) for a, b in self.pieces if b > first and a < last)
        return Window(pieces or ((first, max(last, first + 1)),), self.heard)

    def frame_after(self, frames: int) -> int:
        """The recording's frame `frames` into the window (a stretch's end, not the next stretch's start)."""
        for a, b in self.pieces:
            if frames <= b - a:
                return a + frames
            frames -= b - a
        return self.end + frames

    def time(self, t: float, end: bool = False) -> float:
        """A time in the joined audio (counted from the window's start, as whisper's are) as the recording's
        time; on a seam, the later stretch's start (or with end=True the earlier one's end)."""
        offset = t - self.start / FRAMES_PER_SECOND
        for a, b in self.pieces:
            length = (b - a) / FRAMES_PER_SECOND
            if offset < length or (end and offset <= length):
                return a / FRAMES_PER_SECOND + offset
            offset -= length
        return self.end / FRAMES_PER_SECOND + offset

    def joined(self, t: float) -> float:
        """A recording time as a joined-audio time (the inverse of time(); a left-out time is the next stretch's
        start)."""
        joined = self.start / FRAMES_PER_SECOND
        for a, b in self.pieces:
            if t <= a / FRAMES_PER_SECOND:
                return joined
            if t < b / FRAMES_PER_SECOND:
                return joined + t - a / FRAMES_PER_SECOND
            joined += (b - a) / FRAMES_PER_SECOND
        return joined

    @property
    def seams(self) -> list[tuple[float, float]]:
        """The silence kept where two stretches join: (start, end) recording times."""
        return [(b / FRAMES_PER_SECOND - GAP_KEPT[0], c / FRAMES_PER_SECOND + GAP_KEPT[1])
                for (_, b), (c, _) in zip(self.pieces, self.pieces[1:])]  # fmt: skip


def parts(speech: SpeechMap | None, audio: np.ndarray, content_frames: int, n: int) -> list[tuple[int, int]]:
    """[first, last) frames of up to n parts of at least MIN_PART s, cut in the longest pause near each even split,
    in its longest stretch without a sound (a whisper the detector does not hear is not cut in two), or without the
    detector in the quietest second."""
    total = content_frames / FRAMES_PER_SECOND
    n = max(1, min(n, int(total // MIN_PART)))
    levels = frame_levels(audio) if speech is None and n > 1 else None
    cuts = [0]
    for k in range(1, n):
        target = k * total / n
        lo, hi = target - MIN_PART / 4, target + MIN_PART / 4
        if speech is not None:
            pauses = speech.pauses(lo, hi) or [(target, target)]
            quiet = [gap for a, b in pauses for gap in _unsounded(speech, a, b)]
            a, b = max(quiet or pauses, key=lambda p: p[1] - p[0])
            cut = (a + b) / 2
        else:  # the quietest second (10-ms levels, averaged)
            step = 100  # frames of 10 ms per second
            window = levels[int(lo * step) : int(hi * step)]
            smooth = np.convolve(window, np.ones(step) / step, "valid") if window.size > step else window
            cut = lo + (int(np.argmin(smooth)) + step // 2) / step if smooth.size else target
        cuts.append(min(max(frame(cut), cuts[-1] + 1), content_frames))
    cuts.append(content_frames)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _unsounded(speech: SpeechMap, a: float, b: float) -> list[tuple[float, float]]:
    """The stretches of the pause (a, b) between the sounds in it."""
    gaps, t = [], a
    for start, end in speech.sounds(a, b):
        gaps += [(t, start)] if start > t else []
        t = max(t, end)
    return gaps + ([(t, b)] if b > t else [])


def plan_window(speech: SpeechMap, seek: int, content_frames: int) -> Window | None:
    """The next window from `seek`, or None when nothing is left.

    Detected speech: from just before it, up to 30 s of it across silences of UNHEARD s with no sound (left out), ending
    in a silence with a sound, else the latest pause FILL s into the window (a SENTENCE_PAUSE if any), else at 30 s. A
    stretch of UNHEARD s without speech is searched for sounds the detector missed: one that runs into the speech starts
    its window; one of SOUND_ALONE s or more gets a tight window of its own, not heard; shorter ones are skipped."""
    t, total = seek / FRAMES_PER_SECOND, content_frames / FRAMES_PER_SECOND
    onset = speech.next_speech(t)
    if (onset if onset is not None else total) - t >= UNHEARD:
        stretch_end = total if onset is None else onset - LEAD_IN
        sounds = _sounds(speech, t, stretch_end, onset)
        if sounds:
            a, b = sounds[0]
            start = max(seek, frame(a - LEAD_IN))
            if onset is None or onset - b >= SOUND_BRIDGE:
                end = min(frame(b + SOUND_TAIL), start + N_FRAMES, frame(stretch_end), content_frames)
                return Window(((start, max(end, start + 1)),), heard=False)
            return _speech_window(speech, start, content_frames)
    if onset is None:
        return None
    start = max(seek, int((onset - LEAD_IN) * FRAMES_PER_SECOND))
    return _speech_window(speech, start, content_frames, earliest=seek)


def _sounds(speech: SpeechMap, start: float, end: float, onset: float | None) -> list[tuple[float, float]]:
    """The sounds in [start, end] worth a decode: SOUND_ALONE s or more, or running into the speech at `onset`."""
    return [(a, b) for a, b in speech.sounds(start, end)
            if b - a >= SOUND_ALONE or (onset is not None and onset - b < SOUND_BRIDGE)]  # fmt: skip


def _speech_window(speech: SpeechMap, start: int, content_frames: int, *, earliest: int | None = None) -> Window:
    """A window of detected speech from `start` (see plan_window); one that starts with a blip of speech in a sound
    starts with the sound, not before `earliest`."""
    pieces: list[tuple[int, int]] = []
    room = N_FRAMES  # frames the window still has
    total = content_frames / FRAMES_PER_SECOND
    while True:
        limit = min(start + room, content_frames)
        start_t, limit_t = start / FRAMES_PER_SECOND, limit / FRAMES_PER_SECOND
        every = [(a, b) for a, b in speech.pauses(start_t, total) if start_t < a < limit_t]  # (whole)
        pauses = [(a, b) for a, b in every if a > start_t + 1.0]  # (where the window may end)
        resume, ends = None, None
        for a, b in (p for p in every if p[1] - p[0] >= UNHEARD):
            onset = b if b < total else None  # (the speech after the pause; none at the end of what is decoded)
            silent = not _sounds(speech, a + GAP_KEPT[0], b - GAP_KEPT[1], onset)
            if b < total and silent and room - (frame(a + GAP_KEPT[0]) - start) >= frame(GAP_KEPT[1] + UNHEARD):
                resume = frame(b - GAP_KEPT[1])  # a silence: left out, and the window goes on after it
                break
            if a <= start_t + 1.0:  # (no window ends in its first second)
                if pieces and not silent:  # a blip of detected speech in a sound (a whisper): its own window
                    return Window(tuple(pieces))
                if not silent and b - a - PAUSE_TAIL >= UNHEARD:  # ... a window that starts with such a blip:
                    first = _sound_start(speech, start, a, b, earliest=earliest)
                    return Window(
                        ((first, _blip_end(speech, a, b, limit=limit, onset=onset)),)
                    )  # the blip and its sound, alone
                continue
            if silent or b >= total or b - a - PAUSE_TAIL >= UNHEARD:
                ends = (a, b)  # the speech ends, or there is no room left, or a sound gets a window of its own
                if not silent and b < total:  # (a blip in that sound, a sentence's pause after the speech: a whisper
                    ends = _before_blip(every, a, start_t) or ends  # that goes on; it gets the window after this)
                break
            # (a sound too close to the next speech for a window of its own: plan_window would not look for it)
        if resume is not None:
            pieces.append((start, frame(a + GAP_KEPT[0])))
            room -= pieces[-1][1] - pieces[-1][0]
            start = resume
            continue
        if ends is None:
            if limit == content_frames:
                return Window((*pieces, (start, limit)))
            sentences = [p for p in pauses if p[1] - p[0] >= SENTENCE_PAUSE]
            used = (N_FRAMES - room) / FRAMES_PER_SECOND - start_t  # + a pause's start: seconds into the window
            late = [p for p in pauses if used + p[0] >= FILL]
            if late:  # the latest pause well into the window, a sentence's end if there is one
                ends = ([p for p in late if p[1] - p[0] >= SENTENCE_PAUSE] or late)[-1]
            elif pieces and not sentences:  # better the silence before this speech than a short pause in it
                return Window(tuple(pieces))
            else:  # at 30 s: whisper's timestamps decide what is decoded again (a few seconds), where an earlier
                return Window((*pieces, (start, limit)))  # pause would leave 10 s or more of the window unused
        a, b = ends
        end_t = min(a + min(PAUSE_TAIL, (b - a) / 2), limit_t)
        return Window((*pieces, (start, max(start + 1, min(frame(end_t), limit)))))


def _before_blip(pauses: list[tuple[float, float]], a: float, start_t: float) -> tuple[float, float] | None:
    """The pause before the speech that ends at `a`, when that speech is a blip (1 s at most: as short as a window
    may not end within) after a SENTENCE_PAUSE, and the window may end in it; else None."""
    before = [p for p in pauses if p[1] <= a]
    if not before:
        return None
    p = before[-1]
    blip = a - p[1] <= 1.0 and p[1] - p[0] >= SENTENCE_PAUSE and p[0] > start_t + 1.0
    return p if blip else None


def _sound_start(speech: SpeechMap, start: int, a: float, b: float, *, earliest: int | None) -> int:
    """Where a window that starts with a blip of detected speech (ending at `a`, a pause to `b` after it) starts:
    at the sound that runs into the blip, not before `earliest` (a whisper starts before the detector hears it)."""
    if earliest is None or earliest >= start:
        return start
    sounds = speech.sounds(earliest / FRAMES_PER_SECOND, b - LEAD_IN)
    into = [s for s in sounds if s[0] < start / FRAMES_PER_SECOND + LEAD_IN < s[1] + SOUND_BRIDGE]
    return max(earliest, min(start, frame(into[0][0] - LEAD_IN))) if into else start


def _blip_end(speech: SpeechMap, a: float, b: float, *, limit: int, onset: float | None) -> int:
    """Where a window that starts with a blip of detected speech ends: after the sound that runs on from it into
    the pause (a, b), before the speech at `onset`. Given 30 s that a whisper only starts, whisper skips the whisper."""
    sounds = speech.sounds(a, b - LEAD_IN)
    end = _sounds_end(sounds, onset) + SOUND_TAIL if sounds else a + PAUSE_TAIL
    return min(frame(end), limit)


def _sounds_end(sounds: list[tuple[float, float]], onset: float | None) -> float:
    """Where the first of `sounds` ends, or the last of those after it each within UNHEARD s of the one
    before (not running into `onset`): sounds after a whisper share its window, one encoder pass."""
    end = sounds[0][1]
    for a, b in sounds[1:]:
        if a - end >= UNHEARD or (onset is not None and onset - b < SOUND_BRIDGE):
            break
        end = b
    return end


def gains(speech: SpeechMap, start: float, end: float) -> list[tuple[float, float, float]]:
    """(start, end, dB) of the runs of speech in [start, end] LOUDNESS_STEP dB or more under the loudest, raised to
    it (MAX_GAIN at most), pause middle to pause middle. whisper skips a quiet sentence beside a loud one."""
    pauses = [(a, b) for a, b in speech.pauses(start, end) if b - a >= SENTENCE_PAUSE]
    bounds = [start, *(x for p in pauses for x in p), end]
    runs = [(a, b) for a, b in zip(bounds[::2], bounds[1::2]) if speech.speech_in(a, b) >= MISSED_SPEECH]
    levels = [speech.loudness(a, b) for a, b in runs]
    if len(runs) < 2 or None in levels:
        return []
    top = max(levels)
    middles = [start, *((a + b) / 2 for a, b in pauses), end]
    found = []
    for (a, b), level in zip(runs, levels):
        if top - level >= LOUDNESS_STEP:
            before = max((m for m in middles if m <= a), default=start)
            after = min((m for m in middles if m >= b), default=end)
            found.append((before, after, min(top - level, MAX_GAIN)))
    return found


def leveled(audio: np.ndarray, window: Window, gains: list[tuple[float, float, float]]) -> np.ndarray:
    """The window's (joined) audio with each of `gains` (recording times) applied; the audio itself when none."""
    if not gains:
        return audio
    audio = audio.copy()
    offset = window.start / FRAMES_PER_SECOND
    for a, b, db in gains:
        first, last = (frame(window.joined(t) - offset) * HOP_LENGTH for t in (a, b))
        audio[first:last] *= np.float32(10 ** (db / 20))
    return audio


def off_the_seams(seg: Decoded, seams: list[tuple[float, float]]) -> Decoded:
    """The segment with its start after a seam's silence when it starts in it: whisper places first words a
    little early, and at a seam that pause stands for seconds left out. Those words move to the speech after it."""
    words, start = list(seg.words or ()), seg.start
    for before, after in seams:
        if not words:
            if before <= start < after:
                start = min(after, seg.end)
            continue
        for i, w in enumerate(words):
            if w.start < before + GAP_KEPT[0] and w.end > after - GAP_KEPT[1]:
                words[i] = replace(w, start=min(after, w.end - 0.01))
        # (a first word only mostly there too, when the segment goes on after the seam)
        n = _leading([(w.start + w.end) / 2 >= before and w.end <= after for w in words])
        if n == len(words):  # all of the segment: only words wholly in the seam (it may end the speech before)
            n = _leading([w.start >= before and w.end <= after for w in words])
        if n == 0:
            continue
        until = words[n].start if n < len(words) else after + words[-1].end - words[0].start
        first = min(after, until - 0.05 * n)
        step = (until - first) / n
        for i in range(n):
            words[i] = replace(words[i], start=first + i * step, end=first + (i + 1) * step)
    if not words:
        return replace(seg, start=start)
    return replace(seg, start=words[0].start, end=max(seg.end, words[-1].end), words=tuple(words))


def _leading(flags: list[bool]) -> int:
    """How many of the first flags are set."""
    return next((i for i, flag in enumerate(flags) if not flag), len(flags))
