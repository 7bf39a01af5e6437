"""The documentation stays true to the code.

* Every ```python block of the site's pages (docs/pages/) and of the README runs. The
  blocks of one page run in order in one namespace, as a reader would type them, in a
  fresh working directory. A real model is replaced by the scripted one of
  ``tests/support/fakes.py``: every page starts with ``model`` and ``supervisor_model`` (they
  answer "42"), ``tools`` (the calculator) and ``search`` (the bundled search tool)
  defined, and a comment right before a block can prepare more:

  - ``<!-- docs-test: setup=NAME -->`` runs ``SETUPS[NAME]`` first (a model with a script
    for that example, or ``load_model`` answering with a scripted model);
  - ``<!-- docs-test: not run (REASON) -->`` leaves the block out, for the few that need
    something no test can have offline (a provider key, a running server). The reason is
    required, so it can be read in the page's source.

* The site builds with ``mkdocs build --strict``.
* Each loop's page draws its graph exactly as ``tests/snapshots/<loop>.mmd`` (and as the
  graph itself).
* The README starts with the two commands, stays short, and its links to the pages exist.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import loopgraphs
import loopgraphs.models
from loopgraphs import LOOPS, build_loop
from loopgraphs.toolkits import calculator, make_search_tool
from tests.support.fakes import ScriptedChatModel, calls, tool_call

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"
SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
README = ROOT / "README.md"
MARKER = re.compile(r"<!-- docs-test: (.*?) -->")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# The options a loop's page draws it with (the shape of tests/snapshots/<loop>.mmd).
DRAWN_WITH: dict[str, dict[str, Any]] = {"plan_execute": {"replan": True, "approve_plan": True}}
LOOP_PAGES = {name: PAGES / "loops" / f"{name.replace('_', '-')}.md" for name in LOOPS}


def capable(replies: list[Any]) -> ScriptedChatModel:
    """A scripted model with native tool calls and JSON schemas, repeating its last reply."""
    return ScriptedChatModel(
        replies=replies,
        repeat_last=True,
        profile={"tool_calling": True, "structured_output": True},
    )


def loads_scripted(namespace: dict[str, Any], model: ScriptedChatModel) -> None:
    """``load_model`` (both public paths) gives ``model`` whatever the spec."""

    def load_model(spec: Any = None, **kwargs: Any) -> ScriptedChatModel:
        return model

    namespace["_patch"].setattr(loopgraphs.models, "load_model", load_model)
    namespace["_patch"].setattr(loopgraphs, "load_model", load_model)


def setup_quickstart(namespace: dict[str, Any]) -> None:
    """The quickstart's model calls the calculator, then answers."""
    expression = {"expression": "17 * 19"}
    loads_scripted(namespace, capable([calls(tool_call("calculator", expression)), "323"]))


def setup_approval(namespace: dict[str, Any]) -> None:
    """A model that calls the calculator, so the run pauses for approval."""
    expression = {"expression": "12 * 7"}
    namespace["model"] = capable([calls(tool_call("calculator", expression)), "84"])
    namespace["tools"] = [calculator]


def setup_evaluation(namespace: dict[str, Any]) -> None:
    """The evaluation's model answers every question with 323, in each loop's grammar."""
    loads_scripted(namespace, capable(["So the final answer is: 323\nFINAL ANSWER: 323"]))


def setup_self_refine(namespace: dict[str, Any]) -> None:
    """A loop of the reader's own: registered for this page only; its model drafts "323"
    and the evaluator is satisfied."""
    from loopgraphs.graphs import registry

    for table in (registry.LOOP_SPECS, registry.LOOPS):
        namespace["_patch"].setitem(table, "self_refine", None)
        del table["self_refine"]
    namespace["model"] = capable(["323", '{"satisfactory": true, "feedback": ""}'])


def setup_rewoo(namespace: dict[str, Any]) -> None:
    """ReWOO's planner writes two steps, the second naming the first's evidence; its
    solver answers."""
    steps = [
        {
            "plan": "Find the founder.",
            "evidence": "#E1",
            "tool": "search",
            "tool_input": "founder of Quillmark Instruments",
        },
        {
            "plan": "Find where they were born.",
            "evidence": "#E2",
            "tool": "search",
            "tool_input": "birthplace of #E1",
        },
    ]
    namespace["model"] = capable([calls(tool_call("Plan", {"steps": steps})), "In Ferndale."])


def setup_json_answer(namespace: dict[str, Any]) -> None:
    """A json-mode model that answers at once: its reply is ReAct's JSON action."""
    action = {"thought": "I know it.", "action": "Final Answer", "action_input": "It is 42."}
    namespace["model"] = ScriptedChatModel(replies=[json.dumps(action)], repeat_last=True)


def setup_progress(namespace: dict[str, Any]) -> None:
    """Plan-and-Execute's model plans one step, which calls ``lookup``, then answers."""
    from tests.support.loop_scripts import tool_then_answer

    replies = tool_then_answer(
        "plan_execute", "native", "lookup", {"topic": "plums"}, "in the basket"
    )
    namespace["model"] = capable(replies)


SETUPS: dict[str, Callable[[dict[str, Any]], None]] = {
    "quickstart": setup_quickstart,
    "approval": setup_approval,
    "evaluation": setup_evaluation,
    "self_refine": setup_self_refine,
    "rewoo": setup_rewoo,
    "json_answer": setup_json_answer,
    "progress": setup_progress,
}


@dataclass
class Block:
    page: str
    line: int
    code: str
    marker: str | None


def blocks_of(path: Path) -> list[Block]:
    """The page's python blocks, each with the docs-test marker written right before it."""
    text = path.read_text()
    found, previous_end = [], 0
    for match in BLOCK.finditer(text):
        between = text[previous_end : match.start()]
        markers = MARKER.findall(between)
        last_line = between.rstrip("\n").rsplit("\n", 1)[-1]
        marker = markers[-1] if markers and MARKER.fullmatch(last_line.strip()) else None
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(path.name, line, match.group(1), marker))
        previous_end = match.end()
    return found


def documented() -> list[Path]:
    return [*sorted(PAGES.rglob("*.md")), README]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def run_block(block: Block, namespace: dict[str, Any]) -> None:
    code = compile(
        block.code,
        f"{block.page}:{block.line}",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize("path", documented(), ids=page_id)
def test_python_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The page's blocks run as a module of their own, as a reader's file would (type hints
    # written as strings resolve in it).
    module = types.ModuleType("__docs__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    namespace.update(
        {
            "_patch": monkeypatch,
            "model": capable(["42"]),
            "supervisor_model": capable(["42"]),
            "tools": [calculator],
            "search": make_search_tool(),
        }
    )
    for block in blocks_of(path):
        marker = block.marker or ""
        if marker.startswith("not run"):
            continue
        if marker.startswith("setup="):
            SETUPS[marker.removeprefix("setup=")](namespace)
        elif marker:
            pytest.fail(f"{block.page}:{block.line}: unknown docs-test marker {marker!r}")
        try:
            run_block(block, namespace)
        except Exception as error:
            raise AssertionError(f"the block at {block.page}:{block.line} fails") from error


def test_markers_are_known_and_blocks_left_out_say_why():
    left_out = []
    for path in documented():
        text = path.read_text()
        for marker in MARKER.findall(text):
            reason = re.fullmatch(r"not run \((.+)\)", marker)
            known = reason or marker.removeprefix("setup=") in SETUPS
            assert known, f"{page_id(path)}: {marker!r} is not a docs-test marker"
            if reason:
                left_out.append((page_id(path), reason.group(1)))
        placed = sum(block.marker is not None for block in blocks_of(path))
        assert placed == len(MARKER.findall(text)), f"{page_id(path)}: a marker not before a block"
    assert len(left_out) <= 6, left_out


def drawing_in(path: Path, name: str) -> str:
    text = path.read_text()
    match = re.search(rf"<!-- drawing:{name} -->\n```mermaid\n(.*?)\n```", text, re.S)
    assert match, f"no drawing for {name} in {page_id(path)}"
    return match.group(1)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_page_drawing_matches_the_snapshot_and_the_graph(name):
    drawn = drawing_in(LOOP_PAGES[name], name)
    assert drawn == (SNAPSHOTS / f"{name}.mmd").read_text().rstrip("\n")
    graph = build_loop(name, None, [], **DRAWN_WITH.get(name, {})).get_graph()
    assert drawn == graph.draw_mermaid().rstrip("\n"), f"regenerate with: loopgraphs draw {name}"


def test_every_page_is_in_the_site():
    config = (DOCS / "mkdocs.yml").read_text()
    for path in PAGES.rglob("*.md"):
        assert str(path.relative_to(PAGES)) in config, f"{path.name} is not in the nav"


@pytest.mark.slow
@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the docs extra installs on Python 3.11+: the last releases of mkdocstrings and "
    "pymdown-extensions for 3.10 do not work together",
)
def test_site_builds_strict(tmp_path):
    config, site = str(DOCS / "mkdocs.yml"), str(tmp_path / "site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", config, "-d", site],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "eval-accuracy.png").is_file()
    for name in ("loopgraphs", "graphs", "models", "toolkits", "eval"):
        assert (tmp_path / "site" / "reference" / f"{name}.html").is_file()


def test_readme_starts_with_the_two_commands():
    first_block = README.read_text().split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines()[0].startswith("make demo")
    assert first_block.splitlines()[1].startswith("make test")


def test_readme_is_short_and_its_links_exist():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/pages/") for link in links)
    for link in links:
        assert (ROOT / link).exists(), f"the README links to {link}, which does not exist"


def test_pages_link_to_pages_that_exist():
    """Relative links between pages (checked by the strict build too, but faster here)."""
    for path in PAGES.rglob("*.md"):
        for link in re.findall(r"\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / link).resolve().exists(), f"{page_id(path)} links to {link}"
