"""Long-form transcription: 30-second windows over the whole audio, segments yielded as soon as they exist.

The window loop follows openai-whisper's `transcribe()` (seek to the last complete timestamp pair, temperature
fallback on compression-ratio / log-prob thresholds, no-speech skipping, conditioning on previous text); each window
is decoded by whisper's own DecodingTask on the OpenVINO model (pipeline/model.py). Unlike whisper's function this
is a generator, so a progress bar or a web page can show each segment as soon as it is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from whisper.audio import (
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

from pipeline.errors import SubtitleError
from pipeline.model import OVWhisper

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


def transcribe(
    audio: np.ndarray,
    model: OVWhisper,
    options: TranscribeOptions = TranscribeOptions(),
    progress: Callable[[float], None] | None = None,
) -> tuple[Iterator[Segment], TranscriptionInfo]:
    """Transcribe 16 kHz mono float32 audio; returns (lazy segments, info). Language detection happens here."""
    if options.task not in ("transcribe", "translate"):
        raise SubtitleError(f"Unknown task {options.task!r}: use transcribe or translate")
    language = normalize_language(options.language)
    if not model.is_multilingual and language not in (None, "en"):
        raise SubtitleError("This model is English-only: choose a multilingual model or language 'en'")
    mel = log_mel_spectrogram(
        torch.from_numpy(np.ascontiguousarray(audio, np.float32)), model.dims.n_mels, padding=N_SAMPLES
    )
    content_frames = mel.shape[-1] - N_FRAMES
    duration = len(audio) / SAMPLE_RATE

    probs: dict[str, float] = {}
    if language is None:
        if not model.is_multilingual:
            language, probs = "en", {"en": 1.0}
        else:
            _, probs = model.detect_language(pad_or_trim(mel, N_FRAMES))
            language = max(probs, key=probs.get)
    info = TranscriptionInfo(language, probs.get(language, 1.0), duration, options.task, probs)
    return _segments(audio, mel, content_frames, model, language, options, progress), info


def _segments(
    audio: np.ndarray,
    mel: torch.Tensor,
    content_frames: int,
    model: OVWhisper,
    language: str,
    options: TranscribeOptions,
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
    all_tokens: list[int] = []
    prompt_reset_since = 0
    if options.initial_prompt:
        all_tokens += tokenizer.encode(" " + options.initial_prompt.strip())

    seek, last_speech_timestamp = 0, 0.0
    while seek < content_frames:
        time_offset = seek * HOP_LENGTH / SAMPLE_RATE
        segment_size = min(N_FRAMES, content_frames - seek)
        previous_seek = seek
        result = None
        # (near-)digital silence is not decoded at all: whisper would hallucinate "You" or "Thank you." there
        if not _is_quiet(audio[seek * HOP_LENGTH : (seek + segment_size) * HOP_LENGTH]):
            mel_segment = pad_or_trim(mel[:, seek : seek + segment_size], N_FRAMES)
            prompt = all_tokens[prompt_reset_since:]
            result = _decode_with_fallback(model, mel_segment, replace(decode_options, prompt=prompt), options)

        if result is None or _is_silence(result, options):
            seek += segment_size
        else:
            tokens = result.tokens
            pieces, seek_advance = _split_at_timestamps(tokens, tokenizer.timestamp_begin, segment_size)
            seek += seek_advance
            window_end = time_offset + segment_size * HOP_LENGTH / SAMPLE_RATE
            current = []
            for start_pos, end_pos, piece in pieces:
                text = tokenizer.decode([t for t in piece if t < tokenizer.eot]).strip()
                start = time_offset + start_pos * TIME_PRECISION
                end = min(time_offset + end_pos * TIME_PRECISION, window_end)
                if text and end > start:
                    current.append({"seek": previous_seek, "start": start, "end": end, "text": text, "tokens": piece})
            if options.word_timestamps and current:
                # whisper's own word timing (DTW over the alignment heads' attention); it also tightens start/end
                add_word_timestamps(
                    segments=current,
                    model=model,
                    tokenizer=tokenizer,
                    mel=mel_segment,
                    num_frames=segment_size,
                    last_speech_timestamp=last_speech_timestamp,
                )
                spoken = [w["end"] for seg in current for w in seg.get("words", [])]
                last_speech_timestamp = spoken[-1] if spoken else last_speech_timestamp
            for seg in current:
                all_tokens += seg["tokens"]
                words = seg.get("words")
                yield Segment(
                    start=round(seg["start"], 3),
                    end=round(seg["end"], 3),
                    text=seg["text"],
                    tokens=tuple(seg["tokens"]),
                    avg_logprob=result.avg_logprob,
                    no_speech_prob=result.no_speech_prob,
                    compression_ratio=result.compression_ratio,
                    temperature=result.temperature,
                    words=None
                    if words is None
                    else tuple(Word(w["start"], w["end"], w["word"], w["probability"]) for w in words),
                )
            if not options.condition_on_previous_text or result.temperature > 0.5:
                prompt_reset_since = len(all_tokens)  # a high-temperature decode is no good prompt
        if progress is not None:
            progress(min(seek, content_frames) / max(content_frames, 1))
        assert seek > previous_seek, "the window loop must always advance"


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
        too_repetitive = (
            options.compression_ratio_threshold is not None
            and result.compression_ratio > options.compression_ratio_threshold
        )
        too_unlikely = options.logprob_threshold is not None and result.avg_logprob < options.logprob_threshold
        if not (too_repetitive or too_unlikely) or _is_silence(result, options):
            break
    assert result is not None
    return result


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
