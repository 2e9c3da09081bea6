"""Subtitles for video: audio extraction, Whisper on OpenVINO, subtitle files.

from pipeline import load_model, subtitle_file
model = load_model()
result = subtitle_file("talk.mp4", model)     # SubtitleResult: cues, info
segments, info = transcribe(load_audio("talk.mp4"), model)  # lazy segments, as they are decoded
for event in run_job(JobSpec(inputs=(Path("talk.mp4"), "https://…")), Path("out"), ModelCache()): ...  # the CLI's path

(Nothing here is re-exported under a module's name: each submodule keeps its own.)
"""

import os

from pipeline import timings  # noqa: F401  (first: its import time is when the imports began)

# In a process that exports a model (convert/, torch) and then decodes, torch's OpenMP threads would spin after each
# op on the cores OpenVINO's decoder steps need. OpenMP reads this when torch loads it, so it is set before anything
# imports torch (convert/__init__.py does the same); a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The names below are loaded on first use (PEP 562): `import pipeline.subtitles.check` must not pay for OpenVINO,
# which only transcription needs.
_EXPORTS = {
    "SubtitleError": "pipeline.errors",
    "JobResult": "pipeline.jobs.spec",
    "JobSpec": "pipeline.jobs.spec",
    "Policy": "pipeline.jobs.spec",
    "SubtitleResult": "pipeline.jobs.spec",
    "run_job": "pipeline.jobs.run",
    "subtitle_audio": "pipeline.jobs.subtitling",
    "subtitle_file": "pipeline.jobs.subtitling",
    "load_audio": "pipeline.media.audio",
    "probe": "pipeline.media.audio",
    "ModelCache": "pipeline.asr.cache",
    "ModelOptions": "pipeline.asr.options",
    "OVWhisper": "pipeline.asr.model",
    "load_model": "pipeline.asr.cache",
    "write_outputs": "pipeline.jobs.outputs",
    "Cue": "pipeline.subtitles.cues",
    "CueRules": "pipeline.subtitles.cues",
    "Word": "pipeline.asr.results",
    "FORMATS": "pipeline.subtitles.write",
    "Segment": "pipeline.asr.results",
    "TranscribeOptions": "pipeline.asr.options",
    "TranscriptionInfo": "pipeline.asr.results",
    "transcribe": "pipeline.asr.transcribe",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # (once)
    return value


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
