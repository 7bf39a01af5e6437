"""Plan-and-Execute with a chat model that has no function calling at all, and under a
middleware limit that ends the run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents.middleware import ModelCallLimitMiddleware

from loopgraphs import build_loop
from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from tests.support.fakes import ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, act, final


class NoToolsModel(ScriptedChatModel):
    """A scripted model whose provider has no function calling."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        raise NotImplementedError("this model has no function calling")


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.mark.parametrize("mode", ["auto", "json", "text"])
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


def test_a_model_call_limit_leaves_the_steps_it_stopped_not_completed() -> None:
    """A middleware limit that ends the run inside a step ends the whole run there: that
    step is not marked completed, no later step runs, and the answer is the result the
    run had."""
    model = ScriptedChatModel(
        replies=[
            calls(tool_call("Plan", {"steps": ["look it up", "add", "answer"]})),
            calls(tool_call("lookup", {"key": "a"})),
            "Step result: 42.",
        ],
        profile={"tool_calling": True, "structured_output": True},
    )
    limit = ModelCallLimitMiddleware(run_limit=3, exit_behavior="end")
    graph = create_plan_execute_graph(model, [lookup], middleware=[limit])
    out = graph.invoke({"messages": [("user", "What is a?")]})

    assert out["status"] == "max_iterations" and out["llm_calls"] == 3
    first, stopped = out["step_results"]  # the limit ended the run in step 2: no step 3
    assert first["status"] == "completed"
    assert stopped["status"] == "max_iterations" and not stopped["result"]
    assert "42" in out["answer"]
    assert not any(m.type == "ai" and m.content.endswith("Result: ") for m in out["messages"])


def test_the_answer_streams_once_in_messages_mode() -> None:
    model = ScriptedChatModel(
        replies=[
            calls(tool_call("Plan", {"steps": ["look it up", "say it"]})),
            calls(tool_call("lookup", {"key": "a"})),
            "Step one: value of a.",
            "Step two: value of a.",
            "The answer is value of a.",
        ],
        profile={"tool_calling": True, "structured_output": True},
    )
    graph = create_plan_execute_graph(model, [lookup])
    request = {"messages": [("user", "What is a?")]}
    texts: dict[str, str] = {}
    for message, _ in graph.stream(request, stream_mode="messages"):
        texts[message.id] = texts.get(message.id, "") + str(message.content)
    carrying = [text for text in texts.values() if "The answer is value of a." in text]
    assert carrying == ["The answer is value of a."]


@pytest.mark.parametrize("loop", ["react", "plan_execute"])
def test_native_mode_on_a_model_without_function_calling_says_how_to_fix_it(loop: str) -> None:
    model = NoToolsModel(replies=[json.dumps({"steps": ["look up a", "say it"]})] * 3)
    model.profile = {"tool_calling": False, "structured_output": False}
    graph = build_loop(loop, model, [lookup], tool_mode="native", retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "What is a?")]})
    assert out["status"] == "error"
    assert "NotImplementedError" in out["error"] and "tool_mode='auto'" in out["error"]
