"""Many clients at once against the real web app: does every job finish or get a message, and does memory stay bounded?

    python benchmarks/load.py [--clients 8] [--minutes 5] [--port 7880]

Starts `python app.py --allow-private-urls` on loopback and a local web server for links, then runs `--clients`
clients, each from its own loopback address (127.0.0.10, .11, ...), for `--minutes`. Each picks, in turn, one of:
an uploaded video burned in with lit words; a link; a 2,000-row table made into files and burned; the table checked;
an ASS script made to be slow to draw, burned; speakers on 5 minutes of audio without voice detection; an MKV of
300 MB of attachments described; an ASS file's style read. Samples the resident memory of the server and its
children every 0.5 s. Prints a table: requests by kind and outcome (done, refused with a message, failed without
one), peak memory, and the processes left after the server stops. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import http.server
import itertools
import json
import os
import platform
import random
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.media.audio import ffmpeg_exe  # noqa: E402
from pipeline.subtitles.ass import Style, ass_file  # noqa: E402
from pipeline.subtitles.cues import Cue  # noqa: E402

DATA = ROOT / "tests" / "data"


def ffmpeg(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def make_inputs(folder: Path) -> dict[str, Path]:
    """The media and subtitle files the clients send."""
    out = {"video": folder / "talk.mp4", "long": folder / "long.mp3", "mkv": folder / "attached.mkv",
           "slow": folder / "slow.ass", "styled": folder / "styled.ass"}  # fmt: skip
    ffmpeg("-i", str(DATA / "en_jfk.flac"), "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-map", "1:v",
           "-map", "0:a", "-shortest", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", str(out["video"]))  # fmt: skip
    clips = sorted(DATA.glob("en_*.*"))
    inputs = [a for c in clips for a in ("-i", str(c))]
    ffmpeg(*inputs, "-filter_complex", f"concat=n={len(clips)}:v=0:a=1,aloop=loop=-1:size=2e9,atrim=0:300",
           "-ac", "1", "-ar", "16000", "-b:a", "32k", str(out["long"]))  # fmt: skip
    blobs = []
    for n in range(2):
        blobs.append(folder / f"font{n}.ttf")
        blobs[-1].write_bytes(os.urandom(150 * 2**20))
    ffmpeg("-i", str(out["video"]), "-c", "copy", "-attach", str(blobs[0]), "-attach", str(blobs[1]),
           "-metadata:s:t", "mimetype=application/x-truetype-font", str(out["mkv"]))  # fmt: skip
    for b in blobs:
        b.unlink()
    cues = [Cue(0.5, 10.5, "A line of our own")]
    out["styled"].write_text(ass_file(cues, 640, 360, style=Style(box=True, highlight_words=True)), encoding="utf-8")
    head = ass_file(cues, 640, 360).split("[Events]")[0]
    slow = "".join(f"Dialogue: {i},0:00:00.00,0:00:11.00,Default,,0,0,0,,{{\\blur40\\bord60\\fs200\\t(\\frz360)}}x{i}\n"
                   for i in range(300))  # fmt: skip
    fields = "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
    out["slow"].write_text(head + "[Events]\n" + fields + slow, encoding="utf-8")
    return out


def serve_folder(folder: Path) -> tuple[str, socketserver.TCPServer]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = partial(Quiet, directory=str(folder))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def start_app(port: int, jobs: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(jobs)}
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--allow-private-urls"], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    for _ in range(600):
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the app did not start")


def family(root: int) -> list[int]:
    """`root` and every process under it."""
    children: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
    return total


class Client:
    """One client of the page's API, from its own loopback address."""

    def __init__(self, base: str, address: str, parameters: dict[str, list[dict]]):
        self.base, self.parameters = base, parameters
        self.http = httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=600)

    def upload(self, path: Path) -> dict:
        with open(path, "rb") as f:
            got = self.http.post(f"{self.base}gradio_api/upload", files={"files": (path.name, f)})
        got.raise_for_status()
        return {"path": got.json()[0], "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}

    def call(self, api: str, **named) -> tuple[str, str]:
        """(outcome, message): done, refused (an error with a message), or failed (no message, or not HTTP 200)."""
        data = []
        for p in self.parameters[api]:
            data.append(named.get(p["parameter_name"], p.get("parameter_default")))
        posted = self.http.post(f"{self.base}gradio_api/call/{api}", json={"data": data})
        if posted.status_code != 200:
            return ("refused" if posted.status_code in (413, 503) and posted.text else "failed"), posted.text[:80]
        event = None
        with self.http.stream("GET", f"{self.base}gradio_api/call/{api}/{posted.json()['event_id']}") as got:
            for line in got.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event in ("complete", "error"):
                    data = json.loads(line[6:])
                    if event == "complete":
                        text = " ".join(str(x) for x in data if isinstance(x, str))
                        return ("refused" if "**Error:**" in text else "done"), text[:80]
                    return ("refused" if data else "failed"), str(data)[:80]
        return "failed", "the stream ended"


def actions(files: dict[str, Path], link: str) -> dict:
    table = {"headers": ["Start", "End", "Text"],
             "data": [[f"0:{n // 60:02d}:{n % 60:02d}.000", f"0:{n // 60:02d}:{n % 60:02d}.900", f"Line {n} of ours"]
                      for n in range(2000)]}  # fmt: skip
    return {
        "video, lit words burned": lambda c: c.call(
            "subtitle", files=[c.upload(files["video"])], burn_in="full", highlight_words=True
        ),  # fmt: skip
        "link": lambda c: c.call("subtitle", url=link + files["video"].name),
        "table made and burned": lambda c: c.call(
            "apply_edits", table=table, files=[c.upload(files["video"])], burn_in="full"
        ),  # fmt: skip
        "table checked": lambda c: c.call("check_cues", table=table),
        "slow ASS burned": lambda c: c.call(
            "subtitle", files=[c.upload(files["video"])], subtitles=c.upload(files["slow"]), burn_in="full"
        ),  # fmt: skip
        "speakers, 5 min, no VAD": lambda c: c.call(
            "subtitle", files=[c.upload(files["long"])], speakers="auto", vad=False
        ),  # fmt: skip
        "MKV of attachments described": lambda c: c.call("describe", files=[c.upload(files["mkv"])]),
        "30 files described": lambda c: c.call("describe", files=[c.upload(files["video"])] * 30),
        "ASS style read": lambda c: c.call("style", path=c.upload(files["styled"])),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--port", type=int, default=7880)
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="load-"))
    files = make_inputs(folder)
    link, web = serve_folder(folder)
    jobs = folder / "tmp"
    jobs.mkdir()
    server = start_app(args.port, jobs)
    base = f"http://127.0.0.1:{args.port}/"
    info = httpx.get(f"{base}gradio_api/info").json()["named_endpoints"]
    parameters = {k.lstrip("/"): v["parameters"] for k, v in info.items()}
    kinds = actions(files, link)
    results: Counter = Counter()
    messages: dict[tuple, str] = {}
    seen: set[int] = set()
    peak, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            pids = family(server.pid)
            seen.update(pids)
            peak[0] = max(peak[0], rss(pids))

    def client(n: int) -> None:
        c = Client(base, f"127.0.0.{10 + n}", parameters)
        order = list(kinds)
        random.Random(n).shuffle(order)
        for kind in itertools.cycle(order):
            if stop.is_set():
                return
            try:
                outcome, message = kinds[kind](c)
            except Exception as e:  # (a failure of the server or of this script: counted, never silent)
                outcome, message = "failed", f"{type(e).__name__}: {e}"[:80]
            results[kind, outcome] += 1
            messages.setdefault((kind, outcome), message)

    threading.Thread(target=sample, daemon=True).start()
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(args.clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(args.minutes * 60)
    stop.set()
    for t in threads:
        t.join(600)
    took = time.monotonic() - started
    server.send_signal(signal.SIGINT)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    time.sleep(1)
    left = [pid for pid in seen if pid != server.pid and Path(f"/proc/{pid}").exists()]
    web.shutdown()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    print(
        f"\n{args.clients} clients for {took / 60:.1f} min on {cpu or platform.processor()}, {os.cpu_count()} cores\n"
    )
    print("| request | done | refused with a message | failed | a message |")
    print("|---|---|---|---|---|")
    for kind in kinds:
        got = {o: results[kind, o] for o in ("done", "refused", "failed")}
        example = messages.get((kind, "failed")) or messages.get((kind, "refused")) or ""
        print(f"| {kind} | {got['done']} | {got['refused']} | {got['failed']} | {example.replace('|', '/')} |")
    print(f"\npeak resident memory of the server and its children: {peak[0] / 2**30:.2f} GiB")
    print(f"processes left after the server stopped: {len(left)} {left}")
    print(f"job folders left: {sorted(p.name for p in (jobs / 'subtitle-generator-jobs').iterdir())}")


if __name__ == "__main__":
    main()
