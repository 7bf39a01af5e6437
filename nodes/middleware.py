"""LangChain v1 middleware (``AgentMiddleware``) in every loop, with create_agent's rules.

``check_middleware`` validates the ``middleware=`` option. ``Middlewares`` sorts a list by
what each item overrides and composes the wrappers:

- ``wrap_model_call`` / ``awrap_model_call``: every model request of the loop goes
  through them (see ``loopgraphs.nodes.model_call``); the first middleware is the
  outermost layer. A wrapper may return a ``ModelResponse``, an ``AIMessage`` or an
  ``ExtendedModelResponse`` whose ``Command`` is applied to the state after the step.
- ``wrap_tool_call`` / ``awrap_tool_call``: every tool call runs through them inside
  loopgraphs' tool guard (the guard's checks come first; truncation, fencing and errors
  as observations apply to what the chain returns).
- ``before_agent`` / ``before_model`` / ``after_model`` / ``after_agent``: graph nodes
  (see ``loopgraphs.nodes.hooks``).

Under ``invoke`` the sync variants run, under ``ainvoke`` the async ones (a middleware
that defines only one of them raises LangChain's own error on the other path, as in
create_agent).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeAlias

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelResponse,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from loopgraphs.nodes.model_call import AsyncModelHandler, ModelChain, ModelHandler
from loopgraphs.nodes.model_send import LoopRequest

# A caller's middleware: its state and context schemas are the caller's, so they stay open.
Middleware: TypeAlias = AgentMiddleware[Any, Any]
ToolResult = ToolMessage | Command[Any]
ToolHandler = Callable[[ToolCallRequest], ToolResult]
AsyncToolHandler = Callable[[ToolCallRequest], Awaitable[ToolResult]]
ToolWrapper = Callable[[ToolCallRequest, ToolHandler], ToolResult]
AsyncToolWrapper = Callable[[ToolCallRequest, AsyncToolHandler], Awaitable[ToolResult]]


def overrides(middleware: Middleware, name: str) -> bool:
    """Whether a middleware defines ``name`` or its async twin itself (create_agent's
    test: a method that differs from ``AgentMiddleware``'s)."""
    cls = type(middleware)
    return any(
        getattr(cls, method, None) is not getattr(AgentMiddleware, method, None)
        for method in (name, f"a{name}")
    )


def defines(middleware: Middleware, method: str) -> bool:
    """Whether a middleware's class defines ``method`` itself (not ``AgentMiddleware``'s)."""
    return getattr(type(middleware), method, None) is not getattr(AgentMiddleware, method, None)


class UnsupportedPath(NotImplementedError):
    """A middleware lacks the sync (or async) variant of a wrapper the run needs."""


def _refusal(missing: Sequence[Middleware], method: str, how: str) -> Callable[..., NoReturn]:
    names = ", ".join(m.name for m in missing)
    other = method[1:] if method.startswith("a") else f"a{method}"
    message = (
        f"middleware {names} defines only {other}, and this run is {how}: implement "
        f"{method} too, or run the graph with {'ainvoke()' if how == 'sync' else 'invoke()'}"
    )

    def refuse(*args: object) -> NoReturn:
        raise UnsupportedPath(message)

    return refuse


def check_middleware(value: object, loop: str) -> tuple[Middleware, ...]:
    """Validate the ``middleware=`` option of a factory.

    Raises:
        TypeError: ``value`` is not a list of ``AgentMiddleware`` instances.
        ValueError: two middleware share a name.
    """
    if value is None:
        return ()
    if isinstance(value, (str, bytes, AgentMiddleware)) or not isinstance(value, Sequence):
        raise TypeError(
            f"middleware for {loop} must be a list of AgentMiddleware instances; "
            f"got {type(value).__name__}"
        )
    for position, item in enumerate(value):
        if not isinstance(item, AgentMiddleware):
            hint = (
                " (a class: pass an instance, e.g. SummarizationMiddleware(...))"
                if isinstance(item, type)
                else " (decorate a function with @before_model, @wrap_model_call, ... from "
                "langchain.agents.middleware to make one)"
            )
            raise TypeError(
                f"middleware[{position}] for {loop} must be an AgentMiddleware instance; "
                f"got {type(item).__name__}{hint}"
            )
    names = [item.name for item in value]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"middleware for {loop} has more than one instance named {', '.join(repeated)}; "
            "each middleware must have its own name (override the `name` property)"
        )
    return tuple(value)


@dataclass(frozen=True)
class Middlewares:
    """A loop's middleware, sorted by what each overrides, with its wrappers composed."""

    items: tuple[Middleware, ...] = ()
    model_chain: ModelChain | None = field(init=False)
    tool_wrapper: ToolWrapper | None = field(init=False)
    async_tool_wrapper: AsyncToolWrapper | None = field(init=False)

    def __post_init__(self) -> None:
        wrapping = [m for m in self.items if overrides(m, "wrap_model_call")]
        tool_wrapping = [m for m in self.items if overrides(m, "wrap_tool_call")]
        chain = _model_chain(wrapping) if wrapping else None
        sync_lacking = [m for m in wrapping if not defines(m, "wrap_model_call")]
        async_lacking = [m for m in wrapping if not defines(m, "awrap_model_call")]
        if chain is not None and (sync_lacking or async_lacking):
            chain = ModelChain(
                _refusal(sync_lacking, "wrap_model_call", "sync") if sync_lacking else chain.sync,
                _refusal(async_lacking, "awrap_model_call", "async")
                if async_lacking
                else chain.run_async,
            )
        object.__setattr__(self, "model_chain", chain)
        sync_missing = [m for m in tool_wrapping if not defines(m, "wrap_tool_call")]
        async_missing = [m for m in tool_wrapping if not defines(m, "awrap_tool_call")]
        sync_tools: ToolWrapper | None = None
        async_tools: AsyncToolWrapper | None = None
        if tool_wrapping:
            sync_tools = (
                _refusal(sync_missing, "wrap_tool_call", "sync")
                if sync_missing
                else _tool_chain([m.wrap_tool_call for m in tool_wrapping])
            )
            async_tools = (
                _refusal(async_missing, "awrap_tool_call", "async")
                if async_missing
                else _async_tool_chain([m.awrap_tool_call for m in tool_wrapping])
            )
        object.__setattr__(self, "tool_wrapper", sync_tools)
        object.__setattr__(self, "async_tool_wrapper", async_tools)

    def with_hook(self, hook: str) -> list[Middleware]:
        """The middleware that define ``hook`` (``before_model``, ...), in list order."""
        return [m for m in self.items if overrides(m, hook)]

    @property
    def tools(self) -> list[BaseTool]:
        """The tools the middleware register; they join the loop's tools."""
        return [tool for m in self.items for tool in getattr(m, "tools", None) or ()]

    @property
    def state_schemas(self) -> list[type[Any]]:
        """The state schemas of the middleware, in list order."""
        return [m.state_schema for m in self.items]


def _response(
    result: ModelResponse | AIMessage | ExtendedModelResponse,
) -> tuple[ModelResponse, Command[object] | None]:
    """A wrapper's result as a response and the command it carries, if any."""
    if isinstance(result, ExtendedModelResponse):
        return result.model_response, result.command
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result]), None
    return result, None


def _model_chain(wrapping: Sequence[Middleware]) -> ModelChain:
    """Compose ``wrap_model_call`` (and ``awrap_model_call``) of ``wrapping``, the first
    outermost. Commands are collected inner first; a retried inner call's commands are
    replaced by those of its last attempt."""

    def sync(
        request: LoopRequest, handler: ModelHandler
    ) -> tuple[ModelResponse, list[Command[object]]]:
        commands: list[Command[object]] = []

        def layer(index: int, request: LoopRequest) -> ModelResponse:
            if index == len(wrapping):
                return handler(request)
            mark = len(commands)

            def inner(request: LoopRequest) -> ModelResponse:
                del commands[mark:]
                return layer(index + 1, request)

            response, command = _response(wrapping[index].wrap_model_call(request, inner))
            if command is not None:
                commands.append(command)
            return response

        return layer(0, request), commands

    async def run_async(
        request: LoopRequest, handler: AsyncModelHandler
    ) -> tuple[ModelResponse, list[Command[object]]]:
        commands: list[Command[object]] = []

        async def layer(index: int, request: LoopRequest) -> ModelResponse:
            if index == len(wrapping):
                return await handler(request)
            mark = len(commands)

            async def inner(request: LoopRequest) -> ModelResponse:
                del commands[mark:]
                return await layer(index + 1, request)

            result = await wrapping[index].awrap_model_call(request, inner)
            response, command = _response(result)
            if command is not None:
                commands.append(command)
            return response

        return await layer(0, request), commands

    return ModelChain(sync, run_async)


def _tool_chain(wrappers: Sequence[ToolWrapper]) -> ToolWrapper:
    """Compose tool wrappers, the first outermost."""

    def chained(request: ToolCallRequest, execute: ToolHandler) -> ToolResult:
        def layer(index: int, request: ToolCallRequest) -> ToolResult:
            if index == len(wrappers):
                return execute(request)
            return wrappers[index](request, lambda inner: layer(index + 1, inner))

        return layer(0, request)

    return chained


def _async_tool_chain(wrappers: Sequence[AsyncToolWrapper]) -> AsyncToolWrapper:
    """Compose async tool wrappers, the first outermost."""

    async def chained(request: ToolCallRequest, execute: AsyncToolHandler) -> ToolResult:
        async def layer(index: int, request: ToolCallRequest) -> ToolResult:
            if index == len(wrappers):
                return await execute(request)

            async def inner(request: ToolCallRequest) -> ToolResult:
                return await layer(index + 1, request)

            return await wrappers[index](request, inner)

        return await layer(0, request)

    return chained
