"""The shared tool step: what reaches it and what it leaves in the run's transcript."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain.agents.middleware import AgentMiddleware, wrap_tool_call
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, ToolException, tool
from langgraph.prebuilt import InjectedState
from langgraph.types import Command

from loopgraphs import create_react_graph, strip_fence
from tests.support.scripts import act, final, model_for


@tool
def lookup(key: str) -> str:
    """Looks a key up."""
    return f"value of {key}"


@tool
def dynamic_tool(key: str) -> str:
    """A tool a middleware serves."""
    return f"dynamic {key}"


@wrap_tool_call
def serve_dynamic(request: Any, handler: Any) -> Any:
    if request.tool_call["name"] == "dynamic_tool":
        return handler(request.override(tool=dynamic_tool))
    return handler(request)


def _results(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_wrap_tool_call_serves_a_tool_the_loop_does_not_know():
    model = model_for(
        "native", [act("native", "dynamic_tool", {"key": "k"}), final("native", "ok")]
    )
    graph = create_react_graph(model, [lookup], tool_mode="native", middleware=[serve_dynamic])
    out = graph.invoke({"messages": [("user", "q")]})
    (result,) = _results(out)
    assert result.status != "error"
    assert "dynamic k" in str(result.content)


def test_a_name_no_wrapper_serves_is_still_an_error_observation():
    model = model_for("native", [act("native", "nowhere", {"key": "k"}), final("native", "ok")])
    graph = create_react_graph(model, [lookup], tool_mode="native", middleware=[serve_dynamic])
    out = graph.invoke({"messages": [("user", "q")]})
    (result,) = _results(out)
    assert result.status == "error"
    assert "unknown tool 'nowhere'" in str(result.content)
    assert out["status"] == "completed"


@wrap_tool_call
async def aserve_dynamic(request: Any, handler: Any) -> Any:
    if request.tool_call["name"] == "dynamic_tool":
        return await handler(request.override(tool=dynamic_tool))
    return await handler(request)


def test_a_wrapper_serves_an_unknown_name_under_ainvoke_too():
    model = model_for(
        "native", [act("native", "dynamic_tool", {"key": "k"}), final("native", "ok")]
    )
    graph = create_react_graph(model, [lookup], tool_mode="native", middleware=[aserve_dynamic])
    out = asyncio.run(graph.ainvoke({"messages": [("user", "q")]}))
    (result,) = _results(out)
    assert "dynamic k" in str(result.content)


@tool
def hand_back(
    note: str,
    state: Annotated[dict, InjectedState],
    call_id: Annotated[str, InjectedToolCallId],
) -> Command:
    """Sends the whole history back with its own result, as a swarm handoff does."""
    reply = ToolMessage(content=f"noted {note}", name="hand_back", tool_call_id=call_id)
    return Command(update={"messages": [*state["messages"], reply]})


def test_a_command_sending_the_history_back_leaves_earlier_results_as_they_were():
    model = model_for(
        "native",
        [
            act("native", "lookup", {"key": "a"}),
            act("native", "hand_back", {"note": "n"}),
            final("native", "ok"),
        ],
    )
    graph = create_react_graph(model, [lookup, hand_back], tool_mode="native")
    out = graph.invoke({"messages": [("user", "q")]})
    first, second = _results(out)
    # The thread keeps each result as returned; the model reads each fenced once.
    assert str(first.content) == "value of a"
    assert "<<tool_output" not in str(second.content) and "noted n" in str(second.content)
    read = [str(m.content) for m in model.prompts[-1] if isinstance(m, ToolMessage)]
    assert [text.count("<<tool_output") for text in read] == [1, 1]


class DynamicTools(AgentMiddleware):
    """LangChain's dynamic-tool pattern: the model is offered a tool the loop was not
    built with, and the same middleware runs it."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(tools=[*request.tools, dynamic_tool]))

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] == "dynamic_tool":
            return handler(request.override(tool=dynamic_tool))
        return handler(request)


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_a_tool_added_by_middleware_is_offered_and_runs_in_every_mode(mode):
    model = model_for(mode, [act(mode, "dynamic_tool", {"key": "k"}), final(mode, "dynamic k")])
    graph = create_react_graph(model, [lookup], tool_mode=mode, middleware=[DynamicTools()])
    out = graph.invoke({"messages": [("user", "q")]})

    offered = model.tool_sets[0] if mode == "native" else str(model.prompts[0])
    assert "dynamic_tool" in offered
    (result,) = _results(out)
    assert result.status != "error" and "dynamic k" in str(result.content)
    assert out["status"] == "completed"


def _refuse(key: str) -> str:
    raise ToolException(f"order {key} cannot be refunded")


@pytest.mark.parametrize(
    ("handler", "shown"),
    [
        ("The refund desk is closed.", "The refund desk is closed."),
        (lambda exc: f"Refused: {exc}", "Refused: order k cannot be refunded"),
        (True, "order k cannot be refunded"),
    ],
)
def test_a_tools_own_error_handler_reaches_the_model_as_written(handler, shown):
    refund = StructuredTool.from_function(
        _refuse, name="refund", description="Refund an order.", handle_tool_error=handler
    )
    model = model_for("native", [act("native", "refund", {"key": "k"}), final("native", "ok")])
    out = create_react_graph(model, [refund], tool_mode="native").invoke(
        {"messages": [("user", "q")]}
    )
    (result,) = _results(out)
    assert result.status == "error"
    assert strip_fence(str(result.content)).strip() == shown
    assert shown in str(model.prompts[1])
