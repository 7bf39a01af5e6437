"""ReAct's state, output and keywords (the one place they are declared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from langgraph.graph.state import CompiledStateGraph

from loopgraphs.context import ContextT
from loopgraphs.nodes import (
    LoopInput,
    Option,
    ResponseT,
    RunResult,
    ToolLoopOptions,
    TotalsState,
)

TOOL_SELECTION_THRESHOLD = 12
"""Above this many tools a run picks its tools first (``select_tools``)."""
TOOL_SELECTION_MAX = 6
"""Most tools a run picks."""
TOOL_SELECTION_CALLS = 2


class ReActOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_react_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_iterations: Annotated[int, Option(10, "Model calls allowed in the loop.", minimum=1)]
    synthesize_answer: Annotated[
        bool,
        Option(
            False,
            "Write the final answer in a separate (streamed) call that reads the whole transcript.",
        ),
    ]


class ReActState(TotalsState, total=False):
    """State of the ReAct loop: its nodes run one at a time, so its counters are running
    totals; its bookkeeping (turns, re-asks, selected tools) lives in ``scratch``."""


class ReActOutput(RunResult[ResponseT]):
    """Output of ReAct: the answer, status and counters every loop returns, with
    ``structured_response`` when the graph was built with ``response_format``."""


ReActGraph: TypeAlias = CompiledStateGraph[ReActState, ContextT, LoopInput, ReActOutput[ResponseT]]
"""The compiled graph ``create_react_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any], *, tool_selection: bool = False) -> int:
    """Most model calls of a run: ``max_iterations`` turns, the final answer asked for
    once when they run out, the synthesis, and tool selection above 12 tools."""
    calls = int(options["max_iterations"]) + 1
    if options.get("synthesize_answer"):
        calls += 1
    return calls + (TOOL_SELECTION_CALLS if tool_selection else 0)


__all__ = [
    "TOOL_SELECTION_MAX",
    "TOOL_SELECTION_THRESHOLD",
    "ReActGraph",
    "ReActOptions",
    "ReActOutput",
    "ReActState",
    "call_budget",
]
