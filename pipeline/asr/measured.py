"""The int8 and auto precisions' encoder setting chosen by measurement on this machine, once (issue 52).

CPU flags do not tell which setting is fastest: on one Xeon with AVX512-BF16 and no AMX a bf16 encoder is slower than
f32, on an EPYC Zen 4 with the same flags it is faster. So on a model's first use here, its encoder is compiled with
each precision hint the CPU offers, timed on a real window of speech, and the fastest whose output stays within
AUTO_MAX_ERROR of the same weights computed in f32 is kept in a small file beside the compiled blobs: named by
OpenVINO's version, the CPU's model and flags (pipeline.asr.compiled.compiled_dir), the IR, the thread count and the
precision. Later loads read it. `auto` also tries the encoder's f16 weights, kept beside the int8 IR's own: computed in
bf16 they can be faster than int8 weights in f32 and nearer to f32 (docs/engine.md, *Precision*).
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.asr.compiled import compiled_cache_dir, compiled_dir, compiling, cpu_config
from pipeline.asr.precision import Precision
from pipeline.cpu import cpu
from pipeline.timings import timed
from pipeline.tuning import AUTO_MAX_ERROR, AUTO_PASSES

if TYPE_CHECKING:
    import openvino as ov

log = logging.getLogger("subtitle-generator")
SPEECH = Path(__file__).parent / "data" / "speech.flac"  # LibriSpeech 61-70968-0000, CC BY 4.0 (data/README.md)
MEASURING = "Choosing the fastest settings for this CPU (once)"


@dataclass(frozen=True, kw_only=True)
class Trial:
    """One encoder setting as measured: its weights and hint, milliseconds a window, and its output's error against
    the same weights computed in f32."""

    weights: str
    hint: str
    ms: float
    error: float


@dataclass(frozen=True, kw_only=True)
class Choice:
    """The setting kept, and every trial it was chosen from."""

    weights: str
    hint: str
    trials: tuple[Trial, ...]

    def describe(self) -> str:
        tried = ", ".join(f"{t.weights} weights in {t.hint} {t.ms:.0f} ms (error {t.error:.1e})" for t in self.trials)
        return (
            f"encoder {self.weights} weights in {self.hint}: the fastest within {AUTO_MAX_ERROR:g} of its weights in "
            f"f32 on this CPU ({tried})"
        )


def hints() -> list[str]:
    """The encoder precision hints this CPU can run, f32 (the reference) first."""
    import openvino as ov

    out = ["f32"]
    if cpu().has_bf16:
        out.append("bf16")
    if "FP16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        out.append("f16")
    return out


def choice_file(ir_dir: Path, threads: int, name: str) -> Path:
    return compiled_dir(f"choice-{ir_dir.name}-{threads}t") / f"encoder-{name}.json"


def measured_precision(
    ir_dir: Path, precision: Precision, *, threads: int, progress=lambda message: None
) -> tuple[Precision, Choice]:
    """`precision` (int8 weights) with the encoder setting measured fastest here: read from its file, or measured and
    written there. Only the encoder is chosen: the decoder stays f32 (bf16 gave NaN logits in sampled decodes)."""
    path = choice_file(ir_dir, threads, precision.name)
    choice = saved_choice(path, precision)
    if choice is None:
        progress(MEASURING)
        choice = measure(ir_dir, precision, threads=threads)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{time.monotonic_ns()}.tmp")  # (whole or not at all, also with two processes)
        trials = [asdict(t) for t in choice.trials]
        tmp.write_text(json.dumps({"weights": choice.weights, "hint": choice.hint, "bound": AUTO_MAX_ERROR,
                                   "trials": trials}))  # fmt: skip
        tmp.replace(path)
        log.info("%s", choice.describe())
    return _setting(precision, choice.weights, choice.hint), choice


def saved_choice(path: Path, precision: Precision) -> Choice | None:
    """The choice saved in `path`, or None when there is none to trust: missing or half written, made under another
    bound, or naming weights `precision` does not run or a hint this CPU does not."""
    try:
        saved = json.loads(path.read_text())
        choice = Choice(weights=saved["weights"], hint=saved["hint"], trials=tuple(Trial(**t) for t in saved["trials"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    usable = choice.hint in hints() and choice.weights in precision.measured
    return choice if usable and saved.get("bound") == AUTO_MAX_ERROR else None


def _setting(precision: Precision, weights: str, hint: str) -> Precision:
    """`precision` with its encoder run with `weights` (None when they are the IR's own) and `hint`."""
    return replace(precision, encoder=hint, encoder_weights=None if weights == precision.weights else weights)


@timed("settings measured")
def measure(ir_dir: Path, precision: Precision, *, threads: int) -> Choice:
    """Each weights and hint's encoder timed on a real window, and compared with the same weights' f32 output."""
    mel = speech_window(n_mels=_n_mels(ir_dir))
    trials = []
    for weights in precision.measured:
        reference = None
        for hint in hints():
            try:
                ms, output = _timed_pass(ir_dir, _setting(precision, weights, hint), threads=threads, mel=mel)
            except RuntimeError as e:  # (a hint the plugin lists but cannot compile this IR with: not a candidate)
                if reference is None and weights == precision.weights:
                    raise
                log.warning("encoder %s in %s not measured: %s", weights, hint, str(e).splitlines()[0] if str(e) else e)
                if reference is None:
                    break  # (no f32 output to compare these weights' other hints with)
                continue
            reference = output if reference is None else reference
            error = float(np.linalg.norm(output - reference) / np.linalg.norm(reference))
            trials.append(Trial(weights=weights, hint=hint, ms=ms, error=error))
    kept = fastest(trials)
    return Choice(weights=kept.weights, hint=kept.hint, trials=tuple(trials))


def _timed_pass(ir_dir: Path, precision: Precision, *, threads: int, mel: np.ndarray) -> tuple[float, np.ndarray]:
    """The encoder compiled with `precision`'s weights and hint (into the folder that precision's load reads): the
    median ms of AUTO_PASSES passes after one not counted, and its output."""
    import openvino as ov

    core, folder = ov.Core(), compiled_cache_dir(precision, threads)
    core.set_property({"CACHE_DIR": str(folder)})
    config = {**cpu_config(threads), "INFERENCE_PRECISION_HINT": precision.encoder}
    with compiling(folder):
        compiled = core.compile_model(ir_dir / precision.encoder_xml, "CPU", config)
    seconds, output = median_pass(compiled, mel, passes=AUTO_PASSES)
    return round(1000 * seconds, 1), output


def median_pass(compiled: ov.CompiledModel, mel: np.ndarray, *, passes: int) -> tuple[float, np.ndarray]:
    """The median seconds of `passes` passes of the compiled encoder on one request, after one not counted, and its
    output (benchmarks/encoder.py times its settings with it too)."""
    request = compiled.create_infer_request()
    request.infer({0: mel})
    seconds = []
    for _ in range(passes):
        started = time.perf_counter()
        request.infer({0: mel})
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), request.get_tensor("cross_kv").data.copy()


def fastest(trials: list[Trial]) -> Trial:
    """The fastest trial within AUTO_MAX_ERROR of its weights in f32 (the first trial, f32 itself, always passes)."""
    return min([t for t in trials[1:] if t.error <= AUTO_MAX_ERROR] + trials[:1], key=lambda t: t.ms)


def speech_window(n_mels: int = 80) -> np.ndarray:
    """(1, n_mels, 3000): the log-mel window of the packaged speech clip, padded to 30 s as whisper pads it."""
    from pipeline.asr.mel import log_mel_spectrogram, pad_or_trim
    from pipeline.media.audio import load_audio

    return log_mel_spectrogram(pad_or_trim(load_audio(SPEECH)), n_mels)[None]


def _n_mels(ir_dir: Path) -> int:
    return json.loads((ir_dir / "model.json").read_text())["dims"]["n_mels"]
