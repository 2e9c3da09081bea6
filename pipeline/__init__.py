"""Subtitles for video: audio extraction, Whisper on OpenVINO, subtitle files.

from pipeline import load_model, subtitle_file
model = load_model()
result = subtitle_file("talk.mp4", model)     # SubtitleResult: cues, info
segments, info = transcribe(load_audio("talk.mp4"), model)  # lazy segments, as they are decoded
for event in run_job(JobSpec((Path("talk.mp4"), "https://…")), Path("out"), ModelCache()): ...  # the CLI's path

(Each submodule keeps its own name: `pipeline.render` is the burn-in module, `pipeline.subtitles.render` writes a
subtitle format; nothing here is re-exported under a module's name.)
"""

import os

from pipeline import timings  # noqa: F401  (first: its import time is when the imports began)

# torch (whisper's per-step logit rules, the STFT) and OpenVINO share the cores. After each small op, torch's OpenMP
# threads spin, waiting for more work, on the cores OpenVINO's next decoder step needs: a greedy int8 step took
# 6.6 ms in a real decode with them spinning and 4.3 ms without. OpenMP reads this when torch loads it, so it is set
# before anything imports torch (convert/__init__.py does the same); a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pipeline.errors import SubtitleError  # noqa: E402
from pipeline.jobs import (
    JobResult,
    JobSpec,
    Policy,
    SubtitleResult,
    run_job,
    subtitle_audio,
    subtitle_file,
)
from pipeline.media import load_audio, probe
from pipeline.model import ModelCache, ModelOptions, OVWhisper, load_model
from pipeline.outputs import write_outputs
from pipeline.segment import Cue, CueRules, Word
from pipeline.subtitles import FORMATS
from pipeline.transcribe import Segment, TranscribeOptions, TranscriptionInfo, transcribe

__all__ = [
    "FORMATS",
    "Cue",
    "CueRules",
    "JobResult",
    "JobSpec",
    "ModelCache",
    "ModelOptions",
    "OVWhisper",
    "Policy",
    "Segment",
    "SubtitleError",
    "SubtitleResult",
    "TranscribeOptions",
    "TranscriptionInfo",
    "Word",
    "load_audio",
    "load_model",
    "probe",
    "run_job",
    "subtitle_audio",
    "subtitle_file",
    "transcribe",
    "write_outputs",
]
