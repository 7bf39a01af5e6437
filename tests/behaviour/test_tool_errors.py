"""A tool's error is truncated like its output, and an error message a tool returns
without a name is reported by the call's tool name.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``).
"""

from __future__ import annotations

import re
from typing import Annotated

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.messages import ToolMessage as _ToolMessage
from langchain_core.tools import InjectedToolCallId
from langchain_core.tools import tool as _tool

from loopgraphs import create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for


def prompt_text(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def tool_messages(out: dict) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


FENCED = re.compile(r"<<tool_output (\w+)>>\n(.*)\n<<end_tool_output \1>>", re.DOTALL)


def fenced_body(text: str) -> str:
    """What is between a tool result's fence markers (the result must be fenced)."""
    found = FENCED.search(text)
    assert found is not None, text
    return found.group(2)


# --- A tool's error is truncated like its output ----------------------------------------

LONG_ERROR = "E" * 3000


def explode(query: str) -> str:
    """A tool that always fails with a very long message."""
    raise ValueError(LONG_ERROR)


@pytest.mark.parametrize("mode", MODES)
def test_a_long_tool_error_is_truncated_to_the_output_limit(mode):
    model = model_for(mode, [act(mode, "explode", {"query": "x"}), final(mode, "gave up")])
    graph = create_react_graph(
        model, [explode], tool_mode=mode, max_tool_output_chars=100, retry_policy=FAST_RETRY
    )
    out = graph.invoke({"messages": [("user", "try it")]})
    (result,) = tool_messages(out)
    assert result.status == "error"
    total = len("Error: explode failed: ValueError: ") + 3000
    assert len(content_text(result.content)) == total  # the thread keeps it whole
    shown = fenced_body(prompt_text(model.prompts[1]))
    body, _, note = shown.partition("\n[... truncated ")
    assert len(body) == 100 and body.startswith("Error: explode failed: ValueError: EEE")
    assert note == f"{total - 100} of {total} characters]"
    # The model reads the cut error, never the whole message.
    seen = prompt_text(model.prompts[1])
    assert "E" * 101 not in seen and "E" * 60 in seen
    assert out["status"] == "completed" and out["answer"] == "gave up"


def test_an_unnamed_error_message_from_a_tool_names_the_tool():
    """A tool returning its own error ToolMessage without a name is reported by the
    call's tool name (not "None")."""

    @_tool
    def grumpy(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> _ToolMessage:
        """Refuses."""
        return _ToolMessage("no", tool_call_id=tool_call_id, status="error")

    model = model_for("native", [calls(tool_call("grumpy", {"key": "k"})), "done"])
    out = create_react_graph(model, [grumpy]).invoke({"messages": [("user", "go")]})
    (result,) = [m for m in out["messages"] if m.type == "tool"]
    assert "Error: grumpy failed: no" in result.content and "None" not in result.content
