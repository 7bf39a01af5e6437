"""The run's middleware wrappers composed: which hooks a middleware counts for, the order
of the layers, the commands they return, and the error a run on a path a middleware
lacks gets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from loopgraphs.nodes.middleware import Middlewares, UnsupportedPath, defines, overrides


class SyncOnly(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)

    def wrap_tool_call(self, request, handler):
        return handler(request)


class AsyncOnly(AgentMiddleware):
    async def awrap_model_call(self, request, handler):
        return await handler(request)

    async def awrap_tool_call(self, request, handler):
        return await handler(request)


class OtherSyncOnly(SyncOnly):
    @property
    def name(self) -> str:
        return "OtherSyncOnly"


class Layer(AgentMiddleware):
    """Notes its name around the inner call and returns a command of its own."""

    def __init__(self, label: str, log: list[str], *, retries: int = 0) -> None:
        super().__init__()
        self.label, self.log, self.retries = label, log, retries

    @property
    def name(self) -> str:
        return self.label

    def wrap_model_call(self, request, handler):
        self.log.append(f"{self.label} in")
        for _ in range(self.retries):
            handler(request)
        response = handler(request)
        self.log.append(f"{self.label} out")
        return ExtendedModelResponse(response, Command(update={"seen": [self.label]}))

    async def awrap_model_call(self, request, handler):
        self.log.append(f"{self.label} in")
        for _ in range(self.retries):
            await handler(request)
        response = await handler(request)
        self.log.append(f"{self.label} out")
        return ExtendedModelResponse(response, Command(update={"seen": [self.label]}))

    def wrap_tool_call(self, request, handler):
        self.log.append(f"{self.label} tool")
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        self.log.append(f"{self.label} tool")
        return await handler(request)


class Noting(AgentMiddleware):
    """Leaves a command with each response, the number of the attempt in it."""

    def __init__(self) -> None:
        super().__init__()
        self.attempt = 0

    def wrap_model_call(self, request, handler):
        self.attempt += 1
        return ExtendedModelResponse(handler(request), Command(update={"n": self.attempt}))


class Plain(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return AIMessage("short-circuited")


def test_a_middleware_counts_for_a_hook_it_defines_either_way():
    assert overrides(SyncOnly(), "wrap_model_call") and overrides(AsyncOnly(), "wrap_model_call")
    assert not overrides(AgentMiddleware(), "wrap_model_call")
    assert defines(SyncOnly(), "wrap_model_call") and not defines(SyncOnly(), "awrap_model_call")
    assert defines(AsyncOnly(), "awrap_model_call") and not defines(AsyncOnly(), "wrap_model_call")


def test_middleware_without_wrappers_has_no_chain():
    empty = Middlewares((AgentMiddleware(),))
    assert empty.model_chain is None
    assert empty.tool_wrapper is None and empty.async_tool_wrapper is None


def handler(request: Any) -> ModelResponse:
    return ModelResponse(result=[AIMessage("model")])


async def async_handler(request: Any) -> ModelResponse:
    return handler(request)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_first_middleware_is_the_outermost_layer_and_commands_come_inner_first(path):
    log: list[str] = []
    chain = Middlewares((Layer("outer", log), Layer("inner", log))).model_chain
    assert chain is not None
    if path == "sync":
        response, commands = chain.sync(None, handler)
    else:
        response, commands = asyncio.run(chain.run_async(None, async_handler))
    assert response.result[0].content == "model"
    assert log == ["outer in", "inner in", "inner out", "outer out"]
    assert [c.update for c in commands] == [{"seen": ["inner"]}, {"seen": ["outer"]}]


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_retried_inner_call_keeps_only_its_last_attempts_commands(path):
    log: list[str] = []
    chain = Middlewares((Layer("outer", log, retries=2), Layer("inner", log))).model_chain
    assert chain is not None
    if path == "sync":
        _, commands = chain.sync(None, handler)
    else:
        _, commands = asyncio.run(chain.run_async(None, async_handler))
    assert log.count("inner in") == 3
    assert [c.update for c in commands] == [{"seen": ["inner"]}, {"seen": ["outer"]}]


def test_each_attempt_through_a_layer_replaces_the_commands_below_it():
    noting = Noting()
    log: list[str] = []
    chain = Middlewares((Layer("outer", log, retries=1), noting)).model_chain
    assert chain is not None
    _, commands = chain.sync(None, handler)
    assert [c.update for c in commands] == [{"n": 2}, {"seen": ["outer"]}]


def test_a_layer_may_answer_with_a_message_of_its_own():
    chain = Middlewares((Plain(),)).model_chain
    assert chain is not None
    response, commands = chain.sync(None, handler)
    assert response.result[0].content == "short-circuited" and commands == []


@pytest.mark.parametrize("path", ["sync", "async"])
def test_tool_wrappers_run_the_first_outermost(path):
    log: list[str] = []
    wrappers = Middlewares((Layer("outer", log), Layer("inner", log)))
    result = ToolMessage("done", tool_call_id="c1")

    def execute(request: Any) -> ToolMessage:
        log.append("tool")
        return result

    async def aexecute(request: Any) -> ToolMessage:
        return execute(request)

    if path == "sync":
        assert wrappers.tool_wrapper is not None
        assert wrappers.tool_wrapper(None, execute) is result
    else:
        assert wrappers.async_tool_wrapper is not None
        assert asyncio.run(wrappers.async_tool_wrapper(None, aexecute)) is result
    assert log == ["outer tool", "inner tool", "tool"]


def test_a_sync_only_wrapper_refuses_an_async_run_and_says_how_to_fix_it():
    both = Middlewares((SyncOnly(), OtherSyncOnly()))
    assert both.model_chain is not None and both.async_tool_wrapper is not None
    with pytest.raises(UnsupportedPath) as model:
        asyncio.run(both.model_chain.run_async(None, async_handler))
    assert str(model.value) == (
        "middleware SyncOnly, OtherSyncOnly defines only wrap_model_call, and this run is "
        "async: implement awrap_model_call too, or run the graph with invoke()"
    )
    with pytest.raises(UnsupportedPath) as tools:
        asyncio.run(both.async_tool_wrapper(None, None))
    assert "defines only wrap_tool_call" in str(tools.value)
    assert "implement awrap_tool_call too" in str(tools.value)
    # The sync path works.
    assert both.model_chain.sync(None, handler)[0].result[0].content == "model"


def test_an_async_only_wrapper_refuses_a_sync_run_and_says_how_to_fix_it():
    only = Middlewares((AsyncOnly(),))
    assert only.model_chain is not None and only.tool_wrapper is not None
    with pytest.raises(UnsupportedPath) as model:
        only.model_chain.sync(None, handler)
    assert str(model.value) == (
        "middleware AsyncOnly defines only awrap_model_call, and this run is sync: "
        "implement wrap_model_call too, or run the graph with ainvoke()"
    )
    with pytest.raises(UnsupportedPath, match="defines only awrap_tool_call"):
        only.tool_wrapper(None, None)
    response, _ = asyncio.run(only.model_chain.run_async(None, async_handler))
    assert response.result[0].content == "model"


def test_hooks_tools_and_state_schemas_are_listed_in_order():
    class Hooked(AgentMiddleware):
        tools = ("a tool",)

        def before_model(self, state, runtime):
            return None

    hooked, plain = Hooked(), AgentMiddleware()
    found = Middlewares((plain, hooked))
    assert found.with_hook("before_model") == [hooked]
    assert found.with_hook("after_model") == []
    assert found.tools == ["a tool"]
    assert found.state_schemas == [plain.state_schema, hooked.state_schema]
