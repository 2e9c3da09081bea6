"""A bound on what one request may send the web server, checked before anything parses it (ASGI middleware)."""

from __future__ import annotations

from pipeline.subtitles.read import MAX_CUES, MAX_SUBTITLE_CHARS

# The largest table the page accepts, as JSON: its text in UTF-8 (4 bytes a character at most), each row's times,
# speaker and punctuation, and the rest of the form. Uploads are bounded by Gradio's max_file_size instead.
MAX_REQUEST_BYTES = 4 * MAX_SUBTITLE_CHARS + 100 * MAX_CUES + 2**20


class BodyLimit:
    """Answer 413 to a request whose body is over `max_bytes`: at once by its Content-Length, or as soon as a body
    without one grows past it. Paths ending with one of `exempt` (Gradio's file uploads) pass as they are."""

    def __init__(self, app, max_bytes: int = MAX_REQUEST_BYTES, exempt: tuple[str, ...] = ("/upload",)):
        self.app, self.max_bytes, self.exempt = app, max_bytes, exempt

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].endswith(self.exempt):
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            return await self._refuse(send)
        seen, refused = 0, False

        async def counted():  # the body as it comes; past the limit, the app is told the client went away
            nonlocal seen, refused
            if not refused:
                message = await receive()
                seen += len(message.get("body", b""))
                refused = seen > self.max_bytes
                if not refused:
                    return message
            return {"type": "http.disconnect"}

        async def unless_refused(message):  # the app's answer to a body it never got whole: ours goes instead
            if not refused:
                await send(message)

        try:
            await self.app(scope, counted, unless_refused)
        except Exception:
            if not refused:
                raise
        if refused:
            await self._refuse(send)

    async def _refuse(self, send) -> None:
        text = f"The request is over {self.max_bytes / 1e6:.0f} MB: send fewer or shorter cues".encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": text})
