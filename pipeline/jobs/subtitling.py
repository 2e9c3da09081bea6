"""The library path from audio to cues: whisper's segments, the speakers beside them, the cues cut by the rules."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from pipeline.asr.compiled import blas_on_one_thread
from pipeline.asr.model import OVWhisper
from pipeline.asr.options import TranscribeOptions
from pipeline.asr.results import Segment, Word
from pipeline.asr.transcribe import transcribe
from pipeline.jobs.spec import SubtitleResult
from pipeline.media.audio import MediaInfo, load_audio, require_audio
from pipeline.speakers.segmentation import speaker_segmenter
from pipeline.speakers.turns import SpeakerTurns, Turn, TurnOptions, speaker_encoder, speaker_turns, speakers_of
from pipeline.subtitles.cues import CJK_LANGUAGES, SENTENCE_END, Cue, CueRules, cues_from_words, in_time_order
from pipeline.subtitles.formats import clean_cues
from pipeline.timings import stage, timed
from pipeline.tuning import TURN_SENTENCE_GAP


def subtitle_audio(
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    *,
    rules: CueRules | None = CueRules(),
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
    media: MediaInfo | None = None,
    speakers: TurnOptions | None = None,
) -> SubtitleResult:
    """The cues of 16 kHz mono audio: whisper's segments, re-cut by `rules` (None: as whisper gives them) and
    cleaned. `on_segment(segment, duration)` sees each segment as soon as it is decoded. With `speakers`, each word
    and cue carries its speaker, and cues are cut where the speaker changes (pipeline/speakers/turns.py)."""
    blas_on_one_thread()
    if rules is not None:  # cues are cut from timed words
        options = replace(options, word_timestamps=True)
    segments, info = transcribe(audio, model, options, progress)
    turns: Future | None = None
    stop = threading.Event()  # set when the decoding fails or is cancelled: the turns are not finished for nothing
    if speakers is not None:  # found while whisper decodes: its decoder leaves part of the cores idle
        regions = info.speech if info.speech is not None else ((0.0, info.duration),)
        finder = ThreadPoolExecutor(1, thread_name_prefix="speaker-turns")
        turns = finder.submit(_turns_beside, audio, regions, model.threads, speakers, stop)
        finder.shutdown(wait=False)  # (the thread ends with its work)
    collected = []
    try:
        for segment in segments:
            collected.append(segment)
            if on_segment is not None:
                on_segment(segment, info.duration)
    except BaseException:
        stop.set()
        raise
    voices, heard = None, ()
    if turns is not None:
        if progress is not None:
            progress(1.0)
        with stage("speakers"):  # (what is left of them when the decoding is done)
            found = turns.result()
            labelled, heard = with_speakers(collected, found.turns), tuple(found.heard)
            # (the voices that say something: a turn over music or noise where whisper heard no word is no voice)
            voices = len(speaking(labelled)) if collected else len({t.speaker for t in found.turns})
            if voices > 1 or speakers.speakers is not None:  # (one voice found: no labels to show)
                collected = labelled
    if rules is not None:
        cues = to_cues(collected, rules, cjk=info.language in CJK_LANGUAGES)
    else:
        cues = [Cue(s.start, s.end, s.text, s.words, s.speaker) for s in collected]
    media = media or MediaInfo(info.duration, True, False)
    return SubtitleResult(tuple(clean_cues(cues, info.duration)), info, media, voices, heard)


def subtitle_file(
    path: Path,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    *,
    on_segment: Callable[[Segment, float], None] | None = None,
    progress: Callable[[float], None] | None = None,
    rules: CueRules | None = CueRules(),
    speakers: TurnOptions | None = None,
) -> SubtitleResult:
    """subtitle_audio for one local media file."""
    media = require_audio(Path(path))
    return subtitle_audio(load_audio(Path(path)), model, options, rules=rules, on_segment=on_segment,
                          progress=progress, media=media, speakers=speakers)  # fmt: skip


@timed("speakers beside decoding")
def _turns_beside(
    audio: np.ndarray, regions, threads: int, speakers: TurnOptions, stop: threading.Event
) -> SpeakerTurns:
    """speaker_turns on a thread of its own, the encoder loaded there too (its time shows beside the decoding's);
    it gives up between two encoder calls once `stop` is set."""
    blas_on_one_thread(with_scipy=True)  # (the clustering's SciPy)
    encoder, segmenter = speaker_encoder(threads), speaker_segmenter(threads)
    return speaker_turns(audio, regions, encoder, options=speakers, segmenter=segmenter, stop=stop)


def with_speakers(segments: Sequence[Segment], turns: Sequence[Turn]) -> list[Segment]:
    """The segments with each word's speaker (a sentence whole under one, `whole_sentences`), and each segment's:
    the one that says most of its words, or whose turns overlap it most when it has none."""
    words = [w for seg in segments for w in seg.words or ()]
    bare = [seg for seg in segments if not seg.words]
    names = speakers_of(turns, [(w.start, w.end) for w in words] + [(s.start, s.end) for s in bare])  # (one search)
    said, of_bare = iter(whole_sentences(words, names[: len(words)])), iter(names[len(words) :])
    out = []
    for seg in segments:
        if seg.words:
            spoken = tuple(replace(w, speaker=next(said)) for w in seg.words)
            out.append(replace(seg, words=spoken, speaker=_most(spoken)))
        else:
            out.append(replace(seg, speaker=next(of_bare)))
    return out


def speaking(segments: Sequence[Segment]) -> set[str]:
    """The speakers of the words (of a segment without words, its own): who says something in the subtitles."""
    said = {w.speaker for seg in segments for w in seg.words or ()} | {s.speaker for s in segments if not s.words}
    return {name for name in said if name is not None}


def whole_sentences(words: Sequence[Word], speakers: Sequence[str | None]) -> list[str | None]:
    """Each word's speaker, a change of speaker kept only where a sentence ends or the words are TURN_SENTENCE_GAP
    apart: a sentence said in one breath goes whole to the speaker who says most of it (a turn edge inside it is the
    turns' uncertainty, a flicker of the label, not two people finishing each other's sentence)."""
    out: list[str | None] = []
    first = 0
    for i, word in enumerate(words):
        last = i + 1 == len(words)
        if last or SENTENCE_END.search(word.word.strip()) or words[i + 1].start - word.end >= TURN_SENTENCE_GAP:
            piece = [replace(w, speaker=who) for w, who in zip(words[first : i + 1], speakers[first : i + 1])]
            out += [_most(piece)] * len(piece)
            first = i + 1
    return out


def _most(words: Sequence[Word]) -> str | None:
    """The speaker who says most of the words' time (the earlier on a tie)."""
    time: dict[str | None, float] = {}
    for w in words:
        time[w.speaker] = time.get(w.speaker, 0.0) + max(w.end - w.start, 1e-3)
    return max(time, key=time.get)


@timed("cues")
def to_cues(segments: Sequence[Segment], rules: CueRules, cjk: bool) -> list[Cue]:
    """Whisper's segments re-cut into cues that keep the readability rules (pipeline.subtitles.cues), from their words.
    A segment without word timings (rare: alignment found none) keeps its own timing and text."""
    out: list[Cue] = []
    pending: list[tuple[Word, ...]] = []

    def flush() -> None:
        out.extend(cues_from_words(in_time_order(pending), rules, cjk))
        pending.clear()

    for seg in segments:
        if seg.words:
            pending.append(seg.words)
        else:
            flush()
            out.append(Cue(seg.start, seg.end, seg.text, seg.words, seg.speaker))
    flush()
    return out
