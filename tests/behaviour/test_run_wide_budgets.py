"""``max_tool_calls`` and the loop-break count the whole run in the loops that run ReAct
inside: a Plan-and-Execute step sees the calls of the steps before it, a Reflexion episode
those of the episodes before it. A tight ``recursion_limit`` ends every loop's run without
raising."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from loopgraphs import build_loop, create_plan_execute_graph, create_reflexion_graph
from loopgraphs.graphs import registry
from tests.support.fakes import calls, tool_call
from tests.support.loop_scripts import tool_then_answer
from tests.support.scripts import MODES, Refunds, model_for


def refund(order: str, id: str) -> Any:
    return calls(tool_call("refund", {"order": order}, id=id))


def plan_execute(first: str, second: str) -> list[Any]:
    """Two steps, each refunding an order."""
    return [
        calls(tool_call("Plan", {"steps": ["refund the first order", "refund the second"]})),
        refund(first, "r1"),
        "The first order is refunded.",
        refund(second, "r2"),
        "The second order is refunded.",
        "Both orders are refunded.",
    ]


def reflexion(first: str, second: str) -> list[Any]:
    """Two episodes, each refunding an order; the first is judged unsatisfactory."""
    verdict = {"satisfactory": False, "feedback": "Refund again."}
    return [
        refund(first, "r1"),
        "Refunded.",
        calls(tool_call("Evaluation", verdict)),
        "Lesson: refund again.",
        refund(second, "r2"),
        "Refunded again.",
        calls(tool_call("Evaluation", {"satisfactory": True, "feedback": ""})),
    ]


LOOPS = {
    "plan_execute": (create_plan_execute_graph, plan_execute),
    "reflexion": (create_reflexion_graph, reflexion),
}


def run(loop: str, first: str, second: str, **options: Any) -> tuple[dict[str, Any], Refunds]:
    factory, script = LOOPS[loop]
    refunds = Refunds()
    model = model_for("native", script(first, second), repeat_last=True)
    graph = factory(model, [refunds.tool], tool_mode="native", **options)
    return graph.invoke({"messages": [HumanMessage("Refund my orders.")]}), refunds


def results(out: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("loop", list(LOOPS))
def test_max_tool_calls_counts_every_step_and_episode(loop):
    out, refunds = run(loop, "A1", "B2", max_tool_calls=1)

    assert refunds.done == ["A1"]
    assert out["status"] != "error"
    # The second call, if the model made it, was answered without running.
    assert all("refunded B2" not in text for text in results(out))


@pytest.mark.parametrize("loop", list(LOOPS))
def test_the_loop_break_answers_a_call_repeated_in_a_later_step_or_episode(loop):
    out, refunds = run(loop, "A1", "A1")

    assert refunds.done == ["A1"]
    assert any("You already called refund with these arguments" in t for t in results(out))
    assert out["status"] != "error"


@pytest.mark.parametrize("loop", list(LOOPS))
def test_without_limits_each_step_or_episode_runs_its_call(loop):
    out, refunds = run(loop, "A1", "B2")
    assert refunds.done == ["A1", "B2"]
    assert out["status"] == "completed"


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


LOOP_MODES = [
    (loop, mode)
    for loop in registry.LOOPS
    for mode in (MODES if loop in registry.TOOL_LOOPS else ["native"])
]


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_tight_recursion_limit_ends_every_run_without_raising(loop, mode):
    """From ``recursion_limit=2`` up (at 1 LangGraph raises before any graph's first node
    can end), every loop ends its run ``max_iterations`` or ``completed`` when its steps
    run out, whether its first step starts the run (ReAct, LATS) or a ``prepare`` does;
    the run's first step ends it when no step is left for a final answer."""
    tools = [lookup] if loop in registry.TOOL_LOOPS else []
    for limit in range(2, 9):
        if tools:
            script = tool_then_answer(loop, mode, "lookup", {"key": "k"}, "The value of k.")
        else:
            script = ["The value of k."]
        model = model_for(mode, script, repeat_last=True)
        options = {"tool_mode": mode} if tools else {}
        graph = build_loop(loop, model, tools, **options)
        out = graph.invoke({"messages": [HumanMessage("Look k up.")]}, {"recursion_limit": limit})
        assert out["status"] in ("max_iterations", "completed"), (limit, out.get("error"))
        assert out["llm_calls"] == model.call_count
