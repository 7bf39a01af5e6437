"""The README's drawings and commands stay true to the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopgraphs import LOOPS, build_loop

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def drawing_in_readme(name: str) -> str:
    match = re.search(rf"<!-- drawing:{name} -->\n```mermaid\n(.*?)\n```", README, re.S)
    assert match, f"no drawing for {name} in the README"
    return match.group(1)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_readme_drawing_matches_the_graph(name):
    drawn = build_loop(name, None, []).get_graph().draw_mermaid().rstrip("\n")
    assert drawing_in_readme(name) == drawn, f"regenerate with: loopgraphs draw {name}"


def test_readme_starts_with_the_two_commands():
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines()[0].startswith("make demo")
    assert first_block.splitlines()[1].startswith("make test")
