"""Audio as people bring it: a recording passed through a phone's or an app's codec and decoded back, as the pipeline
decodes an upload (pipeline.media.audio.load_audio). For the benchmarks' --codec: the same reference, other bytes."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.media.audio import SAMPLE_RATE, ffmpeg_exe, load_audio  # noqa: E402

# name: (what it stands for, file suffix, ffmpeg's output options); every one is in imageio-ffmpeg's build
CODECS = {
    "phone-mp3": (
        "an 8-kHz call recorder's MP3 at 16 kbit/s",
        ".mp3",
        ["-ar", "8000", "-c:a", "libmp3lame", "-b:a", "16k"],
    ),
    "amr": (
        "a phone's AMR-NB voice memo, 12.2 kbit/s",
        ".amr",
        ["-ar", "8000", "-c:a", "libopencore_amrnb", "-b:a", "12.2k"],
    ),
    "g711": ("a landline or VoIP line, 8-kHz A-law", ".wav", ["-ar", "8000", "-c:a", "pcm_alaw"]),
    "opus": ("a messaging app's voice note, Opus at 16 kbit/s", ".ogg", ["-c:a", "libopus", "-b:a", "16k"]),
    "aac": ("a phone video's AAC at 32 kbit/s", ".m4a", ["-c:a", "aac", "-b:a", "32k"]),
}


def through(audio: np.ndarray, codec: str) -> np.ndarray:
    """16-kHz mono `audio` encoded by `codec` (CODECS) and decoded back at 16 kHz, cut or padded to its length (an
    encoder's priming and padding are not the recording's)."""
    _, suffix, options = CODECS[codec]
    pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
    with tempfile.TemporaryDirectory(prefix="codec-") as folder:
        coded = Path(folder) / f"out{suffix}"
        command = [ffmpeg_exe(), "-v", "error", "-y", "-f", "s16le", "-ar", str(SAMPLE_RATE), "-ac", "1", "-i", "-"]
        subprocess.run([*command, *options, str(coded)], input=pcm, check=True)
        back = load_audio(coded)
    out = np.zeros(len(audio), np.float32)
    out[: min(len(back), len(audio))] = back[: len(audio)]
    return out
