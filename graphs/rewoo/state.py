"""ReWOO's state, output and keywords (the one place they are declared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import (
    LoopInput,
    Option,
    ResponseT,
    RunResult,
    ToolLoopOptions,
    TotalsState,
)
from loopgraphs.nodes.parsing.json_text import ToolInput

PLANNER_CALLS = 2
"""Most model calls of the planner: the plan, and the one re-ask when it is unreadable."""
SOLVER_CALLS = 2
"""Most model calls of the solver: the answer, and the one re-ask when it is cut at the
token cap or says nothing."""


class ReWOOOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_rewoo_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_steps: Annotated[
        int,
        Option(5, "Steps of the plan run (tool calls); a longer plan is cut.", minimum=1),
    ]
    parallel_steps: Annotated[
        bool,
        Option(
            True,
            "Run the steps that wait on no evidence still missing at once; False runs them "
            "one at a time in the plan's order.",
        ),
    ]


class PlannedStep(TypedDict):
    """One step of the plan: a tool call whose input may name earlier evidence.

    Attributes:
        plan: What the step finds out, as the planner wrote it.
        evidence: The name its result is stored under (``#E1``, ``#E2``, ...).
        tool: The tool it calls.
        tool_input: The tool's input as planned: text, or the tool's arguments.
    """

    plan: str
    evidence: str
    tool: str
    tool_input: ToolInput


class ReWOOFields(TypedDict, total=False):
    """The keys of its own that ReWOO's state and output hold (see ``ReWOOOutput``)."""

    plan: list[PlannedStep]
    evidence: list[str]


class ReWOOOutput(ReWOOFields, RunResult[ResponseT]):
    """Output of ReWOO.

    ``plan`` holds the steps as planned (cut to ``max_steps``) and ``evidence`` what each
    step gathered, in the plan's order: the tool's result (an error observation when the
    tool failed, an answer from the review when a reviewer rejected the call), or a note
    that the step did not run.
    """


class ReWOOState(ReWOOFields, TotalsState, total=False):
    """State of ReWOO: its steps run one at a time, so its counters are running totals.

    ``step_calls`` holds the id of the tool call each step of the plan was sent as (""
    while it waits), so that its result is read from the transcript; ``shortfall`` why
    the plan will not be carried out whole: ``"max_steps"`` (it was cut),
    ``"recursion_limit"`` (no graph steps were left to plan), or "" (nothing so far).
    """

    step_calls: list[str]
    shortfall: str


ReWOOGraph: TypeAlias = CompiledStateGraph[ReWOOState, ContextT, LoopInput, ReWOOOutput[ResponseT]]
"""The compiled graph ``create_rewoo_graph`` returns: its state, run context, input and
output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run, whatever the number of steps: the planner's call and
    the solver's, each with its one re-ask."""
    return PLANNER_CALLS + SOLVER_CALLS


__all__ = [
    "PLANNER_CALLS",
    "SOLVER_CALLS",
    "PlannedStep",
    "ReWOOGraph",
    "ReWOOOptions",
    "ReWOOOutput",
    "ReWOOState",
    "call_budget",
]
