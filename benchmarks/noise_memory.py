"""Memory of the real web app on the worst input for speaker turns: noise, speakers auto, no voice detection.

    python benchmarks/noise_memory.py [--minutes 20] [--port 7890]

Makes `--minutes` of pink noise (an MP3 of about 1 MB per 10 minutes), starts `python app.py` on loopback, waits for
the model to be compiled (the server's memory settles), sends one /subtitle job with speakers "auto" and voice
detection off, and prints the growth of the resident memory of the server and its children (issue 49, item 1: 20
minutes once grew it by 2.6-3.05 GB, quadratic in the length). Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.load import Client, family, ffmpeg, rss, start_app  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--port", type=int, default=7890)
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="noise-"))
    noise = folder / "noise.mp3"
    ffmpeg("-f", "lavfi", "-i", f"anoisesrc=color=pink:duration={args.minutes * 60}:sample_rate=16000:amplitude=0.3",
           "-ac", "1", "-b:a", "12k", str(noise))  # fmt: skip
    server = start_app(args.port, folder)
    try:
        last = 0
        while abs(rss(family(server.pid)) - last) > 5e6:  # (the model compiles in the background at start)
            last = rss(family(server.pid))
            time.sleep(8)
        base = rss(family(server.pid))
        peak, stop = [base], threading.Event()

        def sample() -> None:
            while not stop.wait(0.5):
                peak[0] = max(peak[0], rss(family(server.pid)))

        threading.Thread(target=sample, daemon=True).start()
        url = f"http://127.0.0.1:{args.port}/"
        info = httpx.get(f"{url}gradio_api/info").json()["named_endpoints"]
        client = Client(url, "127.0.0.1", {k.lstrip("/"): v["parameters"] for k, v in info.items()})
        started = time.monotonic()
        outcome, message = client.call("subtitle", files=[client.upload(noise)], speakers="auto", vad=False)
        stop.set()
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
        print(f"{args.minutes:g} min of noise, speakers auto, no VAD, on {cpu}: {outcome} in "
              f"{time.monotonic() - started:.0f} s; the server and its children: {base / 2**20:.0f} MiB before, "
              f"{peak[0] / 2**20:.0f} MiB at most, grew {(peak[0] - base) / 2**20:.0f} MiB")  # fmt: skip
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
