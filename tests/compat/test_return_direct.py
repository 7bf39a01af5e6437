"""Tools with ``return_direct=True`` end the run with their output.

Ports of ``test_return_direct`` (langgraph ``test_react_agent.py`` and langchain
``agents/test_react_agent.py``), langchain ``agents/test_return_direct_graph.py``
(``test_return_direct_tool_error_routes_back_to_model``) and the deterministic part of
``agents/test_return_direct_spec.py`` (tool call count, last message, no structured
response). A call mixing a return_direct tool with an ordinary one is treated
differently by the two peers and is left open; see DIFFERENCES.md.
"""

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call
from tests.compat.support import MODES, act, final, model_for, tool_messages, tool_text


@tool(return_direct=True)
def tool_return_direct(input: str) -> str:
    """A tool that returns directly."""
    return f"Direct result: {input}"


@tool
def tool_normal(input: str) -> str:
    """A normal tool."""
    return f"Normal result: {input}"


@pytest.mark.parametrize("mode", MODES)
def test_return_direct_ends_after_the_tool(mode):
    """Ports test_return_direct (direct case): no second model call; the transcript ends
    with the tool's message and the answer is the tool's output."""
    model = model_for(
        mode,
        [act(mode, "tool_return_direct", {"input": "Test direct"}), final(mode, "unused")],
    )
    graph = create_react_graph(model, [tool_return_direct, tool_normal], tool_mode=mode)
    out = graph.invoke({"messages": [HumanMessage("Test direct", id="hum0")]})
    assert model.call_count == 1
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool"]
    last = out["messages"][-1]
    assert isinstance(last, ToolMessage) and last.name == "tool_return_direct"
    assert tool_text(last) == "Direct result: Test direct"
    assert last.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert out["answer"] == "Direct result: Test direct"
    assert out["status"] == "completed"
    assert out["llm_calls"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_normal_tool_goes_back_to_the_model(mode):
    """Ports test_return_direct (normal case)."""
    model = model_for(
        mode,
        [act(mode, "tool_normal", {"input": "Test normal"}), final(mode, "Normal answer")],
    )
    graph = create_react_graph(model, [tool_return_direct, tool_normal], tool_mode=mode)
    out = graph.invoke({"messages": [HumanMessage("Test normal")]})
    assert model.call_count == 2
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert tool_text(out["messages"][2]) == "Normal result: Test normal"
    assert out["answer"] == "Normal answer"


async def test_return_direct_under_ainvoke():
    """Ports test_return_direct (it is an async test in both peers)."""
    model = FakeToolModel(turns=[[call("tool_return_direct", {"input": "x"}, id="1")], "unused"])
    graph = create_react_graph(model, [tool_return_direct, tool_normal], tool_mode="native")
    out = await graph.ainvoke({"messages": [HumanMessage("go")]})
    assert model.call_count == 1
    assert out["answer"] == "Direct result: x"
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool"]


def test_failed_return_direct_tool_goes_back_to_the_model():
    """Ports test_return_direct_tool_error_routes_back_to_model: a return_direct tool
    that fails does not end the run; the model sees the error and answers."""

    @tool(return_direct=True)
    def fragile(input: str) -> str:
        """A return_direct tool that fails."""
        raise RuntimeError("tool failed")

    model = FakeToolModel(turns=[[call("fragile", {"input": "test"}, id="call-1")], "recovered"])
    graph = create_react_graph(model, [fragile], tool_mode="native")
    out = graph.invoke({"messages": [HumanMessage("go")]})
    assert model.call_count == 2
    (message,) = tool_messages(out)
    assert message.status == "error" and "tool failed" in tool_text(message)
    assert out["answer"] == "recovered"


def test_return_direct_after_earlier_tool_turns():
    """The return_direct tool ends the run even after ordinary tool turns (spec
    test_return_direct_spec: the tool is polled until it is done)."""
    attempts = {"n": 0}

    @tool(return_direct=True)
    def finish(report: str) -> str:
        """Report and stop."""
        return f"Attempts: {attempts['n']}"

    @tool
    def poll_job(round: int) -> str:
        """Check a job."""
        attempts["n"] += 1
        return "pending" if attempts["n"] < 3 else "succeeded"

    model = FakeToolModel(
        turns=[
            [call("poll_job", {"round": 1})],
            [call("poll_job", {"round": 2})],
            [call("poll_job", {"round": 3})],
            [call("finish", {"report": "done"})],
            "unused",
        ]
    )
    graph = create_react_graph(model, [finish, poll_job], tool_mode="native")
    out = graph.invoke({"messages": [HumanMessage("Poll until done")]})
    assert attempts["n"] == 3
    assert model.call_count == 4
    assert out["answer"] == "Attempts: 3"
    assert tool_text(out["messages"][-1]) == "Attempts: 3"
    assert out.get("structured_response") is None
