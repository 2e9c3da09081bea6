"""Subtitle generation: audio extraction, OpenVINO Whisper inference, subtitle writing."""
