"""Media as people bring it, made with our ffmpeg from a real clip: every row gives its subtitles, its preview, and
for video its burn and its soft tracks (issue 50, item 2: an 8-kHz phone MP3 once failed the whole job on its
preview)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import clip_path, ffmpeg

from pipeline.asr.cache import ModelCache
from pipeline.asr.options import ModelOptions
from pipeline.jobs.run import run_job
from pipeline.jobs.spec import JobResult, JobSpec
from pipeline.media.audio import probe
from pipeline.media.video import BurnOptions

CLIP = "en_jfk"
PICTURE = "testsrc2=size=320x240:rate=25"

MEDIA = [
    # (name, ffmpeg's output arguments after the clip's audio [and a picture], has a picture)
    ("phone.mp3", ["-ar", "8000", "-ac", "1", "-c:a", "libmp3lame", "-b:a", "16k"], False),
    ("call.amr", ["-ar", "8000", "-ac", "1", "-c:a", "libopencore_amrnb", "-b:a", "12.2k"], False),
    ("phone-8k.flac", ["-ar", "8000", "-ac", "1"], False),
    ("voice-note.ogg", ["-c:a", "libopus", "-b:a", "24k"], False),
    ("radio.ogg", ["-c:a", "libvorbis"], False),
    ("studio.wav", ["-ar", "96000", "-c:a", "pcm_s24le"], False),
    ("mpeg2.mp3", ["-ar", "22050", "-c:a", "libmp3lame"], False),
    ("surround.m4a", ["-ac", "6", "-c:a", "aac"], False),
    ("talk.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"], True),
    (
        "phone-call.mkv",
        ["-c:v", "libx264", "-preset", "ultrafast", "-ar", "8000", "-ac", "1", "-c:a", "libmp3lame"],
        True,
    ),
    ("hevc.mkv", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-c:a", "aac"], True),
    ("browser.webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus"], True),
    ("av1.mp4", ["-c:v", "libsvtav1", "-preset", "12", "-c:a", "aac"], True),
    ("portrait.mp4", ["-vf", "scale=240:426", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"], True),
    ("rotated.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"], True),  # then marked as turned
    ("odd-size.avi", ["-vf", "scale=321:241", "-c:v", "mpeg4", "-c:a", "libmp3lame"], True),
    ("old.avi", ["-c:v", "msmpeg4", "-c:a", "libmp3lame", "-ar", "22050"], True),
    ("camera.mov", ["-c:v", "prores", "-profile:v", "0", "-c:a", "pcm_s16le"], True),
    (
        "phone.3gp",
        [
            "-vf",
            "scale=176:144",
            "-r",
            "15",
            "-c:v",
            "h263",
            "-ar",
            "8000",
            "-ac",
            "1",
            "-c:a",
            "libopencore_amrnb",
            "-b:a",
            "12.2k",
        ],
        True,
    ),  # fmt: skip
    (
        "vfr.mp4",
        [
            "-vf",
            "setpts='PTS+0.02*sin(N)/TB'",
            "-fps_mode",
            "vfr",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
        ],
        True,
    ),  # fmt: skip
    ("two-tracks.mkv", ["-map", "0:a", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"], True),
    (
        "iphone-hlg.mov",  # HDR as phones record it: HEVC Main 10, BT.2020, HLG
        [
            "-vf",
            "format=yuv420p10le,zscale=pin=bt709:tin=bt709:min=bt709:rin=tv:p=bt2020:t=arib-std-b67:m=bt2020nc:npl=203",
            "-c:v",
            "libx265",
            "-preset",
            "ultrafast",
            "-x265-params",
            "log-level=error:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc",
            "-tag:v",
            "hvc1",
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "arib-std-b67",
            "-colorspace",
            "bt2020nc",
            "-c:a",
            "aac",
        ],
        True,
    ),  # fmt: skip
]


def make(tmp_path, name: str, args: list[str], picture: bool):
    out = tmp_path / name
    ffmpeg_args = ["-t", "6", "-i", str(clip_path(CLIP))]
    if picture:
        ffmpeg_args += ["-f", "lavfi", "-t", "6", "-i", PICTURE, "-map", "1:v", "-map", "0:a"]
    ffmpeg(*ffmpeg_args, *args, "-shortest", str(out))
    if name == "rotated.mp4":  # a phone's portrait video: stored sideways, with a rotation to show it upright
        out.rename(tmp_path / "sideways.mp4")
        ffmpeg("-display_rotation", "90", "-i", str(tmp_path / "sideways.mp4"), "-c", "copy", str(out))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name, args, picture", MEDIA, ids=[m[0] for m in MEDIA])
def test_media_as_people_bring_it(name, args, picture, ov_model, tmp_path):
    media = make(tmp_path, name, args, picture)
    assert probe(media).has_video is picture
    spec = JobSpec(inputs=(media,), formats=("srt",), burn=BurnOptions() if picture else None, soft=picture,
                   preview=True)  # fmt: skip
    spec = replace(spec, model=ModelOptions(precision="f32"))
    result = next(e for e in run_job(spec, tmp_path / "out", ModelCache(loaded={("base", "f32"): ov_model}))
                  if isinstance(e, JobResult))  # fmt: skip
    assert not result.failed, result.failed
    done = result.files[0]
    assert done.notes == ()
    text = done.outputs[0].read_text(encoding="utf-8").lower()
    assert "america" in text  # ("and so my fellow americans": 8-kHz audio loses some of it)
    if picture:
        assert done.burned is not None and probe(done.burned).has_video
        tracks = [p for p in done.outputs if ".subs." in p.name]
        assert tracks and all(probe(p).has_video for p in tracks)
    else:
        assert done.preview is not None and probe(done.preview).has_audio
