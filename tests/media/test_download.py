"""Links: what is refused before any download, direct media links from a local HTTP server, and limits."""

from __future__ import annotations

import re

import pytest
from conftest import ENGLISH

from pipeline.asr.cache import ModelCache
from pipeline.errors import SubtitleError
from pipeline.jobs.run import run_job
from pipeline.jobs.spec import JobSpec, Policy
from pipeline.media.audio import Limits, check_limits, hms, human_size
from pipeline.media.download import check_url, download, explain, is_public_address


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.9", False),
        ("192.168.1.10", False),
        ("169.254.169.254", False),  # cloud metadata service
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("::1", False),
        ("fe80::1%eth0", False),
        ("fd00::1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
        ("224.0.0.1", False),
    ],
)
def test_public_addresses(address, public):
    assert is_public_address(address) is public


@pytest.mark.parametrize(
    "url, allow_private, message",
    [
        ("ftp://example.com/a.mp4", True, "starts with http:// or https://"),
        ("file:///etc/passwd", True, "starts with http:// or https://"),
        ("javascript:alert(1)", True, "starts with http:// or https://"),
        ("http://", True, "starts with http:// or https://"),
        ("http://127.0.0.1:8000/a.mp4", False, "private network addresses are turned off"),
        ("http://localhost/a.mp4", False, "private network addresses are turned off"),
        ("http://[::1]/a.mp4", False, "private network addresses are turned off"),
        ("http://192.168.0.1/a.mp4", False, "private network addresses are turned off"),
        ("http://example.com:99999/a.mp4", True, "not a valid link"),
        ("http://[::1/a.mp4", True, "not a valid link"),
    ],
)
def test_refused_links(url, allow_private, message):
    with pytest.raises(SubtitleError, match=message):
        check_url(url, allow_private)


@pytest.mark.parametrize(
    "size, duration, message",
    [
        (None, None, None),
        (1000, 60.0, None),
        (2001, None, r"is 2.0 kB; this server takes up to 2.0 kB: use a smaller file"),
        (None, 3725.0, r"is 1:02:05 long; this server takes up to 1:00: use a shorter one"),
    ],
)
def test_limits(size, duration, message):
    limits = Limits(max_bytes=2000, max_duration=60)
    if message is None:
        check_limits("clip.mp4", limits, size, duration)
    else:
        with pytest.raises(SubtitleError, match=message):
            check_limits("clip.mp4", limits, size, duration)


@pytest.mark.parametrize(
    "seconds, text", [(0, "0:00"), (59.6, "1:00"), (61, "1:01"), (3600, "1:00:00"), (36005, "10:00:05")]
)
def test_hms(seconds, text):
    assert hms(seconds) == text


@pytest.mark.parametrize(
    "n, text", [(0, "0 bytes"), (999, "999 bytes"), (1500, "1.5 kB"), (2.5e6, "2.5 MB"), (3e9, "3.0 GB")]
)
def test_human_size(n, text):
    assert human_size(n) == text


def test_direct_link_downloads_the_file(media_server, videos, tmp_path):
    seen = []
    got = download(
        f"{media_server}/{ENGLISH[0]}.mp4", tmp_path, allow_private=True, progress=lambda f, m: seen.append((f, m))
    )
    assert got.path.parent == tmp_path and got.path.name == "media.mp4"  # our name, not the page's
    assert got.path.read_bytes() == videos[ENGLISH[0]].read_bytes()
    assert got.title == ENGLISH[0]
    assert any(m.startswith("Downloading") for _, m in seen) and seen[-1][0] == 1.0


def test_missing_link_is_a_message_and_leaves_nothing(media_server, tmp_path):
    with pytest.raises(SubtitleError, match=r"^The link gives 404 Not Found: check the URL$"):
        download(f"{media_server}/no-such-video.mp4", tmp_path, allow_private=True)
    assert list(tmp_path.iterdir()) == []


def test_download_over_the_size_limit_is_stopped(media_server, tmp_path):
    with pytest.raises(SubtitleError, match="this server takes up to 10.0 kB: use a smaller file"):
        download(f"{media_server}/{ENGLISH[0]}.mp4", tmp_path, Limits(max_bytes=10_000), allow_private=True)
    assert list(tmp_path.iterdir()) == []  # the partial download is gone


def test_nothing_listens_is_a_message(tmp_path):
    from conftest import free_port

    with pytest.raises(SubtitleError, match="^This machine could not reach 127.0.0.1: check the link, or the network$"):
        download(f"http://127.0.0.1:{free_port()}/a.mp4", tmp_path, allow_private=True)


def test_inputs_over_the_limits_fail_before_any_work(videos, tmp_path):
    """Every local input is checked against the server's limits before the first is transcribed: each fails alone
    with its message, and the model is never loaded."""
    models = ModelCache()
    inputs = (videos[ENGLISH[0]], videos[ENGLISH[1]])
    events = list(run_job(JobSpec(inputs=inputs), tmp_path / "out", models, Policy(limits=Limits(max_duration=5))))
    failed, result = events[:-1], events[-1]
    assert [f.index for f in failed] == [0, 1] and result.files == () and result.failed == tuple(failed)
    for f, video in zip(failed, inputs, strict=True):
        assert re.match(rf"^{video.name} is 0:\d\d long; this server takes up to 0:05: use a shorter one$", f.message)
    assert not models.is_loaded("base") and list((tmp_path / "out").iterdir()) == []


def test_models_found_on_the_machine(monkeypatch, tmp_path):
    """The web app offers what is on disk, without downloading: whisper's cache and the Hugging Face cache."""
    from convert.checkpoints import available_models

    (tmp_path / "xdg" / "whisper").mkdir(parents=True)
    (tmp_path / "xdg" / "whisper" / "small.pt").write_bytes(b"")  # listed by name; only read when chosen
    (tmp_path / "xdg" / "whisper" / "notes.pt").write_bytes(b"")  # not a whisper model name
    snapshot = tmp_path / "hub" / "models--Systran--faster-whisper-tiny.en" / "snapshots" / "0123456789abcdef"
    snapshot.mkdir(parents=True)
    (snapshot / "model.bin").write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    found = available_models()
    assert found[0] == ("Whisper base (embedded)", "base")
    assert ("Whisper small (downloaded)", "small") in found
    assert ("faster-whisper-tiny.en 0123456 (faster-whisper)", str(snapshot)) in found
    assert not any("notes" in label for label, _ in found)


@pytest.mark.parametrize(
    "error, message",
    [
        ("ERROR: [generic] Unable to download webpage: HTTP Error 404: Not Found (caused by <HTTPError 404>)",
         "The link gives 404 Not Found: check the URL"),
        ("ERROR: [youtube] abc: Private video. Sign in if you've been granted access to this video",
         "This video is private: use a public link"),
        ("ERROR: [youtube] abc: Video unavailable. This video has been removed by the uploader",
         "This video is unavailable: it may be removed or blocked in this region"),
        ("ERROR: [youtube] abc: Sign in to confirm your age. This video may be inappropriate for some users.",
         "This video is age-restricted: upload the file"),
        ("ERROR: [youtube] abc: Sign in to confirm you’re not a bot. Use --cookies-from-browser",
         "The site asks for a sign-in: upload the file"),
        ("ERROR: [youtube] abc: This live event will begin in 3 hours.", "Live streams can't be subtitled: wait for the recording"),
        ("ERROR: Unsupported URL: https://example.com/page",
         "No video found at that link: paste a video page or a direct link to a media file"),
        ("ERROR: [generic] Unable to download webpage: <urlopen error [Errno -2] Name or service not known>",
         "This machine could not reach the site: check the link, or the network"),
        ("ERROR: [vimeo] 123: \x1b[0;31msomething new\x1b[0m", "Could not download that link (something new)"),
    ],
)  # fmt: skip
def test_yt_dlp_errors_become_short_messages(error, message):
    assert explain(error) == message


def test_a_site_that_does_not_resolve_is_one_message_for_the_page_and_the_cli():
    """Without a network, a typo and no connection look alike: the message names both (issue 50, item 5)."""
    from pipeline.media.download import check_url

    with pytest.raises(SubtitleError, match="^This machine could not reach nowhere.invalid: check the link, or the"):
        check_url("https://nowhere.invalid/video.mp4", allow_private=False)
