"""Long-form transcription: 30-second windows over the whole audio, segments yielded as soon as they exist.

The window loop follows openai-whisper's `transcribe()` (seek to the last complete timestamp pair, temperature
fallback on compression-ratio / log-prob thresholds, no-speech skipping, conditioning on previous text); each window
is decoded by whisper's own DecodingTask on the OpenVINO model (pipeline/model.py). Unlike whisper's function this
is a generator, so a progress bar or a web page can show each segment as soon as it is decoded.

With voice activity detection (pipeline/vad.py, on by default) the windows follow the speech instead of the clock:
each starts just before speech, holds up to 30 s of speech with the silences between left out (_Window), and ends in
a pause, so no word is cut at a window boundary; speech that whisper skipped is decoded again; word times snap to the
detected speech; and text decoded where nobody speaks is dropped unless whisper is sure of it (see _plan_window,
_missed_speech and _Guard). Each window's log-mel spectrogram is computed from its own audio (_window_mel).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch
from whisper.audio import (
    FRAMES_PER_SECOND,
    HOP_LENGTH,
    N_FRAMES,
    N_SAMPLES,
    N_SAMPLES_PER_TOKEN,
    SAMPLE_RATE,
    log_mel_spectrogram,
    pad_or_trim,
)
from whisper.decoding import DecodingOptions, DecodingResult
from whisper.timing import add_word_timestamps
from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE, get_tokenizer

from pipeline.errors import OptionError, SubtitleError
from pipeline.model import OVWhisper
from pipeline.segment import Word, normalized
from pipeline.tuning import (
    COVER_SLACK,
    FILL,
    GAP_KEPT,
    LEAD_IN,
    LONG_WORD,
    LOOP_REPEATS,
    LOUDNESS_STEP,
    MAX_GAIN,
    MIN_PART,
    MISSED_SPEECH,
    ONSET_EARLY_MAX,
    PAUSE_TAIL,
    QUIET_BELOW,
    QUIET_DBFS,
    REDECODES,
    SENTENCE_PAUSE,
    SKIPPED_SPEECH,
    SNAP_MAX,
    SOUND_ALONE,
    SOUND_TAIL,
    STRETCHED_WORD,
    SURE_LOGPROB,
    SURE_NO_SPEECH,
    UNHEARD,
)
from pipeline.vad import SOUND_BRIDGE, SpeechMap, VadOptions, frame_levels, speech_map

FRAMES_PER_TOKEN = N_SAMPLES_PER_TOKEN // HOP_LENGTH  # 2 mel frames per audio token
TIME_PRECISION = N_SAMPLES_PER_TOKEN / SAMPLE_RATE  # 0.02 s per timestamp token


@dataclass(frozen=True)
class TranscribeOptions:
    language: str | None = None  # ISO code or English name; None or "auto" detects it from the first 30 s
    task: Literal["transcribe", "translate"] = "transcribe"  # or "translate" to English
    beam_size: int | None = 5  # beam search width at temperature 0; None for greedy
    best_of: int | None = 5  # samples drawn at temperatures > 0
    patience: float | None = None  # beam search patience (arXiv:2204.05424)
    temperatures: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # tried in order until a decode passes
    compression_ratio_threshold: float | None = 2.4  # gzip ratio above this means repetitive text: retry
    logprob_threshold: float | None = -1.0  # mean token log-prob below this: retry
    no_speech_threshold: float | None = 0.6  # with a low log-prob, a window this likely silent is skipped
    condition_on_previous_text: bool = True  # prompt each window with the text so far
    initial_prompt: str | None = None  # vocabulary or style hint for the first window
    suppress_tokens: str = "-1"  # token ids to suppress; "-1" is whisper's default set of symbols
    word_timestamps: bool = False  # time every word (cross-attention + dynamic time warping, as whisper does)
    vad: bool = True  # voice activity detection: skip non-speech, cut windows in pauses, no text where nobody speaks
    vad_threshold: float = 0.5  # speech probability above which a 32-ms frame is speech
    batch_size: int = 1  # windows decoded at once: the recording is cut at pauses into this many parts (of 60 s or
    #   more), decoded side by side, each conditioned on its own text

    def __post_init__(self):
        object.__setattr__(self, "language", normalize_language(self.language))  # "English" -> "en", "auto" -> None
        if self.task not in ("transcribe", "translate"):
            raise OptionError("task", f"Unknown task {self.task!r}: use transcribe or translate")
        if self.beam_size is not None and self.beam_size < 1:
            raise OptionError("beam_size", "The beam size is 1 (greedy) or more")
        if self.beam_size == 1:  # one beam is greedy decoding, which whisper runs without a beam search
            object.__setattr__(self, "beam_size", None)
        if not 0 < self.vad_threshold < 1:
            raise OptionError("vad_threshold", "The speech threshold is a probability: a number between 0 and 1")
        if not 1 <= self.batch_size <= 32:
            raise OptionError("batch_size", "The batch size must be between 1 and 32")


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


@dataclass(frozen=True)
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float  # seconds of audio
    task: str = "transcribe"
    language_probs: dict[str, float] = field(default_factory=dict, repr=False)


def normalize_language(language: str | None) -> str | None:
    """'auto'/None -> None; 'English'/'en' -> 'en'; anything else is a SubtitleError."""
    if language is None or language.strip().lower() in ("", "auto"):
        return None
    code = language.strip().lower()
    code = TO_LANGUAGE_CODE.get(code, code)
    if code not in LANGUAGES:
        raise OptionError("language", f"Unknown language {language!r}: use 'auto' or a code such as en, de, es, fr, zh")
    return code


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
        else:  # from the first 30 s of speech (an intro of music says nothing about the language)
            onset = (speech.next_speech(0.0) if speech is not None else None) or 0.0
            first = int(max(onset - LEAD_IN, 0.0) * FRAMES_PER_SECOND)
            _, probs = model.detect_language(_window_mel(audio[first * HOP_LENGTH :], model.dims.n_mels))
            language = max(probs, key=probs.get)
    info = TranscriptionInfo(language, probs.get(language, 1.0), duration, options.task, probs)
    return _segments(audio, content_frames, model, language, options, speech, progress), info


def _window_mel(audio: np.ndarray, n_mels: int) -> torch.Tensor:
    """A window's log-mel spectrogram, computed from its own 30 s of audio (zero-padded), as whisper's training data
    was: its level clamp (80 dB under the loudest bin) is the window's own, not the whole recording's, so a quiet
    or whispered stretch is not read against the loudest speech elsewhere."""
    return log_mel_spectrogram(torch.from_numpy(pad_or_trim(np.ascontiguousarray(audio[:N_SAMPLES]))), n_mels)


def _segments(
    audio: np.ndarray,
    content_frames: int,
    model: OVWhisper,
    language: str,
    options: TranscribeOptions,
    speech: SpeechMap | None,
    progress: Callable[[float], None] | None,
) -> Iterator[Segment]:
    """The recording's segments in time order. With batch_size > 1 the recording is cut at pauses into parts that
    are decoded side by side: each part is its own window loop, conditioned on its own text, and each round of
    decoding takes one window from every part as one batch (_decode_batch)."""
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
        fp16=False,
    )
    parts = _parts(speech, audio, content_frames, options.batch_size)
    streams = [_Stream(audio, model, tokenizer, options, speech, first, last) for first, last in parts]
    loops = [stream.run(decode_options) for stream in streams]
    waiting: dict[int, _Request] = {}  # part -> the window it waits on
    done: set[int] = set()
    ready: list[list[Segment]] = [[] for _ in streams]  # decoded, not yet given out (a later part waits its turn)

    def resume(i: int, result: DecodingResult | None = None) -> None:
        """Run part i's loop until it asks for a window to be decoded, or ends (a new loop starts on None)."""
        try:
            item = loops[i].send(result)
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
        results = _decode_batch(model, [waiting.pop(i) for i in parts_asking], options, tokenizer.eot)
        model.release_memory()
        for i, result in zip(parts_asking, results):
            resume(i, result)
        model.forget_encodings()  # (word timing of this round's windows is done)
        if progress is not None:
            progress(sum(stream.done_frames for stream in streams) / max(content_frames, 1))
    if progress is not None:
        progress(1.0)


@dataclass
class _Request:
    """One window for the model: its (padded) mel, whisper's options with the prompt, and whether the voice activity
    detector heard speech in it (if not, whisper is asked cheaply first and must be sure of its text)."""

    mel: torch.Tensor
    options: DecodingOptions
    heard: bool


def _parts(speech: SpeechMap | None, audio: np.ndarray, content_frames: int, n: int) -> list[tuple[int, int]]:
    """[first, last) frames of up to n parts of the recording, cut in the longest pause near each even split (by
    the detected speech; without it, in the quietest second)."""
    total = content_frames / FRAMES_PER_SECOND
    n = max(1, min(n, int(total // MIN_PART)))
    levels = frame_levels(audio) if speech is None and n > 1 else None
    cuts = [0]
    for k in range(1, n):
        target = k * total / n
        lo, hi = target - MIN_PART / 4, target + MIN_PART / 4
        if speech is not None:
            pauses = speech.pauses(lo, hi) or [(target, target)]
            a, b = max(pauses, key=lambda p: p[1] - p[0])
            cut = (a + b) / 2
        else:  # the quietest second (10-ms levels, averaged)
            step = 100  # frames of 10 ms per second
            window = levels[int(lo * step) : int(hi * step)]
            smooth = np.convolve(window, np.ones(step) / step, "valid") if window.size > step else window
            cut = lo + (int(np.argmin(smooth)) + step // 2) / step if smooth.size else target
        cuts.append(min(max(_frame(cut), cuts[-1] + 1), content_frames))
    cuts.append(content_frames)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


class _Stream:
    """whisper's window loop over one part of the recording: it yields a _Request for every window and is sent
    back whisper's result (None: no speech there), and yields each Segment it keeps."""

    def __init__(self, audio, model, tokenizer, options: TranscribeOptions, speech, first: int, last: int):
        self.audio, self.model, self.tokenizer, self.options = audio, model, tokenizer, options
        self.speech, self.first, self.last = speech, first, last
        self.seek = first
        self.last_speech_timestamp = 0.0

    @property
    def done_frames(self) -> int:
        return min(self.seek, self.last) - self.first

    def run(self, decode_options: DecodingOptions) -> Iterator[_Request | Segment]:
        options, speech, tokenizer = self.options, self.speech, self.tokenizer
        guard = _Guard(speech, options.compression_ratio_threshold)
        all_tokens: list[int] = []
        prompt_reset_since = 0
        if options.initial_prompt:
            all_tokens += tokenizer.encode(" " + options.initial_prompt.strip())
        seek, last = self.first, self.last
        while seek < last:
            previous_seek = seek
            if speech is not None:  # start at the next speech, end the window in a pause
                window = _plan_window(speech, seek, last)
                if window is None:
                    break
            else:
                window = _Window(((seek, min(seek + N_FRAMES, last)),))
            seek = window.start
            prompt = replace(decode_options, prompt=all_tokens[prompt_reset_since:])
            result, current, seek_advance = yield from self._window(window, prompt)
            if result is None:
                seek = window.end
            else:
                next_seek = window.frame_after(seek_advance)
                if speech is not None and current:
                    again = yield from self._skipped_speech(window, prompt, seek / FRAMES_PER_SECOND, current)
                    current = sorted(_split_around(current, again) + again, key=lambda seg: seg["start"])
                    after = float("-inf")
                    for seg in current:
                        after = _snap_to_speech(seg, speech, after)
                    next_seek = _missed_speech(speech, seek, next_seek, max(seg["end"] for seg in current))
                seek = next_seek
                for seg in current:
                    if not guard.keep(seg):
                        continue
                    all_tokens += seg["tokens"]
                    yield _to_segment(seg)
                if not options.condition_on_previous_text or result.temperature > 0.5:
                    prompt_reset_since = len(all_tokens)  # a high-temperature decode is no good prompt
            assert seek > previous_seek, "the window loop must always advance"
            self.seek = seek
        self.seek = last

    def _skipped_speech(self, window: _Window, prompt: DecodingOptions, start: float, current: list[dict]):
        """Speech whisper skipped inside the window (often its first sentence), each stretch decoded on its own, and
        what those decodes skip again too, up to REDECODES more decodes: the segments found."""
        again: list[dict] = []
        todo = _uncovered(self.speech, start, current)
        budget = len(todo) + REDECODES
        while todo and budget > 0:
            (a, b), budget = todo.pop(0), budget - 1
            sub_start = max(a - LEAD_IN, start)
            sub = window.within(_frame(sub_start), _frame(b))
            _, found, _ = yield from self._window(sub, prompt)
            found = [seg for seg in found if _new_speech(seg, current + again)]
            again += found
            todo[:0] = _skipped(self.speech, sub_start, found, b)
        return again

    def _window(self, window: _Window, decode_options: DecodingOptions) -> Iterator[_Request | Segment]:
        """Decode one window (through the caller's batch): returns (result, segments, frames of the window to
        advance); result None when the window holds no speech. Segment and word times are the recording's."""
        options, tokenizer = self.options, self.tokenizer
        segment_size = window.frames
        audio = np.concatenate([self.audio[a * HOP_LENGTH : b * HOP_LENGTH] for a, b in window.pieces])
        # (near-)digital silence is not decoded at all: whisper would hallucinate "You" or "Thank you." there. A
        # window of a sound is planned where the level stands out from its surroundings (SpeechMap.sounds): it may
        # be quieter, and is decoded however quiet (a whisper after digital silence; docs/longform.md, QUIET_DBFS)
        if segment_size <= 0 or (window.heard and _is_quiet(audio)):
            return None, [], segment_size
        if window.heard and self.speech is not None:
            audio = _leveled(audio, window, _gains(self.speech, window.start / FRAMES_PER_SECOND,
                                                  window.end / FRAMES_PER_SECOND))  # fmt: skip
        if not window.heard:  # (the previous text, as a prompt, makes whisper go on with it over music)
            decode_options = replace(decode_options, prompt=None)
        request = _Request(_window_mel(audio, self.model.dims.n_mels), decode_options, window.heard)
        result = yield request
        if result is None:
            return None, [], segment_size

        pieces, seek_advance = _split_at_timestamps(result.tokens, tokenizer.timestamp_begin, segment_size)
        time_offset = window.start / FRAMES_PER_SECOND  # (times in the packed window until mapped back below)
        window_end_time = time_offset + segment_size / FRAMES_PER_SECOND
        looping = _too_repetitive(result, options)  # even after every fallback temperature
        current = []
        for start_pos, end_pos, piece in pieces:
            if looping:
                piece = _cut_loop(piece, tokenizer.timestamp_begin)
            text = tokenizer.decode([t for t in piece if t < tokenizer.eot]).strip()
            start = time_offset + start_pos * TIME_PRECISION
            end = min(time_offset + end_pos * TIME_PRECISION, window_end_time)
            if text and end > start:
                current.append({"seek": window.start, "start": start, "end": end, "text": text, "tokens": piece,
                                "result": result})  # fmt: skip
        if options.word_timestamps and current:
            # whisper's own word timing (DTW over the alignment heads' attention); it also tightens start/end.
            # request.mel is now a row of the batch the encoder ran on, so the aligner reuses its output
            add_word_timestamps(
                segments=current,
                model=self.model,
                tokenizer=tokenizer,
                mel=request.mel,
                num_frames=segment_size,
                last_speech_timestamp=self.last_speech_timestamp,
            )
        for seg in current:  # from the packed window's time to the recording's
            seg["start"], seg["end"] = window.time(seg["start"]), window.time(seg["end"], end=True)
            for w in seg.get("words", ()):
                w["start"], w["end"] = window.time(w["start"]), window.time(w["end"], end=True)
            _off_the_seams(seg, window.seams)
        spoken = [w["end"] for seg in current for w in seg.get("words", [])]
        self.last_speech_timestamp = max([self.last_speech_timestamp, *spoken])
        return result, current, seek_advance


def _decode_batch(
    model: OVWhisper, requests: list[_Request], options: TranscribeOptions, eot: int
) -> list[DecodingResult | None]:
    """whisper's result for each window, or None where it holds no speech.

    Windows the detector heard nothing in are asked about cheaply first (_no_speech_prob). The rest are decoded at
    temperature 0 as batches of up to options.batch_size, each row with its own prompt: whisper's DecodingTask
    takes one prompt length for a batch, so only windows whose prompts are equally long (at most whisper's 223
    tokens: soon every part's) go in one batch. (Cutting every prompt to the shortest one's costs accuracy, and
    words that the longer prompt keeps: docs/longform.md, MIN_PART.) A row that fails whisper's thresholds is decoded
    again alone at the next temperatures (_decode_with_fallback), as whisper.transcribe would, and a row that only
    says its prompt's last words again (_echoes) is decoded again without the prompt."""
    results: list[DecodingResult | None] = [None] * len(requests)
    asked = [i for i, r in enumerate(requests) if r.heard or _no_speech_prob(model, r.mel, r.options) < SURE_NO_SPEECH]
    n_ctx = model.dims.n_text_ctx // 2 - 1  # whisper keeps at most this many prompt tokens
    lengths = {i: min(n_ctx, len(requests[i].options.prompt or ())) for i in asked}
    for length in sorted(set(lengths.values()), reverse=True):
        group = [i for i in asked if lengths[i] == length]
        for b in range(0, len(group), options.batch_size):
            rows = group[b : b + options.batch_size]
            prompts = [list(requests[i].options.prompt or [])[-length:] if length else [] for i in rows]
            mel = requests[rows[0]].mel[None] if len(rows) == 1 else torch.stack([requests[i].mel for i in rows])
            first = replace(requests[rows[0]].options, prompt=prompts[0] or None, temperature=0.0, best_of=None)
            for i, row, result in zip(rows, mel, model.decode(mel, first, row_prompts=prompts)):
                requests[i].mel = row  # (a view of the batch: the encoder's output for it is reused)
                results[i] = result
    for i in asked:
        request, result = requests[i], results[i]
        if _echoes(result.tokens, request.options.prompt, eot):
            request.options = replace(request.options, prompt=None)  # (and for the fallback below)
            result = _decode_with_fallback(model, request.mel, request.options, options, options.temperatures[:1])
        if _needs_fallback(result, options):
            result = _decode_with_fallback(model, request.mel, request.options, options, options.temperatures[1:])
        if _is_silence(result, options) or (not request.heard and not _sure(result)):
            result = None
        results[i] = result
    return results


def _echoes(tokens: list[int], prompt, eot: int) -> bool:
    """Whether a decode's text (tokens below `eot`: no timestamps) is only the last words of its prompt again:
    whisper, prompted with a heading, can write that heading again over the next, different sentence and lose the
    sentence, which it writes without the prompt (docs/longform.md, The prompt)."""
    said = [t for t in tokens if t < eot]
    before = [t for t in prompt or () if t < eot]
    return bool(said) and len(said) <= len(before) and before[-len(said) :] == said


def _to_segment(seg: dict) -> Segment:
    result, words = seg["result"], seg.get("words")
    return Segment(
        start=round(seg["start"], 3),
        end=round(seg["end"], 3),
        text=seg["text"],
        tokens=tuple(seg["tokens"]),
        avg_logprob=result.avg_logprob,
        no_speech_prob=result.no_speech_prob,
        compression_ratio=result.compression_ratio,
        temperature=result.temperature,
        words=None if words is None else tuple(Word(w["start"], w["end"], w["word"], w["probability"]) for w in words),
    )


@dataclass(frozen=True)
class _Window:
    """What is decoded as one 30-s window: one or more stretches of the recording, [first, last) frames in order,
    joined. Between stretches lies a silence of UNHEARD seconds or more with no sound in it, left out but for
    GAP_KEPT seconds (so whisper still sees a pause): a window holds up to 30 s of speech, not of silence (the
    silence-free audio of faster-whisper's and WhisperX's VAD mode, planned a window at a time). heard: the voice
    activity detector found speech in it."""

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

    def within(self, first: int, last: int) -> _Window:
        """The part of this window between two frames of the recording (what it left out stays out)."""
        pieces = tuple((max(a, first), min(b, last)) for a, b in self.pieces if b > first and a < last)
        return _Window(pieces or ((first, max(last, first + 1)),), self.heard)

    def frame_after(self, frames: int) -> int:
        """The recording's frame `frames` into the window (a stretch's end, not the next stretch's start)."""
        for a, b in self.pieces:
            if frames <= b - a:
                return a + frames
            frames -= b - a
        return self.end + frames

    def time(self, t: float, end: bool = False) -> float:
        """A time in the joined audio (seconds, counted from the recording's time at the window's start, as whisper's
        are) as the recording's time. A time on the seam between two stretches is the later one's start, or with
        end=True the earlier one's end."""
        offset = t - self.start / FRAMES_PER_SECOND
        for a, b in self.pieces:
            length = (b - a) / FRAMES_PER_SECOND
            if offset < length or (end and offset <= length):
                return a / FRAMES_PER_SECOND + offset
            offset -= length
        return self.end / FRAMES_PER_SECOND + offset

    def joined(self, t: float) -> float:
        """A time in the recording as a time in the joined audio (the inverse of time(); a time in a stretch left
        out is the next stretch's start), counted from the recording's time at the window's start."""
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
        """The silence kept where the window joins two stretches: (start, end) times in the recording, on the
        earlier stretch's side and on the later one's."""
        return [(b / FRAMES_PER_SECOND - GAP_KEPT[0], c / FRAMES_PER_SECOND + GAP_KEPT[1])
                for (_, b), (c, _) in zip(self.pieces, self.pieces[1:])]  # fmt: skip


def _off_the_seams(seg: dict, seams: list[tuple[float, float]]) -> None:
    """A segment that starts in the silence of a seam starts after it: whisper and its word timing place a segment's
    first words a little early, into the pause before them, and at a seam that pause stands for seconds of silence
    left out. The words there move to the speech after the seam (spread up to the next word). A word that spans the
    seam (it would span all the silence left out) starts after it too."""
    words = seg.get("words")
    for before, after in seams:
        if not words:
            if before <= seg["start"] < after:
                seg["start"] = min(after, seg["end"])
            continue
        for w in words:
            if w["start"] < before + GAP_KEPT[0] and w["end"] > after - GAP_KEPT[1]:
                w["start"] = min(after, w["end"] - 0.01)
        # (a first word only mostly there too, when the segment goes on after the seam)
        n = _leading([(w["start"] + w["end"]) / 2 >= before and w["end"] <= after for w in words])
        if n == len(words):  # all of the segment: only words wholly in the seam (it may end the speech before)
            n = _leading([w["start"] >= before and w["end"] <= after for w in words])
        if n == 0:
            continue
        until = words[n]["start"] if n < len(words) else after + words[-1]["end"] - words[0]["start"]
        start = min(after, until - 0.05 * n)
        step = (until - start) / n
        for i, w in enumerate(words[:n]):
            w["start"], w["end"] = start + i * step, start + (i + 1) * step
    if words:
        seg["start"] = words[0]["start"]
        seg["end"] = max(seg["end"], words[-1]["end"])


def _leading(flags: list[bool]) -> int:
    """How many of the first flags are set."""
    return next((i for i, flag in enumerate(flags) if not flag), len(flags))


def _plan_window(speech: SpeechMap, seek: int, content_frames: int) -> _Window | None:
    """The next window from `seek`, or None when nothing is left.

    Where the voice activity detector found speech: from just before it, up to 30 s of it, across silences of
    UNHEARD seconds or more that hold no sound (left out: see _Window), ending in a silence with a sound in it, else
    in the latest pause FILL seconds or more into the window (a sentence's end, a pause of SENTENCE_PAUSE, if there
    is one), else at 30 s, where whisper's own timestamps decide what is decoded again (as without the detector).
    A stretch of UNHEARD seconds or more without detected speech is searched for sounds (SpeechMap.sounds): the
    detector misses whispers, and the first words after a silence. Without any, it is skipped. A sound that runs
    into the speech after it starts that speech's window; any other sound of SOUND_ALONE seconds or more is a window
    of its own, tight around it, not heard, where whisper judges it under stricter rules (a shorter one, a breath or
    a click, is skipped: a window costs a whole encoder pass).
    """
    t, total = seek / FRAMES_PER_SECOND, content_frames / FRAMES_PER_SECOND
    onset = speech.next_speech(t)
    if (onset if onset is not None else total) - t >= UNHEARD:
        stretch_end = total if onset is None else onset - LEAD_IN
        sounds = _sounds(speech, t, stretch_end, onset)
        if sounds:
            a, b = sounds[0]
            start = max(seek, _frame(a - LEAD_IN))
            if onset is None or onset - b >= SOUND_BRIDGE:
                end = min(_frame(b + SOUND_TAIL), start + N_FRAMES, _frame(stretch_end), content_frames)
                return _Window(((start, max(end, start + 1)),), heard=False)
            return _speech_window(speech, start, content_frames)
    if onset is None:
        return None
    return _speech_window(speech, max(seek, int((onset - LEAD_IN) * FRAMES_PER_SECOND)), content_frames)


def _sounds(speech: SpeechMap, start: float, end: float, onset: float | None) -> list[tuple[float, float]]:
    """The sounds in [start, end] (SpeechMap.sounds) worth a decode: those of SOUND_ALONE seconds or more, and those
    that run into the speech at `onset` (its first words, which the detector missed). A shorter one away from
    speech is a breath or a click: a pause that holds only those is a silence."""
    return [(a, b) for a, b in speech.sounds(start, end)
            if b - a >= SOUND_ALONE or (onset is not None and onset - b < SOUND_BRIDGE)]  # fmt: skip


def _speech_window(speech: SpeechMap, start: int, content_frames: int) -> _Window:
    """A window of detected speech from `start` (see _plan_window)."""
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
            if b < total and silent and room - (_frame(a + GAP_KEPT[0]) - start) >= _frame(GAP_KEPT[1] + UNHEARD):
                resume = _frame(b - GAP_KEPT[1])  # a silence: left out, and the window goes on after it
                break
            if a <= start_t + 1.0:  # (no window ends in its first second)
                if pieces and not silent:  # a blip of detected speech in a sound (a whisper): its own window
                    return _Window(tuple(pieces))
                if not silent and b - a - PAUSE_TAIL >= UNHEARD:  # ... a window that starts with such a blip:
                    return _Window(((start, _blip_end(speech, a, b, limit, onset)),))  # the blip and its sound, alone
                continue
            if silent or b >= total or b - a - PAUSE_TAIL >= UNHEARD:
                ends = (a, b)  # the speech ends, or there is no room left, or a sound gets a window of its own
                break
            # (a sound too close to the next speech for a window of its own: _plan_window would not look for it)
        if resume is not None:
            pieces.append((start, _frame(a + GAP_KEPT[0])))
            room -= pieces[-1][1] - pieces[-1][0]
            start = resume
            continue
        if ends is None:
            if limit == content_frames:
                return _Window((*pieces, (start, limit)))
            sentences = [p for p in pauses if p[1] - p[0] >= SENTENCE_PAUSE]
            used = (N_FRAMES - room) / FRAMES_PER_SECOND - start_t  # + a pause's start: seconds into the window
            late = [p for p in pauses if used + p[0] >= FILL]
            if late:  # the latest pause well into the window, a sentence's end if there is one
                ends = ([p for p in late if p[1] - p[0] >= SENTENCE_PAUSE] or late)[-1]
            elif pieces and not sentences:  # better the silence before this speech than a short pause in it
                return _Window(tuple(pieces))
            else:  # at 30 s: whisper's timestamps decide what is decoded again (a few seconds), where an earlier
                return _Window((*pieces, (start, limit)))  # pause would leave 10 s or more of the window unused
        a, b = ends
        end_t = min(a + min(PAUSE_TAIL, (b - a) / 2), limit_t)
        return _Window((*pieces, (start, max(start + 1, min(_frame(end_t), limit)))))


def _gains(speech: SpeechMap, start: float, end: float) -> list[tuple[float, float, float]]:
    """(start, end, dB) of the stretches of [start, end] to make louder: each run of speech (between pauses of
    SENTENCE_PAUSE or more; MISSED_SPEECH seconds of speech or more) LOUDNESS_STEP dB or more under the loudest run,
    raised to it (by MAX_GAIN at most), from the middle of the pause before it to the middle of the pause after.
    Given a quiet sentence and a loud one in one window, whisper wrote the loud one and skipped the quiet one,
    before it or after it, and skipped it again when decoded from its start; alone in a window, or as loud as the
    rest, it wrote it (docs/longform.md, LOUDNESS_STEP)."""
    pauses = [(a, b) for a, b in speech.pauses(start, end) if b - a >= SENTENCE_PAUSE]
    bounds = [start, *(x for p in pauses for x in p), end]
    runs = [(a, b) for a, b in zip(bounds[::2], bounds[1::2]) if speech.speech_in(a, b) >= MISSED_SPEECH]
    levels = [speech.loudness(a, b) for a, b in runs]
    if len(runs) < 2 or None in levels:
        return []
    top = max(levels)
    middles = [start, *((a + b) / 2 for a, b in pauses), end]
    gains = []
    for (a, b), level in zip(runs, levels):
        if top - level >= LOUDNESS_STEP:
            before = max((m for m in middles if m <= a), default=start)
            after = min((m for m in middles if m >= b), default=end)
            gains.append((before, after, min(top - level, MAX_GAIN)))
    return gains


def _leveled(audio: np.ndarray, window: _Window, gains: list[tuple[float, float, float]]) -> np.ndarray:
    """The window's (joined) audio with each of `gains` (recording times) applied."""
    if not gains:
        return audio
    audio = audio.copy()
    offset = window.start / FRAMES_PER_SECOND
    for a, b, db in gains:
        first, last = (_frame(window.joined(t) - offset) * HOP_LENGTH for t in (a, b))
        audio[first:last] *= np.float32(10 ** (db / 20))
    return audio


def _blip_end(speech: SpeechMap, a: float, b: float, limit: int, onset: float | None) -> int:
    """Where a window that starts with a blip of detected speech ends: after the sound that runs on from it into the
    pause (a, b), before the speech at `onset` (None: the pause runs to the end of what is decoded). Whisper, given
    30 s that a whisper only starts, wrote the speech after the whisper and skipped the whisper, and the blip alone
    is too short to be decoded again (MISSED_SPEECH)."""
    sounds = speech.sounds(a, b - LEAD_IN)
    end = _sounds_end(sounds, onset) + SOUND_TAIL if sounds else a + PAUSE_TAIL
    return min(_frame(end), limit)


def _sounds_end(sounds: list[tuple[float, float]], onset: float | None) -> float:
    """Where the first of `sounds` ends, or the last of those after it that each start within UNHEARD seconds of
    the one before (none of them running into the speech at `onset`): after a whisper the detector heard some of,
    sounds that close together share its window, as speech does across pauses under UNHEARD (one encoder pass, not
    one per whispered sentence). (A sound the detector heard none of keeps a window of its own:
    the next sound could be another kind, speech after music.)"""
    end = sounds[0][1]
    for a, b in sounds[1:]:
        if a - end >= UNHEARD or (onset is not None and onset - b < SOUND_BRIDGE):
            break
        end = b
    return end


def _no_speech_prob(model: OVWhisper, mel: torch.Tensor, options: DecodingOptions) -> float:
    """whisper's probability that a window holds no speech, from a one-token greedy decode (cheap)."""
    one_token = replace(options, temperature=0.0, beam_size=None, best_of=None, patience=None, sample_len=1)
    return model.decode(mel, one_token).no_speech_prob


def _sure(result: DecodingResult) -> bool:
    return result.no_speech_prob < SURE_NO_SPEECH and result.avg_logprob > SURE_LOGPROB


def _frame(seconds: float) -> int:
    return max(int(round(seconds * FRAMES_PER_SECOND)), 0)


def _uncovered(speech: SpeechMap, window_start: float, segments: list[dict]) -> list[tuple[float, float]]:
    """Stretches of detected speech before the window's last decoded text that no decoded text covers (no word, where
    words are timed), each with at least SKIPPED_SPEECH seconds of speech: whisper sometimes starts a window with its
    second sentence, or skips a quiet sentence inside a segment that runs on with the louder one after it.

    Each decode is a whole window's encoder pass, and a stretch with under SKIPPED_SPEECH seconds of speech is not
    worth one: decoded alone, such stretches (a breath, an "uh", a word whose timing slipped) give nothing, a filler
    or an unsure made-up line (docs/longform.md, SKIPPED_SPEECH)."""
    # a timed word covers at most its last LONG_WORD seconds: where whisper skipped speech, its alignment stretches
    # the next word back across what was skipped
    covered = [(max(w["start"], w["end"] - LONG_WORD), w["end"]) for seg in segments for w in seg.get("words") or []]
    covered += [(seg["start"], seg["end"]) for seg in segments if not seg.get("words")]
    spans = sorted((a - COVER_SLACK, b + COVER_SLACK) for a, b in covered)
    gaps, t = [], window_start
    for a, b in spans:
        if a > t:
            gaps.append((t, a + COVER_SLACK))
        t = max(t, b)
    return [(a, b) for a, b in gaps if speech.speech_in(a, b) >= SKIPPED_SPEECH]


def _skipped(speech: SpeechMap, start: float, found: list[dict], end: float) -> list[tuple[float, float]]:
    """What a decode of skipped speech, [start, end], skipped again: the stretches _uncovered finds before its last
    text, and the detected speech after that text (MISSED_SPEECH seconds of it or more, from the next onset past
    COVER_SLACK). Nothing when it found nothing: whisper is sure nothing more is there."""
    if not found:
        return []
    gaps = _uncovered(speech, start, found)
    onset = speech.next_speech(max(seg["end"] for seg in found) + COVER_SLACK)
    if onset is not None and onset < end and speech.speech_in(onset, end) >= MISSED_SPEECH:
        gaps.append((onset, end))
    return gaps


def _new_speech(seg: dict, segments: list[dict]) -> bool:
    """Whether a segment decoded again on its own is speech that `segments` lack: whisper is sure of its words
    (avg log-probability over SURE_LOGPROB: given under a second of speech on its own, whisper makes up lines it is
    unsure of, while the sentences it had skipped read surer; its no-speech probability tells them apart no better,
    so not _sure), not one of whisper's filler lines (alone, whisper writes "Thank you." over a breath or a hum that it
    left out in context), nor the words beside it said again (_merge_repeat, which retimes those words). The
    measurements: docs/longform.md, SURE_LOGPROB (in a re-decode) and FILLERS (in a re-decode)."""
    if seg["result"].avg_logprob <= SURE_LOGPROB:
        return False
    return not FILLERS.match(normalized(seg["text"])) and not _merge_repeat(seg, segments)


def _merge_repeat(seg: dict, segments: list[dict]) -> bool:
    """If a segment decoded again on its own says what the words right after it, or right before it, in `segments`
    say (whisper's alignment put those words beside their speech, which then looked skipped), those words take its
    times and True is returned: the caller drops it (kept, the same words would be written twice, a duplicate
    cue)."""
    said = [w for w in seg.get("words") or [] if normalized(w["word"])]
    if not said:
        return False
    words = sorted((w for s in segments for w in s.get("words") or [] if normalized(w["word"])),
                   key=lambda w: w["start"])  # fmt: skip
    i = next((i for i, w in enumerate(words) if w["start"] >= seg["start"]), len(words))
    for run in (words[i : i + len(said)], words[max(i - len(said), 0) : i]):
        if len(run) == len(said) and all(normalized(a["word"]) == normalized(b["word"]) for a, b in zip(run, said)):
            for a, b in zip(run, said):
                a["start"], a["end"] = b["start"], b["end"]
            for s in segments:
                if s.get("words"):
                    s["start"], s["end"] = s["words"][0]["start"], max(s["end"], s["words"][-1]["end"])
            return True
    return False


def _split_around(segments: list[dict], found: list[dict]) -> list[dict]:
    """Segments whose words run across speech decoded again on its own (`found`) split where it starts, so that
    segments, and the words in them, stay in time order. The later part keeps no tokens (the earlier part keeps
    them all, for the next window's prompt)."""
    starts = [f["start"] for f in found]
    out = []
    for seg in segments:
        parts: list[list[dict]] = [[]]
        for w in seg.get("words") or []:
            if parts[-1] and any(parts[-1][-1]["start"] < t <= w["start"] for t in starts):
                parts.append([])
            parts[-1].append(w)
        if len(parts) == 1:
            out.append(seg)
            continue
        for i, words in enumerate(parts):
            text = "".join(w["word"] for w in words).strip()
            tokens = seg["tokens"] if i == 0 else []
            out.append({**seg, "start": words[0]["start"], "end": words[-1]["end"], "words": words, "text": text,
                        "tokens": tokens})  # fmt: skip
    return out


def _missed_speech(speech: SpeechMap, seek: int, next_seek: int, decoded_end: float) -> int:
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


def _snap(start: float, end: float, speech: SpeechMap, limit: float = float("inf")) -> tuple[float, float]:
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


def _first_word(start: float, end: float, after: float, speech: SpeechMap) -> tuple[float, float] | None:
    """The times of a word that begins a region of speech (no word since `after` reached it), put onto the region's
    start: later when whisper's alignment put all of the word in the silent pause before it, earlier by
    ONSET_EARLY_MAX at most when the word starts inside the region (the alignment is often late on the first word
    after a pause). None: the word does not begin a region, or is left where it is (_snap)."""
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


def _unstretch(words: list[dict], speech: SpeechMap) -> None:
    """A segment's first word, stretched over STRETCHED_WORD seconds or more from well inside a region of speech,
    when the next word ends in a later region that begins within ONSET_EARLY_MAX of the first word's end: whisper's
    alignment drew the word back over the end of the speech before (often the last sentence's tail, where the
    detector heard no pause). It moves to where the next word's speech starts."""
    if len(words) < 2 or words[0]["end"] - words[0]["start"] < STRETCHED_WORD:
        return
    region = speech.region_at(words[1]["end"])  # (its start may lie in the pause: _snap moves it)
    before = speech.region_at(words[0]["start"])  # the speech it starts in began well before it
    if region is None or before is None or before == region or before[0] > words[0]["start"] - ONSET_EARLY_MAX:
        return
    if 0 <= region[0] - words[0]["end"] <= ONSET_EARLY_MAX and region[0] > words[0]["start"]:
        words[0]["start"] = words[0]["end"] = region[0]


def _quieter(speech: SpeechMap, span: tuple[float, float], region: tuple[float, float]) -> bool:
    """Whether span is QUIET_BELOW dB under the speech of region, or more (the loudest tenth of their 10-ms frames)."""
    here, there = speech.loudness(*span), speech.loudness(region[0], min(region[1], region[0] + 1.0))
    return here is not None and there is not None and here <= there - QUIET_BELOW


def _snap_to_speech(seg: dict, speech: SpeechMap, after: float = float("-inf")) -> float:
    """Word times onto the detected speech (_first_word for each word that begins a region, _snap for the others;
    a word after a pause that the detector heard none of starts where its sound rises: whisper's alignment draws it
    back over the noise before it); without words, only the segment's start, by at most SNAP_MAX (a segment's times
    are coarse, and the detector misses some speech, such as whispers). `after`: where the last word before this
    segment ends. Returns where this segment's last word ends."""
    words = seg.get("words")
    if words:
        _unstretch(words, speech)
        for w in words:
            w["start"], w["end"] = _first_word(w["start"], w["end"], after, speech) or _snap(
                w["start"], w["end"], speech
            )
            if w["start"] - after >= SENTENCE_PAUSE and speech.fraction(w["start"], w["end"]) == 0:
                w["start"] = speech.rise(w["start"], w["end"])
            after = w["end"]
        seg["start"], seg["end"] = words[0]["start"], words[-1]["end"]
    else:
        seg["start"] = _snap(seg["start"], seg["end"], speech, SNAP_MAX)[0]
    return seg["end"]


# Text whisper is known to produce from silence, music or noise (subtitle credits and outros from its training data)
FILLERS = re.compile(
    r"^(thanks? (you )?(so much |very much )?for watching|thank you( very much| so much)?|"
    r"please subscribe.*|subscribe to .*|like and subscribe.*|(sub)?titles? by .*|subtitled by .*|"
    r"captions? by .*|transcri(bed|ption) by .*|translated by .*|amara\.org.*|.*www\.\S+.*|you|bye|"
    r"see you (next time|in the next video)|music|applause|silence)$"
)


class _Guard:
    """Hallucination guards, given where the speech is: no text where no speech was detected unless whisper is sure
    of it; no known filler line, nor a segment repeating the one before it, where the audio is mostly not speech
    (a repeat is also dropped when the decode was repetitive)."""

    def __init__(self, speech: SpeechMap | None, compression_ratio_threshold: float | None):
        self.speech = speech
        self.max_ratio = compression_ratio_threshold
        self.previous = ""

    def keep(self, seg: dict) -> bool:
        """seg: whisper's segment dict with "text", "start", "end", and the window's DecodingResult as "result"."""
        result = seg["result"]
        key = normalized(seg["text"])
        speech = 1.0 if self.speech is None else self.speech.fraction(seg["start"], seg["end"])
        looping = self.max_ratio is not None and result.compression_ratio > self.max_ratio
        if self.speech is not None and speech == 0.0 and not _sure(result):
            return False
        if speech < 0.5 and FILLERS.match(key):
            return False
        if key and key == self.previous and (speech < 0.5 or looping):
            return False
        self.previous = key
        return True


def _decode_with_fallback(
    model: OVWhisper,
    mel: torch.Tensor,
    base: DecodingOptions,
    options: TranscribeOptions,
    temperatures: tuple[float, ...] | None = None,
) -> DecodingResult:
    """Decode at the lowest temperature whose result passes the quality thresholds (as whisper.transcribe does)."""
    result = None
    for t in options.temperatures if temperatures is None else temperatures:
        if t > 0:  # sampling: best-of-n, no beam search
            decode_options = replace(base, temperature=t, beam_size=None, patience=None)
        else:  # deterministic: beam search (or greedy), no best-of
            decode_options = replace(base, temperature=t, best_of=None)
        result = model.decode(mel, decode_options)
        if not _needs_fallback(result, options):
            break
    assert result is not None
    return result


def _needs_fallback(result: DecodingResult, options: TranscribeOptions) -> bool:
    """whisper's rule: too repetitive or too unlikely, and not a window whisper deems silent."""
    too_unlikely = options.logprob_threshold is not None and result.avg_logprob < options.logprob_threshold
    return (_too_repetitive(result, options) or too_unlikely) and not _is_silence(result, options)


def _too_repetitive(result: DecodingResult, options: TranscribeOptions) -> bool:
    threshold = options.compression_ratio_threshold
    return threshold is not None and result.compression_ratio > threshold


def _cut_loop(piece: list[int], timestamp_begin: int) -> list[int]:
    """Runaway repetition cut at its first occurrence ("I don't know, I don't know, I don't know" -> "I don't
    know,"), keeping the piece's timestamp tokens. Only for decodes whose compression ratio stayed too high."""
    head = 1 if piece and piece[0] >= timestamp_begin else 0
    tail = 1 if len(piece) > head and piece[-1] >= timestamp_begin else 0
    body = piece[head : len(piece) - tail]
    n = len(body)
    for i in range(n):
        for period in range(1, (n - i) // LOOP_REPEATS + 1):
            unit = body[i : i + period]
            repeats = 1
            while body[i + repeats * period : i + (repeats + 1) * period] == unit:
                repeats += 1
            if repeats >= LOOP_REPEATS:
                return piece[:head] + body[: i + period] + piece[len(piece) - tail :]
    return piece


def _is_quiet(samples: np.ndarray) -> bool:
    if samples.size == 0:
        return True
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20 * np.log10(max(rms, 1e-10)) < QUIET_DBFS


def _is_silence(result: DecodingResult, options: TranscribeOptions) -> bool:
    """whisper's no-speech rule: likely silent and not decoded with confidence."""
    if options.no_speech_threshold is None or result.no_speech_prob <= options.no_speech_threshold:
        return False
    return options.logprob_threshold is None or result.avg_logprob < options.logprob_threshold


def _split_at_timestamps(
    tokens: list[int], timestamp_begin: int, segment_size: int
) -> tuple[list[tuple[int, int, list[int]]], int]:
    """Split a window's tokens into (start_pos, end_pos, tokens) pieces at consecutive timestamp tokens.

    Returns the pieces and how many mel frames to advance: to the end of the window when the text ends with a
    single timestamp (no speech after it), else to the last complete timestamp pair so an unfinished sentence is
    decoded again in the next window.
    """
    is_ts = [t >= timestamp_begin for t in tokens]
    single_timestamp_ending = is_ts[-2:] == [False, True]
    boundaries = [i + 1 for i in range(len(tokens) - 1) if is_ts[i] and is_ts[i + 1]]
    if not boundaries:
        timestamps = [t for t in tokens if t >= timestamp_begin]
        end_pos = segment_size / FRAMES_PER_TOKEN
        if timestamps and timestamps[-1] != timestamp_begin:
            end_pos = timestamps[-1] - timestamp_begin  # no pair, but a last timestamp: the speech ends there
        return [(0, end_pos, tokens)], segment_size
    if single_timestamp_ending:
        boundaries.append(len(tokens))
    pieces, last = [], 0
    for b in boundaries:
        piece = tokens[last:b]
        pieces.append((piece[0] - timestamp_begin, piece[-1] - timestamp_begin, piece))
        last = b
    advance = (tokens[last - 1] - timestamp_begin) * FRAMES_PER_TOKEN
    if single_timestamp_ending or advance <= 0:  # (a lone <|0.00|> pair would otherwise never move on)
        return pieces, segment_size
    return pieces, advance
