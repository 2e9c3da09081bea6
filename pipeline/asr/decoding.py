"""The decode rules: how a window is decoded, and which of whisper's text is believed.

whisper.transcribe's rules (temperature fallback, silence skipping) and ours around them: batches with a prompt per
row (decode_batch), no decode of near-digital silence (is_quiet), prompt echoes decoded again without the prompt
(echoes), loops cut (cut_loop), and the Guard against text where nobody speaks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from pipeline.asr.longform import Decoded
from pipeline.asr.mel import HOP_LENGTH, N_SAMPLES_PER_TOKEN
from pipeline.asr.model import OVWhisper
from pipeline.asr.results import normalized
from pipeline.asr.task import DecodingOptions, DecodingResult
from pipeline.asr.vad import SpeechMap
from pipeline.tuning import LOOP_REPEATS, QUIET_DBFS, SURE_LOGPROB, SURE_NO_SPEECH

FRAMES_PER_TOKEN = N_SAMPLES_PER_TOKEN // HOP_LENGTH  # 2 mel frames per audio token

# Text whisper is known to produce from silence, music or noise (subtitle credits and outros from its training data)
FILLERS = re.compile(
    r"^(thanks? (you )?(so much |very much )?for watching|thank you( very much| so much)?|"
    r"please subscribe.*|subscribe to .*|like and subscribe.*|(sub)?titles? by .*|subtitled by .*|"
    r"captions? by .*|transcri(bed|ption) by .*|translated by .*|amara\.org.*|.*www\.\S+.*|you|bye|"
    r"see you (next time|in the next video)|music|applause|silence)$"
)


@dataclass(frozen=True)
class Request:
    """One window for the model: its (padded) mel, whisper's options with the prompt, and whether the voice activity
    detector heard speech in it (if not, whisper is asked cheaply first and must be sure of its text)."""

    mel: np.ndarray
    options: DecodingOptions
    heard: bool


@dataclass(frozen=True)
class Answer:
    """whisper's result for a window (None: no speech there), and its mel as the row of the batch the encoder ran
    on: word timing given this array reuses the encoder's output for it (OVWhisper finds it by its memory)."""

    result: DecodingResult | None
    mel: np.ndarray


def decode_batch(model: OVWhisper, requests: list[Request], options, eot: int) -> list[Answer]:
    """whisper's answer for each window (options: the TranscribeOptions).

    Windows without detected speech are asked about cheaply first (no_speech_prob). The rest are decoded at temperature
    0 in batches. whisper's DecodingTask takes one prompt length: greedy rows (the fast mode) each get the last words
    of their own prompt, as many as the shortest prompt has (a batch per length would multiply the decoder's steps);
    with beams (accuracy first) only rows whose prompts are as long go together, so no row loses its context (prompts
    soon reach whisper's limit, and then all are). Rows without a prompt go in batches of their own; a row that fails
    whisper's thresholds falls back alone, and an echo is decoded without prompt."""
    results: list[DecodingResult | None] = [None] * len(requests)
    mels = [r.mel for r in requests]
    asked = [i for i, r in enumerate(requests) if r.heard or no_speech_prob(model, r.mel, r.options) < SURE_NO_SPEECH]
    n_ctx = model.dims.n_text_ctx // 2 - 1  # whisper keeps at most this many prompt tokens
    lengths = {i: min(n_ctx, len(requests[i].options.prompt or ())) for i in asked}
    shortest = min((n for n in lengths.values() if n), default=0)
    groups: dict[int, list[int]] = {}  # prompt length -> its rows
    for i in asked:
        groups.setdefault(lengths[i] if options.beam_size or not lengths[i] else shortest, []).append(i)
    # (rows without a prompt, a part's first window or one after a reset, are decoded apart: none takes the others')
    for cut, group in groups.items():
        for b in range(0, len(group), options.batch_size):
            rows = group[b : b + options.batch_size]
            prompts = [list(requests[i].options.prompt)[-cut:] if cut else [] for i in rows]
            mel = requests[rows[0]].mel[None] if len(rows) == 1 else np.stack([requests[i].mel for i in rows])
            first = replace(requests[rows[0]].options, prompt=prompts[0] or None, temperature=0.0, best_of=None)
            for i, row, result in zip(rows, mel, model.decode(mel, first, row_prompts=prompts)):
                mels[i], results[i] = row, result  # (a view of the batch: the encoder's output for it is reused)
    for i in asked:
        request, result, base = requests[i], results[i], requests[i].options
        if echoes(result.tokens, base.prompt, eot):
            base = replace(base, prompt=None)  # (and for the fallback below)
            result = decode_with_fallback(
                model, mels[i], base=base, options=options, temperatures=options.temperatures[:1]
            )
        if needs_fallback(result, options):
            result = decode_with_fallback(
                model, mels[i], base=base, options=options, temperatures=options.temperatures[1:]
            )
        if is_silence(result, options) or (not request.heard and not plausible(result, options.logprob_threshold)):
            result = None
        results[i] = result
    return [Answer(result, mel) for result, mel in zip(results, mels)]


def no_speech_prob(model: OVWhisper, mel: np.ndarray, options: DecodingOptions) -> float:
    """whisper's probability that a window holds no speech, from a one-token greedy decode (cheap)."""
    one_token = replace(options, temperature=0.0, beam_size=None, best_of=None, patience=None, sample_len=1)
    return model.decode(mel, one_token).no_speech_prob


def sure(result: DecodingResult) -> bool:
    """Whether whisper is sure of a decode's text: it deems the audio speech and its words likely."""
    return result.no_speech_prob < SURE_NO_SPEECH and result.avg_logprob > SURE_LOGPROB


def plausible(result: DecodingResult, floor: float | None) -> bool:
    """Whether a decode where the detector heard no speech may hold some: whisper deems it speech, its words above
    `floor` (its logprob_threshold). Which of its segments are kept: believed, once their words are timed."""
    return result.no_speech_prob < SURE_NO_SPEECH and (floor is None or result.avg_logprob > floor)


def believed(seg: Decoded, *, floor: float | None) -> bool:
    """Whether to keep text where the detector heard no speech: whisper is sure of it (sure), or it is plausible and
    its timed words pass whisper's own test for made-up text (anomalous). Alone after a sentence, a whisper read right
    ("This is all very whispered.") scores -0.70, under SURE_LOGPROB; text made up over music or a breath is words
    the alignment hardly hears (docs/longform.md, No text where nobody speaks)."""
    return sure(seg.result) or (seg.result.no_speech_prob < SURE_NO_SPEECH and words_pass(seg, floor=floor))


def words_pass(seg: Decoded, *, floor: float | None) -> bool:
    """Whether a segment whisper is unsure of still reads as speech: above `floor` (its logprob_threshold; None: any),
    with timed words that pass whisper's test for made-up text (anomalous). Untimed, it does not."""
    above = floor is None or seg.result.avg_logprob > floor
    return above and bool(seg.words) and not anomalous(seg.words)


def anomalous(words) -> bool:
    """whisper's own test for made-up text (its transcribe.py, is_segment_anomaly, which its
    hallucination_silence_threshold uses), with its numbers: of the first 8 words, each scores 1 under a probability
    of 0.15, and more the further its length lies outside 0.133-2 s; made up at a score of 3, or about 1 a word."""
    words = [w for w in words if w.word not in _PUNCTUATION][:8]
    if not words:
        return False
    score = sum((w.probability < 0.15) + max(0.133 - (w.end - w.start), 0.0) * 15 + max(w.end - w.start - 2.0, 0.0)
                for w in words)  # fmt: skip
    return score >= 3 or score + 0.01 >= len(words)


_PUNCTUATION = "\"'“¿([{-\"'.。,，!！?？:：”)]}、"  # whisper's: a word that is only punctuation is not scored


def echoes(tokens: list[int], prompt, eot: int) -> bool:
    """Whether a decode's text is only the last words of its prompt again: prompted with a heading, whisper can
    write it again over the next sentence (docs/longform.md, The prompt)."""
    said = [t for t in tokens if t < eot]
    before = [t for t in prompt or () if t < eot]
    return bool(said) and len(said) <= len(before) and before[-len(said) :] == said


def decode_with_fallback(
    model: OVWhisper,
    mel: np.ndarray,
    *,
    base: DecodingOptions,
    options,
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
        if not needs_fallback(result, options):
            break
    assert result is not None
    return result


def needs_fallback(result: DecodingResult, options) -> bool:
    """whisper's rule: too repetitive or too unlikely, and not a window whisper deems silent."""
    too_unlikely = options.logprob_threshold is not None and result.avg_logprob < options.logprob_threshold
    return (too_repetitive(result, options) or too_unlikely) and not is_silence(result, options)


def too_repetitive(result: DecodingResult, options) -> bool:
    threshold = options.compression_ratio_threshold
    return threshold is not None and result.compression_ratio > threshold


def is_silence(result: DecodingResult, options) -> bool:
    """whisper's no-speech rule: likely silent and not decoded with confidence."""
    if options.no_speech_threshold is None or result.no_speech_prob <= options.no_speech_threshold:
        return False
    return options.logprob_threshold is None or result.avg_logprob < options.logprob_threshold


def is_quiet(samples: np.ndarray) -> bool:
    """Whether audio is (near-)digital silence, under QUIET_DBFS RMS: whisper would write "You" or "Thank you."."""
    if samples.size == 0:
        return True
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20 * np.log10(max(rms, 1e-10)) < QUIET_DBFS


def cut_loop(piece: list[int], timestamp_begin: int) -> list[int]:
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


def split_at_timestamps(
    tokens: list[int], timestamp_begin: int, segment_size: int
) -> tuple[list[tuple[int, int, list[int]]], int]:
    """(start_pos, end_pos, tokens) pieces of a window's tokens at consecutive timestamps, and the mel
    frames to advance: the whole window after a lone final timestamp, else to the last complete pair."""
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


class Guard:
    """Hallucination guards, given where the speech is: no text without detected speech unless it is believed (whisper
    is sure of it, or its timed words pass whisper's test); no filler line or repeat of the segment before where the
    audio is mostly not speech."""

    def __init__(self, speech: SpeechMap | None, *, compression_ratio_threshold: float | None,
                 logprob_threshold: float | None):  # fmt: skip
        self.speech = speech
        self.max_ratio = compression_ratio_threshold
        self.floor = logprob_threshold
        self.previous = ""

    def keep(self, seg: Decoded) -> bool:
        """Whether to keep a segment (in time order: the guard remembers the last one kept)."""
        result = seg.result
        key = normalized(seg.text)
        speech = 1.0 if self.speech is None else self.speech.fraction(seg.start, seg.end)
        looping = self.max_ratio is not None and result.compression_ratio > self.max_ratio
        if self.speech is not None and speech == 0.0 and not believed(seg, floor=self.floor):
            return False
        if speech < 0.5 and FILLERS.match(key):
            return False
        if key and key == self.previous and (speech < 0.5 or looping):
            return False
        self.previous = key
        return True
