"""Provider faults from a real loopback OpenAI-compatible server (tests/support/fault_server.py).

``ChatOpenAI`` (SDK retries off) drives the ReAct graph with a fast retry policy whose
``retry_on`` is ``loopgraphs.nodes.errors.is_transient``. Transient faults (429 with
``Retry-After: 0``, 500, 503, a reply slower than the client timeout, a reset connection,
a stream cut midway) are retried by the graph and the run completes; permanent ones (400,
401, a malformed JSON body) end the run at once with ``status="error"`` and an ``error``
naming the failure. With a checkpointer the completed steps survive the failure and the
thread can be resumed once the server has recovered.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import RetryPolicy

from loopgraphs import create_react_graph
from loopgraphs.nodes.errors import is_transient
from tests.support.fault_server import (
    CutStream,
    Delay,
    FaultServer,
    Malformed,
    Reply,
    Reset,
    Status,
    tool_call,
)

CLIENT_TIMEOUT = 0.5
RETRY = RetryPolicy(
    max_attempts=8, initial_interval=0.01, backoff_factor=1.5, jitter=False, retry_on=is_transient
)
QUESTION = {"messages": [("user", "What is 2 + 3?")]}
CALL_ADD = Reply(tool_calls=[tool_call("add", {"a": 2, "b": 3}, "call_add")])
ANSWER = Reply(content="2 + 3 = 5.")


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(default=ANSWER) as running:
        yield running


class Adder:
    """A tool that records every call in a side-effect log."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def tool(self) -> Any:
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.calls.append((a, b))
            return a + b

        return add


def chat_model(server: FaultServer, *, streaming: bool = False, timeout: float = CLIENT_TIMEOUT):
    return ChatOpenAI(
        base_url=server.base_url,
        api_key="x",
        model="fault-model",
        max_retries=0,
        timeout=timeout,
        streaming=streaming,
    )


def react(server: FaultServer, adder: Adder, **kwargs: Any) -> Any:
    streaming = kwargs.pop("streaming", False)
    timeout = kwargs.pop("timeout", CLIENT_TIMEOUT)
    return create_react_graph(
        chat_model(server, streaming=streaming, timeout=timeout),
        [adder.tool()],
        tool_mode="native",
        retry_policy=kwargs.pop("retry_policy", RETRY),
        **kwargs,
    )


TRANSIENT = {
    "429_retry_after_0": Status(429, retry_after="0"),
    "500": Status(500),
    "503": Status(503),
    "slower_than_timeout": Delay(CLIENT_TIMEOUT * 3),
    "connection_reset": Reset(),
}


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_transient_fault_is_retried_and_the_run_completes(server, fault, streaming):
    server.script(TRANSIENT[fault], CALL_ADD, TRANSIENT[fault], ANSWER)
    adder = Adder()
    out = react(server, adder, streaming=streaming).invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert out["answer"] == "2 + 3 = 5."
    assert adder.calls == [(2, 3)]
    # Four requests reached the server and all count as model calls, the two failed ones
    # as retries; only the two replies reported tokens.
    assert server.served == [type(TRANSIENT[fault]).__name__, "Reply"] * 2
    assert out["llm_calls"] == 4 == len(server.requests)
    assert out["retries"] == 2
    assert out["usage"]["input_tokens"] == 22 and out["usage"]["output_tokens"] == 14
    assert all(request.get("stream", False) == streaming for request in server.requests)


def test_stream_cut_midway_is_retried(server):
    server.script(CutStream(after_chunks=2), CALL_ADD, CutStream(after_chunks=3), ANSWER)
    adder = Adder()
    out = react(server, adder, streaming=True).invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert out["answer"] == "2 + 3 = 5." and out["llm_calls"] == 4 == len(server.requests)
    assert server.served == ["CutStream", "Reply", "CutStream", "Reply"]
    assert out["retries"] == 2
    assert out["usage"]["input_tokens"] == 22 and out["usage"]["output_tokens"] == 14
    # The half-streamed reply left nothing behind in the transcript.
    assert "never end" not in str([m.content for m in out["messages"]])


def test_every_transient_fault_in_one_run(server):
    server.script(*TRANSIENT.values(), CALL_ADD, *reversed(TRANSIENT.values()), ANSWER)
    adder = Adder()
    out = react(server, adder).invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert adder.calls == [(2, 3)]
    # Every request counts, each fault as a retry of the request that followed it.
    assert out["llm_calls"] == len(server.requests) == 2 * len(TRANSIENT) + 2
    assert out["retries"] == 2 * len(TRANSIENT)


async def test_transient_faults_under_ainvoke(server):
    server.script(Status(503), Reset(), CALL_ADD, Status(429, retry_after="0"), ANSWER)
    adder = Adder()
    out = await react(server, adder).ainvoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert adder.calls == [(2, 3)]
    # Five requests count as model calls: three faults retried, two replies.
    assert out["llm_calls"] == 5 == len(server.requests)
    assert out["retries"] == 3


PERMANENT = {
    "400": (Status(400), ["HTTP 400", "injected HTTP 400"]),
    "401": (Status(401), ["HTTP 401", "AuthenticationError"]),
    # The SDK raises json.JSONDecodeError (a ValueError): not a transient failure.
    "malformed_body": (Malformed(), ["JSONDecodeError"]),
}


@pytest.mark.parametrize("fault", list(PERMANENT))
def test_permanent_fault_ends_with_status_error(server, fault):
    behaviour, names = PERMANENT[fault]
    server.script(CALL_ADD, behaviour)
    adder = Adder()
    out = react(server, adder).invoke(QUESTION)
    assert out["status"] == "error"
    for name in names:
        assert name in out["error"]
    # Not retried: the tool call and the one failed request, both counted.
    assert len(server.requests) == 2
    assert out["llm_calls"] == 2 and adder.calls == [(2, 3)]
    assert out["retries"] == 0
    assert isinstance(out["answer"], str)


def test_malformed_body_is_what_the_sdk_reports_as_permanent(server):
    server.script(Malformed())
    with pytest.raises(ValueError) as caught:
        chat_model(server).invoke("hi")
    assert not is_transient(caught.value)


def test_retries_are_bounded_by_max_attempts(server):
    server.default = Status(503)
    adder = Adder()
    policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)
    out = react(server, adder, retry_policy=policy).invoke(QUESTION)
    assert out["status"] == "error" and "HTTP 503" in out["error"]
    # Every attempt sent a request that counts; the first two were retried.
    assert len(server.requests) == 3 == out["llm_calls"]
    assert out["retries"] == 2


# ---------------------------------------------------------------- checkpoints and resume


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(connection)
    finally:
        connection.close()


def tool_results(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


def last_good_checkpoint(graph: Any, config: dict[str, Any]) -> Any:
    """The newest checkpoint of the thread that still had work to do before it failed."""
    for snapshot in graph.get_state_history(config):
        if snapshot.next and snapshot.values.get("status") == "running":
            return snapshot
    raise AssertionError("no resumable checkpoint")


def test_outage_after_a_completed_step_then_resume(server, checkpointer):
    """The server fails for longer than the retry budget after the tool step: the run ends
    with status "error", the completed step is in the checkpoint, and once the server is
    back the thread is resumed from its last good checkpoint without redoing the tool."""
    policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)
    server.script(CALL_ADD, Status(503), Status(503), Status(503))
    adder = Adder()
    graph = react(server, adder, retry_policy=policy, checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "outage"}}
    out = graph.invoke(QUESTION, config)
    assert out["status"] == "error" and "HTTP 503" in out["error"]
    # The tool call and the three failed attempts all count; two of them were retries.
    assert out["llm_calls"] == 4 == len(server.requests) and out["retries"] == 2
    saved = graph.get_state(config)
    assert tool_results(saved.values) and "5" in tool_results(saved.values)[0]
    assert adder.calls == [(2, 3)]

    # An error end is final: invoking the thread again with no input runs nothing.
    requests_before = len(server.requests)
    again = graph.invoke(None, config)
    assert again["status"] == "error" and len(server.requests) == requests_before

    # The server has recovered (its default reply is the answer): resume from the last
    # checkpoint that still had work to do.
    resumed = graph.invoke(None, last_good_checkpoint(graph, config).config)
    assert resumed["status"] == "completed" and resumed["answer"] == "2 + 3 = 5."
    assert adder.calls == [(2, 3)], "the completed tool call ran again"
    assert graph.get_state(config).values["status"] == "completed"
    assert len(tool_results(graph.get_state(config).values)) == 1


async def test_hung_server_caller_gives_up_then_resume(server):
    """The server hangs on the second model call and the caller cancels the run: the
    thread stops at the pending model call, and ``invoke(None, config)`` after recovery
    continues from there without redoing the tool call."""
    checkpointer = InMemorySaver()
    server.script(CALL_ADD, Delay(3.0, then=ANSWER))
    adder = Adder()
    graph = react(server, adder, checkpointer=checkpointer, timeout=30.0)
    config = {"configurable": {"thread_id": "hang"}}
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(graph.ainvoke(QUESTION, config, durability="sync"), timeout=1.0)
    pending = graph.get_state(config)
    assert pending.next == ("generate",)
    assert adder.calls == [(2, 3)] and tool_results(pending.values)

    resumed = graph.invoke(None, config)
    assert resumed["status"] == "completed" and resumed["answer"] == "2 + 3 = 5."
    assert adder.calls == [(2, 3)]
