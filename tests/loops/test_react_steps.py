"""ReAct's steps and routers called on their own, with a state and the scripted model."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.react import LOOP
from loopgraphs.graphs.react.steps import (
    final_answer,
    needs_selection,
    route_turn,
    take_turn,
    turns_spent,
)
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.loop import reviewed_calls
from tests.support.fakes import ScriptedChatModel, calls, tool_call
from tests.support.scripts import MODES, final, model_for


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def step_for(mode: str, replies: list, node: str = "generate", tools=None, **options):
    """The scripted model and the ``Step`` ReAct's ``node`` is handed."""
    model = model_for(mode, replies)
    tools = tools if tools is not None else [multiply]
    return model, LOOP.step(node, model, tools, tool_mode=mode, **options)


def asked(mode: str, iterations: int = 0, **scratch) -> dict:
    """A run's state after ``iterations`` turns, asked "6*7?"."""
    scratch = {"iterations": iterations, **scratch}
    return {"messages": [HumanMessage("6*7?")], "scratch": scratch, "tool_mode": mode}


def many_tools(count: int) -> list:
    def named(index: int):
        def tool(text: str) -> str:
            return text

        tool.__name__ = f"tool_{index}"
        tool.__doc__ = f"Tool number {index}."
        return tool

    return [named(index) for index in range(count)]


@pytest.mark.parametrize("mode", MODES)
def test_generate_reads_a_final_answer(mode):
    model, step = step_for(mode, [final(mode, "42")])
    update = run_sync(take_turn(asked(mode), step), {})
    assert (update["status"], update["answer"], update["llm_calls"]) == ("completed", "42", 1)
    assert update["scratch"] == {"iterations": 1, "reformat": False, "reask": ""}
    assert "tool_mode" not in update  # the run's mode did not change
    assert model.call_count == 1


def test_generate_asks_again_after_a_reply_cut_at_the_token_cap():
    cut = AIMessage("The answer is", response_metadata={"finish_reason": "length"})
    _model, step = step_for("native", [cut])
    update = run_sync(take_turn(asked("native"), step), {})
    assert "status" not in update and "answer" not in update
    assert update["scratch"] == {"shortened": True, "reask": prompts.SHORT_ANSWER}


def test_generate_ends_without_an_answer_when_a_reply_is_cut_again():
    cut = AIMessage("The answer is", response_metadata={"finish_reason": "length"})
    _model, step = step_for("native", [cut])
    update = run_sync(take_turn(asked("native", iterations=1, shortened=True), step), {})
    assert (update["status"], update["answer"]) == ("max_iterations", "")


def test_generate_asks_for_the_json_format_once_after_an_unreadable_reply():
    _model, step = step_for("json", ["I think I'll multiply"])
    update = run_sync(take_turn(asked("json"), step), {})
    assert update["scratch"]["reformat"] is True
    assert update["scratch"]["reask"] == prompts.REFORMAT_ACTION
    assert "status" not in update


def test_generate_leaves_the_turn_to_final_answer_when_the_turns_are_spent():
    model, step = step_for("native", [], max_iterations=3)
    assert run_sync(take_turn(asked("native", iterations=3), step), {}) == {}
    assert model.call_count == 0


def test_final_answer_forces_an_answer_without_tools():
    model, step = step_for("text", ["Thought: I know it now.\nFINAL_ANSWER: 42"], "final_answer")
    update = run_sync(final_answer(asked("text", iterations=10), step), {})
    assert (update["status"], update["answer"], update["llm_calls"]) == ("max_iterations", "42", 1)
    assert prompts.FORCE_FINAL_ANSWER in model.prompts[0][-1].content


def test_final_answer_falls_back_to_the_best_answer_in_the_transcript():
    cut = AIMessage("So the", response_metadata={"finish_reason": "length"})
    _model, step = step_for("native", [cut], "final_answer")
    state = asked("native", iterations=10)
    state["messages"] = [*state["messages"], AIMessage("It is 42.")]
    update = run_sync(final_answer(state, step), {})
    assert (update["status"], update["answer"]) == ("max_iterations", "It is 42.")


@pytest.mark.parametrize(
    ("status", "scratch", "synthesize", "expected"),
    [
        ("max_iterations", {"iterations": 2}, True, END),
        ("completed", {"iterations": 1}, True, END),  # answered without tools
        ("completed", {"iterations": 2}, True, "synthesize"),
        ("completed", {"iterations": 2}, False, END),
        ("completed", {"iterations": 2, "tool_ended": True}, True, END),
        ("running", {"iterations": 2}, False, "generate"),
        ("running", {"iterations": 10}, False, "final_answer"),
    ],
)
def test_route_turn_picks_the_next_step(status, scratch, synthesize, expected):
    _model, step = step_for("native", [], synthesize_answer=synthesize)
    state = {"messages": [HumanMessage("q")], "status": status, "scratch": scratch}
    assert route_turn(state, step) == expected


def test_route_turn_sends_each_pending_tool_call_to_call_tool():
    _model, step = step_for("native", [])
    reply = calls(tool_call("multiply", {"a": 1, "b": 2}, id="one"))
    state = {"messages": [HumanMessage("q"), reply], "status": "running", "scratch": {}}
    sent = route_turn(state, step)
    assert [(s.node, s.arg[0]["id"]) for s in sent] == [("call_tool", "one")]


def test_route_turn_goes_to_final_answer_when_the_step_budget_runs_low():
    """A turn, its tools and the final answer take 3 graph steps after this one."""
    _model, step = step_for("native", [])
    state = {"messages": [HumanMessage("q")], "scratch": {"iterations": 1}, "remaining_steps": 3}
    assert route_turn(state, step) == "final_answer"
    assert turns_spent(state, step)
    assert not turns_spent({**state, "remaining_steps": 4}, step)


def test_reviewed_calls_runs_only_the_calls_still_unanswered():
    reply = calls(
        tool_call("multiply", {"a": 1}, id="one"), tool_call("multiply", {"b": 2}, id="two")
    )
    refused = ToolMessage("Refused by the reviewer.", tool_call_id="one")
    sent = reviewed_calls({"messages": [HumanMessage("q"), reply, refused]})
    assert sent == [Send("call_tool", [{**reply.tool_calls[1], "type": "tool_call"}])]


def test_a_run_with_more_than_twelve_tools_selects_them_first():
    model = ScriptedChatModel(replies=[])
    many = LOOP.step("generate", model, many_tools(13))
    few = LOOP.step("generate", model, many_tools(12))
    assert needs_selection({"scratch": {}}, many)
    assert not needs_selection({"scratch": {"selected_tools": ["tool_1"]}}, many)
    assert not needs_selection({"scratch": {}}, few)
    state = {"messages": [HumanMessage("q")], "status": "running", "scratch": {}}
    assert route_turn(state, many) == "select_tools"
