"""Tool sandboxing against hostile arguments (extends tests/unit/toolkits/test_toolkits.py).

File tools must refuse every way out of their root (encoded and look-alike dots, mixed
``..`` segments, NUL, over-long paths, symlinked files and directories, symlink chains),
the calculator must refuse code and runaway work quickly, and the search tool must
survive any query. Every refusal is an ``Error:`` string, never an exception, and reaches
the model as an observation.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from loopgraphs import create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.toolkits import calculator, make_file_tools, make_search_tool
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for

SECRET = "TOP-SECRET-0xC0FFEE"
INSIDE = {"notes.txt": "hello world", "sub/inner.txt": "inner text"}
# A hang guard, not a speed target: an expression the limits let through by mistake
# (9**9**9, a path loop) runs for minutes, while a refused one takes milliseconds even on
# a loaded machine; speed itself is measured in the benchmarks.
HANG_S = 10.0

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sandbox")
    root = base / "root"
    (root / "sub" / "deeper").mkdir(parents=True)
    for name, text in INSIDE.items():
        (root / name).write_text(text, encoding="utf-8")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (base / "root-evil").mkdir()  # shares the root's name as a prefix
    (base / "root-evil" / "secret.txt").write_text(SECRET, encoding="utf-8")
    # Symlinks leading out, directly, through directories and through chains.
    (root / "out_file").symlink_to(outside / "secret.txt")
    (root / "out_dir").symlink_to(outside)
    (root / "out_rel").symlink_to(Path("..") / "outside")
    (root / "sub" / "up").symlink_to(Path("..") / "..")
    (root / "sub" / "deeper" / "far").symlink_to(Path("..") / ".." / ".." / "outside")
    (root / "chain3").symlink_to(outside / "secret.txt")
    (root / "chain2").symlink_to("chain3")
    (root / "chain1").symlink_to(root / "chain2")
    (root / "evil_prefix").symlink_to(base / "root-evil")
    (root / "to_slash").symlink_to("/")
    # Symlinks that stay inside are fine.
    (root / "alias.txt").symlink_to("notes.txt")
    (root / "here").symlink_to(".")
    return root


@pytest.fixture(scope="module")
def file_tools(workspace: Path) -> tuple[BaseTool, BaseTool]:
    read_file, list_files = make_file_tools(workspace)
    return read_file, list_files


ESCAPES = [
    "../outside/secret.txt",
    "/etc/passwd",
    "//etc/passwd",
    " /etc/passwd",
    "sub/../../outside/secret.txt",
    "./sub/../../outside/secret.txt",
    "sub/./../..",
    "..",
    "../",
    "\t../outside",
    "%2e%2e/outside/secret.txt",
    "%2e%2e%2foutside%2fsecret.txt",
    "..%2foutside%2fsecret.txt",
    "%252e%252e/outside/secret.txt",
    "\uff0e\uff0e/outside/secret.txt",  # fullwidth full stops
    "\u2024\u2024/outside/secret.txt",  # one-dot leaders
    "\u2025/outside/secret.txt",  # two-dot leader
    "....//outside/secret.txt",
    "..\\outside\\secret.txt",
    "notes.txt\x00../outside/secret.txt",
    "~/secret.txt",
    "~root/.bashrc",
    "file:///etc/passwd",
    "x/" * 3000 + "notes.txt",
    "a" * 5000,
    "out_file",
    "out_dir/secret.txt",
    "out_dir",
    "out_rel/secret.txt",
    "sub/up/outside/secret.txt",
    "sub/up/../outside/secret.txt",
    "sub/deeper/far/secret.txt",
    "chain1",
    "evil_prefix/secret.txt",
    "to_slash/etc/passwd",
    "here/out_dir/secret.txt",
    "here/here/chain1",
]


@pytest.mark.parametrize("path", ESCAPES, ids=[repr(p[:30]) for p in ESCAPES])
def test_file_tools_refuse_escapes(file_tools: tuple[BaseTool, BaseTool], path: str) -> None:
    for tool in file_tools:
        started = time.perf_counter()
        result = tool.invoke({"path": path})
        assert time.perf_counter() - started < HANG_S
        assert isinstance(result, str) and result.startswith("Error:"), (tool.name, result)
        assert SECRET not in result
        assert "passwd" not in result or "Error:" in result.splitlines()[0]


def test_file_tools_still_follow_inside_links(file_tools: tuple[BaseTool, BaseTool]) -> None:
    read_file, list_files = file_tools
    assert read_file.invoke({"path": "alias.txt"}) == "hello world"
    assert read_file.invoke({"path": "here/sub/inner.txt"}) == "inner text"
    assert "notes.txt" in list_files.invoke({"path": "here"})


KNOWN_NAMES = {
    "notes.txt",
    "sub/",
    "deeper/",
    "inner.txt",
    "alias.txt",
    "here/",
    "out_file",
    "out_dir/",
    "out_rel/",
    "up/",
    "far/",
    "chain1",
    "chain2",
    "chain3",
    "evil_prefix/",
    "to_slash/",
}
path_text = st.one_of(
    st.text(max_size=80),
    st.lists(
        st.sampled_from(
            ["..", ".", "/", "sub", "here", "out_dir", "chain1", "notes.txt", "%2e", "\x00", "~"]
        ),
        max_size=8,
    ).map("/".join),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=path_text)
def test_file_tools_never_leak_or_raise(file_tools: tuple[BaseTool, BaseTool], path: str) -> None:
    read_file, list_files = file_tools
    read = read_file.invoke({"path": path})
    assert isinstance(read, str) and SECRET not in read
    assert read.startswith("Error:") or read in INSIDE.values(), read
    listed = list_files.invoke({"path": path})
    assert isinstance(listed, str) and SECRET not in listed
    if not listed.startswith("Error:") and "empty directory" not in listed:
        assert set(listed.splitlines()) <= KNOWN_NAMES, listed


# ---------------------------------------------------------------- calculator


CALC_REFUSALS = [
    ("().__class__.__bases__", "Attribute"),
    ("pi.real", "Attribute"),
    ("(1).__class__.__subclasses__()", "only these functions"),
    ("__builtins__", "name '__builtins__'"),
    ("__import__", "name '__import__'"),
    ("globals()", "only these functions"),
    ("sqrt.__globals__", "Attribute"),
    ("getattr(1, 'real')", "only these functions"),
    ("x", "name 'x'"),
    ("1 if 1 else 2", "IfExp"),
    ("(lambda: 1)()", "only these functions"),
    ("1 << 100000", "LShift"),
    ("~1", "UnaryOp"),
    ("9**9**9**9", "exponent"),
    ("10**10**10", "exponent"),
    ("2**(2**100)", "exponent"),
    ("(10**999)**5", "digits"),
    ("round(1, -10**18)", "digits"),
    ("round(5, -100000000)", "digits"),
    ("round(1.5, 10**18)", "digits"),
    ("exp(exp(exp(10)))", "too large"),
    ("(" * 60 + "1" + ")" * 60, "nested deeper"),
    ("[" * 60 + "1" + "]" * 60, "nested deeper"),
    ("-(" * 60 + "1" + ")" * 60, "nested deeper"),
    ("sqrt(" * 60 + "4" + ")" * 60, "nested deeper"),
    ("1+" * 300 + "1", "characters long"),
    ("9" * 10_000, "characters long"),
    ("'a' * 10**9", "only numbers"),
    ("1; 2", "invalid syntax"),
    ("f'{1}'", "JoinedStr"),
]


@pytest.mark.parametrize(
    ("expression", "reason"), CALC_REFUSALS, ids=[e[:25] for e, _ in CALC_REFUSALS]
)
def test_calculator_refuses_without_computing(expression: str, reason: str) -> None:
    started = time.perf_counter()
    result = calculator.invoke({"expression": expression})
    assert time.perf_counter() - started < HANG_S
    assert result.startswith("Error:"), result
    assert reason in result, result


@settings(max_examples=200, deadline=None)
@given(
    expression=st.one_of(
        st.text(max_size=60),
        st.lists(
            st.sampled_from(
                [
                    "9",
                    "10",
                    "**",
                    "*",
                    "-",
                    "(",
                    ")",
                    "round(",
                    ",",
                    "sqrt(",
                    "e",
                    "pi",
                    "^",
                    "x",
                    ".",
                ]
            ),
            max_size=30,
        ).map("".join),
    )
)
def test_calculator_never_raises_or_hangs(expression: str) -> None:
    started = time.perf_counter()
    result = calculator.invoke({"expression": expression})
    assert isinstance(result, str) and result
    assert time.perf_counter() - started < HANG_S, expression


# ---------------------------------------------------------------- search


@pytest.fixture(scope="module")
def search() -> BaseTool:
    return make_search_tool()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.one_of(
        st.text(max_size=200),
        st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=5),
        st.lists(
            st.sampled_from(
                ['"', "*", "NEAR(", "AND", "OR", "NOT", "^", ":", "-", "(", ")", "title:", "x"]
            ),
            max_size=20,
        ).map(" ".join),
    )
)
def test_search_survives_any_query(search: BaseTool, query: str) -> None:
    result = search.invoke({"query": query})
    assert isinstance(result, str) and result


# ---------------------------------------------------------------- through a ReAct run


@pytest.mark.parametrize("mode", MODES)
def test_refusal_reaches_the_model_as_an_observation(workspace: Path, mode: str) -> None:
    tools = make_file_tools(workspace)
    model = model_for(
        mode,
        [act(mode, "read_file", {"path": "out_dir/secret.txt"}), final(mode, "I cannot read it.")],
    )
    graph = create_react_graph(model, tools, tool_mode=mode, retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "Read the secret file.")]})
    assert out["status"] == "completed" and out["answer"] == "I cannot read it."
    observation = model.prompts[1][-1]
    text = content_text(observation.content)
    assert "Error: 'out_dir/secret.txt' leads outside the workspace root." in text
    if mode == "native":
        assert isinstance(observation, ToolMessage)
    else:
        assert text.startswith("Observation:")
    assert all(SECRET not in content_text(m.content) for m in out["messages"])
