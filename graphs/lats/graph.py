"""LATS's graph: ``prepare → expand → [review] → call_tool → evaluate → expand …``,
``expand → evaluate`` when no candidate calls a tool; once the search stops,
``best_answer`` (the best node's final answer) or ``final_answer`` (one answer turn from
the best node's trajectory)."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.lats.state import LATSOptions, LATSOutput, LATSState, call_budget
from loopgraphs.graphs.lats.steps import (
    best_answer,
    evaluate_nodes,
    expand,
    forced_answer,
    opening,
    route_evaluate,
    route_expand,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[LATSOptions[Any, Any]]) -> None:
    """Wire LATS's steps."""
    loop.start("expand", opening=opening)
    loop.step(
        "expand",
        expand,
        model=True,
        calls_tools=True,
        then=route_expand,
        targets=["evaluate", "best_answer", "final_answer"],
    )
    loop.tool_step("evaluate")
    loop.step("evaluate", evaluate_nodes, model=True, then=route_evaluate)
    loop.step("best_answer", best_answer, then=END)
    loop.step("final_answer", forced_answer, model=True, settles_answer=True, then=END)


LOOP: LoopSpec[LATSOptions[Any, Any]] = LoopSpec(
    "lats",
    wire,
    state=LATSState,
    output=LATSOutput,
    options=LATSOptions,
    summary="hard multi-step questions worth many calls: tree search over tool-using trajectories",
    takes_tools=True,
    budget_option="max_rollouts",
    iterations_option="max_rollouts",
    main_step="expand",
    call_budget=call_budget,
    studio_options={"n_candidates": 2, "max_rollouts": 2},
)
