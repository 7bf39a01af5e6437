"""``tests/support/loop_scripts.py`` has a script for every tool loop of the registry and
every tool mode, and each script does what it says: the loop calls the tool once with the
given arguments, the result reaches the model, and the run ends with the given answer."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from loopgraphs import build_loop
from loopgraphs.graphs import registry
from loopgraphs.nodes.parsing.text import content_text
from tests.support.loop_scripts import HERE, SCRIPTS, NoScript, tool_then_answer
from tests.support.scripts import MODES, model_for

ARGS = {"a": 6, "b": 7}
ANSWER = "Six times seven is 42."


class Calculator:
    """``multiply(a, b)``, which records the arguments of each call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

        @tool
        def multiply(a: int, b: int) -> str:
            """Multiply two whole numbers."""
            self.calls.append({"a": a, "b": b})
            return f"product: {a * b}"

        self.tool = multiply


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", registry.TOOL_LOOPS)
def test_every_tool_loop_has_a_script_that_calls_the_tool_once_then_answers(loop, mode):
    if loop not in SCRIPTS:
        pytest.fail(f"{HERE} has no script for the tool loop {loop!r} (add SCRIPTS[{loop!r}])")
    script = tool_then_answer(loop, mode, "multiply", ARGS, ANSWER)
    calculator = Calculator()
    model = model_for(mode, script)
    out = build_loop(loop, model, [calculator.tool], tool_mode=mode).invoke(
        {"messages": [("user", "What is six times seven?")]}
    )

    assert calculator.calls == [ARGS]
    assert out["status"] == "completed"
    assert out["answer"] == ANSWER
    assert model.call_count == len(script)  # one reply per model call, none left over
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.name == "multiply" and result.status != "error"
    assert "product: 42" in content_text(result.content)
    # The tool's result reached a later model call.
    later = model.prompts[1:]
    assert any("product: 42" in content_text(m.content) for p in later for m in p)


def test_a_loop_without_a_script_is_named_with_this_file():
    with pytest.raises(NoScript, match=r"tests/support/loop_scripts\.py .*'no_such_loop'"):
        tool_then_answer("no_such_loop", "native", "multiply", ARGS, ANSWER)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown tool mode 'xml'"):
        tool_then_answer("react", "xml", "multiply", ARGS, ANSWER)
