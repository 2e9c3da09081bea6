"""convert/campplus.py: the network's context gate, as 3D-Speaker computes it, and the exported IR at bf16 on real
speech."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import clip_path

from convert.campplus import segment_means
from pipeline.media.audio import load_audio


def _as_3d_speaker(x: torch.Tensor, length: int = 100) -> torch.Tensor:
    """3D-Speaker's CAMLayer.seg_pooling: an average pool with ceil_mode, each segment's mean repeated over it."""
    seg = F.avg_pool1d(x, kernel_size=length, stride=length, ceil_mode=True)
    return seg.unsqueeze(-1).expand(*seg.shape, length).reshape(*seg.shape[:-1], -1)[..., : x.shape[-1]]


@pytest.mark.parametrize(
    ("frames", "segments"),
    [
        (1, 1),
        (79, 1),  # a 1.6-s window: one segment, the mean of all of it
        (100, 1),
        (101, 2),  # a last segment of one frame
        (250, 3),
        (1500, 15),  # a 30-s stretch
    ],
)
def test_segment_means_as_3d_speaker(frames, segments):
    x = torch.randn(2, 8, frames, generator=torch.Generator().manual_seed(frames)) * 5 + 3
    got = segment_means(x)
    assert got.shape == x.shape
    assert torch.allclose(got, _as_3d_speaker(x), atol=1e-5)
    assert len(torch.unique(got[0, 0])) == segments


@pytest.mark.slow
def test_bf16_embeds_as_f32_on_windows_and_whole_clips():
    """At bf16, windows and whole clips of real speech keep the f32 embedding (a cumulative sum in the gate once lost
    it on whole clips: cosine 0.87)."""
    from pipeline.asr.compiled import cpu
    from pipeline.speakers.embeddings import SpeakerEncoder

    if not cpu().has_bf16:
        pytest.skip("this CPU has no native bf16: the encoder runs at f32")
    f32, bf16 = SpeakerEncoder(threads=2, precision="f32"), SpeakerEncoder(threads=2, precision="bf16")
    for clip in ("en_ls_2412-153948-0000", "en_pyannote_call", "en_mfa_acoustic_corpus"):
        audio = load_audio(clip_path(clip))
        spans = [(s, s + 1.6) for s in np.arange(0.0, len(audio) / 16000 - 1.6, 1.0)]
        windows = (f32.embed_spans(audio, spans) * bf16.embed_spans(audio, spans)).sum(axis=1)
        assert windows.min() > 0.99, clip  # (0.997 and more on the EPYC Zen 5)
        assert f32.embed(audio) @ bf16.embed(audio) > 0.995, clip  # (0.9997 and more there; 0.87 before)
