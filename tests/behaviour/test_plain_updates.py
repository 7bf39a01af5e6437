"""Streamed updates hold plain values, and a second run on a thread starts from zero.

``stream_mode="updates"`` shows what each node wrote; no LangGraph ``Overwrite`` wrapper
(or any other internal object) may show there, in any loop.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Overwrite

from tests.behaviour.test_custom_state import TOOL_LOOPS, build, start

LOOPS = (*TOOL_LOOPS, "cot", "tot")
PLAIN = (str, int, float, bool, type(None), BaseMessage)


def wrappers(value: Any) -> list[Any]:
    """Every value inside ``value`` that is not plain data or a message."""
    if isinstance(value, dict):
        return [found for item in value.values() for found in wrappers(item)]
    if isinstance(value, (list, tuple)):
        return [found for item in value for found in wrappers(item)]
    return [] if isinstance(value, PLAIN) else [value]


@pytest.mark.parametrize("loop", LOOPS)
def test_updates_hold_plain_values(loop):
    chunks = list(build(loop, "native").stream(start(fruits=[]), stream_mode="updates"))
    assert chunks
    odd = [found for chunk in chunks for found in wrappers(chunk)]
    assert not [found for found in odd if isinstance(found, Overwrite)]
    assert odd == []


@pytest.mark.parametrize("loop", LOOPS)
def test_a_second_run_on_a_thread_counts_only_its_own_calls(loop):
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": f"again-{loop}"}}
    first = build(loop, "native", checkpointer=saver).invoke(start(fruits=[]), config)
    second = build(loop, "native", checkpointer=saver).invoke(start(), config)
    assert first["llm_calls"] == second["llm_calls"] > 0
    assert first["usage"]["output_tokens"] == second["usage"]["output_tokens"] > 0
    assert second["retries"] == 0


@pytest.mark.parametrize("loop", ["plan_execute", "reflexion"])
def test_xray_drawings_expand_the_inner_react(loop):
    graph = build(loop, "native")
    flat = graph.get_graph().draw_mermaid()
    inner = graph.get_graph(xray=True).draw_mermaid()
    assert "call_tool" not in flat
    assert "call_tool" in inner and "generate" in inner


@pytest.mark.parametrize("loop", LOOPS)
def test_the_input_schema_is_what_a_user_fills_in(loop):
    """Studio renders the input schema as a form: the messages and the caller's own keys,
    none of the loop's bookkeeping."""
    fields = set(build(loop, "native").get_input_jsonschema()["properties"])
    assert fields == {"messages", "fruits", "basket"}


SCALARS = (str, int, float, bool, type(None))


@pytest.mark.parametrize("loop", LOOPS)
def test_a_step_writes_only_the_plain_values_it_changes(loop):
    """On the second run of a thread, no step writes a key without a reducer the value it
    holds already (LangGraph stores and checkpoints every key written, changed or not):
    the run's status, answer and error, its tool mode, the loop's own counters."""
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": f"unchanged-{loop}"}}
    graph = build(loop, "native", checkpointer=saver)
    graph.invoke(start(fruits=[]), config)
    plain = {
        key
        for key, channel in graph.channels.items()
        if type(channel).__name__ == "LastValue" and not key.startswith("branch:")
    }
    state = graph.get_state(config).values
    unchanged: list[tuple[str, str]] = []
    for mode, chunk in graph.stream(start(), config, stream_mode=["updates", "values"]):
        if mode == "values":
            state = chunk
            continue
        for node, update in chunk.items():
            for key, value in (update or {}).items():
                held = state.get(key)
                same = value is held or (isinstance(value, SCALARS) and value == held)
                if key in plain and key in state and type(value) is type(held) and same:
                    unchanged.append((node, key))
    assert unchanged == []
