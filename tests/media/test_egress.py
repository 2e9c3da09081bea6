"""The egress check: which addresses count as public, and that no child of a download (ffmpeg) goes around the proxy.

Real yt-dlp and ffmpeg; local HTTP servers stand in for the internet (127.0.0.1) and a private host (127.0.0.2) that
logs every request, so a test can prove that nothing reached it.
"""

from __future__ import annotations

import pytest
from conftest import ENGLISH, clip_path, ffmpeg
from test_safety import serving

from pipeline.errors import SubtitleError
from pipeline.media.audio import probe
from pipeline.media.egress import is_public_address


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("1.1.1.1", True),
        ("2606:4700:4700::1111", True),
        ("2001:4860:4860::8888", True),
        # IPv4 special-purpose blocks
        ("0.0.0.0", False),  # this host on this network
        ("100.64.0.1", False),  # shared address space (carrier-grade NAT)
        ("192.0.0.9", False),  # PCP anycast: answered by the local NAT router
        ("192.0.0.10", False),  # TURN anycast
        ("192.0.0.170", False),  # NAT64/DNS64 discovery
        ("198.18.0.1", False),  # benchmarking
        ("240.0.0.1", False),  # reserved
        ("255.255.255.255", False),  # limited broadcast
        ("224.0.0.1", False),  # multicast
        # IPv6 special-purpose blocks
        ("fec0::1", False),  # site-local (deprecated, still routed inside some sites)
        ("fc00::1", False),  # unique-local
        ("ff02::1", False),  # multicast
        ("100::1", False),  # discard-only
        ("2001:db8::1", False),  # documentation
        ("3fff::1", False),  # documentation
        ("2001:2::1", False),  # benchmarking
        ("2001:10::1", False),  # ORCHID (deprecated)
        ("2001:20::1", False),  # ORCHIDv2
        ("5f00::1", False),  # SRv6 SIDs
        ("4000::1", False),  # outside 2000::/3, the only IPv6 space allocated for global unicast
        # IPv6 blocks that carry an IPv4 address: that address decides
        ("::ffff:0:7f00:1", False),  # IPv4-translated 127.0.0.1
        ("::ffff:0:a00:1", False),  # IPv4-translated 10.0.0.1
        ("::ffff:0:808:808", True),  # IPv4-translated 8.8.8.8
        ("::ffff:808:808", True),  # IPv4-mapped 8.8.8.8
        ("::ffff:c000:9", False),  # IPv4-mapped 192.0.0.9
        ("64:ff9b::c000:9", False),  # NAT64 of 192.0.0.9
        ("64:ff9b:1:abcd:ef01:2345:808:808", True),  # local-use NAT64 of 8.8.8.8, read as any RFC 6052 layout
        ("64:ff9b:1::a00:1", False),  # local-use NAT64 of 10.0.0.1
        ("64:ff9b:1:a00:0:100:808:808", False),  # 8.8.8.8 in the /96 layout, but 10.0.0.1 in the /48 one
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", True),  # Teredo, client 8.8.8.8
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo, client 127.0.0.1
        ("::", False),
        ("::2", False),  # IPv4-compatible 0.0.0.2
    ],
)
def test_special_purpose_addresses_are_not_public(address, public):
    assert is_public_address(address) is public


@pytest.mark.parametrize("text", ["", "localhost", "300.1.1.1", "1.2.3", "::ffff:0:7f00:1:2:3:4:5"])
def test_what_is_not_an_address_raises_value_error(text):
    with pytest.raises(ValueError):
        is_public_address(text)


# Encrypted with SAMPLE-AES: yt-dlp's own HLS downloader does not take it and hands the whole stream to ffmpeg.
SAMPLE_AES = (
    '#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="{public}/key.bin"\n'
    "#EXTINF:10,\n{segment}\n#EXT-X-ENDLIST\n"
)


def test_the_ffmpeg_yt_dlp_starts_goes_through_the_proxy_whatever_no_proxy_says(tmp_path, monkeypatch):
    """yt-dlp gives ffmpeg the proxy in a copy of our environment, where no_proxy would let it fetch a private host
    directly: nothing reaches the private host, the proxy refuses the request, and a public stream still comes
    through that ffmpeg."""
    from pipeline.media.download import PRIVATE, download

    www, secret = tmp_path / "www", tmp_path / "secret"
    with serving(www) as (public, _), serving(secret, "127.0.0.2") as (private, requests):
        for folder in (www, secret):
            ffmpeg("-i", str(clip_path(ENGLISH[0])), "-c:a", "aac", "-f", "mpegts", str(folder / "segment.ts"))
        (www / "key.bin").write_bytes(bytes(16))
        for name, host in (("public.m3u8", public), ("private.m3u8", private)):
            (www / name).write_text(SAMPLE_AES.format(public=public, segment=f"{host}/segment.ts"), encoding="utf-8")
        monkeypatch.setenv("no_proxy", "127.0.0.2")
        monkeypatch.setenv("NO_PROXY", "127.0.0.2")
        stand_in = lambda address: address == "127.0.0.1"  # noqa: E731  (the "internet" of this test)
        got = download(f"{public}/public.m3u8", tmp_path / "ok", public=stand_in)
        assert probe(got.path).has_audio
        try:
            download(f"{public}/private.m3u8", tmp_path / "refused", public=stand_in)
            message = "downloaded"
        except SubtitleError as e:
            message = str(e)
        assert requests == []
        assert message == PRIVATE
    assert list((tmp_path / "refused").iterdir()) == []  # no media.* and no wrapper left behind
