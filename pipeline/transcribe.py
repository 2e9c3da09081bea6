"""Long-form transcription: 30-second windows over the whole audio, segments yielded as soon as they exist.

The window loop follows openai-whisper's `transcribe()` (seek to the last complete timestamp pair, temperature
fallback on compression-ratio / log-prob thresholds, no-speech skipping, conditioning on previous text); each window
is decoded by whisper's own DecodingTask on the OpenVINO model (pipeline/model.py). Unlike whisper's function this
is a generator, so a progress bar or a web page can show each segment as soon as it is decoded.

With voice activity detection (pipeline/vad.py, on by default) the windows follow the speech instead of the clock:
each starts just before speech and ends in a pause, so no word is cut at a window boundary; speech that whisper
skipped is decoded again; word times snap to the detected speech; and text decoded where nobody speaks is dropped
unless whisper is sure of it (see _plan_window, _missed_speech and _Guard).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from whisper.audio import (
    FRAMES_PER_SECOND,
    HOP_LENGTH,
    N_FRAMES,
    N_SAMPLES,
    N_SAMPLES_PER_TOKEN,
    SAMPLE_RATE,
    pad_or_trim,
)
from whisper.decoding import DecodingOptions, DecodingResult
from whisper.timing import add_word_timestamps
from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE, get_tokenizer

from pipeline.errors import SubtitleError
from pipeline.features import log_mel
from pipeline.model import OVWhisper, release_free_memory
from pipeline.vad import SpeechMap, VadOptions, speech_map

FRAMES_PER_TOKEN = N_SAMPLES_PER_TOKEN // HOP_LENGTH  # 2 mel frames per audio token
TIME_PRECISION = N_SAMPLES_PER_TOKEN / SAMPLE_RATE  # 0.02 s per timestamp token


@dataclass(frozen=True)
class TranscribeOptions:
    language: str | None = None  # ISO code or English name; None or "auto" detects it from the first 30 s
    task: str = "transcribe"  # "transcribe", or "translate" to English
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


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    word: str
    probability: float


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
        raise SubtitleError(f"Unknown language {language!r}: use 'auto' or a code such as en, de, es, fr, zh")
    return code


def check_options(options: TranscribeOptions) -> str | None:
    """The language code (None: detect it); a SubtitleError for an unknown language or task."""
    if options.task not in ("transcribe", "translate"):
        raise SubtitleError(f"Unknown task {options.task!r}: use transcribe or translate")
    return normalize_language(options.language)


def transcribe(
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    progress: Callable[[float], None] | None = None,
) -> tuple[Iterator[Segment], TranscriptionInfo]:
    """Transcribe 16 kHz mono float32 audio; returns (lazy segments, info). Language detection happens here."""
    language = check_options(options)
    if not model.is_multilingual and language not in (None, "en"):
        raise SubtitleError("This model is English-only: choose a multilingual model or language 'en'")
    mel = log_mel(audio, model.dims.n_mels, padding=N_SAMPLES)  # whisper's, a few minutes at a time
    content_frames = mel.shape[-1] - N_FRAMES
    duration = len(audio) / SAMPLE_RATE
    speech = speech_map(audio, VadOptions(threshold=options.vad_threshold)) if options.vad else None

    probs: dict[str, float] = {}
    if language is None:
        if not model.is_multilingual:
            language, probs = "en", {"en": 1.0}
        else:  # from the first 30 s of speech (an intro of music says nothing about the language)
            onset = (speech.next_speech(0.0) if speech is not None else None) or 0.0
            first = int(max(onset - LEAD_IN, 0.0) * FRAMES_PER_SECOND)
            _, probs = model.detect_language(pad_or_trim(mel[:, first : first + N_FRAMES], N_FRAMES))
            language = max(probs, key=probs.get)
    info = TranscriptionInfo(language, probs.get(language, 1.0), duration, options.task, probs)
    return _segments(audio, mel, content_frames, model, language, options, speech, progress), info


def _segments(
    audio: np.ndarray,
    mel: torch.Tensor,
    content_frames: int,
    model: OVWhisper,
    language: str,
    options: TranscribeOptions,
    speech: SpeechMap | None,
    progress: Callable[[float], None] | None,
) -> Iterator[Segment]:
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
    guard = _Guard(speech, options.compression_ratio_threshold)
    all_tokens: list[int] = []
    prompt_reset_since = 0
    if options.initial_prompt:
        all_tokens += tokenizer.encode(" " + options.initial_prompt.strip())

    decoder = _WindowDecoder(audio, mel, model, tokenizer, options)
    seek = 0
    while seek < content_frames:
        previous_seek = seek
        heard = True
        if speech is not None:  # start at the next speech, end the window in a pause
            seek, window_end, heard = _plan_window(speech, seek, content_frames)
            if seek >= content_frames:
                break
        else:
            window_end = min(seek + N_FRAMES, content_frames)
        prompt = replace(decode_options, prompt=all_tokens[prompt_reset_since:])
        result, current, seek_advance = decoder.decode(seek, window_end, prompt, heard)
        if result is None:
            seek = window_end
        else:
            next_seek = seek + seek_advance
            if speech is not None and current:
                # speech whisper skipped inside the window (often its first sentence) is decoded on its own
                for start, end in _uncovered(speech, seek / FRAMES_PER_SECOND, current):
                    sub_start = _frame(max(start - LEAD_IN, seek / FRAMES_PER_SECOND))
                    _, found, _ = decoder.decode(sub_start, _frame(end), prompt, True)
                    current += found
                current.sort(key=lambda seg: seg["start"])
                for seg in current:
                    _snap_to_speech(seg, speech)
                next_seek = _missed_speech(speech, seek, next_seek, max(seg["end"] for seg in current))
            seek = next_seek
            for seg in current:
                if not guard.keep(seg):
                    continue
                all_tokens += seg["tokens"]
                yield _to_segment(seg)
            if not options.condition_on_previous_text or result.temperature > 0.5:
                prompt_reset_since = len(all_tokens)  # a high-temperature decode is no good prompt
        if progress is not None:
            progress(min(seek, content_frames) / max(content_frames, 1))
        assert seek > previous_seek, "the window loop must always advance"
    if progress is not None:
        progress(1.0)


class _WindowDecoder:
    """Decodes one window of the recording into whisper's segment dicts (absolute times, words when asked)."""

    def __init__(self, audio: np.ndarray, mel: torch.Tensor, model: OVWhisper, tokenizer, options: TranscribeOptions):
        self.audio, self.mel, self.model, self.tokenizer, self.options = audio, mel, model, tokenizer, options
        self.last_speech_timestamp = 0.0

    def decode(
        self, seek: int, window_end: int, decode_options: DecodingOptions, heard: bool
    ) -> tuple[DecodingResult | None, list[dict], int]:
        """(result, segments, frames to advance); result None when the window holds no speech.

        heard False: the voice activity detector found no speech here, so whisper is asked cheaply first and its
        text is kept only when it is sure of it.
        """
        options, tokenizer = self.options, self.tokenizer
        segment_size = window_end - seek
        # (near-)digital silence is not decoded at all: whisper would hallucinate "You" or "Thank you." there
        if segment_size <= 0 or _is_quiet(self.audio[seek * HOP_LENGTH : window_end * HOP_LENGTH]):
            return None, [], segment_size
        mel_segment = pad_or_trim(self.mel[:, seek:window_end], N_FRAMES)
        if not heard and _no_speech_prob(self.model, mel_segment, decode_options) >= SURE_NO_SPEECH:
            return None, [], segment_size
        result = _decode_with_fallback(self.model, mel_segment, decode_options, options)
        if _is_silence(result, options) or (not heard and not _sure(result)):
            return None, [], segment_size

        pieces, seek_advance = _split_at_timestamps(result.tokens, tokenizer.timestamp_begin, segment_size)
        time_offset = seek / FRAMES_PER_SECOND
        window_end_time = window_end / FRAMES_PER_SECOND
        looping = _too_repetitive(result, options)  # even after every fallback temperature
        current = []
        for start_pos, end_pos, piece in pieces:
            if looping:
                piece = _cut_loop(piece, tokenizer.timestamp_begin)
            text = tokenizer.decode([t for t in piece if t < tokenizer.eot]).strip()
            start = time_offset + start_pos * TIME_PRECISION
            end = min(time_offset + end_pos * TIME_PRECISION, window_end_time)
            if text and end > start:
                current.append({"seek": seek, "start": start, "end": end, "text": text, "tokens": piece,
                                "result": result})  # fmt: skip
        if options.word_timestamps and current:
            # whisper's own word timing (DTW over the alignment heads' attention); it also tightens start/end
            add_word_timestamps(
                segments=current,
                model=self.model,
                tokenizer=tokenizer,
                mel=mel_segment,
                num_frames=segment_size,
                last_speech_timestamp=self.last_speech_timestamp,
            )
            spoken = [w["end"] for seg in current for w in seg.get("words", [])]
            self.last_speech_timestamp = max([self.last_speech_timestamp, *spoken])
        release_free_memory()
        return result, current, seek_advance


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


LEAD_IN = 0.2  # seconds of audio kept before speech starts, so the first word is whole
SENTENCE_PAUSE = 0.5  # a pause this long is a good place to end a window
PAUSE_TAIL = 1.0  # at most this much of the pause is kept at the end of a window
MISSED_SPEECH = 0.5  # speech this far after the last decoded text, and at least this long, is decoded again
SNAP_MAX = 1.0  # a segment's start (without word times) moves onto the detected speech by at most this much
COVER_SLACK = 0.3  # decoded text is taken to cover this much more audio on each side
UNHEARD = 2.0  # seconds without detected speech that whisper is asked about on their own
# where the detector heard no speech, whisper's text is kept only when whisper is sure of it: a whisper measures
# no_speech_prob 0.28, avg_logprob -0.37; white noise 0.99, synthetic music 0.81, mains hum 0.74 (Whisper base)
SURE_NO_SPEECH = 0.5
SURE_LOGPROB = -0.7


def _plan_window(speech: SpeechMap, seek: int, content_frames: int) -> tuple[int, int, bool]:
    """(start, end, has_speech) frames of the next window.

    Where the voice activity detector found speech: from just before it, up to 30 s, ending in the first pause of
    UNHEARD seconds, else the latest pause of at least SENTENCE_PAUSE (else the longest pause; else at 30 s,
    where whisper's own timestamps decide what is decoded again). A stretch of UNHEARD seconds or more without
    detected speech is a window of its own, with has_speech False: the detector misses whispers, so whisper gets to
    judge it, under stricter rules.
    start == content_frames when nothing is left.
    """
    t, total = seek / FRAMES_PER_SECOND, content_frames / FRAMES_PER_SECOND
    onset = speech.next_speech(t)
    if (onset if onset is not None else total) - t >= UNHEARD:
        end_t = t + 30.0 if onset is None else min(onset - LEAD_IN, t + 30.0)
        return seek, min(int(end_t * FRAMES_PER_SECOND), content_frames), False
    if onset is None:
        return content_frames, content_frames, False
    start = max(seek, int((onset - LEAD_IN) * FRAMES_PER_SECOND))
    limit = min(start + N_FRAMES, content_frames)
    start_t, limit_t = start / FRAMES_PER_SECOND, limit / FRAMES_PER_SECOND
    pauses = [(a, b) for a, b in speech.pauses(start_t, limit_t) if a > start_t + 1.0]
    unheard = [p for p in pauses if p[1] - p[0] >= UNHEARD]  # (gets its own window)
    sentences = [p for p in pauses if p[1] - p[0] >= SENTENCE_PAUSE]
    if unheard:
        a, b = unheard[0]
    elif limit == content_frames or not pauses:
        return start, limit, True
    else:
        a, b = sentences[-1] if sentences else max(pauses, key=lambda p: p[1] - p[0])
    end_t = min(a + min(PAUSE_TAIL, (b - a) / 2), limit_t)
    return start, max(start + 1, min(int(round(end_t * FRAMES_PER_SECOND)), limit)), True


def _no_speech_prob(model: OVWhisper, mel: torch.Tensor, options: DecodingOptions) -> float:
    """whisper's probability that a window holds no speech, from a one-token greedy decode (cheap)."""
    one_token = replace(options, temperature=0.0, beam_size=None, best_of=None, patience=None, sample_len=1)
    return model.decode(mel, one_token).no_speech_prob


def _sure(result: DecodingResult) -> bool:
    return result.no_speech_prob < SURE_NO_SPEECH and result.avg_logprob > SURE_LOGPROB


def _frame(seconds: float) -> int:
    return max(int(round(seconds * FRAMES_PER_SECOND)), 0)


def _uncovered(speech: SpeechMap, window_start: float, segments: list[dict]) -> list[tuple[float, float]]:
    """Stretches of detected speech before the window's last decoded text that no decoded text covers, each with
    at least MISSED_SPEECH seconds of speech (whisper sometimes starts a window with its second sentence)."""
    spans = sorted((seg["start"] - COVER_SLACK, seg["end"] + COVER_SLACK) for seg in segments)
    gaps, t = [], window_start
    for a, b in spans:
        if a > t:
            gaps.append((t, a + COVER_SLACK))
        t = max(t, b)
    return [(a, b) for a, b in gaps if speech.speech_in(a, b) >= MISSED_SPEECH]


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


def _snap_to_speech(seg: dict, speech: SpeechMap) -> None:
    """Word times onto the detected speech; without words, only the segment's start, by at most SNAP_MAX (a
    segment's times are coarse, and the detector misses some speech, such as whispers)."""
    words = seg.get("words")
    if words:
        for w in words:
            w["start"], w["end"] = _snap(w["start"], w["end"], speech)
        seg["start"], seg["end"] = words[0]["start"], words[-1]["end"]
    else:
        seg["start"] = _snap(seg["start"], seg["end"], speech, SNAP_MAX)[0]


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
        key = _normalized(seg["text"])
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


def _normalized(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s.']+", " ", text.lower()).replace(".", " ").split())


def _decode_with_fallback(
    model: OVWhisper, mel: torch.Tensor, base: DecodingOptions, options: TranscribeOptions
) -> DecodingResult:
    """Decode at the lowest temperature whose result passes the quality thresholds (as whisper.transcribe does)."""
    result = None
    for t in options.temperatures:
        if t > 0:  # sampling: best-of-n, no beam search
            decode_options = replace(base, temperature=t, beam_size=None, patience=None)
        else:  # deterministic: beam search (or greedy), no best-of
            decode_options = replace(base, temperature=t, best_of=None)
        result = model.decode(mel, decode_options)
        too_repetitive = _too_repetitive(result, options)
        too_unlikely = options.logprob_threshold is not None and result.avg_logprob < options.logprob_threshold
        if not (too_repetitive or too_unlikely) or _is_silence(result, options):
            break
    assert result is not None
    return result


def _too_repetitive(result: DecodingResult, options: TranscribeOptions) -> bool:
    threshold = options.compression_ratio_threshold
    return threshold is not None and result.compression_ratio > threshold


LOOP_REPEATS = 3  # a run of tokens said this many times in a row, in a decode already judged repetitive, is a loop


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


QUIET_DBFS = -60.0  # RMS level below which a window holds no audible speech (speech is typically -35..-15 dBFS)


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
