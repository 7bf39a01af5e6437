"""A tool reads the run's config on every path a tool step may take under ``invoke``:
synchronous tools on the thread's event loop, an async-only tool on a loop of its own,
and any tool behind a ``wrap_tool_call`` middleware on ``ToolNode``'s threads."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import wrap_tool_call
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.config import get_config

from loopgraphs import build_loop
from tests.compat.middleware_support import call, calls, native


@tool
def whoami(config: RunnableConfig) -> str:
    """Say who asks."""
    return f"user={config['configurable'].get('user')}"


@tool
async def whoami_async(config: RunnableConfig) -> str:
    """Say who asks, asynchronously."""
    return f"user={config['configurable'].get('user')}"


@tool
async def whoami_from_context() -> str:
    """Say who asks, reading the run's config from the context."""
    return f"user={get_config()['configurable'].get('user')}"


@wrap_tool_call
def passing(request, handler):
    return handler(request)


@pytest.mark.parametrize(
    ("tool_used", "middleware"),
    [(whoami, []), (whoami_async, []), (whoami_from_context, []), (whoami, [passing])],
    ids=["thread loop", "async-only", "async-only from context", "tool wrapper"],
)
def test_a_tool_reads_the_runs_config_on_every_path(tool_used, middleware):
    model = native([calls(call(tool_used.name, {})), "done"])
    graph = build_loop("react", model, [tool_used], middleware=middleware)
    config = {"configurable": {"user": "ann", "thread_id": "t"}}
    out = graph.invoke({"messages": [HumanMessage("Who am I?")]}, config)
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "user=ann" in str(result.content)
