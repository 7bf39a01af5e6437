"""Self-Ask's follow-ups take the one tool-call path: the model step writes each
follow-up for the tools as an assistant message with its tool calls (seen by
``after_model`` middleware), the shared tool step runs them, and the calls with their
results stay in the run's transcript."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware, after_model, before_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs.graphs.self_ask import create_self_ask_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.loops.test_self_ask import (
    FACTS,
    Q1,
    Q2,
    QUESTION,
    Search,
    ask,
    guided_ask,
    guided_final,
    small_model,  # noqa: F401 (a fixture)
)
from tests.support.fakes import calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, Refunds, model_for, run_in_parent

ORDER_QUESTION = "Was order A1 refunded?"


def refund_reply(mode: str) -> Any:
    """A reply asking a follow-up that the refund tool answers."""
    text = f"Follow up: {ORDER_QUESTION}\nTool: refund\nTool Input: A1"
    if mode == "native":
        return calls(tool_call("refund", {"order": "A1"}), content=f"Follow up: {ORDER_QUESTION}")
    return text


def build(mode: str, replies: list[Any], tools: list[Any], **options: Any) -> Any:
    model = model_for(mode, replies)
    graph = create_self_ask_graph(model, tools, tool_mode=mode, retry_policy=FAST_RETRY, **options)
    return model, graph


def paused(mode: str, refunds: Refunds, thread: str) -> tuple[Any, Any, Any]:
    """A run stopped by the approval middleware before its refund."""
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    model, graph = build(
        mode,
        [refund_reply(mode), "So the final answer is: done"],
        [refunds.tool],
        middleware=[approval],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"{thread}-{mode}"}}
    graph.invoke(QUESTION, config)
    return model, graph, config


@pytest.mark.parametrize("mode", MODES)
def test_approval_middleware_pauses_before_a_follow_ups_tool_call(mode):
    refunds = Refunds()
    _model, graph, config = paused(mode, refunds, "approve")

    (pause,) = graph.get_state(config).interrupts
    (request,) = pause.value["action_requests"]
    assert (request["name"], request["args"]) == ("refund", {"order": "A1"})
    assert pause.value["review_configs"][0]["action_name"] == "refund"
    assert refunds.done == []

    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    assert refunds.done == ["A1"]
    assert out["status"] == "completed" and out["answer"] == "done"
    assert out["follow_ups"] == [
        {"question": ORDER_QUESTION, "answer": "refunded A1", "tool": "refund"}
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_rejected_follow_up_call_does_not_run(mode):
    refunds = Refunds()
    model, graph, config = paused(mode, refunds, "reject")

    reject = {"type": "reject", "message": "Refunds need a manager."}
    out = graph.invoke(Command(resume={"decisions": [reject]}), config)

    assert refunds.done == []
    assert "Refunds need a manager." in out["follow_ups"][0]["answer"]
    assert "Refunds need a manager." in content_text(model.prompts[1][-1].content)
    assert out["status"] == "completed" and out["answer"] == "done"


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_follow_up_call_runs_as_edited(mode):
    refunds = Refunds()
    _model, graph, config = paused(mode, refunds, "edit")

    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "B2"}}}
    out = graph.invoke(Command(resume={"decisions": [edit]}), config)

    assert refunds.done == ["B2"]
    answer = out["follow_ups"][0]["answer"]
    assert "replaced this tool call" in answer and "refunded B2" in answer
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 1 and "refunded B2" in content_text(results[0].content)


def assert_call_then_result(out: dict[str, Any], tool_name: str) -> None:
    """The transcript holds the follow-up's call followed by its result, and no
    ``Intermediate answer`` user message."""
    own = out["messages"]
    index = next(i for i, m in enumerate(own) if isinstance(m, AIMessage) and m.tool_calls)
    call, result = own[index], own[index + 1]
    assert [c["name"] for c in call.tool_calls] == [tool_name]
    assert isinstance(result, ToolMessage) and result.tool_call_id == call.tool_calls[0]["id"]
    assert FACTS[Q1] in content_text(result.content)
    humans = [content_text(m.content) for m in own if isinstance(m, HumanMessage)]
    assert not any(text.startswith("Intermediate answer") for text in humans)


@pytest.mark.parametrize("mode", MODES)
def test_the_transcript_holds_each_follow_up_call_and_its_result(mode):
    search = Search()
    replies = [ask(mode, Q1), "So the final answer is: Sergio Mattarella"]
    _model, graph = build(mode, replies, [search.tool])

    out = graph.invoke(QUESTION)

    assert search.queries == [Q1]
    assert_call_then_result(out, "search")
    assert out["follow_ups"] == [{"question": Q1, "answer": FACTS[Q1], "tool": "search"}]


@pytest.mark.parametrize("mode", ["json", "text"])
def test_a_guided_run_shows_its_follow_up_call_and_result(small_model, mode):  # noqa: F811
    search = Search()
    replies = [guided_ask(mode, Q1), "Italy", guided_ask(mode, Q1), guided_final(mode, "Italy")]
    _model, graph = build(mode, replies, [search.tool])

    out = graph.invoke(QUESTION)

    assert search.queries == [Q1]
    assert_call_then_result(out, "search")
    assert out["answer"] == "Italy"


@tool
def hand_over(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the question to the front desk."""
    note = ToolMessage("Passed to the front desk.", tool_call_id=tool_call_id, name="hand_over")
    return Command(goto="elsewhere", graph=Command.PARENT, update={"messages": [note]})


@pytest.mark.parametrize("mode", MODES)
def test_a_follow_up_handing_over_routes_the_parent_graph(mode):
    if mode == "native":
        reply: Any = calls(tool_call("hand_over", {"query": Q1}), content=f"Follow up: {Q1}")
    else:
        reply = f"Follow up: {Q1}\nTool: hand_over\nTool Input: {Q1}"
    _model, self_ask = build(mode, [reply, "So the final answer is: Italy"], [hand_over])
    request = {"messages": [HumanMessage(QUESTION["messages"][0][1])]}
    visited, out = run_in_parent(self_ask, request)

    assert visited == ["elsewhere"]
    notes = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(notes) == 1 and "Passed to the front desk." in content_text(notes[0].content)


@before_model
def looks_before(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@after_model
def looks_after(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("limit", range(2, 22))
def test_a_small_recursion_limit_with_model_hooks_never_raises(mode, limit):
    search = Search()
    replies = [ask(mode, Q1), ask(mode, f"{Q1} again"), "So the final answer is: Italy"]
    _model, graph = build(mode, replies, [search.tool], middleware=[looks_before, looks_after])

    out = graph.invoke(QUESTION, {"recursion_limit": limit})

    assert out["status"] in ("completed", "max_iterations")
    results = {m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)}
    calls = {c["id"] for m in out["messages"] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls == results  # no follow-up is left without its result


@pytest.mark.parametrize("mode", MODES)
def test_max_tool_calls_counts_the_follow_ups_of_every_turn(mode):
    search = Search()
    replies = [ask(mode, Q1), ask(mode, Q2), "So the final answer is: Sergio Mattarella"]
    _model, graph = build(mode, replies, [search.tool], max_tool_calls=1)

    out = graph.invoke(QUESTION)

    assert search.queries == [Q1]
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 2 and "Not run" in content_text(results[1].content)
    assert out["follow_ups"][1]["answer"].startswith("Not run")
