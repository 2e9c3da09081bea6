"""Egress control for links: every connection a download makes goes through a small HTTP proxy in this process,
which resolves the host itself, refuses private addresses, and connects to the very address it checked.

yt-dlp is given the proxy for every request it makes (the page, redirects, embedded players, HLS fragments, and
ffmpeg when yt-dlp hands it a stream), so the check covers each hop, not only the link a person pasted, and DNS
rebinding gets nowhere: the name is resolved once, by the proxy, for the connection it makes. A refused hop gets a
403 from the proxy without any byte sent to the private host, so its answers (a 404, a closed port) cannot be read
back through the page. The proxy also ends every connection at the download's deadline.
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


def is_public_address(address: str) -> bool:
    """Globally routable unicast, also when an IPv4 address hides inside IPv6 (mapped ::ffff:a.b.c.d, compatible
    ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return is_public_address(str(inner))
    return ip.is_global and not ip.is_multicast


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip.sixtofour:
        return ip.sixtofour
    if ip.teredo:
        return ip.teredo[1]
    packed = int(ip)
    if ip in ipaddress.IPv6Network("64:ff9b::/96") or ip in ipaddress.IPv6Network("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if packed >> 32 == 0 and packed > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks)
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


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
