"""Plan-and-Execute's state, output and keywords (the one place they are declared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.nodes import (
    LoopInput,
    LoopState,
    Option,
    ResponseT,
    RunResult,
    Status,
    ToolLoopOptions,
    most_calls,
)

PLANNER_CALLS = 2  # the plan, and one reformat request
REPLAN_CALLS = 2
SYNTHESIS_CALLS = 2  # the answer, and once more for a short one when it was cut


class PlanExecuteOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_plan_execute_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_steps: Annotated[
        int, Option(7, "Most plan steps executed; a longer plan is cut.", minimum=1)
    ]
    max_step_iterations: Annotated[
        int,
        Option(
            5,
            "Most model calls in each step's ReAct loop (fewer when the run's calls run short).",
            minimum=1,
        ),
    ]
    replan: Annotated[bool, Option(False, "Revise the remaining steps after a step that failed.")]
    approve_plan: Annotated[
        bool,
        Option(
            False,
            "Pause with the plan for a human to approve, edit or reject (needs a checkpointer).",
        ),
    ]


class StepResult(TypedDict):
    """An executed step: its text, what its ReAct run answered and how that run ended."""

    step: str
    result: str
    status: Status


class PlanExecuteFields(TypedDict, total=False):
    """The keys of its own that Plan-and-Execute's state and output hold (see
    ``PlanExecuteOutput``)."""

    plan: list[str]
    step_results: list[StepResult]
    current_step: int


class PlanExecuteOutput(PlanExecuteFields, RunResult[ResponseT]):
    """Output of Plan-and-Execute: the plan, each step's result, the steps executed."""


class PlanExecuteState(PlanExecuteFields, LoopState, total=False):
    """State of Plan-and-Execute."""

    request: str


PlanExecuteGraph: TypeAlias = CompiledStateGraph[
    PlanExecuteState, ContextT, LoopInput, PlanExecuteOutput[ResponseT]
]
"""The compiled graph ``create_plan_execute_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any], *, tool_selection: bool = False) -> int:
    """Most model calls of a run: the planner (with its reformat request), one step's
    full ReAct run and the shortest ReAct run (one iteration and its forced answer) for
    each other step, a revision after each failed step but the last (``replan``), and
    the synthesis (asked once more when cut); ``tool_selection``: each step's ReAct run
    picks its tools first (above 12 tools)."""
    steps = int(options["max_steps"])

    def react_run(iterations: int) -> int:
        return most_calls(REACT, {"max_iterations": iterations}, tool_selection=tool_selection)

    runs = react_run(int(options["max_step_iterations"])) + react_run(1) * (steps - 1)
    revisions = REPLAN_CALLS * (steps - 1) if options["replan"] else 0
    return PLANNER_CALLS + runs + revisions + SYNTHESIS_CALLS


__all__ = [
    "PLANNER_CALLS",
    "REPLAN_CALLS",
    "SYNTHESIS_CALLS",
    "PlanExecuteFields",
    "PlanExecuteGraph",
    "PlanExecuteOptions",
    "PlanExecuteOutput",
    "PlanExecuteState",
    "StepResult",
    "call_budget",
]
