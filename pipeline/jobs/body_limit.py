"""Bounds on what one request may send the web server, checked before anything parses it (ASGI middleware): the
body's size, and the size and shape of each value in it (the web framework keeps a session's last values)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

import anyio

from pipeline.subtitles.read import MAX_CUE_CHARS, MAX_CUES, MAX_SUBTITLE_CHARS

# The largest table the page accepts, as JSON: its text in UTF-8 (4 bytes a character at most), each row's times,
# speaker and punctuation, and the rest of the form. Uploads are bounded by Gradio's max_file_size instead.
MAX_REQUEST_BYTES = 4 * MAX_SUBTITLE_CHARS + 100 * MAX_CUES + 2**20
MAX_VALUE_BYTES = 32_000  # one form value that is not a cue table, as JSON: a link, a prompt, a name, the files
MAX_COLUMNS = 5  # File, Start, End, Speaker, Text
# What one session can make the server keep: a table at the limits above as Python objects (about 2 bytes a byte of
# JSON), and every other field at its limit; SESSION_MEMORY / SESSION_BYTES sessions are kept, the oldest go first.
SESSION_BYTES = 2 * MAX_REQUEST_BYTES + 40 * 10 * MAX_VALUE_BYTES
SESSION_MEMORY = 512 * 2**20

Tables = Mapping[int | str, Collection[int | str]]  # an event (its index or API name) -> its tables (positions, names)


class BodyLimit:
    """Answer 413 to a request whose body is over `max_bytes` (at once by its Content-Length, or as soon as a body
    without one grows past it), or, when `tables` is given, that holds a value over MAX_VALUE_BYTES other than a cue
    table of its event within the table limits. Paths ending with one of `exempt` (Gradio's file uploads) pass."""

    def __init__(
        self, app, max_bytes: int = MAX_REQUEST_BYTES, exempt: tuple[str, ...] = ("/upload",),
        tables: Tables | None = None,
    ):  # fmt: skip
        self.app, self.max_bytes, self.exempt, self.tables = app, max_bytes, exempt, tables

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].endswith(self.exempt):
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            return await self._refuse(send, f"The request is over {self.max_bytes / 1e6:.0f} MB")
        chunks, seen, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                return await self._refuse(send, f"The request is over {self.max_bytes / 1e6:.0f} MB")
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if self.tables is not None and len(body) > MAX_VALUE_BYTES:
            problem = await anyio.to_thread.run_sync(oversized, body, scope["path"], self.tables)
            if problem:
                return await self._refuse(send, problem)
        given = False

        async def replay():  # the body read above, then the client's own messages (its disconnect)
            nonlocal given
            if given:
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send, problem: str) -> None:
        text = f"{problem}: send fewer or shorter cues".encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": text})


def oversized(body: bytes, path: str, tables: Tables) -> str:
    """What is too large in a request's JSON body ("" when nothing is): a value over MAX_VALUE_BYTES that is not
    one of its event's tables, or a table over the limits. Its event is the body's fn_index, or the path's API name
    (…/run/NAME, …/call/NAME, …/call/v2/NAME, whose body holds the values by name)."""
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    if not isinstance(request, dict):
        return f"The request is over {MAX_VALUE_BYTES // 1000} kB and not a cue table"
    event = request.get("fn_index")
    ours = tables.get(event if isinstance(event, int) else path.rstrip("/").rsplit("/", 1)[-1], ())
    if isinstance(request.get("data"), list):
        values = dict(enumerate(request["data"]))
        rest = {k: v for k, v in request.items() if k != "data"}
    else:
        values, rest = request, {}
    for key, value in [*values.items(), (None, rest)]:
        if key in ours and key is not None:
            if not table_within_limits(value):
                return f"The table is over {MAX_CUES} rows, {MAX_COLUMNS} columns or {MAX_CUE_CHARS} characters a cell"
        elif len(json.dumps(value, ensure_ascii=False).encode()) > MAX_VALUE_BYTES:
            return f"A value of the form is over {MAX_VALUE_BYTES // 1000} kB"
    return ""


def table_within_limits(value) -> bool:
    """Whether a cue table as the page sends it ({"headers", "data", "metadata"} or its rows) is within MAX_CUES rows
    of MAX_COLUMNS cells, each a text of at most MAX_CUE_CHARS, a number or nothing."""
    if isinstance(value, dict):
        headers, rows = value.get("headers") or [], value.get("data")
        rest = {k: v for k, v in value.items() if k not in ("headers", "data")}
        if len(json.dumps(rest, ensure_ascii=False).encode()) > MAX_VALUE_BYTES or not _row(headers):
            return False
    else:
        rows = value
    return isinstance(rows, list) and len(rows) <= MAX_CUES and all(_row(r) for r in rows)


def _row(row) -> bool:
    return isinstance(row, list) and len(row) <= MAX_COLUMNS and all(_cell(c) for c in row)


def _cell(cell) -> bool:
    return cell is None or isinstance(cell, (int, float)) or (isinstance(cell, str) and len(cell) <= MAX_CUE_CHARS)
