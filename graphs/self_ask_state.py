"""Self-Ask's state: the follow-ups of a run, where the run is (its ``phase``), and the
graph steps a turn must leave for what follows it (``TurnSteps``, the loop's build-time
option every step that checks the run budget reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from typing_extensions import TypedDict

from loopgraphs.graphs.self_ask_guided import FollowUp
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import LoopState

Phase: TypeAlias = Literal[
    "asking", "tools", "reading", "finish_asked", "finish_cut", "finish_budget"
]
"""Where a Self-Ask run is: see ``SelfAskState.phase`` for each value."""

FINISHING: frozenset[Phase] = frozenset({"finish_asked", "finish_cut", "finish_budget"})
"""The phases in which ``final_answer`` comes next."""


class PendingFollowUp(TypedDict):
    """A follow-up of the current turn waiting for its tool result: the ``id`` of the tool
    call that answers it, the tool's ``name`` and the follow-up ``question``."""

    id: str
    name: str
    question: str


class SelfAskFields(TypedDict, total=False):
    """The keys of its own that Self-Ask's state and output hold (see ``SelfAskOutput``)."""

    follow_ups: list[FollowUp]


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


@dataclass(frozen=True)
class TurnSteps:
    """The graph steps that must still follow a Self-Ask step (see ``RunBudget.allows``):
    each model step comes with the middleware's ``before_model`` and ``after_model`` hook
    nodes.

    Attributes:
        hooks_after: The ``after_model`` hook nodes that follow a model step.
        model: The steps of one model step, its hook nodes included.
    """

    hooks_after: int
    model: int

    @classmethod
    def of(cls, settings: LoopSettings) -> TurnSteps:
        """The steps of a loop built with ``settings`` (its middleware's hooks)."""
        after = len(settings.middleware.with_hook("after_model"))
        before = len(settings.middleware.with_hook("before_model"))
        return cls(hooks_after=after, model=before + 1 + after)

    @property
    def answer(self) -> int:
        """After a turn, for the answer to come: the turn's hooks, then ``final_answer``."""
        return self.hooks_after + self.model

    @property
    def turn(self) -> int:
        """After a turn or a tool step, for another turn and the answer."""
        return self.hooks_after + 2 * self.model

    def tools(self, run: LoopSettings) -> int:
        """After a turn asking follow-ups: its hooks, the review (when the run has one),
        the tools, then the answer."""
        return self.hooks_after + bool(run.review) + 1 + self.model
