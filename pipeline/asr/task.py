"""whisper's decoding of 30-s windows (openai-whisper's whisper/decoding.py, MIT) in numpy, on the OpenVINO decoder.

The options, the token rules (blank and token suppression, timestamp rules), greedy decoding, a seeded sampler and beam
search, each computed for all rows of a batch at once, give whisper's tokens (tests/asr/test_openvino.py and
test_batched.py compare them with PyTorch's). Beyond whisper: a batch of windows may carry a prompt per row
(`row_prompts`), and beams over several windows run the prompt once per window (inference.OVInference).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from pipeline.asr.inference import DecoderModel, OVInference
from pipeline.asr.mel import CHUNK_LENGTH
from pipeline.asr.search import (
    BeamSearchDecoder,
    GreedyDecoder,
    SeededSampler,
    SuppressBlank,
    SuppressTokens,
    TimestampRules,
    softmax,
)
from pipeline.asr.tokenizer import get_tokenizer


@dataclass(frozen=True)
class DecodingOptions:
    """whisper.DecodingOptions, without fp16 (the IR's precision is the model's)."""

    task: str = "transcribe"  # or "translate" (to English), "lang_id"
    language: str | None = None  # None: detected
    temperature: float = 0.0
    sample_len: int | None = None  # most tokens to sample
    best_of: int | None = None  # independent samples, when temperature > 0
    beam_size: int | None = None  # beams, when temperature == 0
    patience: float | None = None  # beam search's (arxiv:2204.05424)
    length_penalty: float | None = None  # None: length normalisation; else Google NMT's alpha
    prompt: str | list[int] | None = None  # the previous text
    prefix: str | list[int] | None = None  # the start of this window's text
    suppress_tokens: str | Iterable[int] | None = "-1"  # "-1": whisper's non-speech symbols
    suppress_blank: bool = True
    without_timestamps: bool = False
    max_initial_timestamp: float | None = 1.0


@dataclass(frozen=True)
class DecodingResult:
    language: str
    language_probs: dict[str, float] | None = None
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    avg_logprob: float = np.nan
    no_speech_prob: float = np.nan
    temperature: float = np.nan
    compression_ratio: float = np.nan


class LanguageModel(DecoderModel, Protocol):
    """What decoding uses of OVWhisper (pipeline/asr/model.py imports this module)."""

    is_multilingual: bool
    num_languages: int

    def encoder(self, mel: np.ndarray) -> np.ndarray: ...

    def logits(self, tokens: np.ndarray, cross_kv: np.ndarray) -> np.ndarray:
        """(B, vocab): the logits after each row's last token, uncached."""


def compression_ratio(text: str) -> float:
    """whisper's repetition measure: the text's UTF-8 length over its zlib-compressed length."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data))


def detect_language(model: LanguageModel, cross_kv: np.ndarray, tokenizer) -> tuple[np.ndarray, list[dict]]:
    """whisper.decoding.detect_language on encoded windows: (the likeliest language token of each window, each
    window's {language code: probability})."""
    if tokenizer.language is None or tokenizer.language_token not in tokenizer.sot_sequence:
        raise ValueError("This model doesn't have language tokens so it can't perform lang id")
    n_audio = cross_kv.shape[0]
    logits = model.logits(np.full((n_audio, 1), tokenizer.sot, dtype=np.int64), cross_kv)
    mask = np.ones(logits.shape[-1], dtype=bool)
    mask[list(tokenizer.all_language_tokens)] = False
    logits[:, mask] = -np.inf
    probs = softmax(logits)
    codes = list(zip(tokenizer.all_language_tokens, tokenizer.all_language_codes))
    return logits.argmax(axis=-1), [{c: float(probs[i, j]) for j, c in codes} for i in range(n_audio)]


class DecodingTask:
    """whisper's DecodingTask: the initial tokens, the rules, the search, the ranking of the finished sequences."""

    def __init__(self, model: LanguageModel, options: DecodingOptions, row_prompts: list[list[int]] | None = None):
        self.model, self.options = model, _verified(options)
        self.tokenizer = tokenizer = get_tokenizer(
            model.is_multilingual, num_languages=model.num_languages, language=options.language or "en",
            task=options.task,
        )  # fmt: skip
        self.n_group = options.beam_size or options.best_of or 1
        self.n_ctx = model.dims.n_text_ctx
        self.sample_len = options.sample_len or model.dims.n_text_ctx // 2
        sot_sequence = tokenizer.sot_sequence
        if options.without_timestamps:
            sot_sequence = tokenizer.sot_sequence_including_notimestamps
        self.initial_tokens = self._initial_tokens(sot_sequence)
        self.sample_begin = len(self.initial_tokens)
        self.sot_index = self.initial_tokens.index(tokenizer.sot)
        self.inference = OVInference(model, sot_index=self.sot_index)
        if options.beam_size is not None:
            self.decoder = BeamSearchDecoder(options.beam_size, tokenizer.eot, self.inference, options.patience)
        elif options.temperature > 0:
            self.decoder = SeededSampler(options.temperature, tokenizer.eot)
        else:
            self.decoder = GreedyDecoder(options.temperature, tokenizer.eot)
        self.logit_filters = []
        if options.suppress_blank:
            self.logit_filters.append(SuppressBlank(tokenizer, self.sample_begin))
        if options.suppress_tokens:
            self.logit_filters.append(SuppressTokens(self._suppress_tokens()))
        if not options.without_timestamps:
            precision = CHUNK_LENGTH / model.dims.n_audio_ctx  # 0.02 s
            index = round(options.max_initial_timestamp / precision) if options.max_initial_timestamp else None
            self.logit_filters.append(TimestampRules(tokenizer, self.sample_begin, index))
        self.row_prompts = None
        if row_prompts is not None and any(row_prompts):
            rows = np.asarray(row_prompts, dtype=np.int64)
            if rows.shape[1] != self.sot_index - 1:  # (initial tokens: sot_prev, the prompt, the SOT sequence)
                raise ValueError("Each row's prompt must be as long as the options' prompt")
            self.row_prompts = rows

    def _initial_tokens(self, sot_sequence) -> tuple[int, ...]:
        tokens, options, tokenizer = list(sot_sequence), self.options, self.tokenizer
        if prefix := options.prefix:
            prefix_tokens = tokenizer.encode(" " + prefix.strip()) if isinstance(prefix, str) else prefix
            tokens += prefix_tokens[-(self.n_ctx // 2 - self.sample_len) :]
        if prompt := options.prompt:
            prompt_tokens = tokenizer.encode(" " + prompt.strip()) if isinstance(prompt, str) else prompt
            tokens = [tokenizer.sot_prev, *prompt_tokens[-(self.n_ctx // 2 - 1) :], *tokens]
        return tuple(tokens)

    def _suppress_tokens(self) -> tuple[int, ...]:
        suppress, tokenizer = self.options.suppress_tokens, self.tokenizer
        suppress = [int(t) for t in suppress.split(",")] if isinstance(suppress, str) else list(suppress)
        if -1 in suppress:
            suppress = [t for t in suppress if t >= 0] + list(tokenizer.non_speech_tokens)
        suppress += [tokenizer.transcribe, tokenizer.translate, tokenizer.sot, tokenizer.sot_prev, tokenizer.sot_lm]
        if tokenizer.no_speech is not None:
            suppress.append(tokenizer.no_speech)  # (its probability is read apart)
        return tuple(sorted(set(suppress)))

    def _main_loop(self, cross_kv: np.ndarray, tokens: np.ndarray):
        """whisper's steps over all rows; once the first or last windows of a batch have ended, the steps go on with
        the windows between (their rows as whisper would leave them: only end tokens follow, or nothing read)."""
        group, eot = self.n_group, self.tokenizer.eot
        sum_logprobs = np.zeros(tokens.shape[0], dtype=np.float32)
        no_speech_probs = [np.nan] * tokens.shape[0]
        kept: dict[int, np.ndarray] = {}  # row -> its tokens when its window left the batch
        first, sums = 0, sum_logprobs  # the first window still decoded; its rows' sums (a view: updated in place)
        try:
            for i in range(self.sample_len):
                logits, at_sot = self.inference.logits(tokens, cross_kv)
                if i == 0 and self.tokenizer.no_speech is not None:
                    no_speech_probs = softmax(at_sot)[:, self.tokenizer.no_speech].tolist()
                logprobs = None  # (the timestamp rules, the last filter, give the log-softmax they computed)
                for logit_filter in self.logit_filters:
                    logprobs = logit_filter.apply(logits, tokens)
                tokens, completed = self.decoder.update(tokens, logits, sums, logprobs)
                if completed or tokens.shape[-1] > self.n_ctx:
                    break
                searching = np.flatnonzero(~self.decoder.ended(tokens, len(tokens) // group))
                lo, hi = searching[0], searching[-1] + 1  # (not completed: some window searches)
                if lo > 0 or hi < len(tokens) // group:
                    rows = slice(lo * group, hi * group)
                    for r in [*range(rows.start), *range(rows.stop, len(tokens))]:
                        kept[first * group + r] = tokens[r]
                    first += lo
                    tokens, sums = tokens[rows], sums[rows]
                    self.inference.narrow(first, first + hi - lo, rows)
                    self.decoder.narrow(first)
        finally:
            self.inference.cleanup_caching()
        if not kept:
            return tokens, sum_logprobs, no_speech_probs
        full = np.full((len(sum_logprobs), tokens.shape[1]), eot, dtype=tokens.dtype)
        full[first * group : first * group + len(tokens)] = tokens
        for r, row in kept.items():
            full[r, : len(row)] = row
        return full, sum_logprobs, no_speech_probs

    def run(self, mel: np.ndarray) -> list[DecodingResult]:
        """Decode (n_audio, n_mels, 3000) mel spectrograms: a result per window."""
        self.decoder.reset()
        tokenizer, n_audio = self.tokenizer, mel.shape[0]
        cross_kv = self.model.encoder(mel)  # one row per window: the decoder reads it once for all its beams
        tokens = np.tile(np.asarray(self.initial_tokens, dtype=np.int64), (n_audio, 1))
        if self.row_prompts is not None:
            tokens[:, 1 : self.sot_index] = self.row_prompts
        languages, language_probs = [self.options.language] * n_audio, None
        if self.options.language is None or self.options.task == "lang_id":
            language_tokens, language_probs = detect_language(self.model, cross_kv, tokenizer)
            languages = [max(probs, key=probs.get) for probs in language_probs]
            if self.options.language is None:
                tokens[:, self.sot_index + 1] = language_tokens
        if self.options.task == "lang_id":
            return [
                DecodingResult(language=lang, language_probs=probs) for lang, probs in zip(languages, language_probs)
            ]
        tokens = np.repeat(tokens, self.n_group, axis=0)  # a row per beam or sample
        tokens, sum_logprobs, no_speech_probs = self._main_loop(cross_kv, tokens)
        no_speech_probs = no_speech_probs[:: self.n_group]
        candidates, sums = self.decoder.finalize(
            tokens.reshape(n_audio, self.n_group, -1), sum_logprobs.reshape(n_audio, self.n_group)
        )
        candidates = [[t[self.sample_begin : np.flatnonzero(t == tokenizer.eot)[0]] for t in s] for s in candidates]
        selected = _ranked(candidates, sums, self.options.length_penalty)
        results = []
        for i, (group, scores) in enumerate(zip(candidates, sums)):
            chosen = group[selected[i]].tolist()
            text = tokenizer.decode(chosen).strip()
            results.append(DecodingResult(
                language=languages[i], tokens=chosen, text=text, avg_logprob=scores[selected[i]] / (len(chosen) + 1),
                no_speech_prob=no_speech_probs[i], temperature=self.options.temperature,
                compression_ratio=compression_ratio(text),
            ))  # fmt: skip
        return results


def _ranked(tokens: list[list[np.ndarray]], sum_logprobs: list[list[float]], length_penalty: float | None) -> list[int]:
    """whisper's MaximumLikelihoodRanker: each group's best sequence by log probability over its length penalty."""

    def penalty(length: int) -> float:
        return length if length_penalty is None else ((5 + length) / 6) ** length_penalty  # (Google NMT's)

    return [
        int(np.argmax([lp / penalty(len(t)) for t, lp in zip(group, lps)])) for group, lps in zip(tokens, sum_logprobs)
    ]


def _verified(options: DecodingOptions) -> DecodingOptions:
    if options.beam_size is not None and options.best_of is not None:
        raise ValueError("beam_size and best_of can't be given together")
    if options.temperature == 0 and options.best_of is not None:
        raise ValueError("best_of with greedy sampling (T=0) is not compatible")
    if options.patience is not None and options.beam_size is None:
        raise ValueError("patience requires beam_size to be given")
    if options.length_penalty is not None and not 0 <= options.length_penalty <= 1:
        raise ValueError("length_penalty (alpha) should be a value between 0 and 1")
    return options
