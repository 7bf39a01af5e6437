"""The tool guarantees in the other tool-using loops: Plan-and-Execute, Reflexion,
Self-Ask and CRITIC run their tools the same way as ReAct.

These carry the ToolNode behaviours ported in test_tool_execution.py and
test_agent_loop.py (ToolRuntime injection, errors as observations, async tools under
invoke, interrupt() in a tool) to every loop that calls tools; one scripted native-mode
run per loop keeps them cheap.
"""

import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command, interrupt

from loopgraphs import (
    create_critic_graph,
    create_plan_execute_graph,
    create_reflexion_graph,
    create_self_ask_graph,
)
from tests.compat.fake import call
from tests.compat.support import model_for, paused, seen

QUESTION = "When was the tower completed?"
QUERY = "tower completion year"


def native_calls(*calls: Any, content: str = "") -> AIMessage:
    return AIMessage(content=content, tool_calls=list(calls))


def plan_execute(tool_name: str, args: dict[str, Any], **kwargs: Any):
    replies = [
        native_calls(call("Plan", {"steps": ["look the year up"]})),
        native_calls(call(tool_name, args)),
        "Step result: 1889.",
        "It was completed in 1889.",
    ]
    model = model_for("native", replies)
    return model, create_plan_execute_graph(
        model, kwargs.pop("tools"), tool_mode="native", **kwargs
    )


def reflexion(tool_name: str, args: dict[str, Any], **kwargs: Any):
    replies = [
        native_calls(call(tool_name, args)),
        "It was completed in 1889.",
        native_calls(call("Evaluation", {"satisfactory": True, "feedback": ""})),
    ]
    model = model_for("native", replies)
    return model, create_reflexion_graph(model, kwargs.pop("tools"), tool_mode="native", **kwargs)


def self_ask(tool_name: str, args: dict[str, Any], **kwargs: Any):
    replies = [
        native_calls(
            call(tool_name, args),
            content=f"Are follow up questions needed here? Yes.\nFollow up: {QUERY}",
        ),
        "So the final answer is: It was completed in 1889.",
    ]
    model = model_for("native", replies)
    return model, create_self_ask_graph(model, kwargs.pop("tools"), tool_mode="native", **kwargs)


def critic(tool_name: str, args: dict[str, Any], **kwargs: Any):
    claim = {"claim": "completed in 1887", "tool": tool_name, "tool_input": args}
    replies = [
        "It was completed in 1887.",
        native_calls(call("CritiqueReport", {"verified": False, "claims": [claim]})),
        "It was completed in 1889.",
        native_calls(call("CritiqueReport", {"verified": True, "claims": []})),
    ]
    model = model_for("native", replies)
    return model, create_critic_graph(model, kwargs.pop("tools"), tool_mode="native", **kwargs)


LOOPS: dict[str, Callable[..., Any]] = {
    "plan_execute": plan_execute,
    "reflexion": reflexion,
    "self_ask": self_ask,
    "critic": critic,
}


def run(loop: str, tools: list, **kwargs: Any):
    model, graph = LOOPS[loop](tools[0].name, {"query": QUERY}, tools=tools, **kwargs)
    return model, graph


def everything_seen(model) -> str:
    return "\n".join(seen(prompt) for prompt in model.prompts)


@pytest.mark.parametrize("loop", LOOPS)
def test_tool_runtime_is_injected(loop):
    """ToolRuntime (ports test_tool_runtime_basic_injection) in every tool-using loop."""
    received: dict[str, Any] = {}

    @tool
    def search(query: str, runtime: ToolRuntime) -> str:
        """Search the web."""
        received.update(tool_call_id=runtime.tool_call_id, state=runtime.state, query=query)
        return "Construction ran from 1887 to 1889."

    model, graph = run(loop, [search])
    out = graph.invoke({"messages": [("user", QUESTION)]})
    assert received["query"] == QUERY
    assert isinstance(received["tool_call_id"], str) and received["tool_call_id"]
    assert "messages" in received["state"]
    assert "Construction ran from 1887 to 1889." in everything_seen(model)
    assert out["status"] == "completed"


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_tool_failure_is_an_observation(loop, how):
    """Errors as observations, never raised (ports test_tool_node_error_handling)."""

    @tool
    def search(query: str) -> str:
        """Search the web."""
        raise RuntimeError("search backend is down")

    model, graph = run(loop, [search])
    inputs = {"messages": [("user", QUESTION)]}
    out = graph.invoke(inputs) if how == "invoke" else await graph.ainvoke(inputs)
    assert out["status"] == "completed"
    assert "search backend is down" in everything_seen(model)


@pytest.mark.parametrize("loop", LOOPS)
def test_async_tool_under_invoke(loop):
    """Async-only tools under invoke (tools run in LangGraph's runtime)."""

    @tool
    async def search(query: str) -> str:
        """Search the web."""
        return f"async result for {query}"

    model, graph = run(loop, [search])
    out = graph.invoke({"messages": [("user", QUESTION)]})
    assert f"async result for {QUERY}" in everything_seen(model)
    assert out["status"] == "completed"


@pytest.mark.parametrize("loop", LOOPS)
def test_interrupt_inside_a_tool(loop):
    """interrupt() in a tool pauses the run; Command(resume=...) finishes it (ports
    test_tool_node_node_interrupt)."""
    after_interrupt: list[str] = []

    @tool
    def search(query: str) -> str:
        """Ask a human to search."""
        answer = interrupt({"query": query})
        after_interrupt.append(answer)
        return answer

    model, graph = run(loop, [search], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"interrupt-{loop}"}}
    graph.invoke({"messages": [("user", QUESTION)]}, config)
    assert {"query": QUERY} in paused(graph, config)
    assert after_interrupt == []
    out = graph.invoke(Command(resume="A human says 1889."), config)
    assert after_interrupt == ["A human says 1889."]
    assert "A human says 1889." in everything_seen(model)
    assert out["status"] == "completed"


def test_scripts_are_consistent():
    """The scripts above end where each loop ends (a guard for this file)."""
    for loop in LOOPS:

        @tool
        def search(query: str) -> str:
            """Search the web."""
            return "Construction ran from 1887 to 1889."

        _model, graph = run(loop, [search])
        out = graph.invoke({"messages": [("user", QUESTION)]})
        assert out["status"] == "completed", loop
        assert "1889" in out["answer"], (loop, out["answer"])
        assert json.dumps(out["answer"])
