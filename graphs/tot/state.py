"""Tree-of-Thoughts' state, output and keywords (the one place they are declared): the
beam, the candidates of a level, and what an ``expand`` task is sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.nodes import (
    FanOutState,
    LoopInput,
    LoopOptions,
    LoopState,
    Option,
    ResponseT,
    RunResult,
    Step,
)

Scoring: TypeAlias = Literal["batched", "per_branch"]
Generation: TypeAlias = Literal["propose", "sample"]
StopReason = Literal["", "answer", "max_depth", "dead_end", "step_limit"]


class ToTOptions(LoopOptions[ResponseT, ContextT], total=False):
    """``create_tot_graph``'s keywords: its own, and the shared ``LoopOptions``."""

    n_branches: Annotated[
        int, Option(3, "Candidate thoughts generated per branch and level (b).", minimum=1)
    ]
    beam_width: Annotated[
        int,
        Option(
            2,
            "Branches kept per level (w), at most n_branches: the first level has only "
            "n_branches candidates.",
            minimum=1,
            maximum="n_branches",
        ),
    ]
    max_depth: Annotated[
        int, Option(3, "Levels of thoughts before an answer is forced (d).", minimum=1)
    ]
    scoring: Annotated[
        Scoring,
        Option(
            "batched",
            "batched: one call scores all candidates of a level; per_branch: one call per "
            "candidate, concurrently.",
        ),
    ]
    generation: Annotated[
        Generation,
        Option(
            "propose",
            "propose: one call lists n_branches thoughts; sample: n_branches concurrent "
            "calls, one thought each.",
        ),
    ]


class Branch(TypedDict):
    """One line of reasoning kept in the beam."""

    thoughts: list[str]
    score: float


class Candidate(TypedDict):
    """A next step proposed for a branch of the beam: the branch's thoughts with the new
    one, its ``score`` (None until scored), the beam index of the branch it grew from
    (``parent``), its place among that branch's proposals (``index``) and the answer it
    reaches ("" if none)."""

    thoughts: list[str]
    score: float | None
    parent: int
    index: int
    answer: str


class Growing(TypedDict):
    """The branch an ``expand`` task grows: its thoughts and its index in the beam."""

    thoughts: list[str]
    parent: int


def extend_candidates(
    left: list[Candidate] | None, right: list[Candidate] | None
) -> list[Candidate]:
    """Reducer: concurrent ``expand`` tasks add their (unscored) candidates; the scored
    candidates of a level replace them; ``None`` empties the list."""
    if right is None:
        return []
    if right and all(c["score"] is not None for c in right):
        return right
    return [*(left or []), *right]


class ToTFields(TypedDict, total=False):
    """The keys of its own that Tree-of-Thoughts' state and output hold (see ``ToTOutput``)."""

    problem: str
    branches: list[Branch]
    depth: int
    candidates: Annotated[list[Candidate], extend_candidates]
    best_path: list[str]
    stop_reason: StopReason


class ToTOutput(ToTFields, RunResult[ResponseT]):
    """Output of the Tree-of-Thoughts loop.

    ``branches`` is the beam (best first); ``candidates`` the last level's candidates
    (``thoughts``, ``score`` (None if unscored), ``parent``, ``index``, ``answer``);
    ``depth`` the levels expanded; ``best_path`` the thoughts of the best branch (or of
    the answering one); ``stop_reason`` why the search stopped; ``problem`` the question
    as the run's last request showed it (after the hooks: a redacted address stays
    redacted).
    """


class ToTState(ToTFields, FanOutState, LoopState, total=False):
    """State of the Tree-of-Thoughts loop: the output, and the failures of the ``expand``
    tasks (``FanOutState``), which run side by side."""


class Expansion(ToTState, total=False):
    """What an ``expand`` task is sent: the run's state and the branch it grows."""

    branch: Growing


ToTStep: TypeAlias = Step[ToTOptions[Any, Any]]
"""What Tree-of-Thoughts' steps are handed besides the state (its keywords resolved)."""

ToTGraph: TypeAlias = CompiledStateGraph[ToTState, ContextT, LoopInput, ToTOutput[ResponseT]]
"""The compiled graph ``create_tot_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def call_budget(options: Mapping[str, Any]) -> int:
    """Most model calls of a run: E = 1 + w·(d−1) branch expansions at most, e calls per
    expansion (1 to propose, b to sample), and either one scoring call per level and one
    ``final_answer`` (E·e + d + 1, batched) or one scoring call per candidate and one
    ``final_answer`` (E·(e + b) + 1, per branch); b = ``n_branches``, w = ``beam_width``,
    d = ``max_depth``."""
    b, w, d = int(options["n_branches"]), int(options["beam_width"]), int(options["max_depth"])
    expansions = 1 + w * (d - 1)
    per_expansion = 1 if options["generation"] == "propose" else b
    if options["scoring"] == "batched":
        return expansions * per_expansion + d + 1
    return expansions * (per_expansion + b) + 1


__all__ = [
    "Branch",
    "Candidate",
    "Expansion",
    "Generation",
    "Growing",
    "Scoring",
    "StopReason",
    "ToTFields",
    "ToTGraph",
    "ToTOptions",
    "ToTOutput",
    "ToTState",
    "ToTStep",
    "call_budget",
    "extend_candidates",
]
