"""Concepts written in one place: a second copy of one would drift from the first.

The fence format around tool output lives in ``loopgraphs.text``; model spec strings are
read by ``loopgraphs.models.spec`` alone; the recursion budget is read by
``loopgraphs.nodes.budget`` alone.
"""

from __future__ import annotations

import pytest

from tests.support.package_modules import package_modules

MODULES = package_modules()

OWNERS = [
    ("<<tool_output", "loopgraphs.text", "the fence format around tool output"),
    ("<<end_tool_output", "loopgraphs.text", "the fence format around tool output"),
    ('get("remaining_steps"', "loopgraphs.nodes.budget", "a read of LangGraph's step budget"),
    ('partition(":")', "loopgraphs.models.spec", "a reading of model spec strings"),
    ('partition("#")', "loopgraphs.models.spec", "a reading of a server spec's model name"),
]


def writers(text: str) -> list[str]:
    """The package's modules whose code holds ``text`` (its docstrings and comments too)."""
    return sorted(module for module, path in MODULES.items() if text in path.read_text())


@pytest.mark.parametrize(("text", "owner", "what"), OWNERS, ids=[o[0] for o in OWNERS])
def test_a_concept_is_written_by_its_owner_alone(text: str, owner: str, what: str) -> None:
    found = writers(text)
    assert found == [owner], f"{what} is written outside {owner}: {found}"
