"""Self-Ask's steps and routers on their own: a state in, an update or a choice out."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.self_ask_guided_turns import guided_parse
from loopgraphs.graphs.self_ask_plain import plain_parse
from loopgraphs.graphs.self_ask_state import SelfAskState, TurnSteps
from loopgraphs.graphs.self_ask_steps import (
    SelfAskRoutes,
    final_answer,
    generate,
    opening,
    settle,
)
from loopgraphs.nodes import grounding, model_send
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.settings import LoopSettings, make_settings
from loopgraphs.nodes.step import Step
from tests.support.fakes import tool_call
from tests.support.scripts import model_for

QUESTION = "Who is the head of state of the country that hosted Expo 2015?"
Q1 = "Which country hosted Expo 2015?"
STEPS = TurnSteps(hooks_after=0, model=1)  # no middleware hooks
NO_CONTEXT = Runtime(context=None)


def search(query: str) -> str:
    """Search the web for a short factual answer."""
    return f"result for {query}"


def settings_for(mode: str, replies: list[Any] | None = None) -> LoopSettings:
    model = model_for(mode, replies or [])
    return make_settings("self_ask", model, [search], {"tool_mode": mode}, max_iterations=3)


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


def test_route_generated_sends_the_pending_follow_up_to_the_tool():
    _, state = asked_q1()
    routes = SelfAskRoutes(settings_for("text"), STEPS)
    (sent,) = routes.route_generated(state, NO_CONTEXT)
    assert isinstance(sent, Send) and sent.node == "call_tool"
    assert [(call["id"], call["args"]) for call in sent.arg] == [("c1", {"query": Q1})]


@pytest.mark.parametrize("phase", ["finish_asked", "finish_cut", "finish_budget"])
def test_route_generated_asks_for_the_answer_in_a_finishing_phase(phase):
    routes = SelfAskRoutes(settings_for("text"), STEPS)
    assert routes.route_generated(state_of("text", phase=phase), NO_CONTEXT) == "final_answer"
    ended = state_of("text", phase=phase, status="completed")
    assert routes.route_generated(ended, NO_CONTEXT) == END


def test_route_tools_asks_for_the_answer_when_no_turn_fits():
    routes = SelfAskRoutes(settings_for("text"), STEPS)
    assert routes.route_tools(state_of("text"), NO_CONTEXT) == "generate"
    # the run's context lowers the follow-up budget to the calls already made
    one_call = Runtime(context={"max_iterations": 1})
    assert routes.route_tools(state_of("text"), one_call) == "final_answer"
    # a turn and the answer need more graph steps than are left
    assert routes.route_tools(state_of("text", remaining_steps=2), NO_CONTEXT) == "final_answer"


def test_settle_answers_the_pending_follow_up_from_its_tool_result():
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    settled = settle(state, settings_for("text"))
    assert settled == {
        "follow_ups": [{"question": Q1, "answer": "Italy hosted Expo 2015.", "tool": "search"}],
        "pending": [],
        "phase": "asking",
    }
    assert settle(state_of("text"), settings_for("text")) == {}  # nothing pending


def test_settle_leaves_a_guided_run_to_read_the_result(monkeypatch):
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")
    monkeypatch.setattr(model_send, "needs_guided_steps", lambda model: True)
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    assert settle(state, settings_for("text"))["phase"] == "reading"


def test_plain_parse_writes_a_follow_up_as_a_call_of_the_first_tool():
    reply = AIMessage(f"Are follow up questions needed here? Yes.\nFollow up: {Q1}", id="r1")
    update = plain_parse(state_of("text", reply), settings_for("text"), reply, STEPS)
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
    update = plain_parse(state_of("text", reply), settings_for("text"), reply, STEPS)
    assert update["scratch"] == {"shortened": True, "reask": prompts.SHORT_ANSWER}
    assert "phase" not in update and "status" not in update
    asked_once = state_of("text", reply, scratch={"iterations": 1, "shortened": True})
    update = plain_parse(asked_once, settings_for("text"), reply, STEPS)
    assert update["phase"] == "finish_cut" and "status" not in update


def test_guided_parse_a_follow_up_asked_again_moves_on_to_the_answer():
    follow_ups = [{"question": Q1, "answer": "Italy", "tool": "search"}]
    reply = AIMessage(f"Follow up: {Q1}")
    state = state_of("text", reply, follow_ups=follow_ups)
    assert guided_parse(state, settings_for("text"), reply, STEPS) == {"phase": "finish_asked"}
    # with no graph steps left for the answer, the run ends on the answer it holds
    starved = {**state, "remaining_steps": 1}
    ended = guided_parse(starved, settings_for("text"), reply, STEPS)
    assert ended == {"status": "max_iterations", "answer": "Italy"}


def test_opening_ends_a_run_that_has_no_step_left():
    run = settings_for("text")
    assert opening(STEPS, {"messages": []}, run) == {
        "follow_ups": [],
        "pending": [],
        "phase": "asking",
    }
    starved = opening(STEPS, {"messages": [], "remaining_steps": 1}, run)
    assert (starved["status"], starved["answer"]) == ("max_iterations", "")


def test_generate_settles_the_last_follow_up_then_reads_the_answer():
    run = settings_for("text", ["So the final answer is: Sergio Mattarella"])
    result, state = asked_q1()
    state = {**state, "messages": [*state["messages"], result]}
    update = run_sync(generate(STEPS, state, Step(run, NO_CONTEXT, {})), {})
    assert (update["status"], update["answer"]) == ("completed", "Sergio Mattarella")
    assert [f["answer"] for f in update["follow_ups"]] == ["Italy hosted Expo 2015."]
    assert (update["phase"], update["pending"]) == ("asking", [])
    assert update["llm_calls"] == 1 and update["scratch"] == {"iterations": 2, "reask": ""}
    (shown,) = update["messages"]
    assert shown.content == "Sergio Mattarella"


def test_final_answer_without_an_answer_ends_with_the_last_intermediate_answer():
    cut = AIMessage("So the final", response_metadata={"finish_reason": "length"})
    run = settings_for("text", [cut])
    follow_ups = [{"question": Q1, "answer": "Italy", "tool": "search"}]
    state = state_of("text", follow_ups=follow_ups, phase="finish_cut")
    update = run_sync(final_answer(state, Step(run, NO_CONTEXT, {})), {})
    assert (update["status"], update["answer"]) == ("max_iterations", "Italy")
    (shown,) = update["messages"]
    assert shown.content == "Italy"


def test_turn_steps_leave_room_for_the_hooks_and_the_review():
    steps = TurnSteps(hooks_after=1, model=3)  # a before_model and an after_model hook
    reviewed = make_settings(
        "self_ask", model_for("text", []), [search], {"interrupt_before_tools": True}
    )
    assert (steps.answer, steps.turn) == (4, 7)
    assert (steps.tools(settings_for("text")), steps.tools(reviewed)) == (5, 6)
