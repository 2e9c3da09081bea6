"""Egress control for links: every connection a download makes goes through a small HTTP proxy in this process,
which resolves the host itself, refuses private addresses, and connects to the very address it checked.

yt-dlp is given the proxy for every request it makes (the page, redirects, embedded players, HLS fragments, and
ffmpeg when yt-dlp hands it a stream, through a wrapper that ignores no_proxy: see pipeline.media.download), so the check
covers each hop, not only the link a person pasted, and DNS rebinding gets nowhere: the name is resolved once, by the
proxy, for the connection it makes. A refused hop gets a 403 from the proxy without any byte sent to the private host,
so its answers (a 404, a closed port) cannot be read back through the page. The proxy also ends every connection at
the download's deadline.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

_CHUNK = 64 * 1024
_HEAD_LIMIT = 64 * 1024  # bytes of request line and headers a client may send


# Special-purpose blocks, from the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890;
# https://www.iana.org/assignments/iana-ipv4-special-registry, .../iana-ipv6-special-registry, as of 2025), plus the
# multicast blocks and fec0::/10 (deprecated site-local, RFC 3879) from the address space registries. An address in
# any of them is not public, whatever the registry's "Globally Reachable" column says: a server has no business with
# anycast services (PCP, TURN, AS112: answered by whoever is nearest, such as the local NAT router), relays or
# documentation blocks. Blocks that carry an IPv4 address (see _embedded_ipv4) are judged by that address instead.
_SPECIAL = tuple(
    ipaddress.ip_network(block)
    for block in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private-use
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata services)
        "172.16.0.0/12",  # private-use
        "192.0.0.0/24",  # IETF protocol assignments: PCP and TURN anycast, NAT64 discovery, dummy address, ...
        "192.0.2.0/24",  # documentation (TEST-NET-1)
        "192.31.196.0/24",  # AS112-v4
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # deprecated 6to4 relay anycast, 6a44 relay anycast
        "192.168.0.0/16",  # private-use
        "192.175.48.0/24",  # direct delegation AS112 service
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation (TEST-NET-2)
        "203.0.113.0/24",  # documentation (TEST-NET-3)
        "224.0.0.0/4",  # multicast (IPv4 multicast address space registry)
        "240.0.0.0/4",  # reserved, and 255.255.255.255 limited broadcast
        "::/128",  # unspecified
        "::1/128",  # loopback
        "100::/64",  # discard-only
        "100:0:0:1::/64",  # dummy prefix
        "2001::/23",  # IETF protocol assignments: benchmarking, ORCHID, PCP/TURN anycast, AMT, AS112, DETs, ...
        "2001:db8::/32",  # documentation
        "2620:4f:8000::/48",  # direct delegation AS112 service
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing (SRv6) SIDs
        "fc00::/7",  # unique-local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated, still routed inside some sites)
        "ff00::/8",  # multicast (IPv6 multicast address space registry)
    )
)
# The IANA IPv6 Address Space registry allocates only 2000::/3 for global unicast; the rest is reserved by the IETF.
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # well-known prefix: IPv4 in the last 32 bits
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # local-use: the network picks a prefix inside it (RFC 8215)


def is_public_address(address: str) -> bool:
    """Globally routable unicast outside every special-purpose block. When an IPv4 address hides inside IPv6 (mapped
    ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, compatible ::a.b.c.d, NAT64, 6to4 2002::/16, Teredo), that address
    decides. A zone id (fe80::1%eth0) is allowed; what is not an address raises ValueError."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner:
            return all(is_public_address(str(v4)) for v4 in inner)
        if ip not in _GLOBAL_UNICAST:
            return False
    return ip.is_global and not any(ip in block for block in _SPECIAL)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses `ip` may lead to (none: it embeds none). More than one for the local-use NAT64 prefix,
    whose layout (RFC 6052: the prefix is 48, 56, 64 or 96 bits long within the /48) only the network knows."""
    packed = int(ip)
    if ip.ipv4_mapped:
        return (ip.ipv4_mapped,)
    if packed >> 32 == 0xFFFF_0000:  # IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 2765)
        return (ipaddress.IPv4Address(packed & 0xFFFFFFFF),)
    if ip.sixtofour:
        return (ip.sixtofour,)
    if ip.teredo:
        return (ip.teredo[1],)  # the client, where the relay sends the packets
    if ip in _NAT64:
        return (ipaddress.IPv4Address(packed & 0xFFFFFFFF),)
    if ip in _NAT64_LOCAL:
        return tuple(_rfc6052(packed, length) for length in (48, 56, 64, 96))
    if packed >> 32 == 0 and packed > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks)
        return (ipaddress.IPv4Address(packed & 0xFFFFFFFF),)
    return ()


def _rfc6052(packed: int, length: int) -> ipaddress.IPv4Address:
    """The IPv4 address in an IPv4-embedded IPv6 address whose prefix is `length` bits: its 32 bits follow the
    prefix, skipping bits 64-71 (the "u" octet, always zero)."""
    bits = [(packed >> (127 - i)) & 1 for i in range(length, 128) if not 64 <= i < 72][:32]
    return ipaddress.IPv4Address(int("".join(map(str, bits)), 2))


class Refused(Exception):
    pass


class EgressProxy:
    """`with EgressProxy() as proxy:` then give yt-dlp `proxy.url`. `allowed(address)` says which addresses may be
    connected to (default: public ones); `proxy.refused` lists the hosts it refused (to say why a download failed).
    `resolve` is getaddrinfo's signature (the system's resolver unless a test brings a DNS of its own)."""

    def __init__(
        self,
        allowed: Callable[[str], bool] = is_public_address,
        deadline: float | None = None,
        resolve: Callable[..., list] = socket.getaddrinfo,
    ):
        self.allowed = allowed
        self.resolve = resolve
        self.deadline = deadline  # time.monotonic() after which every connection is closed
        self.refused: list[str] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._handle(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler, bind_and_activate=True)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> EgressProxy:
        threading.Thread(target=self._server.serve_forever, args=(0.2,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def connect(self, host: str, port: int) -> socket.socket:
        """A connection to host:port through an address that passed the check (the first that answers)."""
        try:
            infos = self.resolve(host, port, type=socket.SOCK_STREAM)  # once: the addresses checked are the ones used
        except (socket.gaierror, UnicodeError):
            raise OSError(f"cannot resolve {host}") from None
        addresses = [info for info in infos if self.allowed(info[4][0])]
        if not addresses:
            self.refused.append(host)
            raise Refused(host)
        error: OSError | None = None
        for family, kind, proto, _, address in addresses:
            sock = socket.socket(family, kind, proto)
            sock.settimeout(30)
            try:
                sock.connect(address)
                return sock
            except OSError as e:
                sock.close()
                error = e
        raise error or OSError(f"cannot connect to {host}")

    def _handle(self, client: socket.socket) -> None:
        client.settimeout(30)
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(_CHUNK)
                if not chunk or len(head) > _HEAD_LIMIT:
                    return
                head += chunk
            header, _, rest = head.partition(b"\r\n\r\n")
            lines = header.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                upstream = self._open(client, host.strip("[]"), int(port))
                if upstream is None:
                    return
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                url = urlsplit(target)
                if url.scheme != "http" or not url.hostname:
                    client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                upstream = self._open(client, url.hostname, url.port or 80)
                if upstream is None:
                    return
                path = url.path or "/"
                path += f"?{url.query}" if url.query else ""
                kept = [line for line in lines[1:] if not line.lower().startswith(("proxy-", "connection:"))]
                request = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
                upstream.sendall(request.encode("latin-1") + rest)
            with upstream:
                self._relay(client, upstream)
        except (OSError, ValueError):
            return
        finally:
            client.close()

    def _open(self, client: socket.socket, host: str, port: int) -> socket.socket | None:
        try:
            return self.connect(host, port)
        except Refused:
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return None

    def _relay(self, a: socket.socket, b: socket.socket) -> None:
        """Copy bytes both ways until either side closes, 60 s pass with no byte, or the deadline comes."""
        peers = {a: b, b: a}
        idle_since = time.monotonic()
        while True:
            if self.deadline is not None and time.monotonic() > self.deadline:
                return
            ready, _, _ = select.select(list(peers), [], [], 1.0)
            if not ready:
                if time.monotonic() - idle_since > 60:
                    return
                continue
            idle_since = time.monotonic()
            for sock in ready:
                data = sock.recv(_CHUNK)
                if not data:
                    return
                peers[sock].sendall(data)
