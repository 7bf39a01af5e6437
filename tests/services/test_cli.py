"""The loopgraphs command: list, draw, run with live steps, terminal approval."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopgraphs import LOOPS, cli
from loopgraphs.cli import approval, arguments, commands
from loopgraphs.graphs import registry
from tests.support.scripts import act, final, model_for


def test_list_shows_every_loop_and_its_keywords(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name, spec in registry.LOOP_SPECS.items():
        assert name in out
        for option in getattr(spec, "own", ()):
            assert f"{option.name}={option.default!r}" in out


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_draw_prints_mermaid(name, capsys):
    import re

    assert cli.main(["draw", name]) == 0
    out = capsys.readouterr().out
    assert "\ngraph TD;\n" in out
    # The nodes each loop's module docstring and the docs' loop pages describe, and no others.
    tool_steps = {"call_tool", "final_answer"}
    expected = {
        "cot": {"prepare", "generate", "parse"},
        "critic": {"prepare", "generate", "critique", "call_tool", "revise"},
        "plan_execute": {"prepare", "plan", "execute", "synthesize"},
        "react": {"select_tools", "generate", *tool_steps},
        "reflexion": {"prepare", "generate", "evaluate", "reflect"},
        "self_ask": {"prepare", "generate", *tool_steps},
        "tot": {"prepare", "expand", "score_branches", "final_answer"},
        "lats": {"expand", "evaluate", "best_answer", *tool_steps},
        "rewoo": {"prepare", "plan", "work", "call_tool", "solve"},
    }.get(name)
    assert expected is not None, f"tests/services/test_cli.py: add the nodes of the loop {name!r}"
    nodes = set(re.findall(r"^\t(\w+)\(", out, flags=re.MULTILINE))
    assert nodes == expected | {"__start__", "__end__"}
    edges = re.findall(r"^\t(\w+) -\.?-> (\w+);$", out, flags=re.MULTILINE)
    assert set(edges) <= {(a, b) for a in nodes for b in nodes}
    # A run starts in ``prepare``, or in the first step of a loop that starts its runs
    # itself (ReAct, LATS), and every step can reach the end.
    first = {"react": "generate", "lats": "expand"}.get(name, "prepare")
    assert [b for a, b in edges if a == "__start__"] == [first]
    reaches_end = {"__end__"}
    while added := {a for a, b in edges if b in reaches_end} - reaches_end:
        reaches_end |= added
    assert reaches_end == nodes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "nope", "q"], "unknown loop 'nope'"),
        (["run", "react", "q", "--tools", "hammer"], "unknown toolkit 'hammer'"),
        (["run", "react", "q", "--model", "banana"], "Unknown model spec 'banana'"),
        (["run", "react", "q", "--option", "oops"], "--option expects key=value"),
        (["draw", "nope"], "unknown loop 'nope'"),
    ],
)
def test_user_errors_are_one_line(argv, message, capsys, tmp_path):
    assert (
        cli.main([*argv, *(["--db", str(tmp_path / "x.sqlite")] if argv[0] == "run" else [])]) == 2
    )
    out = capsys.readouterr().out
    assert message in out and "Traceback" not in out and len(out.strip().splitlines()) <= 2


def scripted(monkeypatch, replies):
    model = model_for("native", replies)
    monkeypatch.setattr(commands, "model_from", lambda args: model)
    return model


@pytest.mark.parametrize("name", list(registry.LOOPS))
def test_run_accepts_every_loop(name, monkeypatch, tmp_path, capsys):
    scripted(monkeypatch, ["FINAL ANSWER: 4"] * 40)
    code = cli.main(
        ["run", name, "2+2?", "--tools", "", "--db", str(tmp_path / "x.sqlite"), "--json"]
    )
    assert code == 0
    assert '"status"' in capsys.readouterr().out


def own_loop_file(folder: Path) -> Path:
    """The docs' "Writing your own loop" example as a user's file."""
    from tests.services.test_docs import PAGES, blocks_of

    code = blocks_of(PAGES / "writing-a-loop.md")[0].code
    path = folder / "self_refine.py"
    path.write_text(code)
    return path


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry as it is, restored after the test (a loop ``--use`` adds goes)."""
    forget_after(monkeypatch, "self_refine")


def forget_after(monkeypatch, name: str) -> None:
    """Have the registry, and ``sys.modules``, forget ``name`` when the test ends."""
    for table in (registry.LOOP_SPECS, registry.LOOPS, sys.modules):
        monkeypatch.setitem(table, name, None)
        del table[name]


def test_a_loop_of_ones_own_is_listed_drawn_and_run_with_use(
    fresh_registry, monkeypatch, tmp_path, capsys
):
    path = own_loop_file(tmp_path)
    assert cli.main(["--use", str(path), "list"]) == 0
    listed = capsys.readouterr().out
    assert "self_refine" in listed and "max_rounds=2" in listed
    assert cli.main(["--use", str(path), "draw", "self_refine"]) == 0
    drawn = capsys.readouterr().out
    assert "critique" in drawn and "revise" in drawn
    model = scripted(monkeypatch, ["323", '{"satisfactory": true, "feedback": ""}'])
    db = str(tmp_path / "x.sqlite")
    argv = ["--use", str(path), "run", "self_refine", "17*19?", "--db", db, "--json"]
    assert cli.main([*argv, "--option", "max_rounds=1"]) == 0
    out = capsys.readouterr().out
    assert '"completed"' in out and "323" in out and model.call_count == 2


def test_use_names_a_module_that_cannot_be_imported(capsys, tmp_path):
    assert cli.main(["--use", "no_such_module_here", "list"]) == 2
    assert "--use no_such_module_here: ModuleNotFoundError" in capsys.readouterr().out
    assert cli.main(["--use", str(tmp_path / "missing.py"), "list"]) == 2
    assert "no such file" in capsys.readouterr().out


def test_run_shows_steps_live_and_the_answer(monkeypatch, tmp_path, capsys):
    scripted(
        monkeypatch,
        [act("native", "calculator", {"expression": "6*7"}), final("native", "It is 42.")],
    )
    code = cli.main(
        ["run", "react", "6*7?", "--tools", "calculator", "--db", str(tmp_path / "x.sqlite")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "action" in out and "calculator" in out
    assert "observation" in out and "42" in out
    assert "It is 42." in out and "2 model calls" in out


def test_approve_tools_asks_at_the_terminal(monkeypatch, tmp_path, capsys):
    model = scripted(
        monkeypatch, [act("native", "calculator", {"expression": "6*7"}), final("native", "done")]
    )
    answers = iter(["edit", '{"expression": "6*8"}'])
    monkeypatch.setattr(approval.Prompt, "ask", lambda *a, **k: next(answers))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    db = str(tmp_path / "x.sqlite")
    assert (
        cli.main(["run", "react", "6*7?", "--tools", "calculator", "--approve-tools", "--db", db])
        == 0
    )
    assert "48" in str(model.prompts[1][-1].content)
    assert "approve tool call: calculator" in capsys.readouterr().out


def test_paused_run_without_a_terminal_says_how_to_resume(monkeypatch, tmp_path, capsys):
    scripted(
        monkeypatch, [act("native", "calculator", {"expression": "1+1"}), final("native", "2")]
    )
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    db = str(tmp_path / "x.sqlite")
    argv = [
        "run",
        "react",
        "1+1?",
        "--tools",
        "calculator",
        "--approve-tools",
        "--db",
        db,
        "--thread",
        "t9",
    ]
    assert cli.main(argv) == 0
    assert "--thread t9" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "cap"),
    [
        (["eval", "--loops", "cot", "--limit", "1"], None),
        (["eval", "--loops", "cot", "--max-tokens", "64"], 64),
        (["run", "cot", "2+2?", "--tools", ""], 256),
    ],
)
def test_eval_runs_the_model_with_its_own_cap_and_run_with_256_tokens(
    argv, cap, monkeypatch, tmp_path, capsys
):
    asked: list[object] = []

    def load_model(*args, **kwargs):
        asked.append(kwargs["max_tokens"])
        raise ValueError("no model in this test")

    monkeypatch.setattr(arguments, "load_model", load_model)
    assert cli.main([*argv, "--db", str(tmp_path / "x.sqlite")] if argv[0] == "run" else argv) != 0
    assert asked == [cap]
    assert "error: no model in this test" in capsys.readouterr().out
