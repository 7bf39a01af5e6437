"""Self-Ask's steps and routers on their own: a state in, an update or a choice out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.self_ask import LOOP, create_self_ask_graph
from loopgraphs.graphs.self_ask.budget import can_continue, may_answer, may_call_tools
from loopgraphs.graphs.self_ask.guided_turns import guided_parse
from loopgraphs.graphs.self_ask.state import SelfAskState, SelfAskStep
from loopgraphs.graphs.self_ask.steps import (
    final_answer,
    opening,
    plain_parse,
    route_tools,
    route_turn,
    settle,
    take_turn,
)
from loopgraphs.nodes import grounding, model_send
from loopgraphs.nodes.driver import run_sync
from tests.loops.test_self_ask_tool_path import looks_after, looks_before
from tests.support.fakes import tool_call
from tests.support.scripts import model_for

QUESTION = "Who is the head of state of the country that hosted Expo 2015?"
Q1 = "Which country hosted Expo 2015?"


def search(query: str) -> str:
    """Search the web for a short factual answer."""
    return f"result for {query}"


def step_for(
    mode: str,
    replies: list[Any] | None = None,
    node: str = "generate",
    runtime: Runtime | None = None,
    **options: Any,
) -> SelfAskStep:
    """The ``Step`` Self-Ask's ``node`` is handed (3 follow-ups, a scripted model)."""
    model = model_for(mode, replies or [])
    return LOOP.step(
        node, model, [search], runtime=runtime, tool_mode=mode, max_follow_ups=3, **options
    )


def state_of(mode: str, *messages: Any, **keys: Any) -> SelfAskState:
    """A running Self-Ask state: the question, then the run's own ``messages``."""
    return {
        "messages": [HumanMessage(QUESTION, id="q"), *messages],
        "status": "running",
        "tool_mode": mode,
        "follow_ups": [],
        "pending": [],
        "phase": "asking",
        "scratch": {"iterations": 1, "transcript_start": 1, "fence": "f00"},
        **keys,
    }


def asked_q1() -> tuple[ToolMessage, SelfAskState]:
    """The tool result of a follow-up, and the state waiting for it."""
    call = AIMessage(f"Follow up: {Q1}", tool_calls=[tool_call("search", {"query": Q1}, "c1")])
    result = ToolMessage("Italy hosted Expo 2015.", tool_call_id="c1")
    pending = [{"id": "c1", "name": "search", "question": Q1}]
    return result, state_of("text", call, pending=pending, phase="tools")


def test_route_turn_sends_the_pending_follow_up_to_the_tool():
    _, state = asked_q1()
    (sent,) = route_turn(state, step_for("text"))
    assert isinstance(sent, Send) and sent.node == "call_tool"
    assert [(call["id"], call["args"]) for call in sent.arg] == [("c1", {"query": Q1})]


@pytest.mark.parametrize("phase", ["finish_asked", "finish_cut", "finish_budget"])
def test_route_turn_asks_for_the_answer_in_a_finishing_phase(phase):
    step = step_for("text")
    assert route_turn(state_of("text", phase=phase), step) == "final_answer"
    ended = state_of("text", phase=phase, status="completed")
    assert route_turn(ended, step) == END


def test_route_tools_asks_for_the_answer_when_no_turn_fits():
    """Another turn from the tool step goes round once more (generate, call_tool) and
    finishes (generate, final_answer): 4 graph steps after this one."""
    assert route_tools(state_of("text"), step_for("text", node="call_tool")) == "generate"
    # the run's context lowers the follow-up budget to the calls already made
    one_call = step_for("text", node="call_tool", runtime=Runtime(context={"max_iterations": 1}))
    assert route_tools(state_of("text"), one_call) == "final_answer"
    # a turn and the answer need more graph steps than are left
    tight = state_of("text", remaining_steps=4)
    assert route_tools(tight, step_for("text", node="call_tool")) == "final_answer"
    assert route_tools({**tight, "remaining_steps": 5}, step_for("text", node="call_tool")) == (
        "generate"
    )


def test_settle_answers_the_pending_follow_up_from_its_tool_result():
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    run = step_for("text").run
    settled = settle(state, run)
    assert settled == {
        "follow_ups": [{"question": Q1, "answer": "Italy hosted Expo 2015.", "tool": "search"}],
        "pending": [],
        "phase": "asking",
    }
    assert settle(state_of("text"), run) == {}  # nothing pending


def test_settle_leaves_a_guided_run_to_read_the_result(monkeypatch):
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")
    monkeypatch.setattr(model_send, "needs_guided_steps", lambda model: True)
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    assert settle(state, step_for("text").run)["phase"] == "reading"


def test_plain_parse_writes_a_follow_up_as_a_call_of_the_first_tool():
    reply = AIMessage(f"Are follow up questions needed here? Yes.\nFollow up: {Q1}", id="r1")
    update = plain_parse(state_of("text", reply), step_for("text"), reply)
    assert update["phase"] == "tools"
    (pending,) = update["pending"]
    (written,) = update["messages"]
    (call,) = written.tool_calls
    assert (call["name"], call["args"], call["id"]) == ("search", {"query": Q1}, pending["id"])
    assert (pending["name"], pending["question"]) == ("search", Q1)
    assert written.id == "r1" and written.content == reply.content


def test_plain_parse_a_cut_answer_is_asked_once_then_left_to_final_answer():
    reply = AIMessage(
        "So the final answer is: Sergio Matt", response_metadata={"finish_reason": "length"}
    )
    update = plain_parse(state_of("text", reply), step_for("text"), reply)
    assert update["scratch"] == {"shortened": True, "reask": prompts.SHORT_ANSWER}
    assert "phase" not in update and "status" not in update
    asked_once = state_of("text", reply, scratch={"iterations": 1, "shortened": True})
    update = plain_parse(asked_once, step_for("text"), reply)
    assert update["phase"] == "finish_cut" and "status" not in update


def test_guided_parse_a_follow_up_asked_again_moves_on_to_the_answer():
    follow_ups = [{"question": Q1, "answer": "Italy", "tool": "search"}]
    reply = AIMessage(f"Follow up: {Q1}")
    state = state_of("text", reply, follow_ups=follow_ups)
    assert guided_parse(state, step_for("text"), reply) == {"phase": "finish_asked"}
    # with no graph steps left for the answer, the run ends on the answer it holds
    starved = {**state, "remaining_steps": 1}
    ended = guided_parse(starved, step_for("text"), reply)
    assert ended == {"status": "max_iterations", "answer": "Italy"}


def test_opening_ends_a_run_that_has_no_step_left():
    step = step_for("text", node="prepare")
    assert opening({"messages": []}, step) == {"follow_ups": [], "pending": [], "phase": "asking"}
    # the kit's start ends a run whose graph steps do not allow one turn, before any call
    assert step.may_finish({"messages": [], "remaining_steps": 2})
    assert not step.may_finish({"messages": [], "remaining_steps": 1})
    model = model_for("text", [])
    starved = create_self_ask_graph(model, [search]).invoke(
        {"messages": [("user", QUESTION)]}, {"recursion_limit": 2}
    )
    assert (starved["status"], starved["answer"], model.call_count) == ("max_iterations", "", 0)


def test_generate_settles_the_last_follow_up_then_reads_the_answer():
    step = step_for("text", ["So the final answer is: Sergio Mattarella"])
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    update = run_sync(take_turn(state, step), {})
    assert (update["status"], update["answer"]) == ("completed", "Sergio Mattarella")
    assert [f["answer"] for f in update["follow_ups"]] == ["Italy hosted Expo 2015."]
    assert (update["phase"], update["pending"]) == ("asking", [])
    assert update["llm_calls"] == 1 and update["scratch"] == {"iterations": 2, "reask": ""}
    (shown,) = update["messages"]
    assert shown.content == "Sergio Mattarella"


def test_final_answer_without_an_answer_ends_with_the_last_intermediate_answer():
    cut = AIMessage("So the final", response_metadata={"finish_reason": "length"})
    step = step_for("text", [cut], node="final_answer")
    follow_ups = [{"question": Q1, "answer": "Italy", "tool": "search"}]
    state = state_of("text", follow_ups=follow_ups, phase="finish_cut")
    update = run_sync(final_answer(state, step), {})
    assert (update["status"], update["answer"]) == ("max_iterations", "Italy")
    (shown,) = update["messages"]
    assert shown.content == "Italy"


def fits(check: Callable[[SelfAskState, SelfAskStep], bool], step: SelfAskStep) -> int:
    """The fewest graph steps left at which ``check`` allows what it asks about."""
    return next(
        left for left in range(1, 30) if check(state_of("text", remaining_steps=left), step)
    )


def test_the_budget_leaves_room_for_the_hooks_and_the_review():
    """The kit counts the graph steps after a turn from the wiring, the turn's own
    after_model hook first: the answer is final_answer, the tools are call_tool (after the
    review, when there is one) and then the answer, and another turn goes round once more
    (generate, the tools) and finishes (the tools, final_answer)."""
    plain = step_for("text")
    hooked = step_for("text", middleware=[looks_before, looks_after])  # 3 steps a model step
    reviewed = step_for("text", interrupt_before_tools=True)
    assert [fits(may_answer, step) for step in (plain, hooked, reviewed)] == [2, 5, 2]
    assert [fits(may_call_tools, step) for step in (plain, hooked, reviewed)] == [3, 6, 4]
    # With hooks, another turn also leaves room for the hooks after the turn's answer.
    assert [fits(can_continue, step) for step in (plain, hooked, reviewed)] == [5, 10, 7]
