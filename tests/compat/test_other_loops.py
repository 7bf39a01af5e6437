"""The tool guarantees in the other tool-using loops: Plan-and-Execute, Reflexion,
Self-Ask and CRITIC run their tools the same way as ReAct.

These carry the ToolNode behaviours ported in test_tool_execution.py and
test_agent_loop.py (ToolRuntime injection, errors as observations, async tools under
invoke, interrupt() in a tool) to every loop that calls tools; one scripted native-mode
run per loop keeps them cheap.
"""

import json
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.prebuilt import InjectedState, ToolRuntime
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

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


class ToolTracer(BaseCallbackHandler):
    """Records the tool runs a tracer (LangSmith or any callback handler) is told about."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended = 0

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kwargs: Any) -> None:
        self.started.append(serialized.get("name", ""))

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.ended += 1


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_tracer_sees_every_tool_run(loop, how):
    """Callbacks reach tool runs under invoke and ainvoke (tools run in the graph's runtime)."""

    @tool
    def search(query: str) -> str:
        """Search the web."""
        return "Construction ran from 1887 to 1889."

    _model, graph = run(loop, [search])
    tracer = ToolTracer()
    inputs = {"messages": [("user", QUESTION)]}
    config = {"callbacks": [tracer]}
    out = graph.invoke(inputs, config) if how == "invoke" else await graph.ainvoke(inputs, config)
    assert out["status"] == "completed"
    assert tracer.started == ["search"] and tracer.ended == 1


@pytest.mark.parametrize("loop", LOOPS)
def test_stream_writer_and_injected_state_in_a_tool(loop):
    """get_stream_writer() and InjectedState work in a tool of every tool-using loop."""

    @tool
    def search(query: str, state: Annotated[dict, InjectedState]) -> str:
        """Search the web."""
        get_stream_writer()({"searching": query, "messages_seen": len(state["messages"])})
        return "Construction ran from 1887 to 1889."

    _model, graph = run(loop, [search])
    # Plan-and-Execute and Reflexion run tools inside their ReAct subgraph, whose stream
    # reaches the caller with subgraphs=True (as for any LangGraph subgraph).
    custom = [
        chunk
        for _namespace, mode, chunk in graph.stream(
            {"messages": [("user", QUESTION)]},
            stream_mode=["custom", "updates"],
            subgraphs=True,
        )
        if mode == "custom"
    ]
    assert [c["searching"] for c in custom] == [QUERY]
    assert custom[0]["messages_seen"] >= 1


@pytest.mark.parametrize("loop", LOOPS)
def test_command_update_from_a_tool_is_applied(loop):
    """A tool's Command(update=...) reaches the caller's state keys (state_schema)."""

    class Notes(TypedDict, total=False):
        notes: list[str]

    @tool
    def search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Search the web."""
        return Command(
            update={
                "notes": [f"looked up {query}"],
                "messages": [
                    ToolMessage("Construction ran from 1887 to 1889.", tool_call_id=tool_call_id)
                ],
            }
        )

    model, graph = run(loop, [search], state_schema=Notes)
    out = graph.invoke({"messages": [("user", QUESTION)], "notes": []})
    assert out["notes"] == [f"looked up {QUERY}"]
    assert "Construction ran from 1887 to 1889." in everything_seen(model)
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
