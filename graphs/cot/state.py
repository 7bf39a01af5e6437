"""Chain-of-Thought's state, output and keywords (the one place they are declared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import LoopInput, LoopOptions, LoopState, Option, ResponseT, RunResult


class CoTOptions(LoopOptions[ResponseT, ContextT], total=False):
    """``create_cot_graph``'s keywords: its own, and the shared ``LoopOptions``."""

    self_consistency: Annotated[
        int,
        Option(1, "Samples voted on (self-consistency); 1 is plain Chain-of-Thought.", minimum=1),
    ]


class CoTFields(TypedDict, total=False):
    """The keys of its own that Chain-of-Thought's state and output hold (see ``CoTOutput``)."""

    samples: list[str]
    answers: list[str]
    votes: dict[str, int]


class CoTOutput(CoTFields, RunResult[ResponseT]):
    """Output of the Chain-of-Thought loop.

    ``samples`` holds the raw replies, ``answers`` the answer read from each, and
    ``votes`` the number of samples per distinct answer (self-consistency only).
    """


class CoTState(CoTFields, LoopState, total=False):
    """State of the Chain-of-Thought loop."""


CoTGraph: TypeAlias = CompiledStateGraph[CoTState, ContextT, LoopInput, CoTOutput[ResponseT]]
"""The compiled graph ``create_cot_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run: one per sample, plus one when a single sample is cut at
    the token cap (or empty) and asked for again."""
    samples = int(options["self_consistency"])
    return samples if samples > 1 else 2
