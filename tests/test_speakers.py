"""Speaker embeddings (pipeline/speakers.py): Resemblyzer's front end and GE2E encoder, on OpenVINO, on real voices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from conftest import clip_path

from pipeline.media import load_audio
from pipeline.speakers import (
    HOP,
    N_MELS,
    PARTIAL_FRAMES,
    SAMPLE_RATE,
    leveled,
    mel_filterbank,
    partial_starts,
    power_mel,
)


@pytest.mark.parametrize(
    ("seconds", "rate", "starts"),
    [
        (1.0, 1.3, [0]),  # shorter than a partial: one, zero-padded
        (3.0, 1.3, [0, 77, 154]),  # a partial every 0.77 s; the last is 91 % audio
        (2.5, 1.3, [0, 77]),  # the third would be 60 % audio: dropped
        (3.0, 2.0, [0, 50, 100, 150]),  # every 0.5 s
        (0.0, 1.3, [0]),
    ],
)
def test_partial_starts(seconds, rate, starts):
    assert partial_starts(int(seconds * SAMPLE_RATE), rate) == starts


@pytest.mark.parametrize(("dbfs", "after"), [(-50.0, -30.0), (-30.0, -30.0), (-10.0, -10.0), (-3.0, -3.0)])
def test_leveled_raises_quiet_audio_only(dbfs, after):
    noise = np.random.default_rng(0).standard_normal(SAMPLE_RATE).astype(np.float32)
    noise *= 10 ** (dbfs / 20) / np.sqrt(np.mean(noise.astype(np.float64) ** 2))
    out = leveled(noise)
    assert 20 * np.log10(np.sqrt(np.mean(out.astype(np.float64) ** 2))) == pytest.approx(after, abs=0.01)
    assert leveled(np.zeros(100, np.float32)).max() == 0.0  # silence stays silence


# librosa 0.11.0's values (librosa.filters.mel(sr=16000, n_fft=400, n_mels=40), the front end Resemblyzer trained
# with): each band's peak bin, its weight there, and how many bins it covers
@pytest.mark.parametrize(
    ("band", "peak", "weight", "width"),
    [(0, 2, 0.012404520995914936, 3), (10, 20, 0.01187948975712061, 4), (25, 64, 0.005040556192398071, 10),
     (39, 185, 0.0017249403754249215, 28)],
)  # fmt: skip
def test_mel_filterbank_as_librosa(band, peak, weight, width):
    bank = mel_filterbank()
    assert bank.shape == (N_MELS, 201) and (bank >= 0).all()
    assert bank[band].argmax() == peak and (bank[band] > 0).sum() == width
    assert bank[band, peak] == pytest.approx(weight, rel=1e-6)


# librosa 0.11.0's melspectrogram(y, sr=16000, n_fft=400, hop_length=160, n_mels=40) of a real clip: (frame, band, power)
@pytest.mark.parametrize(
    ("frame", "band", "power"),
    [(100, 3, 0.12351875007152557), (300, 10, 0.37000772356987), (500, 20, 1.4474325098490226e-06),
     (700, 35, 2.8141414077254012e-05)],
)  # fmt: skip
def test_power_mel_as_librosa(frame, band, power):
    mel = power_mel(load_audio(clip_path("en_ljs_LJ001-0001")))
    assert mel.shape == (966, N_MELS)
    assert mel[frame, band] == pytest.approx(power, rel=1e-4)


@pytest.mark.parametrize("hz", [300.0, 1000.0, 3000.0])
def test_power_mel_of_a_tone(hz):
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    mel = power_mel(np.sin(2 * np.pi * hz * t).astype(np.float32))
    assert mel.shape == (1 + SAMPLE_RATE // HOP, N_MELS)
    peak_band = mel[50].argmax()
    centre = mel_filterbank()[peak_band].argmax() * SAMPLE_RATE / 400
    assert abs(centre - hz) < 0.12 * hz + 40  # the band around the tone holds its energy


SAME = [
    ("en_ljs_LJ001-0001", "en_ljs_LJ001-0003", "en_ljs_LJ001-0008"),  # LJ Speech: one reader
    ("en_librivox_sas01_0870", "en_librivox_sas01_0880", "en_librivox_sas01_0890"),
]  # one LibriVox reader


@pytest.fixture(scope="module")
def encoder():
    from pipeline.speakers import SpeakerEncoder

    return SpeakerEncoder(threads=2, precision="f32")  # (compared with PyTorch's embeddings)


@pytest.mark.slow
def test_openvino_embeds_as_pytorch(encoder):
    """The exported IR gives the PyTorch model's embeddings on real speech partials."""
    from convert.speaker import load_ge2e

    mel = power_mel(leveled(load_audio(clip_path("en_ls_2412-153948-0000"))))
    partials = np.stack([mel[s : s + PARTIAL_FRAMES] for s in range(0, len(mel) - PARTIAL_FRAMES, 77)])
    with torch.no_grad():
        expected = load_ge2e()(torch.from_numpy(partials)).numpy()
    got = encoder.embed_partials(partials)
    assert got.shape == (len(partials), 256)
    assert np.abs(got - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_the_same_voice_is_closer_than_another(encoder):
    """Real clips: each reader's utterances are closer to each other than to the other reader's or JFK's."""
    voices = {c: encoder.embed(load_audio(clip_path(c))) for group in SAME for c in group}
    voices["en_jfk"] = encoder.embed(load_audio(clip_path("en_jfk")))
    same = [voices[a] @ voices[b] for group in SAME for a, b in itertools.combinations(group, 2)]
    others = [voices[a] @ voices[b] for a, b in itertools.combinations(voices, 2)
              if not any(a in g and b in g for g in SAME)]  # fmt: skip
    assert min(same) > 0.75 and max(others) < 0.65, (same, others)
