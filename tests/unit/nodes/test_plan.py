"""The graph steps the kit counts from a loop's wiring (``GraphPlan``)."""

from __future__ import annotations

from langgraph.graph import END

from loopgraphs.nodes.plan import GraphPlan


def plan_with_hooks() -> GraphPlan:
    """``turn → tools → turn``, ``turn → answer → END``, ``turn → END``; each model step
    with a before_model and an after_model hook node."""
    plan = GraphPlan()
    plan.lead("turn", ["tools", "answer", END])
    plan.lead("tools", ["turn", "answer"])
    plan.lead("answer", [END])
    plan.weigh("turn", 3, after=1)
    plan.weigh("answer", 3, after=1)
    return plan


def test_the_shortest_finish_counts_the_steps_own_after_hooks():
    plan = plan_with_hooks()
    assert plan.shortest_finish("turn") == 1  # its after_model hook, then the end
    assert plan.shortest_finish("tools") == 3  # the answer, hooks included


def test_the_shortest_finish_through_a_step_counts_that_step_and_its_way_on():
    plan = plan_with_hooks()
    assert plan.shortest_finish("turn", "answer") == 1 + 3
    assert plan.shortest_finish("turn", "tools") == 1 + 1 + 3
    assert plan.shortest_finish("prepare", "turn") == 3  # a node not weighed has no hooks
