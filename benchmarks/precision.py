"""What each precision and cache setting costs in accuracy and buys in speed, clip by clip, in one process.

    python benchmarks/precision.py [--eval-dir ../shared/eval] [--settings f32,bf16,int8,...] [--threads N]

`auto` must pick the fastest setting whose WER stays within 0.3 points of f32 (pipeline/cpu.py). A long recording
is a poor judge of that: one different token early in a window changes the prompt of every window after it, so two
precisions differ by whole sentences for reasons that are not precision. Here every clip of ../shared/eval (56, in
8 languages) is decoded on its own, with the defaults (beam 5, temperature fallback), at each setting:
- f32, bf16, int8: the product's precisions (pipeline/asr/precision.py resolve_precision);
- int8 with the decoder's self-attention cache (KV_CACHE_PRECISION) in bf16, f16 or u8 instead of f32;
- int8 with the cross-attention keys/values (the encoder's output, read by every decoder step) handed to the
  decoder as f16 or bf16 instead of f32.
Columns: English WER and other-language error (WER; characters for Japanese and Chinese), total decode time (not
for the cross-attention rows, whose clips ran on rounded f32 inputs: see CrossKV), and one decoder step (median over 150 steps on a real window, greedy and 5 beams). The CPU model and flags head the
table; times are comparable within one run only.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openvino as ov  # noqa: E402
import torch  # noqa: E402  (bf16 rounding)

from pipeline.asr.cache import load_model  # noqa: E402
from pipeline.asr.compiled import cpu_config  # noqa: E402
from pipeline.asr.mel import log_mel_spectrogram, pad_or_trim  # noqa: E402
from pipeline.asr.model import OVWhisper  # noqa: E402
from pipeline.asr.options import ModelOptions, TranscribeOptions  # noqa: E402
from pipeline.asr.precision import Precision, resolve_precision  # noqa: E402
from pipeline.asr.transcribe import transcribe  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.media.audio import load_audio  # noqa: E402


@dataclass(frozen=True)
class Setting:
    name: str
    precision: Precision
    cross_kv: str = "f32"  # element type the decoder's cross-attention inputs are given in


def settings() -> dict[str, Setting]:
    int8 = resolve_precision("int8")  # (its encoder's hint before a load measures it: pipeline/asr/measured.py)
    table = {name: Setting(name, resolve_precision(name)) for name in ("f32", "int8")}
    table["int8 encoder f32"] = Setting("int8 encoder f32", replace(int8, encoder="f32"))
    if cpu().has_bf16:
        table["bf16"] = Setting("bf16", resolve_precision("bf16"))
        table["int8 encoder bf16"] = Setting("int8 encoder bf16", replace(int8, encoder="bf16"))
    for kv in ("bf16", "f16", "u8"):
        table[f"int8 kv-cache {kv}"] = Setting(f"int8 kv-cache {kv}", replace(int8, kv_cache=kv))
    for cross in ("f16", "bf16"):
        table[f"int8 cross-kv {cross}"] = Setting(f"int8 cross-kv {cross}", int8, cross_kv=cross)
    return table


class CrossKV(OVWhisper):
    """OVWhisper as it would be with the cross-attention keys/values handed to the decoder in f16 or bf16.

    For the step timing, `step_model` is the decoder IR with those inputs in f16/bf16 (a conversion in the graph,
    computed at the decoder's f32). For the WER, the encoder's output is rounded to f16/bf16 and back: the same
    numbers that conversion gives the decoder (the decoding binds f32 keys and values)."""

    def __init__(self, ir_dir: Path, setting: Setting, threads: int, cache: Path):
        super().__init__(ir_dir, setting.precision, threads, cache)
        core = ov.Core()
        ppp = ov.preprocess.PrePostProcessor(core.read_model(ir_dir / "decoder.xml"))
        for i in range(self.dims.n_text_layer):
            for name in "kv":
                ppp.input(f"cross_{name}_{i}").tensor().set_element_type(getattr(ov.Type, setting.cross_kv))
        config = {**cpu_config(threads), "INFERENCE_PRECISION_HINT": setting.precision.decoder,
                  "KV_CACHE_PRECISION": setting.precision.kv_cache}  # fmt: skip
        self.step_model = core.compile_model(ppp.build(), "CPU", config)
        self.cross_type = setting.cross_kv
        self.rounded = {"f16": torch.float16, "bf16": torch.bfloat16}[setting.cross_kv]

    def encoder(self, mel: np.ndarray) -> np.ndarray:
        return torch.from_numpy(np.ascontiguousarray(super().encoder(mel))).to(self.rounded).float().numpy()


def bind_cross(request: ov.InferRequest, cross_kv: np.ndarray, dims, element: str) -> None:
    """The cross-attention inputs, as OVInference binds them on its first step, in `element` (f32, f16, bf16)."""
    heads, size = dims.n_text_head, dims.n_text_state // dims.n_text_head
    kv = torch.from_numpy(np.ascontiguousarray(cross_kv)).reshape(
        cross_kv.shape[0], dims.n_text_layer, 2, heads, dims.n_audio_ctx, size
    )
    for i in range(dims.n_text_layer):
        for j, name in enumerate("kv"):
            part = kv[:, i, j].contiguous()
            if element == "bf16":
                tensor = ov.Tensor(ov.Type.bf16, list(part.shape))
                tensor.data.view(np.int16)[...] = part.to(torch.bfloat16).view(torch.int16).numpy()
            else:
                tensor = ov.Tensor(part.numpy().astype(np.float16 if element == "f16" else np.float32))
            request.set_tensor(f"cross_{name}_{i}", tensor)


def step_ms(model: OVWhisper, cross_kv: np.ndarray, beams: int, steps: int = 150) -> float:
    """Median time of one decoder step after a 40-token prompt, on a real window's cross-attention inputs."""
    compiled = getattr(model, "step_model", model.decoder)
    request = compiled.create_infer_request()
    bind_cross(request, cross_kv, model.dims, getattr(model, "cross_type", "f32"))
    request.reset_state()
    rng = np.random.default_rng(0)
    times = []
    for step in range(steps):
        length = 40 if step == 0 else 1
        request.set_tensor("tokens", ov.Tensor(rng.integers(0, 50000, (beams, length)).astype(np.int64)))
        request.set_tensor("beam_idx", ov.Tensor(np.arange(beams, dtype=np.int32)))
        request.set_tensor("logit_pos", ov.Tensor(np.asarray([length - 1], np.int64)))
        started = time.perf_counter()
        request.infer()
        request.get_tensor("logits").data.copy()
        times.append(time.perf_counter() - started)
    return 1000 * float(np.median(times[1:]))


def error_rate(language: str, reference: str, hypothesis: str) -> tuple[int, int]:
    """(errors, reference length): words, or characters for languages written without spaces."""
    import jiwer
    from whisper.normalizers import BasicTextNormalizer, EnglishTextNormalizer

    norm = EnglishTextNormalizer() if language == "en" else BasicTextNormalizer()
    ref, hyp = norm(reference), norm(hypothesis)
    if language in ("ja", "zh"):
        ref, hyp = " ".join(ref.replace(" ", "")), " ".join(hyp.replace(" ", ""))
    out = jiwer.process_words(ref, hyp)
    return out.substitutions + out.deletions + out.insertions, len(ref.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--settings", default="", help="comma-separated names (default: all)")
    parser.add_argument("--threads", type=int, default=cpu().cores)
    args = parser.parse_args()
    table = settings()
    chosen = [table[name] for name in args.settings.split(",")] if args.settings else list(table.values())
    with open(args.eval_dir / "manifest.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    clips = [(row["language"], row["reference_text"], load_audio(args.eval_dir / row["file"])) for row in rows]
    probe = clips[0][2]

    info = cpu()
    print(f"CPU: {info.describe()}; {args.threads} threads")
    print(f"{len(clips)} clips, {sum(len(c[2]) for c in clips) / 16000:.0f} s, each decoded on its own\n")
    print(
        "| setting | English WER | other languages (WER, CER for ja/zh) | decode time (s) | step greedy (ms) "
        "| step 5 beams (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for setting in chosen:
        with tempfile.TemporaryDirectory(prefix="precision-") as cache:
            # the IR of this weight storage, exported (and cached) as the product does
            base = load_model(ModelOptions(precision=setting.precision.name, threads=args.threads))
            if setting.cross_kv != "f32":
                model = CrossKV(base.ir_dir, setting, args.threads, Path(cache))
            else:
                model = OVWhisper(base.ir_dir, setting.precision, args.threads, Path(cache))
            del base
            errors = {"en": [0, 0], "other": [0, 0]}
            started = time.perf_counter()
            for language, reference, audio in clips:
                segments, _ = transcribe(audio, model, TranscribeOptions(language=language))
                text = " ".join(s.text for s in segments)
                e, n = error_rate(language, reference, text)
                group = errors["en" if language == "en" else "other"]
                group[0] += e
                group[1] += n
            wall = time.perf_counter() - started
            cross_kv = model.encoder(log_mel_spectrogram(pad_or_trim(probe), model.dims.n_mels)[None])
            greedy, beam = step_ms(model, cross_kv, 1), step_ms(model, cross_kv, 5)
        en, other = (100 * e / max(n, 1) for e, n in errors.values())
        # with cross-kv settings the clips ran the usual f32 inputs (rounded): only the step time is theirs
        decode = f"{wall:.1f}" if setting.cross_kv == "f32" else "(f32 inputs)"
        print(f"| {setting.name} | {en:.1f} % | {other:.1f} % | {decode} | {greedy:.2f} | {beam:.2f} |", flush=True)


if __name__ == "__main__":
    main()
