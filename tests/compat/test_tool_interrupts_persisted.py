"""interrupt() inside a tool, paused on a persistent checkpointer and resumed by a new graph
object over a new connection (a restart), in every tool-using loop; PostgreSQL for ReAct.

Ports the peers' interrupt-in-a-tool cases (langgraph ``test_tool_node_node_interrupt``)
to SQLite and PostgreSQL threads.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, interrupt

from loopgraphs import create_react_graph
from tests.compat.support import paused
from tests.compat.test_other_loops import LOOPS, QUERY, QUESTION
from tests.support.fakes import calls, tool_call
from tests.support.scripts import model_for


def react(tool_name: str, args: dict[str, Any], **kwargs: Any):
    replies = [calls(tool_call(tool_name, args)), "It was completed in 1889."]
    model = model_for("native", replies)
    return model, create_react_graph(model, kwargs.pop("tools"), tool_mode="native", **kwargs)


BUILDERS: dict[str, Callable[..., Any]] = {"react": react, **LOOPS}


def asking_tool(log: list[str]) -> Any:
    @tool
    def search(query: str) -> str:
        """Ask a human to look something up."""
        answer = interrupt({"query": query})
        log.append(answer)
        return answer

    return search


def run_with_restart(loop: str, saver_factory: Callable[[], Any], thread: str) -> dict[str, Any]:
    """Start a run that pauses in a tool, then resume it with a new graph and saver."""
    log: list[str] = []
    config = {"configurable": {"thread_id": thread}}
    with saver_factory() as saver:
        _, graph = BUILDERS[loop](
            "search", {"query": QUERY}, tools=[asking_tool(log)], checkpointer=saver
        )
        graph.invoke({"messages": [("user", QUESTION)]}, config)
        assert {"query": QUERY} in paused(graph, config)
    assert log == []
    with saver_factory() as saver:
        model, graph = BUILDERS[loop](
            "search", {"query": QUERY}, tools=[asking_tool(log)], checkpointer=saver
        )
        # The new model replays the script from the start; skip the reply already used.
        model.replies = model.replies[_replies_before_tool(loop) :]
        out = graph.invoke(Command(resume="A human says 1889."), config)
    assert log == ["A human says 1889."]
    return out


def _replies_before_tool(loop: str) -> int:
    """Model replies a loop has used when its tool runs (the resumed graph's model must
    continue after them)."""
    return {"react": 1, "plan_execute": 2, "reflexion": 1, "self_ask": 1, "critic": 2}[loop]


@pytest.mark.parametrize("loop", BUILDERS)
def test_interrupt_in_a_tool_resumes_on_sqlite(loop, tmp_path):
    path = os.fspath(tmp_path / "threads.sqlite")

    @contextmanager
    def saver() -> Iterator[SqliteSaver]:
        with sqlite3.connect(path, check_same_thread=False) as connection:
            yield SqliteSaver(connection)
        connection.close()

    out = run_with_restart(loop, saver, f"sqlite-{loop}")
    assert out["status"] == "completed"
    assert "1889" in out["answer"]


@pytest.mark.integration
def test_interrupt_in_a_tool_resumes_on_postgres(postgres_uri):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_uri) as saver:
        saver.setup()
    out = run_with_restart(
        "react", lambda: PostgresSaver.from_conn_string(postgres_uri), "pg-tool-interrupt"
    )
    assert out["status"] == "completed" and "1889" in out["answer"]


def parallel_run(saver_factory: Callable[[], Any], thread: str) -> tuple[list[str], dict[str, Any]]:
    """One reply calls a tool that acts (an email) and one that asks a human; the run
    pauses in the second, and a new graph over a new connection resumes it."""
    sent: list[str] = []
    log: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    def build(saver: Any) -> Any:
        replies = [
            calls(tool_call("send_email", {"to": "ann"}), tool_call("search", {"query": QUERY})),
            "Done: emailed Ann, completed in 1889.",
        ]
        model = model_for("native", replies)
        graph = create_react_graph(
            model, [send_email, asking_tool(log)], tool_mode="native", checkpointer=saver
        )
        return model, graph

    config = {"configurable": {"thread_id": thread}}
    with saver_factory() as saver:
        _, graph = build(saver)
        graph.invoke({"messages": [("user", QUESTION)]}, config)
        assert {"query": QUERY} in paused(graph, config)
    with saver_factory() as saver:
        model, graph = build(saver)
        model.replies = model.replies[1:]
        out = graph.invoke(Command(resume="A human says 1889."), config)
    return sent, out


def _sqlite(path: str) -> Callable[[], Any]:
    @contextmanager
    def saver() -> Iterator[SqliteSaver]:
        with sqlite3.connect(path, check_same_thread=False) as connection:
            yield SqliteSaver(connection)
        connection.close()

    return saver


def test_a_finished_sibling_runs_once_across_an_interrupt_on_sqlite(tmp_path):
    """ports test_react_agent_parallel_tool_calls (v2): each call is its own task, so the
    email sent before the other call's interrupt is not sent again on resume."""
    sent, out = parallel_run(_sqlite(os.fspath(tmp_path / "threads.sqlite")), "sqlite-siblings")
    assert sent == ["ann"]
    assert out["status"] == "completed"
    results = [m for m in out["messages"] if m.type == "tool"]
    assert sorted(m.name for m in results) == ["search", "send_email"]


@pytest.mark.integration
def test_a_finished_sibling_runs_once_across_an_interrupt_on_postgres(postgres_uri):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_uri) as saver:
        saver.setup()
    sent, out = parallel_run(lambda: PostgresSaver.from_conn_string(postgres_uri), "pg-siblings")
    assert sent == ["ann"]
    assert out["status"] == "completed"
