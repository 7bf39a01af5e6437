"""A loopback OpenAI-compatible chat server that misbehaves on demand.

``FaultServer`` serves ``POST /v1/chat/completions`` (plain JSON and ``stream: true``
server-sent events) from a ``ThreadingHTTPServer`` on ``127.0.0.1:<free port>``. Each
request takes the next behaviour from a scripted queue; when the queue is empty the
``default`` behaviour answers. Behaviours:

* ``Reply(content=..., tool_calls=[...])``: a normal completion with token usage.
* ``Status(code, retry_after=None)``: an HTTP error with an OpenAI-style error body.
* ``Delay(seconds, then=Reply(...))``: wait, then answer (longer than a client timeout).
* ``Reset()``: close the connection without any response (the client sees a dropped
  connection).
* ``Malformed()``: ``200 OK`` whose JSON body is cut off.
* ``CutStream(after_chunks=2)``: a stream that stops midway, without ``[DONE]``.

Every request body is recorded in ``server.requests``.

It can also stand in for what a local server says about itself: ``props`` is served at
``GET /props`` (llama.cpp), ``models`` at ``GET /v1/models`` and ``show`` at
``POST /api/show`` (Ollama); any of them left ``None`` answers 404. The paths asked are
recorded in ``server.probes``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A normal completion."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass(frozen=True)
class Status:
    """An HTTP error status."""

    code: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Delay:
    """Answer after a pause."""

    seconds: float
    then: Reply = field(default_factory=Reply)


@dataclass(frozen=True)
class Reset:
    """Drop the connection without responding."""


@dataclass(frozen=True)
class Malformed:
    """A 200 response whose JSON body is truncated."""


@dataclass(frozen=True)
class CutStream:
    """A streamed reply that stops after some chunks (no ``[DONE]``, connection closed)."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(content="this reply will never end"))


Behaviour = Reply | Status | Delay | Reset | Malformed | CutStream

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "overloaded",
}


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """A tool call in the OpenAI wire format."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "created": int(time.time()),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    words = reply.content.split(" ") if reply.content else []
    chunks += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words)]
    for index, call in enumerate(reply.tool_calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": call["function"],
                        }
                    ]
                }
            )
        )
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    chunks.append(
        {
            **base,
            "created": int(time.time()),
            "choices": [],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
    )
    return chunks


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or was reset is part of the script, not an error.
        pass


class FaultServer:
    """The server; use as a context manager. ``base_url`` is what ``ChatOpenAI`` needs."""

    def __init__(
        self,
        default: Behaviour | None = None,
        *,
        props: dict[str, Any] | None = None,
        models: dict[str, Any] | None = None,
        show: dict[str, Any] | None = None,
    ) -> None:
        self.default: Behaviour = default or Reply(content="default reply")
        self.queue: deque[Behaviour] = deque()
        self.requests: list[dict[str, Any]] = []
        self.served: list[str] = []
        self.pages = {"/props": props, "/v1/models": models, "/api/show": show}
        self.probes: list[str] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _page(self, path: str) -> dict[str, Any] | None:
        with self._lock:
            self.probes.append(path)
        return self.pages.get(path)

    def script(self, *behaviours: Behaviour) -> FaultServer:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self.queue.extend(behaviours)
        return self

    def _next(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            behaviour = self.queue.popleft() if self.queue else self.default
            self.served.append(type(behaviour).__name__)
            return behaviour

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send_json(self, code: int, payload: Any, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_page(self) -> None:
                page = server._page(self.path.rstrip("/"))
                if page is None:
                    self._send_json(404, {"error": {"message": "not found"}}, {})
                else:
                    self._send_json(200, page, {})

            def do_GET(self) -> None:
                self._send_page()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if self.path.rstrip("/") == "/api/show":
                    self._send_page()
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send_json(404, {"error": {"message": "not found"}}, {})
                    return
                behaviour = server._next(body)
                model = str(body.get("model", "fault-model"))
                stream = bool(body.get("stream"))
                if isinstance(behaviour, Delay):
                    time.sleep(behaviour.seconds)
                    behaviour = behaviour.then
                if isinstance(behaviour, Reset):
                    self._reset()
                elif isinstance(behaviour, Status):
                    headers = (
                        {"Retry-After": behaviour.retry_after} if behaviour.retry_after else {}
                    )
                    error = {
                        "error": {
                            "message": f"injected HTTP {behaviour.code}",
                            "type": ERROR_TYPES.get(behaviour.code, "error"),
                            "code": ERROR_TYPES.get(behaviour.code),
                        }
                    }
                    self._send_json(behaviour.code, error, headers)
                elif isinstance(behaviour, Malformed):
                    data = b'{"id": "chatcmpl-fault", "choices": [{"index": 0, "message": {"ro'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif isinstance(behaviour, CutStream):
                    self._stream(
                        _chunks(behaviour.reply, model)[: behaviour.after_chunks], cut=True
                    )
                elif stream:
                    self._stream(_chunks(behaviour, model), cut=False)
                else:
                    self._send_json(200, _completion(behaviour, model), {})

            def _stream(self, chunks: list[dict[str, Any]], *, cut: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in chunks:
                    self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                if cut:
                    # Stop midway: no [DONE], no terminating zero-length chunk.
                    self.wfile.flush()
                    self._reset()
                    return
                self._write_chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _write_chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _reset(self) -> None:
                # SO_LINGER 0 makes close() send a TCP RST instead of a clean FIN.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.connection.close()

        return Handler
