"""The run budget every loop consults: LangGraph's step budget and ``max_tool_calls``."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs.nodes.budget import RunBudget, steps_left
from loopgraphs.nodes.settings import LoopSettings


def calls(count: int) -> list[object]:
    """A transcript in which the assistant made ``count`` tool calls, each answered."""
    messages: list[object] = [HumanMessage("go")]
    for index in range(count):
        call = {"name": "search", "args": {"q": str(index)}, "id": f"c{index}"}
        messages += [AIMessage("", tool_calls=[call]), ToolMessage("ok", tool_call_id=f"c{index}")]
    return messages


def test_steps_left_needs_more_than_the_steps_asked_for():
    assert steps_left({"remaining_steps": 4}, 3)
    assert not steps_left({"remaining_steps": 3}, 3)
    assert steps_left({}, 3)  # outside a graph run: no limit


def test_the_budget_allows_a_round_only_with_the_steps_it_takes():
    budget = RunBudget()
    assert budget.allows({"remaining_steps": 6}, steps=5)
    assert not budget.allows({"remaining_steps": 5}, steps=5)


def test_the_tool_call_budget_counts_the_calls_since_the_run_began():
    budget = RunBudget(max_tool_calls=2)
    state = {"messages": calls(2), "scratch": {"transcript_start": 0}}
    assert budget.tool_calls_spent(state)
    assert not budget.allows(state, steps=1, tools=True)
    assert budget.allows(state, steps=1)  # a round without tools may still go on
    later = {"messages": calls(2), "scratch": {"transcript_start": 3}}  # one call since
    assert not budget.tool_calls_spent(later)
    assert RunBudget().allows(state, steps=1, tools=True)  # no limit set


def test_the_tool_calls_left_are_the_budget_less_the_calls_made():
    state = {"messages": calls(2), "scratch": {"transcript_start": 0}}
    assert RunBudget(max_tool_calls=5).tool_calls_left(state) == 3
    assert RunBudget(max_tool_calls=1).tool_calls_left(state) == 0  # never below none
    assert RunBudget().tool_calls_left(state) is None  # no limit set


def test_a_loops_settings_carry_its_budget():
    settings = LoopSettings(model=None, max_tool_calls=3)
    assert settings.budget == RunBudget(max_tool_calls=3)
