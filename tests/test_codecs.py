"""benchmarks/codecs.py: a recording through a phone's or an app's codec, with the real ffmpeg, stays the same
recording on the same timeline (the speaker benchmark keeps its reference), band-limited where the codec is."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import clip_path

from benchmarks.codecs import CODECS, through
from pipeline.media.audio import SAMPLE_RATE, load_audio

pytestmark = pytest.mark.slow  # (the real ffmpeg)

NARROW = {"phone-mp3", "amr", "g711"}  # 8-kHz codecs: nothing above 4 kHz


def _high_share(audio: np.ndarray) -> float:
    """The share of the energy above 4 kHz."""
    power = np.abs(np.fft.rfft(audio)) ** 2
    return float(power[len(power) // 2 :].sum() / power.sum())


@pytest.fixture(scope="module")
def speech():
    return load_audio(clip_path("en_jfk"))[: 6 * SAMPLE_RATE]


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_codec_keeps_the_recording_on_its_timeline(speech, codec):
    coded = through(speech, codec)
    assert coded.shape == speech.shape and coded.dtype == np.float32
    lags = np.arange(-800, 801)  # +-50 ms: the lag at which the two line up best
    best = max(lags, key=lambda k: float(np.dot(speech[800 + k : len(speech) - 800 + k], coded[800:-800])))
    # (an encoder's priming, 50-70 ms, would shift the turns; AMR-NB's own delay is 5 ms)
    assert abs(best) <= 160, f"{codec} shifts the audio by {best / 16:.1f} ms"
    match = np.corrcoef(speech[800:-800], coded[800 - best : len(coded) - 800 - best])[0, 1]
    assert match > 0.5, f"{codec}: correlation {match:.2f}"
    if codec in NARROW:
        assert _high_share(coded) < 0.01 * max(_high_share(speech), 1e-9) + 1e-4
    else:
        assert _high_share(coded) > 0.1 * _high_share(speech)
