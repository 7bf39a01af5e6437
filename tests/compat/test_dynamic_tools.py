"""Tools a middleware offers at run time, ported from langchain's ``test_dynamic_tools.py``.

A ``wrap_model_call`` middleware adds a tool to the request that the agent was not built
with, and its ``wrap_tool_call`` runs it (``request.override(tool=...)``). The tool is
offered and run whether or not the agent has tools of its own, in every tool mode of
ReAct and in the loops that run ReAct (Plan-and-Execute's steps, Reflexion's episodes);
``create_agent`` is the reference. Self-Ask and CRITIC take the tools they are built
with (without any they answer, or draft, without tools), so they are not cases here.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

from loopgraphs import create_react_graph
from loopgraphs.nodes.parsing.text import strip_fence
from tests.compat.middleware_support import LOOP_SCRIPTS, factory
from tests.support.scripts import MODES, act, final, model_for

QUESTION = {"messages": [HumanMessage("Use the dynamic tool")]}


@tool
def static_tool(value: str) -> str:
    """A static tool that is always available."""
    return f"Static result: {value}"


@tool
def dynamic_tool(value: str) -> str:
    """A dynamically registered tool."""
    return f"Dynamic result: {value}"


class DynamicToolMiddleware(AgentMiddleware):
    """Offers ``dynamic_tool`` in every model request and runs it when it is called."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(tools=[*request.tools, dynamic_tool]))

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] == "dynamic_tool":
            return handler(request.override(tool=dynamic_tool))
        return handler(request)


class PassThrough(AgentMiddleware):
    """A ``wrap_model_call`` middleware that offers no tool."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def results(out: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [
        (m.name, strip_fence(str(m.content))) for m in out["messages"] if isinstance(m, ToolMessage)
    ]


@pytest.mark.parametrize("static", [[], [static_tool]], ids=["no static tools", "static tools"])
@pytest.mark.parametrize("mode", MODES)
def test_react_runs_a_tool_the_middleware_offers(mode, static):
    model = model_for(mode, [act(mode, "dynamic_tool", {"value": "v"}), final(mode, "done")])
    graph = create_react_graph(model, static, tool_mode=mode, middleware=[DynamicToolMiddleware()])
    out = graph.invoke(QUESTION)
    assert results(out) == [("dynamic_tool", "Dynamic result: v")]
    assert (out["status"], out["answer"]) == ("completed", "done")


@pytest.mark.parametrize("static", [[], [static_tool]], ids=["no static tools", "static tools"])
def test_create_agent_runs_a_tool_the_middleware_offers(static):
    model = model_for("native", [act("native", "dynamic_tool", {"value": "v"}), "done"])
    agent = create_agent(model, static, middleware=[DynamicToolMiddleware()])
    out = agent.invoke(QUESTION)
    assert results(out) == [("dynamic_tool", "Dynamic result: v")]


@pytest.mark.parametrize("kind", ["plan_execute", "reflexion"])
def test_the_loops_that_run_react_run_a_tool_the_middleware_offers(kind):
    model = model_for("native", LOOP_SCRIPTS[kind]("dynamic_tool", {"value": "v"}))
    graph = factory(kind)(model, [], middleware=[DynamicToolMiddleware()])
    out = graph.invoke(QUESTION)
    assert ("dynamic_tool", "Dynamic result: v") in results(out)
    assert out["status"] == "completed", out.get("error")


@pytest.mark.parametrize("mode", ["json", "text"])
def test_without_any_tool_offered_a_plain_reply_is_the_answer(mode):
    """A ``wrap_model_call`` middleware makes the run use its tool mode (it might offer a
    tool); when it offers none, a reply in no tool grammar is plain chat."""
    model = model_for(mode, ["Paris."])
    out = create_react_graph(model, [], tool_mode=mode, middleware=[PassThrough()]).invoke(QUESTION)
    assert (out["status"], out["answer"], model.call_count) == ("completed", "Paris.", 1)
