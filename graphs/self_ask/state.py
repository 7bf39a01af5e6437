"""Self-Ask's state, output and keywords (the one place they are declared): the follow-ups
of a run and where the run is (its ``phase``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import (
    LoopInput,
    LoopState,
    Option,
    ResponseT,
    RunResult,
    Step,
    ToolLoopOptions,
)

Phase: TypeAlias = Literal[
    "asking", "tools", "reading", "finish_asked", "finish_cut", "finish_budget"
]
"""Where a Self-Ask run is: see ``SelfAskState.phase`` for each value."""

FINISHING: frozenset[Phase] = frozenset({"finish_asked", "finish_cut", "finish_budget"})
"""The phases in which ``final_answer`` comes next."""


class SelfAskOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_self_ask_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_follow_ups: Annotated[
        int, Option(5, "Follow-up turns allowed before the answer is forced.", minimum=1)
    ]


SelfAskStep: TypeAlias = Step[SelfAskOptions[Any, Any]]
"""What each of Self-Ask's steps and routers is handed besides the state."""


class FollowUp(TypedDict):
    """A follow-up question of the run: its ``answer`` (the intermediate answer; "" while
    unanswered) and the ``tool`` that answered it (None when the model answered itself)."""

    question: str
    answer: str
    tool: str | None


class PendingFollowUp(TypedDict):
    """A follow-up of the current turn waiting for its tool result: the ``id`` of the tool
    call that answers it, the tool's ``name`` and the follow-up ``question``."""

    id: str
    name: str
    question: str


class SelfAskFields(TypedDict, total=False):
    """The keys of its own that Self-Ask's state and output hold (see ``SelfAskOutput``)."""

    follow_ups: list[FollowUp]


class SelfAskOutput(SelfAskFields, RunResult[ResponseT]):
    """Output of the Self-Ask loop: ``follow_ups`` lists every follow-up question with its
    answer and the tool that gave it (None when the model answered itself)."""


class SelfAskState(SelfAskFields, LoopState, total=False):
    """State of the Self-Ask loop; ``scratch.iterations`` counts the loop's model calls.

    Attributes:
        pending: The follow-ups of the current turn waiting for their tool results, each
            with the ``id`` of the tool call that answers it (the calls and their results
            are in ``messages``); empty outside the ``"tools"`` phase.
        phase: Where the run is; the routers and steps read it:

            - ``"asking"``: the model's next turn asks a follow-up or gives the answer
              (a re-ask due after a reply the loop could not use is in
              ``scratch.reask``).
            - ``"tools"``: the turn's follow-ups (``pending``) wait for their tool
              results (the review, then ``call_tool``); the next step answers them from
              the results.
            - ``"reading"``: a guided run has answered its last follow-up from the tool
              result but has not read it yet: its next turn reads it first (and
              ``final_answer``, when the budget sends the run there, shows the result's
              closest sentences).
            - ``"finish_asked"``: a guided model asked nothing new; ``final_answer``
              asks for the answer, which completes the run.
            - ``"finish_cut"``: a reply was cut at the token cap (or said nothing) and
              may not be asked again; ``final_answer`` asks for the answer.
            - ``"finish_budget"``: a guided run spent its follow-up budget before its
              model could ask; ``final_answer`` asks for the answer.
    """

    pending: list[PendingFollowUp]
    phase: Phase


SelfAskGraph: TypeAlias = CompiledStateGraph[
    SelfAskState, ContextT, LoopInput, SelfAskOutput[ResponseT]
]
"""The compiled graph ``create_self_ask_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run: ``max_follow_ups`` turns, then one asking for the final
    answer."""
    return int(options["max_follow_ups"]) + 1
