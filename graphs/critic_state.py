"""CRITIC's state and output: the draft, the claims checked so far, the round, and the
claims of the current round waiting for their checks. The graph is built in
``loopgraphs.graphs.critic``."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from loopgraphs.nodes.parsing.critic import CheckedClaim, Claim
from loopgraphs.state import LoopState, ResponseT, RunResult


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
