"""Every loop runs every kind of middleware hook, under ``invoke`` (the sync variants) and
``ainvoke`` (the async ones): ``before_agent``/``after_agent`` once per run,
``wrap_model_call`` around every model request, ``before_model``/``after_model`` around
the loop's model-calling steps (docs, middleware page: where each hook runs), and
``wrap_tool_call`` around every tool call of the tool-using loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs import registry
from tests.compat.middleware_support import LOOP_SCRIPTS, call, calls, native
from tests.support.scripts import LATS_SMALL

HOOKS = ("before_agent", "before_model", "after_model", "after_agent")


class Kinds(AgentMiddleware):
    """Counts each hook kind it runs, its sync and async variants apart."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def before_agent(self, state: Any, runtime: Any) -> None:
        self.seen.append("before_agent")

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        self.seen.append("abefore_agent")

    def before_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("before_model")

    async def abefore_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("abefore_model")

    def after_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("after_model")

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("aafter_model")

    def after_agent(self, state: Any, runtime: Any) -> None:
        self.seen.append("after_agent")

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        self.seen.append("aafter_agent")

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.seen.append("wrap_model_call")
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self.seen.append("awrap_model_call")
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.seen.append("wrap_tool_call")
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        self.seen.append("awrap_tool_call")
        return await handler(request)

    def count(self, kind: str, how: str) -> int:
        return self.seen.count(kind if how == "invoke" else f"a{kind}")


@tool
def search(query: str) -> str:
    """Search for an answer."""
    return "42"


SCRIPTS: dict[str, list[Any]] = {
    "cot": ["Six times seven.\nFINAL ANSWER: 42"],
    "react": [calls(call("search", {"query": "x"})), "The answer is 42."],
    "tot": ["1. six\n2. seven\n3. both", '{"scores": [7, 3, 1]}', "ANSWER: 42"],
    **{loop: script("search", {"query": "x"}) for loop, script in LOOP_SCRIPTS.items()},
}
# LATS with one candidate a rollout: its before_model/after_model hooks run once per
# request (a step sampling several candidates sends them between one pair of hooks).
OPTIONS: dict[str, dict[str, Any]] = {"tot": {"max_depth": 1}, "lats": LATS_SMALL}
TOOL_LOOPS = set(registry.TOOL_LOOPS)


def test_every_loop_is_covered():
    assert set(SCRIPTS) == set(LOOPS)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("loop", list(LOOPS))
async def test_every_hook_kind_runs_in_every_loop(loop, how):
    model = native(SCRIPTS[loop])
    kinds = Kinds()
    tools = [search] if loop in TOOL_LOOPS else []
    graph = build_loop(loop, model, tools, middleware=[kinds], **OPTIONS.get(loop, {}))
    request = {"messages": [HumanMessage("What is six times seven?")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)

    assert out["status"] == "completed" and "42" in out["answer"]
    requests = model.call_count
    assert requests == out["llm_calls"] > 0
    other = "ainvoke" if how == "invoke" else "invoke"
    assert not any(kinds.count(kind, other) for kind in (*HOOKS, "wrap_model_call"))
    assert kinds.count("before_agent", how) == kinds.count("after_agent", how) == 1
    assert kinds.count("wrap_model_call", how) == requests
    assert kinds.count("before_model", how) == kinds.count("after_model", how) == requests
    tool_calls = sum(m.type == "tool" for m in out["messages"])
    if loop in TOOL_LOOPS:
        # Every loop's tool calls are in its transcript, each with its result.
        assert kinds.count("wrap_tool_call", how) == tool_calls == 1
    else:
        assert kinds.count("wrap_tool_call", how) == 0
