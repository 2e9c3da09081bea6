"""What a person waits for in the browser: click → first cue on the page, and click → subtitles ready to download.

    python benchmarks/webapp.py [--eval-dir ../shared/eval] [--minutes 2] [--runs 2] [--screenshot-dir DIR]

Builds a ~2-minute H.264 + AAC video from English clips of ../shared/eval, starts `python app.py` on a loopback port
(the model is compiled before the first run, as the real server does at start), then drives Debian's Chromium with
Playwright: upload, click, watch the cue table. Prints a table. Needs chromium (apt-get install chromium).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.longform import compose_eval  # noqa: E402
from pipeline.media.audio import SAMPLE_RATE, ffmpeg_exe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def make_video(eval_dir: Path, minutes: float, out: Path) -> float:
    audio = compose_eval(eval_dir).audio
    audio = audio[: int(minutes * 60 * SAMPLE_RATE)]
    wav = out.with_suffix(".wav")
    pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-f", "s16le", "-ar", str(SAMPLE_RATE),
           "-ac", "1", "-i", "-", str(wav)]  # fmt: skip
    subprocess.run(cmd, input=pcm, check=True)
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-i", str(wav), "-f", "lavfi", "-i",
           "testsrc2=size=1280x720:rate=25", "-map", "1:v", "-map", "0:a", "-shortest", "-c:v", "libx264",
           "-preset", "veryfast", "-c:a", "aac", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True)
    return len(audio) / SAMPLE_RATE


def start_app(port: int) -> subprocess.Popen:
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)  # fmt: skip
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the app did not start")


def run_once(browser, url: str, video: Path, shots: Path | None, run: int) -> tuple[float, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 1100})
    page.goto(url)
    page.locator("#files input[type=file]").set_input_files(str(video))
    page.locator("#files").get_by_text(video.name).wait_for()
    start = time.monotonic()
    page.locator("#generate").click()
    page.wait_for_function(
        r"() => /\d\d:\d\d:\d\d\.\d{3}/.test(document.querySelector('#cues').innerText)", timeout=600_000, polling=100
    )
    first = time.monotonic() - start
    if shots is not None and run == 0:
        page.wait_for_timeout(3000)
        page.screenshot(path=shots / "screenshot-progress.png", full_page=True)
    page.locator('#downloads a[download$=".srt"]').first.wait_for(timeout=600_000)
    done = time.monotonic() - start
    if shots is not None and run == 0:  # the preview paused on a frame with its subtitle showing
        page.wait_for_function("() => document.querySelector('#preview video')?.readyState >= 2", timeout=30_000)
        page.evaluate("() => { const v = document.querySelector('#preview video'); v.currentTime = 3; }")
        page.wait_for_timeout(1500)
        page.screenshot(path=shots / "screenshot-done.png", full_page=True)
    page.close()
    return first, done


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--port", type=int, default=7899)
    p.add_argument("--screenshot-dir", type=Path, default=None)
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "talk.mp4"
        seconds = make_video(args.eval_dir, args.minutes, video)
        app = start_app(args.port)
        try:
            # the server compiles the default model in the background at start: wait for it like a returning user
            time.sleep(20)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path="/usr/bin/chromium",
                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
                )
                rows = [run_once(browser, f"http://127.0.0.1:{args.port}/", video, args.screenshot_dir, i)
                        for i in range(args.runs)]  # fmt: skip
                browser.close()
        finally:
            app.terminate()
            app.wait()
    print(f"\n{seconds:.0f} s video (1280x720 H.264 + AAC), default options (Whisper base, beam 5), 2 CPU cores\n")
    print("| run | click → first cue | click → SRT ready | real-time factor |")
    print("|---|---|---|---|")
    for i, (first, done) in enumerate(rows, start=1):
        print(f"| {i} | {first:.1f} s | {done:.1f} s | {done / seconds:.2f} |")


if __name__ == "__main__":
    main()
