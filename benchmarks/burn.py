"""Burn-in speed against transcription speed, on the same ~10-minute 720p video, in one run.

    python benchmarks/burn.py [--eval-dir ../shared/eval] [--presets veryfast,superfast]

The video: the English clips of ../shared/eval joined (9.2 min of speech, repeated up to --minutes) under a 1280x720 30 fps test pattern
(testsrc2: moving, noisy, harder for x264 than most real footage). Prints a table: transcription (Whisper base,
beam 5), then burn-in as a 60-second preview and of the whole video with the default settings, with the spoken word
lit up (--highlight-words: an event per word for libass), and with other presets.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.longform import compose_eval  # noqa: E402
from pipeline.asr.cache import load_model  # noqa: E402
from pipeline.cpu import cpu  # noqa: E402
from pipeline.jobs.subtitling import subtitle_file  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE, ffmpeg_exe, probe  # noqa: E402
from pipeline.media.video import BurnOptions, Style, burn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def make_video(eval_dir: Path, out: Path, minutes: float) -> None:
    audio = compose_eval(eval_dir).audio
    audio = np.resize(audio, int(minutes * 60 * SAMPLE_RATE))  # the clips again from the start, up to `minutes`
    pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-f", "s16le", "-ar", str(SAMPLE_RATE), "-ac", "1",
           "-i", "-", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-map", "1:v", "-map", "0:a", "-shortest",
           "-c:v", "libx264", "-preset", "ultrafast", "-crf", "18", "-c:a", "aac", str(out)]  # fmt: skip
    subprocess.run(cmd, input=pcm, check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--presets", default="veryfast,superfast", help="x264 presets to time besides the default")
    p.add_argument("--minutes", type=float, default=10.0)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "talk.mp4"
        make_video(args.eval_dir, video, args.minutes)
        minutes = probe(video).duration / 60
        model = load_model()
        started = time.monotonic()
        result = subtitle_file(video, model)  # (word timestamps: the cue rules need them)
        rows.append(("transcription (base, beam 5)", time.monotonic() - started, None))
        runs = [("burn-in, 60-s preview (default: veryfast)", BurnOptions(preview_seconds=60), Style()),
                ("burn-in, whole video (default: ultrafast)", BurnOptions(), Style())]  # fmt: skip
        runs.append(("burn-in, whole video, words lit up", BurnOptions(), Style(highlight_words=True)))
        presets = [preset for preset in args.presets.split(",") if preset]
        runs += [(f"burn-in, whole video, {preset}", BurnOptions(preset=preset), Style()) for preset in presets]
        for name, options, style in runs:
            out = Path(tmp) / "out.mp4"
            started = time.monotonic()
            burn(video, result.cues, out, language=result.info.language, options=options, style=style)
            rows.append((name, time.monotonic() - started, out.stat().st_size))
            out.unlink()
    print(f"\nCPU: {cpu().describe()}")
    print(f"{minutes:.1f}-minute 1280x720 30 fps video (testsrc2 pattern, real speech)\n")
    print("| step | wall time (s) | output size (MB) |")
    print("|---|---|---|")
    for name, seconds, size in rows:
        print(f"| {name} | {seconds:.1f} | {'' if size is None else f'{size / 1e6:.0f}'} |")


if __name__ == "__main__":
    main()
