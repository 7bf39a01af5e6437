"""MCP tools in every tool loop and tool mode.

A real MCP server (``tests/support/mcp_server.py``, FastMCP) runs over stdio, started by
the client as a subprocess for each MCP session, and over streamable HTTP on 127.0.0.1,
started once for the test session and stopped at its end. Its tools are loaded with
``langchain_mcp_adapters`` (``MultiServerMCPClient``, ``load_mcp_tools``) and run by the
loops on the scripted model (``tests/support/loop_scripts.py``: one call, then the answer).

What is checked is what the server and the model saw: the server's journal of the calls
that reached it (their arguments and MCP session), and the request the model was sent
right after the tool ran (a callback of the run notes how many model calls were made when
the tool started). ``langchain.agents.create_agent`` runs the same tools where that shows
the behaviour is LangChain's own (an error result, an image block), or that loopgraphs does
more (sync ``invoke`` with async-only tools).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _unshadow_mcp() -> None:
    """Let ``import mcp`` find the ``mcp`` package in a checkout whose folder is named
    ``mcp`` (a work tree named after this feature): pytest imports the checkout's root,
    whose ``__init__.py`` is loopgraphs', as a package named after the folder, and that
    module would stand for ``mcp``. The modules pytest imported under it keep it."""
    shadow = sys.modules.get("mcp")
    if shadow is not None and Path(getattr(shadow, "__file__", "") or "") == ROOT / "__init__.py":
        del sys.modules["mcp"]


_unshadow_mcp()

from langchain.agents import create_agent  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import BaseMessage, ToolMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import BaseTool  # noqa: E402
from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402

from loopgraphs import build_loop, strip_fence  # noqa: E402
from loopgraphs.graphs import registry  # noqa: E402
from loopgraphs.nodes.parsing.text import content_text  # noqa: E402
from tests.support.fakes import ScriptedChatModel  # noqa: E402
from tests.support.loop_scripts import tool_then_answer  # noqa: E402
from tests.support.mcp_server import JOURNAL_ENV, PATH, square_png  # noqa: E402
from tests.support.scripts import MODES, act, final, model_for  # noqa: E402

pytestmark = pytest.mark.integration

SERVER = ROOT / "tests" / "support" / "mcp_server.py"
NAME = "calc"  # the server's name in the client's connections
ANSWER = "The tool has answered."
QUESTION = {"messages": [("user", "Use the tool, then answer.")]}
RED_SQUARE = base64.b64encode(square_png("red")).decode()
LOOP_MODES = [(loop, mode) for loop in registry.TOOL_LOOPS for mode in MODES]


# -- the server ----------------------------------------------------------------------------


@dataclass
class Server:
    """An MCP server the tests reach: its client connection and its journal."""

    transport: str
    connection: dict[str, Any]
    journal: Path
    _seen: int = field(default=0, init=False)
    _tools: list[BaseTool] = field(default_factory=list, init=False)

    def client(self) -> MultiServerMCPClient:
        return MultiServerMCPClient({NAME: self.connection})

    def tools(self) -> list[BaseTool]:
        """The server's tools, loaded once with ``MultiServerMCPClient.get_tools`` (by a
        fixture, outside the test's event loop): each call of one opens an MCP session of
        its own (over stdio, a server process)."""
        if not self._tools:
            self._tools = asyncio.run(self.client().get_tools())
        return self._tools

    def entries(self) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        return [json.loads(line) for line in self.journal.read_text().splitlines()]

    def start(self) -> None:
        """From now on ``calls`` returns only the calls made after this."""
        self._seen = len(self.entries())

    def calls(self) -> list[dict[str, Any]]:
        """The calls that reached the server since ``start``: ``{"tool", "args", "process",
        "session"}``."""
        return self.entries()[self._seen :]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the MCP server stopped ({process.returncode}):\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"the MCP server did not listen on 127.0.0.1:{port}:\n{log.read_text()}")


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server over streamable HTTP on 127.0.0.1 and a free port, for the whole
    session; stopped at its end."""
    folder = tmp_path_factory.mktemp("mcp_http")
    journal, log = folder / "journal.jsonl", folder / "server.log"
    port = _free_port()
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "--http", str(port)],
            env={**os.environ, JOURNAL_ENV: str(journal)},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for(port, process, log)
        url = f"http://127.0.0.1:{port}{PATH}"
        yield Server("http", {"transport": "streamable_http", "url": url}, journal)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def stdio_server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    """The server over stdio: the client starts it as a subprocess for each session."""
    journal = tmp_path_factory.mktemp("mcp_stdio") / "journal.jsonl"
    connection = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {JOURNAL_ENV: str(journal)},
    }
    return Server("stdio", connection, journal)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> Server:
    """The server over each transport, its journal started."""
    found: Server = request.getfixturevalue(f"{request.param}_server")
    found.tools()
    found.start()
    return found


@pytest.fixture
def http(http_server: Server) -> Server:
    """The server over streamable HTTP, its journal started."""
    http_server.tools()
    http_server.start()
    return http_server


@pytest.fixture
def stdio(stdio_server: Server) -> Server:
    """The server over stdio, its journal started."""
    stdio_server.tools()
    stdio_server.start()
    return stdio_server


# -- what the model saw --------------------------------------------------------------------


class Watch(BaseCallbackHandler):
    """A callback of the run: notes, for each tool call, how many model calls had been
    made when the tool started; the model's prompt at that index is the request it was
    sent next. ``config()`` is the run's config that carries it."""

    run_inline = True

    def __init__(self, model: ScriptedChatModel) -> None:
        self.model = model
        self.at: list[int] = []

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.at.append(self.model.call_count)

    def config(self) -> RunnableConfig:
        return {"callbacks": [self]}

    def next_request(self, call: int = 0) -> list[BaseMessage]:
        """The prompt of the model call made after the tool call ``call`` (0 the first)."""
        assert len(self.at) > call, f"only {len(self.at)} tool call(s) went out"
        assert self.model.call_count > self.at[call], "no model call after the tool call"
        return self.model.prompts[self.at[call]]


def text_of(messages: list[BaseMessage]) -> str:
    return "\n".join(content_text(m.content) for m in messages)


def tool_results(out: dict[str, Any], name: str) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == name]


def image_data(block: Any) -> str | None:
    """The base64 data of an image content block, in LangChain's standard form or the
    older ones (``source_type``/``data``, an ``image_url`` data URL); None for others."""
    if not isinstance(block, dict):
        return None
    if block.get("type") == "image":
        return block.get("base64") or block.get("data")
    if block.get("type") == "image_url":
        url = block["image_url"]["url"] if isinstance(block["image_url"], dict) else ""
        return url.partition("base64,")[2] or None
    return None


def images_in(messages: list[BaseMessage]) -> list[str]:
    """The base64 data of every image block of some messages."""
    return [
        data
        for message in messages
        if isinstance(message.content, list)
        for data in map(image_data, message.content)
        if data
    ]


async def run_script(
    server: Server, loop: str, mode: str, tool: str, args: dict[str, Any]
) -> tuple[dict[str, Any], ScriptedChatModel, Watch]:
    """``loop`` in ``mode`` with the server's tools, on the script that calls ``tool``
    once with ``args`` and then answers ``ANSWER``."""
    model = model_for(mode, tool_then_answer(loop, mode, tool, args, ANSWER))
    watch = Watch(model)
    graph = build_loop(loop, model, server.tools(), tool_mode=mode)
    out = await graph.ainvoke(QUESTION, watch.config())
    return out, model, watch


# -- a call and its result -----------------------------------------------------------------


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
async def test_the_arguments_reach_the_server_and_the_result_the_model(server, loop, mode):
    out, model, watch = await run_script(server, loop, mode, "multiply", {"a": 6, "b": 7})

    assert [(c["tool"], c["args"]) for c in server.calls()] == [("multiply", {"a": 6, "b": 7})]
    (result,) = tool_results(out, "multiply")
    assert result.status == "success" and "product: 42" in content_text(result.content)
    assert "product: 42" in text_of(watch.next_request())
    assert out["status"] == "completed" and out["answer"] == ANSWER
    assert model.call_count == len(model.replies)


# -- an error ------------------------------------------------------------------------------


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
async def test_a_tool_that_raises_comes_back_to_the_model_as_an_error(http, loop, mode):
    out, model, watch = await run_script(http, loop, mode, "divide", {"a": 1, "b": 0})

    assert [(c["tool"], c["args"]) for c in http.calls()] == [("divide", {"a": 1, "b": 0})]
    (result,) = tool_results(out, "divide")
    assert result.status == "error"
    assert "cannot divide by zero" in content_text(result.content)
    assert "cannot divide by zero" in text_of(watch.next_request())
    # The run went on: the model was asked again and its answer ended the run.
    assert out["status"] == "completed" and out["answer"] == ANSWER
    assert model.call_count == len(model.replies)


async def test_create_agent_also_hands_an_mcp_error_back_to_the_model(http):
    model = model_for("native", [act("native", "divide", {"a": 1, "b": 0}), final("native", "ok")])
    watch = Watch(model)
    out = await create_agent(model, http.tools()).ainvoke(QUESTION, watch.config())

    (result,) = tool_results(out, "divide")
    assert result.status == "error"
    assert "cannot divide by zero" in text_of(watch.next_request())


# -- an image ------------------------------------------------------------------------------


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
async def test_an_image_result_reaches_the_tool_message(http, loop, mode):
    out, model, _ = await run_script(http, loop, mode, "draw_square", {"colour": "red"})

    assert [c["tool"] for c in http.calls()] == ["draw_square"]
    (result,) = tool_results(out, "draw_square")
    assert result.status == "success"
    (block,) = [b for b in result.content if image_data(b)]
    assert image_data(block) == RED_SQUARE and block.get("mime_type") == "image/png"
    assert out["status"] == "completed" and out["answer"] == ANSWER
    assert model.call_count == len(model.replies)


@pytest.mark.parametrize("loop", registry.TOOL_LOOPS)
async def test_in_native_mode_an_image_result_reaches_the_next_request_as_an_image(http, loop):
    _, _, watch = await run_script(http, loop, "native", "draw_square", {"colour": "red"})

    assert RED_SQUARE in images_in(watch.next_request())


@pytest.mark.parametrize("mode", ["json", "text"])
@pytest.mark.parametrize("loop", registry.TOOL_LOOPS)
async def test_in_json_and_text_modes_an_image_result_reaches_the_next_request(http, loop, mode):
    _, _, watch = await run_script(http, loop, mode, "draw_square", {"colour": "red"})

    assert RED_SQUARE in images_in(watch.next_request())


async def test_create_agent_also_sends_the_image_in_the_next_request(http):
    replies = [act("native", "draw_square", {"colour": "red"}), final("native", "ok")]
    model = model_for("native", replies)
    watch = Watch(model)
    await create_agent(model, http.tools()).ainvoke(QUESTION, watch.config())

    assert RED_SQUARE in images_in(watch.next_request())


# -- a session's state ---------------------------------------------------------------------


def two_counts(mode: str) -> list[Any]:
    """ReAct calls ``count`` twice, then answers."""
    return [
        act(mode, "count", {"label": "first"}),
        act(mode, "count", {"label": "second"}),
        final(mode, ANSWER),
    ]


def session_of(call: dict[str, Any]) -> tuple[int, int]:
    """The MCP session a call came in: the server's process and its session there (over
    stdio, every session without ``client.session`` is a process of its own)."""
    return call["process"], call["session"]


def counts(out: dict[str, Any]) -> list[str]:
    """The results of the calls of ``count``, without their fences."""
    return [strip_fence(content_text(m.content)).strip() for m in tool_results(out, "count")]


@pytest.mark.parametrize("mode", MODES)
async def test_one_session_keeps_its_state_across_two_calls_of_a_run(server, mode):
    model = model_for(mode, two_counts(mode))
    watch = Watch(model)
    async with server.client().session(NAME) as session:
        tools = await load_mcp_tools(session, server_name=NAME)
        graph = build_loop("react", model, tools, tool_mode=mode)
        out = await graph.ainvoke(QUESTION, watch.config())

    assert counts(out) == ["first: 1", "second: 2"]
    assert "second: 2" in text_of(watch.next_request(1))
    calls = server.calls()
    assert [c["args"]["label"] for c in calls] == ["first", "second"]
    assert session_of(calls[0]) == session_of(calls[1])
    assert out["status"] == "completed" and out["answer"] == ANSWER


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_session_each_call_starts_a_new_one(server, mode):
    model = model_for(mode, two_counts(mode))
    out = await build_loop("react", model, server.tools(), tool_mode=mode).ainvoke(QUESTION)

    assert counts(out) == ["first: 1", "second: 1"]
    calls = server.calls()
    assert session_of(calls[0]) != session_of(calls[1])
    assert out["status"] == "completed"


# -- sync invoke ---------------------------------------------------------------------------


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_sync_invoke_runs_the_async_only_mcp_tools(http, loop, mode):
    model = model_for(mode, tool_then_answer(loop, mode, "multiply", {"a": 6, "b": 7}, ANSWER))
    watch = Watch(model)
    tools = http.tools()
    assert all(t.func is None and t.coroutine is not None for t in tools)  # async only
    out = build_loop(loop, model, tools, tool_mode=mode).invoke(QUESTION, watch.config())

    assert [(c["tool"], c["args"]) for c in http.calls()] == [("multiply", {"a": 6, "b": 7})]
    (result,) = tool_results(out, "multiply")
    assert result.status == "success" and "product: 42" in content_text(result.content)
    assert "product: 42" in text_of(watch.next_request())
    assert out["status"] == "completed" and out["answer"] == ANSWER


@pytest.mark.parametrize("mode", MODES)
def test_sync_stream_runs_the_async_only_mcp_tools(http, mode):
    script = tool_then_answer("react", mode, "multiply", {"a": 6, "b": 7}, ANSWER)
    graph = build_loop("react", model_for(mode, script), http.tools(), tool_mode=mode)
    states = list(graph.stream(QUESTION, stream_mode="values"))

    assert [c["args"] for c in http.calls()] == [{"a": 6, "b": 7}]
    assert states[-1]["status"] == "completed" and states[-1]["answer"] == ANSWER


@pytest.mark.parametrize("mode", MODES)
def test_sync_invoke_over_stdio(stdio, mode):
    model = model_for(mode, tool_then_answer("react", mode, "multiply", {"a": 6, "b": 7}, ANSWER))
    out = build_loop("react", model, stdio.tools(), tool_mode=mode).invoke(QUESTION)

    assert [c["args"] for c in stdio.calls()] == [{"a": 6, "b": 7}]
    assert out["status"] == "completed" and out["answer"] == ANSWER


def test_create_agent_cannot_run_mcp_tools_under_sync_invoke(http):
    model = model_for(
        "native", [act("native", "multiply", {"a": 6, "b": 7}), final("native", "ok")]
    )
    with pytest.raises(NotImplementedError, match="does not support sync invocation"):
        create_agent(model, http.tools()).invoke(QUESTION)
    assert http.calls() == []  # the call never reached the server
