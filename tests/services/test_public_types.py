"""What a user's type checker sees of the public API: typed results, structured output
typed as its ``response_format``, and a misspelt key, loop name or option caught.

mypy runs in ``--strict`` mode on a small program of a user's (outside the repository,
reading the installed package), which reveals types and makes the mistakes a user might.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

USER_PROGRAM = """
from dataclasses import dataclass

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic import BaseModel

from loopgraphs import LoopName, build_loop, create_critic_graph, create_react_graph


class Weather(BaseModel):
    city: str


@dataclass
class Tenant:
    name: str


model = FakeListChatModel(responses=["x"])
graph = create_react_graph(model, [], response_format=Weather, context_schema=Tenant)
out = graph.invoke({"messages": [("user", "hi")]}, context=Tenant("acme"), version="v2")
reveal_type(out.value["structured_response"])  # 1
reveal_type(out.value["answer"])  # 2
reveal_type(out.value["llm_calls"])  # 3
critic = create_critic_graph(model, [])
reveal_type(critic.invoke({"messages": []}, version="v2").value["verified"])  # 4
name: LoopName = "tot"
out.value["answr"]  # error: a misspelt key
build_loop("reactt", model)  # error: a misspelt loop
build_loop("react", model, [], max_iteration=3)  # error: a misspelt option
create_react_graph(model, [], tool_mode="jsn")  # error: no such tool mode
"""


def mypy_on(program: str, folder: Path) -> str:
    (folder / "app.py").write_text(program.strip("\n") + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "app.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return done.stdout + done.stderr


def test_a_users_strict_type_checker_sees_typed_results_and_catches_mistakes(tmp_path: Path):
    report = mypy_on(USER_PROGRAM, tmp_path)
    revealed = re.findall(r'Revealed type is "([^"]+)"', report)
    assert revealed == ["app.Weather", "str", "int", "bool"], report
    lines = USER_PROGRAM.strip("\n").splitlines()
    errors = {int(n) for n in re.findall(r"^app\.py:(\d+): error", report, re.MULTILINE)}
    expected = {i for i, line in enumerate(lines, 1) if "# error" in line}
    assert errors == expected, report
    assert 'has no key "answr"' in report and "max_iteration" in report


def test_a_loop_without_response_format_returns_its_typed_output_too(tmp_path: Path):
    program = (
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "from loopgraphs import create_cot_graph\n"
        "graph = create_cot_graph(FakeListChatModel(responses=['x']))\n"
        "out = graph.invoke({'messages': [('user', 'hi')]}, version='v2')\n"
        "reveal_type(out.value['answer'])\n"
        "reveal_type(out.value['samples'])\n"
    )
    report = mypy_on(program, tmp_path)
    assert re.findall(r'Revealed type is "([^"]+)"', report) == [
        "str",
        "list[str]",
    ], report
    assert "error" not in report, report


def test_build_loops_keywords_are_each_factorys():
    """``build_loop``'s typed keywords for a loop (``ReActOptions``, ...) are exactly its
    factory's: the loop's own keywords and the shared options it unpacks."""
    import inspect
    import typing

    from loopgraphs import nodes
    from loopgraphs.graphs import registry

    typed = {name: spec.options for name, spec in registry.LOOP_SPECS.items()}
    assert typed["react"] is registry.ReActOptions and typed["lats"] is registry.LATSOptions
    assert sorted(typed) == sorted(registry.LOOPS) == sorted(typing.get_args(registry.LoopName))
    for name, options in typed.items():
        parameters = inspect.signature(registry.LOOPS[name]).parameters.values()
        own = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
        takes_tools = registry.LOOP_SPECS[name].takes_tools
        shared = nodes.ToolLoopOptions if takes_tools else nodes.LoopOptions
        assert set(typing.get_type_hints(options)) == own | set(typing.get_type_hints(shared)), name
