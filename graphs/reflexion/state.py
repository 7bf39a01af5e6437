"""Reflexion's state, output and keywords (the one place they are declared)."""

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
    ToolLoopOptions,
    most_calls,
)

EVALUATOR_CALLS = 2  # the verdict, and one reformat request


class ReflexionOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_reflexion_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_reflections: Annotated[int, Option(3, "Most episodes (attempts) in a run.", minimum=1)]
    max_iterations: Annotated[
        int, Option(10, "Model calls allowed in each episode's ReAct loop.", minimum=1)
    ]


class Evaluation(TypedDict):
    """The state record of an episode's evaluation."""

    satisfactory: bool
    feedback: str


class ReflexionFields(TypedDict, total=False):
    """The keys of its own that Reflexion's state and output hold (see ``ReflexionOutput``)."""

    episode: int
    reflections: list[str]
    evaluations: list[Evaluation]
    episode_answers: list[str]


class ReflexionOutput(ReflexionFields, RunResult[ResponseT]):
    """Output of Reflexion: episodes run, their answers, evaluations and reflections."""


class ReflexionState(ReflexionFields, LoopState, total=False):
    """State of Reflexion."""

    request: str


ReflexionGraph: TypeAlias = CompiledStateGraph[
    ReflexionState, ContextT, LoopInput, ReflexionOutput[ResponseT]
]
"""The compiled graph ``create_reflexion_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any], *, tool_selection: bool = False) -> int:
    """Most model calls of a run: one whole ReAct run per episode, the evaluator (with
    its reformat request) after each, and a reflection after every episode but the last;
    ``tool_selection``: each episode's ReAct run picks its tools first (above 12 tools)."""
    episodes = int(options["max_reflections"])
    run = {"max_iterations": options["max_iterations"]}
    per_episode = most_calls(REACT, run, tool_selection=tool_selection)
    return episodes * per_episode + episodes * EVALUATOR_CALLS + episodes - 1


__all__ = [
    "EVALUATOR_CALLS",
    "Evaluation",
    "ReflexionFields",
    "ReflexionGraph",
    "ReflexionOptions",
    "ReflexionOutput",
    "ReflexionState",
    "call_budget",
]
