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
from tests.fakes import calls, tool_call
from tests.scripts import model_for


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
