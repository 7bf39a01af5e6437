"""Plan-and-Execute's steps and routers, called on their own with a state (no graph run)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs.graphs.plan_execute import LOOP
from loopgraphs.graphs.plan_execute.plans import fallback_answer
from loopgraphs.graphs.plan_execute.state import StepResult
from loopgraphs.graphs.plan_execute.steps import (
    Execution,
    executed,
    plan,
    route_reviewed,
    synthesize,
)
from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.nodes import InnerLoop, Step
from loopgraphs.nodes.driver import run_sync
from tests.support.fakes import calls, tool_call
from tests.support.scripts import model_for

RUNTIME = SimpleNamespace(context={})
DONE = StepResult(step="find a", result="A=1", status="completed")
STOPPED = StepResult(step="find b", result="B is", status="max_iterations")


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def step_of(node: str, replies: list[Any] | None = None, **options: Any) -> Step:
    """The ``Step`` the node is handed, over a scripted native model with ``lookup`` as
    the tool (``max_steps=3`` unless ``options`` say otherwise)."""
    model = model_for("native", replies or [])
    return LOOP.step(node, model, [lookup], runtime=RUNTIME, **{"max_steps": 3, **options})


def execution_for(step: Step) -> Execution:
    """The plan steps' ReAct loop, five iterations each, as ``wire`` makes it."""
    return Execution(InnerLoop(REACT, step.run, {}, max_iterations=5))


def state(*results: StepResult, **keys: Any) -> dict[str, Any]:
    return {
        "messages": [HumanMessage("What is a + b?", id="q")],
        "plan": ["find a", "find b", "add them"],
        "step_results": list(results),
        "current_step": len(results),
        "llm_calls": 2,
        **keys,
    }


def test_each_step_gets_an_even_share_of_the_calls_left() -> None:
    step = step_of("execute")
    execution = execution_for(step)
    # 14 calls in all (2 plan, 5 + 1 for one step, 2 + 2 for the others, 2 synthesis):
    # 10 left after the plan and the synthesis, for 3 steps: 2 iterations and the answer
    assert execution.step_iterations(state(), step) == 2
    spent = state(DONE, STOPPED, llm_calls=12)  # 0 left: no step can run
    assert execution.step_iterations(spent, step) == 0


@pytest.mark.parametrize(
    ("replan", "results", "chosen"),
    [
        (True, [DONE], "execute"),
        (True, [STOPPED], "replan"),
        (False, [STOPPED], "execute"),
        (True, [DONE, STOPPED, DONE], "synthesize"),  # the plan is done
    ],
)
def test_route_executed_revises_only_after_a_failed_step(replan, results, chosen) -> None:
    step = step_of("execute", replan=replan)
    assert execution_for(step).route_executed(state(*results), step) == chosen


def test_route_planned_reviews_only_when_the_review_and_a_step_fit() -> None:
    step = step_of("plan", approve_plan=True)
    execution = execution_for(step)
    assert execution.route_planned(state(), step) == "review_plan"
    tight = state(remaining_steps=3)  # review_plan, execute and synthesize need more
    assert execution.route_planned(tight, step) == "synthesize"
    without = step_of("plan")
    assert execution_for(without).route_planned(state(), without) == "execute"


def test_route_reviewed_needs_no_options() -> None:
    assert route_reviewed(state()) == "execute"
    assert route_reviewed(state(plan=[])) == "synthesize"


def test_the_fallback_answer_prefers_a_step_that_did_its_work() -> None:
    assert fallback_answer([DONE, STOPPED]) == "A=1"
    assert fallback_answer([STOPPED]) == "B is"
    assert fallback_answer([]) == ""


def test_executed_records_the_step_and_its_result_message() -> None:
    answer = AIMessage("A=1", id="inner")
    out = {"status": "completed", "answer": "A=1", "messages": [answer]}
    update = executed(state(), out, {"llm_calls": 2}, "planner")
    assert update["step_results"] == [DONE] and update["current_step"] == 1
    (message,) = update["messages"]
    assert message.text == "Step 1: find a\nResult: A=1"
    assert (message.name, message.id) == ("planner", "inner")


def test_a_failed_step_ends_the_run_with_the_latest_result() -> None:
    out = {"status": "error", "answer": "", "error": "boom"}
    update = executed(state(DONE), out, {}, None)
    assert (update["status"], update["error"], update["answer"]) == ("error", "boom", "A=1")


def test_a_step_a_middleware_limit_stopped_ends_the_run_with_its_closing_message() -> None:
    call = AIMessage("", tool_calls=[tool_call("lookup", {"key": "b"}, id="c1")])
    result = ToolMessage("value of b", tool_call_id="c1")
    notice = AIMessage("Tool call limit reached.")
    out = {
        "status": "max_iterations",
        "answer": "",
        "messages": [HumanMessage("find b"), call, result, notice],
        "scratch": {"hook_ended": True},
    }
    update = executed(state(DONE), out, {}, None)
    assert update["answer"] == "A=1" and update["messages"] == [call, result, notice]
    assert update["step_results"][-1] == StepResult(
        step="find b", result="", status="max_iterations"
    )


def test_plan_cuts_the_planner_reply_to_max_steps() -> None:
    steps = ["find a", "find b", "find c", "add them"]
    step = step_of("plan", [calls(tool_call("Plan", {"steps": steps}))])
    update = run_sync(plan(state(plan=[]), step), {})
    assert update["plan"] == steps[:3] and update["llm_calls"] == 1


def test_synthesize_answers_from_the_step_results() -> None:
    step = step_of("synthesize", ["The sum is 3."])
    done = state(DONE, DONE, DONE)
    update = run_sync(synthesize(done, step), {})
    assert (update["answer"], update["status"]) == ("The sum is 3.", "completed")


def test_a_synthesis_cut_twice_ends_with_the_fallback_answer() -> None:
    cut = AIMessage("The answer is", response_metadata={"finish_reason": "length"})
    step = step_of("synthesize", [cut, cut])
    update = run_sync(synthesize(state(DONE, STOPPED), step), {})
    assert (update["answer"], update["status"]) == ("A=1", "max_iterations")
    assert update["llm_calls"] == 2
