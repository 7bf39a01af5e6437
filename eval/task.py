"""One question of a suite, as the suites make it and the scorers read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    """One question of a suite.

    Attributes:
        id: Unique within the suite, e.g. ``"multihop-007"``.
        suite: The suite's name.
        question: The text sent to the loop as the user message.
        answer: The expected answer (``"true"`` for a true claim of ``verify``).
        aliases: Other answers accepted as equally correct.
        metadata: The other keys of the row the task was read from, or, in a bundled
            suite, how the question is phrased (``phrasing``).
    """

    id: str
    suite: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    metadata: Mapping[str, object] = field(default_factory=dict, hash=False)


CLASSIC_SUFFIX = "-classic"
"""Marks a bundled suite that asks its items in the classic phrasing alone."""


def base_suite(name: str) -> str:
    """The suite a name's items come from: ``"verify"`` for ``"verify-classic"``."""
    return name.removesuffix(CLASSIC_SUFFIX)
