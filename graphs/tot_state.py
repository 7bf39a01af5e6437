"""Tree-of-Thoughts' state: the beam, the candidates of a level, and what an ``expand``
task is sent (see ``loopgraphs.graphs.tot``)."""

from __future__ import annotations

from typing import Annotated, Literal

from typing_extensions import TypedDict

from loopgraphs.state import LoopState, ResponseT, RunResult

StopReason = Literal["", "answer", "max_depth", "dead_end", "step_limit"]


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


def add_failures(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer: failures of concurrent tasks add up (one task's error never clobbers
    another); ``None`` empties the list (a run's first step)."""
    if right is None:
        return []
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


class ToTState(ToTFields, LoopState, total=False):
    """State of the Tree-of-Thoughts loop: the output plus failures of concurrent tasks."""

    failures: Annotated[list[str], add_failures]


class Expansion(ToTState, total=False):
    """What an ``expand`` task is sent: the run's state and the branch it grows."""

    branch: Growing


__all__ = [
    "Branch",
    "Candidate",
    "Expansion",
    "Growing",
    "StopReason",
    "ToTFields",
    "ToTOutput",
    "ToTState",
    "add_failures",
    "extend_candidates",
]
