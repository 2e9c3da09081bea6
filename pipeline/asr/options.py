"""The options of a transcription, light to import (no torch, whisper or OpenVINO): which model, how to decode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.asr.languages import LANGUAGES, TO_LANGUAGE_CODE
from pipeline.asr.precision import resolve_precision
from pipeline.errors import OptionError


@dataclass(frozen=True, kw_only=True)
class ModelOptions:
    model: str = "base"  # a name (tiny … large-v3, turbo), a .pt file, or a faster-whisper directory
    precision: str = "auto"  # "f32", "bf16" (CPUs with AVX512-BF16/AMX), "int8" weights, or "auto": see pipeline.cpu
    threads: int = 0  # CPU threads for inference; 0: the cores this process may use

    def __post_init__(self):
        resolve_precision(self.precision)  # an unknown name, or bf16 on a CPU without it, fails here
        if self.threads < 0:
            raise OptionError("threads", "The thread count must be 0 (all usable cores) or more")


@dataclass(frozen=True, kw_only=True)
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


def normalize_language(language: str | None) -> str | None:
    """'auto'/None -> None; 'English'/'en' -> 'en'; anything else is a SubtitleError."""
    if language is None or language.strip().lower() in ("", "auto"):
        return None
    code = language.strip().lower()
    code = TO_LANGUAGE_CODE.get(code, code)
    if code not in LANGUAGES:
        raise OptionError("language", f"Unknown language {language!r}: use 'auto' or a code such as en, de, es, fr, zh")
    return code
