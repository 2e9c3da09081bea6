"""Subtitles for video: audio extraction, Whisper on OpenVINO, subtitle files.

from pipeline import load_model, subtitle_file
model = load_model()
result = subtitle_file("talk.mp4", model)     # SubtitleResult: segments, info
segments, info = transcribe(load_audio("talk.mp4"), model)  # lazy segments, as they are decoded
"""

from pipeline.errors import SubtitleError
from pipeline.jobs import SubtitleResult, subtitle_file, write_outputs
from pipeline.media import load_audio, probe
from pipeline.model import ModelOptions, OVWhisper, load_model
from pipeline.subtitles import FORMATS, render
from pipeline.transcribe import Segment, TranscribeOptions, TranscriptionInfo, Word, transcribe

__all__ = [
    "FORMATS",
    "ModelOptions",
    "OVWhisper",
    "Segment",
    "SubtitleError",
    "SubtitleResult",
    "TranscribeOptions",
    "TranscriptionInfo",
    "Word",
    "load_audio",
    "load_model",
    "probe",
    "render",
    "subtitle_file",
    "transcribe",
    "write_outputs",
]
