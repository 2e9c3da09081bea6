"""The web server's command line (python app.py --help): where it listens, what it offers, what it allows."""

from __future__ import annotations

import argparse
import os

from pipeline.jobs.executors import add_arguments
from pipeline.media.audio import Limits
from pipeline.media.download import SITES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Subtitle generator web app (Gradio).", formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    env = os.environ.get
    p.add_argument("--host", default=env("GRADIO_SERVER_NAME", "127.0.0.1"), help="address to listen on")
    p.add_argument("--port", type=int, default=int(env("GRADIO_SERVER_PORT", "7860")), help="port to listen on")
    p.add_argument(
        "--model",
        action="append",
        help="model to offer (repeatable; the first is the default): a name, a .pt file or a faster-whisper "
        "directory. The embedded base and any models found on this machine are always offered",
    )
    p.add_argument("--share", action="store_true", help="also serve on a public gradio.live link")
    p.add_argument("--max-file-size", type=float, default=2048, metavar="MB", help="largest upload or download")
    p.add_argument(
        "--max-job-size",
        type=float,
        default=Limits.max_job_bytes / 1e6,
        metavar="MB",
        help="video one job may write (burned-in, soft-subtitled and preview copies, with Gradio's cached copy of "
        "each; a burn counts at its 8 Mbit/s cap: about an hour of whole-video burn-in per 8 GB)",
    )
    p.add_argument("--max-duration", type=float, default=180, metavar="MINUTES", help="longest media accepted")
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="jobs transcribed at once, the rest wait in the queue (default: 1; with --ray, one per worker)",
    )
    p.add_argument("--queue-size", type=int, default=20, help="jobs allowed to wait; more are turned away")
    p.add_argument("--jobs-per-client", type=int, default=2, help="jobs one address may have working or waiting")
    p.add_argument(
        "--allow-private-urls",
        action="store_true",
        help="accept links to localhost/LAN addresses (off by default, also on loopback: behind a reverse proxy, "
        "loopback is the whole network)",
    )
    p.add_argument(
        "--sites",
        default=",".join(SITES),
        help="yt-dlp extractors links may use, comma-separated regular expressions ('all': every one yt-dlp has)",
    )
    add_arguments(p)
    return p.parse_args(argv)
