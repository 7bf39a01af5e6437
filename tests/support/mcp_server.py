"""An MCP server for the tests, built with the ``mcp`` package's FastMCP.

Run it as a program: ``python tests/support/mcp_server.py`` serves over stdio (the client
starts it as a subprocess), ``python tests/support/mcp_server.py --http PORT`` serves
streamable HTTP on ``http://127.0.0.1:PORT/mcp``. It reaches nothing but its client.

Its tools:

- ``multiply(a, b)``: ``"product: <a*b>"``;
- ``divide(a, b)``: ``"quotient: <a/b>"``, and raises ``ValueError`` when ``b`` is 0, which
  FastMCP sends back as an error result (``isError``);
- ``draw_square(colour)``: a 2x2 PNG of one colour (``square_png``), as an MCP
  ``ImageContent``;
- ``count(label)``: ``"<label>: <n>"``, where ``n`` counts the calls of ``count`` so far in
  this MCP session (a session's state: a new session starts at 1; the label keeps two
  calls from being the same call).

When the environment names a file in ``LOOPGRAPHS_MCP_JOURNAL``, every tool call is
appended to it as one JSON line ``{"tool", "args", "process", "session"}`` before the tool
runs: what reached the server, the server's process id, and the number of the session the
call came in (1 for the process's first session, and so on).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import struct
import threading
import weakref
import zlib
from typing import Any

from mcp.server.fastmcp import Context, FastMCP, Image

JOURNAL_ENV = "LOOPGRAPHS_MCP_JOURNAL"
PATH = "/mcp"
COLOURS = {"red": (255, 0, 0), "green": (0, 160, 0), "blue": (0, 0, 255)}


def square_png(colour: str) -> bytes:
    """A 2x2 PNG filled with one of ``COLOURS``."""
    red, green, blue = COLOURS[colour]
    row = b"\x00" + bytes((red, green, blue)) * 2  # filter byte, then two RGB pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)  # 2x2, 8 bits, RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * 2))
        + chunk(b"IEND", b"")
    )


_lock = threading.Lock()
_numbers = itertools.count(1)
_sessions: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_counts: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _session_number(ctx: Context) -> int:
    with _lock:
        if ctx.session not in _sessions:
            _sessions[ctx.session] = next(_numbers)
        return _sessions[ctx.session]


def _journal(ctx: Context, tool: str, args: dict[str, Any]) -> None:
    path = os.environ.get(JOURNAL_ENV)
    if not path:
        return
    entry = {"tool": tool, "args": args, "process": os.getpid(), "session": _session_number(ctx)}
    line = json.dumps(entry)
    with _lock, open(path, "a", encoding="utf-8") as journal:
        journal.write(line + "\n")


def build_server(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The server with its four tools (``host`` and ``port`` matter over HTTP only)."""
    server = FastMCP("loopgraphs-tests", host=host, port=port, log_level="WARNING")

    @server.tool()
    def multiply(a: int, b: int, ctx: Context) -> str:
        """Multiply two whole numbers."""
        _journal(ctx, "multiply", {"a": a, "b": b})
        return f"product: {a * b}"

    @server.tool()
    def divide(a: int, b: int, ctx: Context) -> str:
        """Divide a whole number by another."""
        _journal(ctx, "divide", {"a": a, "b": b})
        if b == 0:
            raise ValueError("cannot divide by zero")
        return f"quotient: {a / b:g}"

    @server.tool()
    def draw_square(colour: str, ctx: Context) -> Image:
        """Draw a small square of a colour: red, green or blue."""
        _journal(ctx, "draw_square", {"colour": colour})
        return Image(data=square_png(colour), format="png")

    @server.tool()
    def count(label: str, ctx: Context) -> str:
        """Count the calls of this tool in this session; the label is written back."""
        _journal(ctx, "count", {"label": label})
        with _lock:
            _counts[ctx.session] = _counts.get(ctx.session, 0) + 1
            return f"{label}: {_counts[ctx.session]}"

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    options = parser.parse_args()
    if options.http is None:
        build_server().run("stdio")
    else:
        build_server(port=options.http).run("streamable-http")


if __name__ == "__main__":
    main()
