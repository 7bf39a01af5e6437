"""Plan-and-Execute's graph: ``prepare → plan → [review_plan] → execute → [replan] →
execute … → synthesize → END``; ``review_plan`` with ``approve_plan``, ``replan`` with
``replan``.

The ReAct loop each plan step runs is compiled here, once, and reaches the steps and
routers that need it as the ``Execution`` whose bound methods are wired in (see
``loopgraphs.graphs.plan_execute.steps``)."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.plan_execute.state import (
    PlanExecuteOptions,
    PlanExecuteOutput,
    PlanExecuteState,
    call_budget,
)
from loopgraphs.graphs.plan_execute.steps import (
    Execution,
    opening,
    plan,
    review_plan,
    revise,
    route_reviewed,
    synthesize,
)
from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.nodes import END, InnerLoop, LoopBuild, LoopSpec


def wire(loop: LoopBuild[PlanExecuteOptions[Any, Any]]) -> None:
    """Wire Plan-and-Execute's steps."""
    options = loop.options
    react = InnerLoop(
        REACT, loop.settings, loop.caller_options, max_iterations=options["max_step_iterations"]
    )
    execution = Execution(react)
    review = ["review_plan"] if options["approve_plan"] else []
    revision = ["replan"] if options["replan"] else []
    loop.start("plan", opening=opening)
    loop.step(
        "plan",
        plan,
        model=True,
        then=execution.route_planned,
        targets=[*review, "execute", "synthesize"],
    )
    loop.step(
        "execute",
        execution.execute,
        subgraph=react.graph,
        then=execution.route_executed,
        targets=["execute", *revision, "synthesize"],
    )
    loop.step("synthesize", synthesize, model=True, then=END)
    if options["approve_plan"]:
        # A malformed decision a human resumed the review with reaches the caller.
        loop.step("review_plan", review_plan, guarded=False)
        loop.route("review_plan", route_reviewed, ["execute", "synthesize"])
    if options["replan"]:
        loop.step(
            "replan",
            revise,
            model=True,
            then=execution.route_replanned,
            targets=["execute", "synthesize"],
        )


LOOP: LoopSpec[PlanExecuteOptions[Any, Any]] = LoopSpec(
    "plan_execute",
    wire,
    state=PlanExecuteState,
    output=PlanExecuteOutput,
    options=PlanExecuteOptions,
    summary="multi-step tasks with distinct sub-goals; an auditable plan first",
    takes_tools=True,
    budget_option="max_step_iterations",
    iterations_option="max_step_iterations",
    call_budget=call_budget,
    studio_options={"max_steps": 3},
    selects_tools_above=REACT.selects_tools_above,
)
