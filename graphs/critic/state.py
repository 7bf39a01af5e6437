"""CRITIC's state, output and keywords (the one place they are declared): the draft, the
claims checked so far, the round, and the claims of the current round waiting for their
checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import LoopInput, LoopState, Option, ResponseT, RunResult, ToolLoopOptions
from loopgraphs.nodes.parsing.critic import CheckedClaim, Claim


class CriticOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``create_critic_graph``'s keywords: its own, and the shared ``ToolLoopOptions``."""

    max_critique_rounds: Annotated[
        int, Option(2, "Critique-verify-revise rounds allowed.", minimum=1)
    ]


class PendingClaim(Claim):
    """A claim of the current round waiting for its check: the ``id`` of the tool call
    that checks it (claims sharing a check share its call) and the ``args`` it was given."""

    id: str
    args: dict[str, Any]


class CriticFields(TypedDict, total=False):
    """The keys of its own that CRITIC's state and output hold (see ``CriticOutput``)."""

    draft: str
    claims: list[CheckedClaim]
    round: int
    verified: bool


class CriticOutput(CriticFields, RunResult[ResponseT]):
    """Output of the CRITIC loop.

    ``draft`` is the current answer, ``round`` the number of critiques made,
    ``claims`` every claim checked so far, ``verified`` whether the last critique
    accepted the draft.
    """


class CriticState(CriticFields, LoopState, total=False):
    """State of the CRITIC loop: ``pending`` holds the claims of the current round. The
    calls and their results are in ``messages``."""

    pending: list[PendingClaim]


CriticGraph: TypeAlias = CompiledStateGraph[
    CriticState, ContextT, LoopInput, CriticOutput[ResponseT]
]
"""The compiled graph ``create_critic_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run: the draft, then per round one critique and one
    revision, and one more critique request when ``tool_choice`` requires a claim that a
    text-mode critique did not name."""
    calls = 1 + 2 * int(options["max_critique_rounds"])
    return calls + (1 if options.get("tool_choice") not in (None, "auto") else 0)
