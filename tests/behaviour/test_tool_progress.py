"""A tool's progress (``get_stream_writer()``) reaches ``stream_mode="custom"`` from every
loop that calls tools, without ``subgraphs=True``, sync and async, once each: the loops
that run ReAct inside a step (Plan-and-Execute, Reflexion) pass the inner run's events on
as their own step's."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langgraph.config import get_stream_writer

from loopgraphs import build_loop
from loopgraphs.graphs.registry import TOOL_LOOPS
from tests.support.loop_scripts import tool_then_answer
from tests.support.scripts import MODES, model_for

QUESTION = {"messages": [("user", "Look up the answer.")]}


@tool
def lookup(query: str) -> str:
    """Look something up."""
    writer = get_stream_writer()
    writer({"progress": "started", "query": query})
    writer({"progress": "done"})
    return "The answer is 42."


def graph_for(loop: str, mode: str):
    replies = tool_then_answer(loop, mode, "lookup", {"query": "answer"}, "42")
    return build_loop(loop, model_for(mode, replies), [lookup], tool_mode=mode)


EXPECTED = [{"progress": "started", "query": "answer"}, {"progress": "done"}]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_progress_reaches_custom_streaming_once_without_subgraphs(loop, mode):
    events = list(graph_for(loop, mode).stream(QUESTION, stream_mode="custom"))
    assert events == EXPECTED


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_progress_with_subgraphs_and_beside_other_modes_once_each(loop):
    nested = list(graph_for(loop, "native").stream(QUESTION, stream_mode="custom", subgraphs=True))
    assert [event for _, event in nested] == EXPECTED
    mixed = list(graph_for(loop, "native").stream(QUESTION, stream_mode=["updates", "custom"]))
    assert [chunk for mode, chunk in mixed if mode == "custom"] == EXPECTED
    assert any(mode == "updates" for mode, _ in mixed)


@pytest.mark.parametrize("loop", TOOL_LOOPS)
async def test_progress_reaches_custom_streaming_under_astream(loop):
    graph = graph_for(loop, "native")
    events = [event async for event in graph.astream(QUESTION, stream_mode="custom")]
    assert events == EXPECTED
