"""Every loop refuses a chat history with a tool call that has no result, before any
model call (providers reject such a history; the docs promise a ``ValueError``)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs import registry
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel, tool_call

TOOL_LOOPS = registry.TOOL_LOOPS


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def history(*, answered: bool) -> list:
    call = tool_call("lookup", {"key": "weight"}, id="call_open")
    messages: list = [HumanMessage("How heavy is it?"), AIMessage(content="", tool_calls=[call])]
    if answered:
        messages.append(ToolMessage("value of weight", tool_call_id="call_open", name="lookup"))
    return [*messages, HumanMessage("And in pounds?")]


def graph_for(name: str, model: ScriptedChatModel):
    if name not in TOOL_LOOPS:
        return build_loop(name, model, [])
    return build_loop(name, model, [lookup], tool_mode="text")


def test_every_loop_is_covered():
    assert set(LOOPS) == {"cot", "tot", *TOOL_LOOPS}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_dangling_tool_call_is_refused_before_any_model_call(name):
    model = ScriptedChatModel(replies=["FINAL ANSWER: 5 kg"], repeat_last=True)
    graph = graph_for(name, model)
    with pytest.raises(ValueError, match=r"tool calls without a ToolMessage result: lookup"):
        graph.invoke({"messages": history(answered=False)})
    assert model.call_count == 0


@pytest.mark.parametrize("name", sorted(LOOPS))
async def test_a_dangling_tool_call_is_refused_under_ainvoke(name):
    model = ScriptedChatModel(replies=["FINAL ANSWER: 5 kg"], repeat_last=True)
    graph = graph_for(name, model)
    with pytest.raises(ValueError, match=r"id call_open"):
        await graph.ainvoke({"messages": history(answered=False)})
    assert model.call_count == 0


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_an_answered_tool_call_is_accepted(name):
    model = ScriptedChatModel(replies=["FINAL ANSWER: 5 kg"], repeat_last=True)
    graph = graph_for(name, model)
    out = graph.invoke({"messages": history(answered=True)})
    assert out["status"] != "error", out.get("error")
    assert model.call_count >= 1 and out["llm_calls"] == model.call_count
    # The run went on to the new question.
    assert "And in pounds?" in "\n".join(content_text(m.content) for m in model.prompts[0])
