"""LATS's state, output and keywords (the one place they are declared), the records its
search tree is made of, and its call budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import NotRequired, TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import (
    LoopInput,
    Option,
    ResponseT,
    RunResult,
    ToolLoopOptions,
    TotalsState,
)

EVALUATION_CALLS = 2
"""Most requests of one ``evaluate`` (its one reformat request included)."""
REFLECTION_CALLS = 1
"""Requests of one ``reflect``."""

StopReason = Literal["solved", "max_rollouts", "exhausted", "budget", "tool"]
"""Why the search stopped: a judged-satisfactory answer, the rollouts spent, no node
left to expand, the run's budget (graph steps or tool calls), or a tool ended the run."""


class LATSOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_lats_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    n_candidates: Annotated[
        int, Option(3, "Candidate next actions sampled at each expansion.", minimum=1)
    ]
    max_rollouts: Annotated[
        int,
        Option(
            5, "Iterations of the search (select, expand, evaluate, back-propagate).", minimum=1
        ),
    ]
    exploration_weight: Annotated[
        float,
        Option(1.0, "UCT's exploration weight: higher tries less visited branches.", minimum=0),
    ]
    max_depth: Annotated[
        int, Option(5, "Most steps of a trajectory: a node this deep is not expanded.", minimum=1)
    ]
    temperature: Annotated[
        float,
        Option(
            1.0,
            "Sampling temperature of the candidate actions, for a model that takes one.",
            minimum=0,
            maximum=2,
        ),
    ]


class Action(TypedDict):
    """A tool call a node made."""

    id: str
    tool: str
    args: dict[str, Any]


class Observation(TypedDict):
    """The result of one of a node's tool calls, as the model read it: its text, and the
    images and files the tool returned (content blocks, as they came)."""

    call_id: str
    content: str
    error: bool
    media: NotRequired[list[dict[str, Any]]]


class TreeNode(TypedDict):
    """One node of the search tree: one step of a ReAct trajectory (the trajectory is the
    path from the root, whose record holds no step, to the node).

    Attributes:
        parent: The parent's index in ``tree`` (-1 for the root).
        depth: Steps from the root.
        thought: What the model wrote with its action.
        actions: The tool calls of the step (none for a final answer).
        observations: Their results, in call order.
        answer: A terminal node's final answer.
        terminal: The step is a final answer.
        satisfactory: The judge found the final answer satisfactory.
        score: The node's own evaluation, 0 to 1: its value (lowered by a tool error) or,
            for a final answer, 1 when judged satisfactory, else 0.
        value: The mean of the scores back-propagated through the node.
        visits: How many scores were back-propagated through it.
        feedback: The judge's reason or feedback.
        children: Indices of its children in ``tree``.
    """

    parent: int
    depth: int
    thought: str
    actions: list[Action]
    observations: list[Observation]
    answer: str
    terminal: bool
    satisfactory: bool
    score: float
    value: float
    visits: int
    feedback: str
    children: list[int]


class LATSFields(TypedDict, total=False):
    """The keys of its own that LATS's state and output hold.

    Attributes:
        tree: The search tree, its root first (see ``TreeNode``).
        reflections: Lessons from failed final answers, oldest first.
        rollouts: Expansions made.
        best_node: The node the answer came from (its trajectory is the best found).
        stop_reason: Why the search stopped (None while it goes on).
    """

    tree: list[TreeNode]
    reflections: list[str]
    rollouts: int
    best_node: int
    stop_reason: StopReason | None


class LATSOutput(LATSFields, RunResult[ResponseT]):
    """Output of LATS: the answer, status and counters every loop returns, the search
    tree, the reflections, the rollouts made, the best node and why the search stopped."""


class LATSState(LATSFields, TotalsState, total=False):
    """State of the LATS loop (its steps run one at a time, so its counters are running
    totals). ``pending``: the nodes the last expansion added, which ``evaluate`` scores."""

    pending: list[int]


LATSGraph: TypeAlias = CompiledStateGraph[LATSState, ContextT, LoopInput, LATSOutput[ResponseT]]
"""The compiled graph ``create_lats_graph`` returns: its state, run context, input and
output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run: each rollout samples ``n_candidates`` actions, and each
    candidate costs at most a verdict (2 requests) and a reflection (1) more, so
    ``4 * n_candidates * max_rollouts``. The one forced answer turn is asked only when the
    best node holds no answer, that is when some candidate was an action, valued in 2
    requests at most: one request under the most a rollout can cost."""
    per_candidate = 1 + EVALUATION_CALLS + REFLECTION_CALLS
    return per_candidate * int(options["n_candidates"]) * int(options["max_rollouts"])


__all__ = [
    "EVALUATION_CALLS",
    "REFLECTION_CALLS",
    "Action",
    "LATSFields",
    "LATSGraph",
    "LATSOptions",
    "LATSOutput",
    "LATSState",
    "Observation",
    "StopReason",
    "TreeNode",
    "call_budget",
]
