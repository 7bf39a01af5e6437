"""The host app's contract, on every loop it concerns: approvals stop every tool call
before it runs, input redaction reaches every model request, and a tool's handoff to the
parent graph routes the parent."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    PIIMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState
from langgraph.types import Command

from loopgraphs import LOOPS, build_loop
from tests.clients.support import LOOP_SCRIPTS, TOOL_LOOPS, loop_agent
from tests.compat.middleware_support import call, calls, native
from tests.support.scripts import Refunds, run_in_parent

ORDER = {"order": "A1"}
QUESTION = "My email is ann@example.com. What is six times seven?"
NO_TOOL_SCRIPTS: dict[str, list[Any]] = {
    "cot": ["Six times seven.\nFINAL ANSWER: 42"],
    "tot": ["1. six\n2. seven\n3. both", '{"scores": [7, 3, 1]}', "ANSWER: 42"],
}
OPTIONS: dict[str, dict[str, Any]] = {"tot": {"max_depth": 1}}


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_approval_stops_every_loops_tool_call_before_it_runs(loop):
    refunds = Refunds()
    model = native(LOOP_SCRIPTS[loop]("refund", ORDER))
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    graph = LOOPS[loop](model, [refunds.tool], middleware=[approval], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"approve-{loop}"}}

    paused = graph.invoke({"messages": [HumanMessage("What is six times seven?")]}, config)
    (interrupt,) = paused["__interrupt__"]
    (action,) = interrupt.value["action_requests"]
    assert action["name"] == "refund" and action["args"] == ORDER
    assert refunds.done == []

    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert refunds.done == ["A1"]
    assert out["status"] == "completed" and "42" in out["answer"]


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_rejected_call_never_runs_in_any_loop(loop):
    refunds = Refunds()
    model = native(LOOP_SCRIPTS[loop]("refund", ORDER), repeat_last=True)
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    graph = LOOPS[loop](model, [refunds.tool], middleware=[approval], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"reject-{loop}"}}

    graph.invoke({"messages": [HumanMessage("What is six times seven?")]}, config)
    decision = {"type": "reject", "message": "No refunds today."}
    out = graph.invoke(Command(resume={"decisions": [decision]}), config)
    while "__interrupt__" in out:  # the loop may ask again: keep saying no
        out = graph.invoke(Command(resume={"decisions": [decision]}), config)
    assert refunds.done == []
    assert out["status"] != "error"
    rejected = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "refund"]
    assert rejected and all("No refunds today." in str(m.content) for m in rejected)


@pytest.mark.parametrize("loop", list(LOOPS))
def test_input_redaction_reaches_every_model_request(loop):
    script = NO_TOOL_SCRIPTS.get(loop) or LOOP_SCRIPTS[loop]("refund", ORDER)
    model = native(script)
    tools = [Refunds().tool] if loop in TOOL_LOOPS else []
    pii = PIIMiddleware("email", strategy="redact", apply_to_input=True)
    graph = build_loop(loop, model, tools, middleware=[pii], **OPTIONS.get(loop, {}))
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})

    assert out["status"] == "completed"
    assert model.call_count == out["llm_calls"] > 0
    for prompt in model.prompts:
        text = " ".join(str(m.content) for m in prompt)
        assert "ann@example.com" not in text
    assert any("[REDACTED_EMAIL]" in " ".join(map(str, p)) for p in model.prompts)
    # Nor is it in anything the run hands back.
    assert "ann@example.com" not in repr(out)


@tool
def hand_over(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to the billing team."""
    done = ToolMessage("Handed to billing.", tool_call_id=tool_call_id, name="hand_over")
    return Command(goto="elsewhere", graph=Command.PARENT, update={"messages": [done]})


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_tool_handoff_routes_the_parent_graph_from_every_loop(loop):
    model = native(LOOP_SCRIPTS[loop]("hand_over", {}), repeat_last=True)
    agent = LOOPS[loop](model, [hand_over], name="assistant")
    request = {"messages": [HumanMessage("I want my money back.")]}
    visited, out = run_in_parent(agent, request)

    assert visited == ["elsewhere"]
    handed = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "hand_over"]
    assert len(handed) == 1 and "Handed to billing." in str(handed[0].content)


@tool
def relay(
    state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
) -> Command:
    """Pass the conversation on, as a swarm's handoff tool does."""
    done = ToolMessage("Relayed.", tool_call_id=tool_call_id, name="relay")
    return Command(update={"messages": [*state["messages"], done]})


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_tool_sending_the_history_back_rewrites_none_of_it(loop):
    earlier = [
        HumanMessage("Look up the order."),
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "o"}, "id": "old"}]),
        ToolMessage("Order 7 shipped.", tool_call_id="old", name="search", id="old-result"),
        AIMessage("It shipped."),
    ]
    model = native(LOOP_SCRIPTS[loop]("relay", {}), repeat_last=True)
    graph = LOOPS[loop](model, [relay])
    out = graph.invoke({"messages": [*earlier, HumanMessage("Pass it on.")]})

    kept = next(m for m in out["messages"] if m.id == "old-result")
    assert kept.content == "Order 7 shipped."
    relayed = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "relay"]
    assert len(relayed) == 1 and str(relayed[0].content) == "Relayed."  # as returned


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_loop_node_streams_its_steps_and_keeps_the_hosts_keys(loop):
    class Host(MessagesState):
        status: str

    agent, _ = loop_agent(loop, result_keys={"status": "agent_status"})
    parent = StateGraph(Host)
    parent.add_node("triage", lambda state: {"status": "triaged"})
    parent.add_node("assistant", agent)
    parent.add_edge(START, "triage")
    parent.add_edge("triage", "assistant")
    parent.add_edge("assistant", END)
    graph = parent.compile()
    request = {"messages": [HumanMessage("What is six times seven?")]}

    inner: set[str] = set()
    out: dict[str, Any] = {}
    modes = ["updates", "values"]
    for namespace, mode, data in graph.stream(request, stream_mode=modes, subgraphs=True):
        if mode == "values" and not namespace:
            out = data
        elif mode == "updates" and namespace and namespace[0].startswith("assistant:"):
            inner.update(data)
    assert "call_tool" in inner
    assert out["status"] == "triaged"
    assert any(isinstance(m, ToolMessage) and m.name == "search" for m in out["messages"])


def _refund_claim(order: str) -> dict[str, Any]:
    return {"claim": f"order {order} refunded", "tool": "refund", "tool_input": {"order": order}}


# Each loop calls refund A1, then refund B2 (the call over the limit), then would go on.
# Inside Plan-and-Execute's steps and Reflexion's episodes the limit ends the inner ReAct
# run, and the loop with it: no second step, no evaluation, no synthesis.
CLOSING_LOOPS: dict[str, list[Any]] = {
    "react": [
        calls(call("refund", {"order": "A1"})),
        calls(call("refund", {"order": "B2"})),
        "Both refunded.",
    ],
    "self_ask": [
        calls(call("refund", {"order": "A1"}), content="Follow up: refund A1?"),
        calls(call("refund", {"order": "B2"}), content="Follow up: refund B2?"),
        "So the final answer is: both refunded.",
    ],
    "critic": [
        "Both orders are refunded.",
        calls(call("CritiqueReport", {"verified": False, "claims": [_refund_claim("A1")]})),
        "refunded A1",
        calls(call("CritiqueReport", {"verified": False, "claims": [_refund_claim("B2")]})),
        "Both refunded.",
    ],
    "plan_execute": [
        calls(call("Plan", {"steps": ["refund A1", "refund B2"]})),
        calls(call("refund", {"order": "A1"})),
        calls(call("refund", {"order": "B2"})),
        "refunded B2",
        "Both refunded.",
    ],
    "reflexion": [
        calls(call("refund", {"order": "A1"})),
        calls(call("refund", {"order": "B2"})),
        "Both refunded.",
        '{"satisfactory": true, "feedback": "fine"}',
    ],
}


@pytest.mark.parametrize("loop", list(CLOSING_LOOPS))
def test_a_tool_call_limit_ending_the_run_is_not_completed(loop):
    refunds = Refunds()
    model = native(CLOSING_LOOPS[loop], repeat_last=True)
    limit = ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")
    out = LOOPS[loop](model, [refunds.tool], middleware=[limit]).invoke(
        {"messages": [HumanMessage("Refund my orders.")]}
    )

    assert refunds.done == ["A1"]
    assert out["status"] == "max_iterations"
    # The answer is the model's last one (CRITIC's revision "refunded A1"); a tool result
    # is not taken for one, nor is the limit's text.
    assert out["answer"] == ("refunded A1" if loop == "critic" else "")
    closing = [m for m in out["messages"] if "limit reached" in str(m.content).lower()]
    assert len(closing) == 1 and out["messages"][-1] is closing[0]  # in the transcript once
    over = next(i for i, reply in enumerate(CLOSING_LOOPS[loop]) if "'order': 'B2'" in str(reply))
    assert model.call_count == over + 1  # no model call after the one over the limit
