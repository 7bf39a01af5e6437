"""Plan-and-Execute with a chat model that has no function calling at all."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from tests.fakes import ScriptedChatModel
from tests.scripts import FAST_RETRY, act, final


class NoToolsModel(ScriptedChatModel):
    """A scripted model whose provider has no function calling."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        raise NotImplementedError("this model has no function calling")


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.mark.parametrize("mode", ["json", "text"])
def test_plan_execute_without_function_calling_plans_in_text(mode: str) -> None:
    """The text level of the structured plan call binds no tool, so a model without
    function calling plans, runs its step in text and answers."""
    model = NoToolsModel(
        replies=[
            json.dumps({"steps": ["look up a"]}),
            act("text", "lookup", {"key": "a"}),
            final("text", "a is value of a"),
            "The answer: value of a.",
        ],
        profile={"tool_calling": False, "structured_output": False},
    )
    graph = create_plan_execute_graph(model, [lookup], tool_mode=mode, retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "What is a?")]})
    assert out["status"] == "completed"
    assert out["answer"] == "The answer: value of a."
    assert out["step_results"][0]["status"] == "completed"
    assert any(m.type == "tool" and "value of a" in str(m.content) for m in out["messages"])
