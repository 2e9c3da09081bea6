"""Long-form transcription: windows over the whole audio, segments yielded as soon as they exist.

The window loop follows openai-whisper's `transcribe()` (seek, temperature fallback, no-speech skipping, the previous
text as prompt), decoding with whisper's own DecodingTask on OpenVINO (model.py) under the rules of decoding.py; it
is a generator. With the detector (vad.py) the windows follow the speech through the stages of longform/.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from pipeline import timings
from pipeline.asr.alignment import add_word_timestamps
from pipeline.asr.decoding import (
    Answer,
    Guard,
    Request,
    cut_loop,
    decode_batch,
    is_quiet,
    split_at_timestamps,
    too_repetitive,
)
from pipeline.asr.longform import Decoded, frame
from pipeline.asr.longform.redecode import missed_speech, skipped, split_around, take_new, uncovered
from pipeline.asr.longform.snap import snap_to_speech
from pipeline.asr.longform.windows import Window, gains, leveled, off_the_seams, parts, plan_window
from pipeline.asr.mel import (
    FRAMES_PER_SECOND,
    HOP_LENGTH,
    N_FRAMES,
    N_SAMPLES,
    N_SAMPLES_PER_TOKEN,
    SAMPLE_RATE,
    log_mel_spectrogram,
    pad_or_trim,
)
from pipeline.asr.model import OVWhisper
from pipeline.asr.options import TranscribeOptions
from pipeline.asr.results import Segment, TranscriptionInfo, Word
from pipeline.asr.task import DecodingOptions
from pipeline.asr.tokenizer import get_tokenizer
from pipeline.asr.vad import SpeechMap, VadOptions, speech_map
from pipeline.errors import SubtitleError
from pipeline.tuning import LEAD_IN, REDECODES

TIME_PRECISION = N_SAMPLES_PER_TOKEN / SAMPLE_RATE  # 0.02 s per timestamp token


def transcribe(
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    progress: Callable[[float], None] | None = None,
) -> tuple[Iterator[Segment], TranscriptionInfo]:
    """Transcribe 16 kHz mono float32 audio; returns (lazy segments, info). Language detection happens here."""
    language = options.language
    if not model.is_multilingual and language not in (None, "en"):
        raise SubtitleError("This model is English-only: choose a multilingual model or language 'en'")
    content_frames = audio.size // HOP_LENGTH
    duration = len(audio) / SAMPLE_RATE
    speech = speech_map(audio, VadOptions(threshold=options.vad_threshold), model.threads) if options.vad else None

    probs: dict[str, float] = {}
    if language is None:
        if not model.is_multilingual:
            language, probs = "en", {"en": 1.0}
        else:  # from the first window, when it is speech (an intro of music says nothing about the language): its
            # encoder output is kept (OVWhisper.encoder), and its first decode does not encode it again
            first = Window(((0, min(N_FRAMES, content_frames)),))  # (whisper's clock)
            if speech is not None:
                first = plan_window(speech, 0, content_frames)
            samples = window_audio(audio, first, speech) if first is not None and first.heard else None
            if samples is None:  # else from the first 30 s of speech
                onset = (speech.next_speech(0.0) if speech is not None else None) or 0.0
                samples = audio[int(max(onset - LEAD_IN, 0.0) * FRAMES_PER_SECOND) * HOP_LENGTH :]
            with timings.stage("language"):
                _, probs = model.detect_language(window_mel(samples, model.dims.n_mels))
            language = max(probs, key=probs.get)
    regions = speech.regions if speech is not None else None
    info = TranscriptionInfo(
        language=language,
        language_probability=probs.get(language, 1.0),
        duration=duration,
        task=options.task,
        language_probs=probs,
        speech=regions,
    )
    return _segments(
        audio, content_frames, model, language=language, options=options, speech=speech, progress=progress
    ), info


def window_audio(audio: np.ndarray, window: Window, speech: SpeechMap | None) -> np.ndarray | None:
    """The samples whisper is given for a window: its pieces joined and leveled; None when there is nothing to
    decode ((near-)digital silence, where whisper makes up "Thank you."). A sound's window is decoded however quiet."""
    samples = np.concatenate([audio[a * HOP_LENGTH : b * HOP_LENGTH] for a, b in window.pieces])
    if window.frames <= 0 or (window.heard and is_quiet(samples)):
        return None
    if window.heard and speech is not None:
        samples = leveled(samples, window, gains(speech, window.start / FRAMES_PER_SECOND,
                                                 window.end / FRAMES_PER_SECOND))  # fmt: skip
    return samples


def window_mel(audio: np.ndarray, n_mels: int) -> np.ndarray:
    """A window's log-mel spectrogram from its own 30 s of audio, as whisper was trained: its level clamp is the
    window's own, so a whisper is not read against the loudest speech elsewhere."""
    return log_mel_spectrogram(pad_or_trim(np.ascontiguousarray(audio[:N_SAMPLES])), n_mels)


def _segments(
    audio: np.ndarray,
    content_frames: int,
    model: OVWhisper,
    *,
    language: str,
    options: TranscribeOptions,
    speech: SpeechMap | None,
    progress: Callable[[float], None] | None,
) -> Iterator[Segment]:
    """The recording's segments in time order. With batch_size > 1 the recording is cut at pauses into parts,
    each its own window loop; each round decodes one window from every part as one batch."""
    tokenizer = get_tokenizer(
        model.is_multilingual, num_languages=model.num_languages, language=language, task=options.task
    )
    decode_options = DecodingOptions(
        task=options.task,
        language=language,
        beam_size=options.beam_size,
        best_of=options.best_of,
        patience=options.patience,
        suppress_tokens=options.suppress_tokens,
    )
    streams = [
        _Stream(audio, model, tokenizer=tokenizer, options=options, speech=speech, first=first, last=last)
        for first, last in parts(speech, audio, content_frames, options.batch_size)
    ]
    loops = [stream.run(decode_options) for stream in streams]
    waiting: dict[int, Request] = {}  # part -> the window it waits on
    done: set[int] = set()
    ready: list[list[Segment]] = [[] for _ in streams]  # decoded, not yet given out (a later part waits its turn)

    def resume(i: int, answer: Answer | None = None) -> None:
        """Run part i's loop until it asks for a window to be decoded, or ends (a new loop starts on None)."""
        try:
            item = loops[i].send(answer)
            while isinstance(item, Segment):
                ready[i].append(item)
                item = next(loops[i])
            waiting[i] = item
        except StopIteration:
            done.add(i)

    for i in range(len(loops)):
        resume(i)
    current = 0  # the part whose segments go out as they come
    while True:
        while current < len(streams):
            yield from ready[current]
            ready[current].clear()
            if current not in done:
                break
            current += 1
        if not waiting:
            break
        parts_asking = list(waiting)
        with timings.stage("decode"):
            answers = decode_batch(model, [waiting.pop(i) for i in parts_asking], options, tokenizer.eot)
        model.release_memory()
        for i, answer in zip(parts_asking, answers):
            resume(i, answer)
        model.forget_encodings()  # (word timing of this round's windows is done)
        if progress is not None:
            progress(sum(stream.done_frames for stream in streams) / max(content_frames, 1))
    if progress is not None:
        progress(1.0)


class _Stream:
    """whisper's window loop over one part of the recording: it yields a decoding.Request for every window and is
    sent back the decoding.Answer, and yields each Segment it keeps."""

    def __init__(self, audio, model, *, tokenizer, options: TranscribeOptions, speech, first: int, last: int):
        self.audio, self.model, self.tokenizer, self.options = audio, model, tokenizer, options
        self.speech, self.first, self.last = speech, first, last
        self.seek = first
        self.last_speech_timestamp = 0.0

    @property
    def done_frames(self) -> int:
        return min(self.seek, self.last) - self.first

    def run(self, decode_options: DecodingOptions) -> Iterator[Request | Segment]:
        """The stages, window after window (pipeline/asr/longform/__init__.py): plan, decode and place, re-decode what
        was skipped, snap, continue, guard."""
        options, speech, tokenizer = self.options, self.speech, self.tokenizer
        guard = Guard(
            speech,
            compression_ratio_threshold=options.compression_ratio_threshold,
            logprob_threshold=options.logprob_threshold,
        )
        all_tokens: list[int] = []
        prompt_reset_since = 0
        if options.initial_prompt:
            all_tokens += tokenizer.encode(" " + options.initial_prompt.strip())
        seek, last = self.first, self.last
        while seek < last:
            previous_seek = seek
            if speech is None:  # whisper's clock: 30 s from where the last window's text ended
                window = Window(((seek, min(seek + N_FRAMES, last)),))
            elif (window := plan_window(speech, seek, last)) is None:  # at the next speech, ending in a pause
                break
            seek = window.start
            prompt = replace(decode_options, prompt=all_tokens[prompt_reset_since:])
            result, current, seek_advance = yield from self._window(window, prompt)
            if result is None:
                seek = window.end
            else:
                next_seek = window.frame_after(seek_advance)
                if speech is not None and current:
                    current = yield from self._redecode(window, prompt, seek / FRAMES_PER_SECOND, current)
                    current = snap_to_speech(current, speech)
                    next_seek = missed_speech(speech, seek, next_seek, max(seg.end for seg in current))
                seek = next_seek
                for seg in current:
                    if guard.keep(seg):
                        all_tokens += seg.tokens
                        yield _to_segment(seg)
                if not options.condition_on_previous_text or result.temperature > 0.5:
                    prompt_reset_since = len(all_tokens)  # a high-temperature decode is no good prompt
            assert seek > previous_seek, "the window loop must always advance"
            self.seek = seek
        self.seek = last

    def _redecode(self, window: Window, prompt: DecodingOptions, start: float, current: list[Decoded]):
        """The window's segments with the speech whisper skipped in it decoded again, stretch by stretch, up to
        REDECODES more decodes; in time order."""
        again: list[Decoded] = []
        todo = uncovered(self.speech, start, current)
        budget = len(todo) + REDECODES
        while todo and budget > 0:
            (a, b), budget = todo.pop(0), budget - 1
            sub_start = max(a - LEAD_IN, start)
            sub = window.within(frame(sub_start), frame(b))
            _, found, _ = yield from self._window(sub, prompt)
            found, retimed = take_new(found, current + again, floor=self.options.logprob_threshold)
            current, again = retimed[: len(current)], retimed[len(current) :] + found
            todo[:0] = skipped(self.speech, sub_start, found, b)
        return sorted(split_around(current, again) + again, key=lambda seg: seg.start)

    def _window(self, window: Window, decode_options: DecodingOptions):
        """Decode one window: (result, segments, frames to advance); result None when it holds no speech."""
        options, tokenizer = self.options, self.tokenizer
        segment_size = window.frames
        audio = window_audio(self.audio, window, self.speech)
        if audio is None:
            return None, [], segment_size
        if not window.heard:  # (the previous text, as a prompt, makes whisper go on with it over music)
            decode_options = replace(decode_options, prompt=None)
        answer = yield Request(window_mel(audio, self.model.dims.n_mels), decode_options, window.heard)
        result = answer.result
        if result is None:
            return None, [], segment_size

        pieces, seek_advance = split_at_timestamps(result.tokens, tokenizer.timestamp_begin, segment_size)
        time_offset = window.start / FRAMES_PER_SECOND  # (times in the packed window until mapped back below)
        window_end_time = time_offset + segment_size / FRAMES_PER_SECOND
        looping = too_repetitive(result, options)  # even after every fallback temperature
        found = []  # whisper's segment dicts, as its word timing takes them
        for start_pos, end_pos, piece in pieces:
            if looping:
                piece = cut_loop(piece, tokenizer.timestamp_begin)
            text = tokenizer.decode([t for t in piece if t < tokenizer.eot]).strip()
            start = time_offset + start_pos * TIME_PRECISION
            end = min(time_offset + end_pos * TIME_PRECISION, window_end_time)
            if text and end > start:
                found.append({"seek": window.start, "start": start, "end": end, "text": text, "tokens": piece})
        if options.word_timestamps and found:
            # whisper's word timing (DTW over the alignment heads' attention); it also tightens start/end.
            # answer.mel is a row of the batch the encoder ran on, so the aligner reuses its output
            with timings.stage("word timing"):
                add_word_timestamps(
                    segments=found,
                    align=functools.partial(self.model.align, answer.mel),
                    tokenizer=tokenizer,
                    num_frames=segment_size,
                    last_speech_timestamp=self.last_speech_timestamp,
                )
        current = [off_the_seams(_placed(seg, result, window), window.seams) for seg in found]
        spoken = [w.end for seg in current for w in seg.words or ()]
        self.last_speech_timestamp = max([self.last_speech_timestamp, *spoken])
        return result, current, seek_advance


def _placed(seg: dict, result, window: Window) -> Decoded:
    """One of whisper's segment dicts as a Decoded value, its times from the packed window's to the recording's."""
    words = seg.get("words")
    if words is not None:
        words = tuple(Word(window.time(w["start"]), window.time(w["end"], end=True), w["word"], w["probability"])
                      for w in words)  # fmt: skip
    start, end = window.time(seg["start"]), window.time(seg["end"], end=True)
    return Decoded(start, end, seg["text"], tuple(seg["tokens"]), result, words)


def _to_segment(seg: Decoded) -> Segment:
    result = seg.result
    return Segment(
        start=round(seg.start, 3),
        end=round(seg.end, 3),
        text=seg.text,
        tokens=seg.tokens,
        avg_logprob=result.avg_logprob,
        no_speech_prob=result.no_speech_prob,
        compression_ratio=result.compression_ratio,
        temperature=result.temperature,
        words=seg.words,
    )
