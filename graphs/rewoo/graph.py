"""ReWOO's graph: ``prepare → plan → work ⇄ call_tool → … → solve → END``; ``solve``
comes straight after ``prepare`` in a run without tools and after ``plan`` when the plan
has no steps, and ``review`` comes before ``call_tool`` when tool calls are reviewed."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.rewoo.state import ReWOOOptions, ReWOOOutput, ReWOOState, call_budget
from loopgraphs.graphs.rewoo.steps import (
    make_plan,
    opening,
    route_plan,
    route_start,
    route_work,
    solve,
    work,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[ReWOOOptions[Any, Any]]) -> None:
    """Wire ReWOO's steps."""
    loop.start(route_start, opening=opening)
    loop.step("plan", make_plan, model=True, then=route_plan)
    loop.step("work", work, calls_tools=True, then=route_work, targets=["solve", END])
    loop.tool_step("work")
    loop.step("solve", solve, model=True, settles_answer=True, then=END)


LOOP: LoopSpec[ReWOOOptions[Any, Any]] = LoopSpec(
    "rewoo",
    wire,
    state=ReWOOState,
    output=ReWOOOutput,
    options=ReWOOOptions,
    summary="look-ups planned all at once: one plan, one answer, however many tool calls",
    takes_tools=True,
    budget_option="max_steps",
    call_budget=call_budget,
    studio_options={"max_steps": 3},
    writes_tool_calls=True,
)
