"""Speaker embeddings (pipeline/speakers/embeddings.py): Kaldi's fbank front end and the CAM++ encoder, on OpenVINO, on real
voices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from conftest import clip_path

from pipeline.media.audio import load_audio
from pipeline.speakers.embeddings import N_BANKS, N_FFT, SAMPLE_RATE, fbank, features, mel_banks, window_features


@pytest.mark.parametrize(
    ("samples", "frames"),
    [
        (400, 1),  # one 25-ms frame
        (559, 1),  # the second frame would reach past the end (snip_edges)
        (560, 2),
        (16000, 98),  # a second
        (25600, 158),  # a 1.6-s window
        (100, 1),  # under a frame: zero-padded to one
    ],
)
def test_fbank_frames(samples, frames):
    noise = np.random.default_rng(0).standard_normal(samples).astype(np.float32) * 0.1
    assert fbank(noise).shape == (frames, N_BANKS)


# kaldi-native-fbank 1.23.0 (FbankOptions: dither 0, snip_edges, povey window, 80 bins from 20 Hz) of a real clip:
# (frame, bank, log energy)
@pytest.mark.parametrize(
    ("frame", "bank", "energy"),
    [(100, 3, -5.412517070770264), (300, 20, 1.0528408288955688), (500, 45, -9.467495918273926),
     (700, 79, 1.7722444534301758)],
)  # fmt: skip
def test_fbank_as_kaldi(frame, bank, energy):
    banks = fbank(load_audio(clip_path("en_ljs_LJ001-0001")))
    assert banks.shape == (964, N_BANKS)
    assert banks[frame, bank] == pytest.approx(energy, abs=1e-4)


# Kaldi's mel banks (torchaudio.compliance.kaldi.get_mel_banks(80, 512, 16000, 20, 0)): each bank's peak FFT bin, how
# many bins it covers, its weight there
@pytest.mark.parametrize(
    ("bank", "peak", "width", "weight"),
    [(0, 1, 2, 0.5039832471226665), (20, 22, 2, 0.6756398629924079), (50, 88, 7, 0.933366329665284),
     (79, 248, 16, 0.9477717513348195)],
)  # fmt: skip
def test_mel_banks_as_kaldi(bank, peak, width, weight):
    banks = mel_banks()
    assert banks.shape == (N_FFT // 2 + 1, N_BANKS) and (banks >= 0).all() and not banks[-1].any()
    assert banks[:, bank].argmax() == peak and (banks[:, bank] > 0).sum() == width
    assert banks[peak, bank] == pytest.approx(weight, rel=1e-9)


@pytest.mark.parametrize("hz", [300.0, 1000.0, 3000.0])
def test_fbank_of_a_tone(hz):
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    banks = fbank(np.sin(2 * np.pi * hz * t).astype(np.float32) * 0.5)
    centre = mel_banks()[:, banks[50].argmax()].argmax() * SAMPLE_RATE / N_FFT
    assert abs(centre - hz) < 0.1 * hz + 40  # the bank around the tone holds its energy


@pytest.mark.parametrize(
    ("spans", "used"),
    [
        # overlapping windows share one fbank: each gets exactly its own features
        ([(0.0, 1.6), (1.0, 2.6), (1.4, 3.0)], [(0.0, 1.6), (1.0, 2.6), (1.4, 3.0)]),
        # a start between two 10-ms frames takes the nearest frame (at most 5 ms off), its length its own
        ([(0.0, 1.6), (0.504, 2.104)], [(0.0, 1.6), (0.5, 2.1)]),
        ([(0.0, 1.6), (5.0, 6.6)], [(0.0, 1.6), (5.0, 6.6)]),  # apart: each its own
        ([(8.9, 10.5)], [(8.9, 9.6575)]),  # cut at the audio's end (9.6575 s)
        ([(0.0, 1.0), (0.5, 1.1)], [(0.0, 1.0), (0.5, 1.1)]),  # a shorter one inside the union
    ],
)
def test_window_features(spans, used):
    audio = load_audio(clip_path("en_ljs_LJ001-0001"))[: int(9.6575 * SAMPLE_RATE)]
    got = window_features(audio, spans)
    for features_got, (a, b) in zip(got, used, strict=True):
        expected = features(audio[int(round(a * SAMPLE_RATE)) : int(round(b * SAMPLE_RATE))])
        assert features_got.shape == expected.shape and np.abs(features_got - expected).max() < 1e-4


@pytest.fixture(scope="module")
def encoder():
    from pipeline.speakers.embeddings import SpeakerEncoder

    return SpeakerEncoder(threads=2, precision="f32")  # (compared with PyTorch's embeddings)


@pytest.mark.slow
def test_openvino_embeds_as_pytorch(encoder):
    """The exported IR gives the PyTorch model's embeddings on real speech, windows of several lengths."""
    from convert.campplus import load_campplus
    from convert.speaker import WEIGHTS

    audio = load_audio(clip_path("en_ls_2412-153948-0000"))
    spans = [(s, s + 1.6) for s in np.arange(0.0, 8.0, 0.77)] + [(1.0, 1.5), (2.0, 5.0), (0.0, len(audio) / 16000)]
    got = encoder.embed_spans(audio, spans)
    model = load_campplus(WEIGHTS)
    for (start, end), embedding in zip(spans, got):
        window = torch.from_numpy(features(audio[int(start * 16000) : int(end * 16000)]))[None]
        with torch.no_grad():
            expected = model(window).numpy()[0]
        assert embedding @ expected / np.linalg.norm(expected) > 0.99999, (start, end)
    assert got.shape == (len(spans), 192) and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


SAME = [
    ("en_ljs_LJ001-0001", "en_ljs_LJ001-0003", "en_ljs_LJ001-0008"),  # LJ Speech: one reader
    ("en_librivox_sas01_0870", "en_librivox_sas01_0880", "en_librivox_sas01_0890"),
]  # one LibriVox reader


@pytest.mark.slow
def test_the_same_voice_is_closer_than_another(encoder):
    """Real clips: each reader's utterances are closer to each other than to the other reader's or JFK's."""
    voices = {c: encoder.embed(load_audio(clip_path(c))) for group in SAME for c in group}
    voices["en_jfk"] = encoder.embed(load_audio(clip_path("en_jfk")))
    same = [voices[a] @ voices[b] for group in SAME for a, b in itertools.combinations(group, 2)]
    others = [voices[a] @ voices[b] for a, b in itertools.combinations(voices, 2)
              if not any(a in g and b in g for g in SAME)]  # fmt: skip
    assert min(same) > 0.8 and max(others) < 0.4, (same, others)


@pytest.mark.slow
@pytest.mark.parametrize("gain", [0.01, 0.1, 3.0])
def test_a_voice_quieter_or_louder_is_the_same_voice(encoder, gain):
    """The stretch's mean frame is taken away, so the level hardly matters: the same speech 40 dB quieter stays far
    closer to itself than to another voice (only banks near the log floor change)."""
    speech, other = load_audio(clip_path("en_ls_2412-153948-0000")), load_audio(clip_path("en_jfk"))
    scaled = encoder.embed(speech * np.float32(gain))
    assert scaled @ encoder.embed(speech) > 0.85 and scaled @ encoder.embed(other) < 0.3


@pytest.mark.slow
def test_embedding_stops_when_told(encoder):
    import threading

    from pipeline.speakers.embeddings import Stopped

    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped):
        encoder.embed_windows(load_audio(clip_path("en_jfk")), [(0.0, 1.6), (1.0, 2.6)], part=0.4, hop=0.2, stop=stop)
