"""Media from a link: YouTube and the other sites yt-dlp supports, or a direct link to a media file.

`download(url, dest_dir, limits)` asks the site for the title, duration and size first and refuses what is over the
limits before any media byte is fetched; a download that turns out bigger than announced is stopped as soon as it
passes the limit. Files are saved under a name we choose (`media.<ext>`), never one derived from the page.

Links to private network addresses (localhost, 10.x, 192.168.x, ...) are refused unless `allow_private` is set:
a server exposed on a network must not become a proxy into the network it sits in. The link is checked first (a
quick, clear refusal); then every connection the download makes goes through pipeline.media.egress, which checks the
address it really connects to, on every hop. A server also bounds a download's wall time and its slowest rate, and
may allow only some of yt-dlp's extractors (`extractors`).
"""

from __future__ import annotations

import contextlib
import re
import shlex
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.errors import SubtitleError
from pipeline.files import work_folder
from pipeline.media.audio import Limits, check_limits, ffmpeg_exe, human_size
from pipeline.media.egress import EgressProxy, is_public_address

# The extractors a server allows by default (yt-dlp's names, as regular expressions): the big video sites and
# `generic` for direct links to media files and pages that embed them.
SITES = ("youtube", "vimeo", "dailymotion", "twitch:vod", "soundcloud", "archiveorg", "ted", "generic")
PRIVATE = "Links to private network addresses are turned off on this server: upload the file"
_SLOW_GRACE = 30.0  # seconds a download may run before its rate is judged


@dataclass(frozen=True)
class Download:
    path: Path
    title: str
    duration: float | None  # seconds, when the site says
    url: str


# Best single file with audio and video up to 720p (a preview needs no more), mp4 first; else video+audio merged.
_FORMAT = "b[height<=720][ext=mp4]/b[height<=720]/bv*[height<=720]+ba/b/bv*+ba/ba"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# yt-dlp's error text -> what to tell the person, first match wins.
_MESSAGES = (
    (re.compile(r"HTTP Error 404|404: Not Found", re.I), "The link gives 404 Not Found: check the URL"),
    (re.compile(r"HTTP Error 40[13]", re.I), "The site refused access to this link (private or sign-in only)"),
    (re.compile(r"private video|members-only|join this channel", re.I), "This video is private: use a public link"),
    (re.compile(r"sign in to confirm your age|age-restricted", re.I), "This video is age-restricted: upload the file"),
    (re.compile(r"sign in to confirm you.re not a bot", re.I), "The site asks for a sign-in: upload the file"),
    (
        re.compile(r"video unavailable|not available|has been removed|no longer available", re.I),
        "This video is unavailable: it may be removed or blocked in this region",
    ),  # fmt: skip
    (re.compile(r"live event|is live|premieres in", re.I), "Live streams can't be subtitled: wait for the recording"),
    (
        re.compile(r"unsupported url", re.I),
        "No video found at that link: paste a video page or a direct link to a media file",
    ),  # fmt: skip
    (
        re.compile(r"getaddrinfo|name or service|resolve|connection refused|timed out|unreachable", re.I),
        "This machine could not reach {host}: check the link, or the network",
    ),  # fmt: skip
)


def download(
    url: str,
    dest_dir: Path,
    limits: Limits = Limits(),
    progress: Callable[[float | None, str], None] = lambda fraction, message: None,
    allow_private: bool = False,
    extractors: tuple[str, ...] | None = None,
    public: Callable[[str], bool] = is_public_address,
) -> Download:
    """Fetch the media behind `url` into `dest_dir`; raise SubtitleError with a message a person can act on.
    `extractors`: the yt-dlp extractors allowed (regular expressions, see SITES); None: all. `public`: which
    addresses count as public (the tests stand in for the internet on loopback)."""
    import yt_dlp  # slow to import; only needed for links

    url = url.strip()
    check_url(url, allow_private, public)
    dest_dir.mkdir(parents=True, exist_ok=True)
    too_big: list[SubtitleError] = []
    sizes: dict[str, int] = {}  # per downloaded file: video and audio may come separately, to be merged
    started = time.monotonic()
    deadline = started + limits.download_seconds

    def hook(d: dict) -> None:
        total = d.get("total_bytes") or d.get("total_bytes_estimate")
        done = d.get("downloaded_bytes") or 0
        sizes[d.get("filename") or ""] = max(done, total or 0)
        elapsed = time.monotonic() - started
        try:
            if sum(sizes.values()) > limits.max_bytes:
                check_limits("The media", limits, size=sum(sizes.values()))
            if time.monotonic() > deadline:
                raise SubtitleError(f"The download took longer than {limits.download_seconds / 60:.0f} minutes")
            if elapsed > _SLOW_GRACE and sum(sizes.values()) / elapsed < limits.min_download_rate:
                raise SubtitleError(
                    f"The site sends the media slower than {human_size(limits.min_download_rate)}/s: upload the file"
                )
        except SubtitleError as e:
            too_big.append(e)
            raise
        if d.get("status") == "downloading":
            progress(
                done / total if total else None,
                f"Downloading: {human_size(done)}" + (f" of {human_size(total)}" if total else ""),
            )

    options = {
        "format": _FORMAT,
        "outtmpl": {"default": str(dest_dir / "media.%(ext)s")},
        "noplaylist": True,
        "extract_flat": "in_playlist",  # a playlist is refused without looking at its entries
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "logger": _QuietLogger(),
        "progress_hooks": [hook],
        "socket_timeout": 30,
        "retries": 2,
        "merge_output_format": "mp4",
        "ffmpeg_location": ffmpeg_exe(),
        "cachedir": False,
        "js_runtimes": _js_runtimes(),
        "overwrites": True,
    }
    if extractors is not None:
        options["allowed_extractors"] = list(extractors)
    egress = None if allow_private else EgressProxy(public, deadline)  # every hop's address is checked
    try:
        with (
            _through(egress, dest_dir) if egress else contextlib.nullcontext({}) as routed,
            yt_dlp.YoutubeDL({**options, **routed}) as ydl,
        ):
            progress(None, "Looking up the link")
            info = ydl.extract_info(url, download=False)
            if info.get("_type") in ("playlist", "multi_video"):
                raise SubtitleError("That link is a playlist: paste the link of a single video")
            if info.get("is_live"):
                raise SubtitleError("Live streams can't be subtitled: wait for the recording")
            duration = info.get("duration")
            check_limits("The media", limits, size=_announced_size(info), duration=duration)
            for media_url in _media_urls(info):  # where the bytes come from may be another host than the page
                check_url(media_url, allow_private, public)
            info = ydl.process_ie_result(info, download=True)
    except BaseException as e:
        for partial in dest_dir.glob("media.*"):  # .part files and fragments of an aborted download
            partial.unlink(missing_ok=True)
        if isinstance(e, SubtitleError | KeyboardInterrupt) or not isinstance(e, Exception):
            raise
        if too_big:  # our hook's exception comes back wrapped in yt-dlp's DownloadError
            raise too_big[-1] from None
        if egress is not None and egress.refused:
            raise SubtitleError(PRIVATE) from None
        if time.monotonic() > deadline:
            raise SubtitleError(f"The download took longer than {limits.download_seconds / 60:.0f} minutes") from None
        raise SubtitleError(explain(str(e), urlsplit(url).hostname or "the site")) from None
    files = [Path(d["filepath"]) for d in info.get("requested_downloads", []) if d.get("filepath")]
    files = [f for f in files if f.is_file()]
    if not files:
        raise SubtitleError("The link gave no media file: paste a video page or a direct link to a media file")
    return Download(files[0], str(info.get("title") or urlsplit(url).path.rsplit("/", 1)[-1] or url), duration, url)


@contextlib.contextmanager
def _through(egress: EgressProxy, folder: Path) -> Iterator[dict]:
    """yt-dlp's options that send every connection of the download through `egress`, also those of the ffmpeg it
    starts for some streams (HLS with SAMPLE-AES, ...). yt-dlp gives that ffmpeg the proxy only as `http_proxy` in a
    copy of our environment, where `no_proxy` would send the hosts it names around the proxy (ffmpeg honours it): so
    yt-dlp runs a wrapper named `ffmpeg` (a name yt-dlp recognises as ffmpeg) that sets the proxy itself, drops
    no_proxy and starts the real one. (deno, which yt-dlp starts for YouTube, runs without --allow-net: no network.)"""
    with egress, work_folder("egress-ffmpeg", folder) as bin_dir:
        proxy = shlex.quote(egress.url)
        wrapper = bin_dir / "ffmpeg"
        wrapper.write_text(
            "#!/bin/sh\nunset no_proxy NO_PROXY\n"
            f"export http_proxy={proxy} https_proxy={proxy} HTTP_PROXY={proxy} HTTPS_PROXY={proxy}\n"
            f'exec {shlex.quote(ffmpeg_exe())} "$@"\n',
            encoding="utf-8",
        )
        wrapper.chmod(0o700)
        yield {"proxy": egress.url, "ffmpeg_location": str(wrapper)}


def check_url(url: str, allow_private: bool = False, public: Callable[[str], bool] = is_public_address) -> None:
    """Refuse what is not an http(s) link, and links to private addresses unless they are allowed (a quick, clear
    refusal; the egress proxy checks every connection the download then makes)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise SubtitleError("That is not a valid link: paste a link that starts with http:// or https://") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubtitleError("Paste a link that starts with http:// or https://")
    if allow_private:
        return
    try:
        addresses = {a[4][0] for a in socket.getaddrinfo(parts.hostname, port or 443, type=socket.SOCK_STREAM)}
    except (socket.gaierror, UnicodeError):
        raise SubtitleError(f"This machine could not reach {parts.hostname}: check the link, or the network") from None
    if not all(public(a) for a in addresses):
        raise SubtitleError(PRIVATE)


def _media_urls(info: dict) -> list[str]:
    formats = info.get("requested_formats") or [info]
    return [f["url"] for f in formats if f.get("url")]


def _announced_size(info: dict) -> int | None:
    formats = info.get("requested_formats") or [info]
    sizes = [f.get("filesize") or f.get("filesize_approx") for f in formats]
    return sum(sizes) if all(sizes) else None


def explain(message: str, host: str = "the site") -> str:
    """yt-dlp's error text -> one line a person can act on."""
    message = _ANSI.sub("", message).removeprefix("ERROR: ").strip()
    for pattern, human in _MESSAGES:
        if pattern.search(message):
            return human.format(host=host)
    message = re.sub(r"^\[[\w:]+\] [\w-]+: ", "", message).splitlines()[0] if message else "unknown error"
    return f"Could not download that link ({message[:200]})"


def _js_runtimes() -> dict:
    """YouTube needs a JavaScript runtime; the `deno` wheel ships one inside the venv (not always on PATH)."""
    try:
        import deno

        return {"deno": {"path": deno.find_deno_bin()}}
    except (ImportError, FileNotFoundError):
        return {"deno": {}}


class _QuietLogger:
    """yt-dlp logs to stderr by default; its errors reach us as exceptions, so the rest is dropped."""

    def debug(self, message: str) -> None:
        pass

    info = warning = debug

    def error(self, message: str) -> None:
        pass
