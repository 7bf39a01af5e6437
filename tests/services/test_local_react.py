"""ReAct against the real embedded llama.cpp server (SmolLM2-135M)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from loopgraphs import create_react_graph
from loopgraphs.cli import DEMO_QUESTIONS
from loopgraphs.graphs.registry import build_loop
from loopgraphs.models import load_model
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.nodes.model_send import RAW_REPLY
from loopgraphs.nodes.parsing.react import parse_json_text
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.toolkits import calculator, get_tools, make_search_tool
from tests.support.requests import RequestEnds

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_react_ends_with_status_and_answer(local_model, mode):
    from langchain_core.messages import AIMessage

    from loopgraphs import prompts
    from loopgraphs.nodes.tool_loop import check_history

    graph = create_react_graph(
        local_model, [calculator, make_search_tool()], tool_mode=mode, max_iterations=3
    )
    requests = RequestEnds()
    out = graph.invoke({"messages": [("user", "What is 12 * 7?")]}, {"callbacks": [requests]})
    # The model's replies vary; the loop's rules do not. It ends with an answer by itself
    # within its 3 turns, or after all 3 with one call asking for the answer; a reply cut
    # at the token cap twice ends it "max_iterations" with the last tool result, if any.
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert isinstance(out["answer"], str)
    forced = [text for text in requests.texts if text == prompts.FORCE_FINAL_ANSWER]
    cut = [text for text in requests.texts if text == prompts.SHORT_ANSWER]
    if out["status"] == "completed":
        assert 1 <= out["llm_calls"] <= 3 and forced == [] and out["answer"].strip()
    elif cut:
        assert out["llm_calls"] <= 4 and len(cut) == 1
    else:
        assert out["llm_calls"] == 4 and len(forced) == 1
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert len(replies) == out["llm_calls"]  # one transcript reply per model call
    assert not replies[-1].tool_calls  # the answer leaves no call open
    assert sum(len(r.tool_calls) for r in replies) <= 3
    check_history(out["messages"])  # every call made has its result
    assert out["tool_mode"] == mode
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0


def test_json_mode_produces_a_parsed_calculator_call(local_model):
    graph = create_react_graph(
        local_model,
        [calculator],
        tool_mode="json",
        tool_choice="required",
        max_iterations=2,
        system_prompt="Always call the calculator tool before answering.",
    )
    out = graph.invoke({"messages": [("user", "Use the calculator to compute 12 * 7.")]})
    first = out["messages"][1]
    # What the model wrote is kept on the message; its content is the action's thought.
    step = parse_json_text(first.additional_kwargs[RAW_REPLY])
    assert step.kind == "action" and step.action == "calculator"
    assert isinstance(step.action_input, dict) and "expression" in step.action_input
    # The parsed action is stored as a tool call, answered by the calculator's ToolMessage.
    (call,) = first.tool_calls
    assert call["name"] == "calculator" and call["args"] == step.action_input
    result = out["messages"][2]
    assert isinstance(result, ToolMessage) and result.tool_call_id == call["id"]
    # The thread keeps the result as the calculator returned it (the fence is applied in
    # what the model is sent, not in what the chat shows).
    assert content_text(result.content) == calculator.invoke(call["args"])


def test_demo_questions_call_their_tools_and_end(local_server, monkeypatch):
    """`loopgraphs demo` on the bundled model: each question calls its tool first and the
    run ends by itself with an answer. (The answers are right on an idle machine, but
    llama.cpp's batching makes temperature 0 not quite deterministic, so they are not
    pinned here.)"""
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    tools = get_tools(["calculator", "search"])
    graph = build_loop("react", load_model("local"), tools, max_iterations=3)
    for question, tool in zip(DEMO_QUESTIONS, ("calculator", "search"), strict=True):
        out = graph.invoke({"messages": [("user", question)]})
        assert out["status"] in ("completed", "max_iterations"), out.get("error")
        assert tool_calls(out)[0]["name"] == tool
        assert out["answer"] and 2 <= out["llm_calls"] <= 4


def tool_calls(out):
    return [call for m in out["messages"] if m.type == "ai" for call in m.tool_calls]
