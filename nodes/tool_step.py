"""Running tool calls through LangGraph's ``ToolNode`` inside loopgraphs' guard.

``ToolStep`` makes the ``call_tool`` node (one ``ToolNode`` per set of tools a run may
have), the one tool step of every loop. A loop sends each pending call of its last
assistant message to the node on its own (``dispatch``), so that an interrupt in one call
leaves the finished ones done. Under ``invoke`` a step of synchronous tools runs
``ToolNode``'s async path on the thread's own event loop (``sync_step_loop``)."""

from __future__ import annotations

import asyncio
import contextvars
import selectors
import threading
import uuid
import weakref
from collections.abc import Awaitable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send

from loopgraphs.internals import runs_in_thread_when_awaited, untraced_callable
from loopgraphs.nodes.parsing.text import content_text, strip_fence
from loopgraphs.nodes.run_context import load_context
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_guard import (
    ToolGuard,
    make_tool_node,
    tool_threads,
)
from loopgraphs.process_hooks import after_fork
from loopgraphs.state import LoopRuntime
from loopgraphs.toolkits.registry import ToolRegistry


class ToolStep:
    """Runs tool calls through a ``ToolNode`` for the run's tools, guarded by ``ToolGuard``.

    ``graph_node()`` is the ``call_tool`` node every tool-using loop runs its calls in
    (Plan-and-Execute's and Reflexion's in their inner ReAct runs).
    """

    def __init__(self, settings: LoopSettings) -> None:
        self.settings = settings
        self._nodes: dict[tuple[int, ...], ToolNode] = {}

    def guard_for(self, run: LoopSettings) -> ToolGuard:
        """The checks and limits around each of a run's tool calls."""
        return ToolGuard(
            registry=run.tools,
            timeout=run.tool_timeout,
            max_output_chars=run.max_tool_output_chars,
            loop_break=run.loop_break,
            max_tool_calls=run.max_tool_calls,
            handle_errors=run.handle_tool_errors,
            tool_wrapper=run.middleware.tool_wrapper,
            async_tool_wrapper=run.middleware.async_tool_wrapper,
        )

    def node_for(self, run: LoopSettings) -> ToolNode:
        """The ``ToolNode`` for a run's tools (built once per set of tools)."""
        key = tuple(map(id, run.tools))
        if key not in self._nodes:
            self._nodes[key] = make_tool_node(self.guard_for(run))
        return self._nodes[key]

    def graph_node(self, name: str = "call_tool") -> Runnable[Any, Any]:
        """The node running tool calls: a step of the reply's pending calls (the state) or
        one call sent to it on its own (``Send(name, [call])``, as ReAct does, so that an
        interrupt in one call leaves the finished ones done). It runs them through the
        ``ToolNode`` for the run's tools (``invoke_tools``), ends the run after a
        successful ``return_direct`` tool, and notes a human message a tool added."""

        def call_tool(input: object, config: RunnableConfig, runtime: LoopRuntime) -> object:
            check_input(input)
            run = self.settings.for_run(runtime)
            output = invoke_tools(self.node_for(run), run, input, config)
            return _noted_human(_return_direct(run, output))

        async def acall_tool(input: object, config: RunnableConfig, runtime: LoopRuntime) -> object:
            check_input(input)
            await load_context(runtime)
            run = self.settings.for_run(runtime)
            output = await self.node_for(run).ainvoke(input, config)
            return _noted_human(_return_direct(run, output))

        return untraced_callable(call_tool, acall_tool, name=name)  # pragma: no mutate


def check_input(input: object) -> None:
    """Refuse a tool step's input that holds no calls to run and no messages to find them
    in: the step is in a graph whose state has no ``messages``.

    Raises:
        ValueError: naming what the state needs.
    """
    if isinstance(input, Mapping) and "messages" not in input:
        raise ValueError(
            "call_tool runs the tool calls of the state's last message, but this graph's "
            f"state has no 'messages' (its keys: {', '.join(sorted(input)) or 'none'}): "
            "build the graph's state on loopgraphs.nodes.LoopState, or send the step its "
            "calls (Send('call_tool', [call]))"
        )


def _async_only(tool: BaseTool | None) -> bool:
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def calls_in(input: object) -> list[ToolCall]:
    """The tool calls a tool step runs: those sent to it, or the last reply's."""
    if isinstance(input, list):
        return [call for call in input if isinstance(call, dict)]  # type: ignore[misc]
    messages = input.get("messages") or [] if isinstance(input, Mapping) else []
    last = messages[-1] if messages else None
    return list(last.tool_calls) if isinstance(last, AIMessage) else []


def pending_calls(messages: Sequence[AnyMessage]) -> list[ToolCall]:
    """The calls of the last assistant message that have no result yet (a middleware or
    a reviewer may have answered some of them already)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
            return [call for call in message.tool_calls if call["id"] not in answered]
    return []


def dispatch(calls: Sequence[ToolCall], node: str = "call_tool") -> list[Send]:
    """One ``Send`` per call: each runs as its own task, so a call that finished before
    another one's interrupt is not run again when the run resumes."""
    return [Send(node, [{**call, "type": "tool_call"}]) for call in calls]


def _calls_async_only(run: LoopSettings, input: object) -> bool:
    return any(_async_only(run.tools.get(call["name"])) for call in calls_in(input))


class _StepLoop:
    """A thread's event loop for tool steps, kept in thread-local storage. The loop is
    closed (which shuts its pool of tool threads down) when its thread ends and the
    storage goes, or at interpreter exit for threads still running then, so that no loop
    is left to the garbage collector at shutdown, when closing it fails on sockets that
    are gone already."""

    __slots__ = ("__weakref__", "loop")

    def __init__(self) -> None:
        after_fork(_forget_thread_loops)
        self.loop = _new_loop()
        weakref.finalize(self, _close_loop, self.loop)


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a tool-step loop unless it is closed already or running (in a forked child:
    a loop another thread of the parent was running, which the child cannot close)."""
    if not loop.is_closed() and not loop.is_running():
        loop.close()


_thread_loops = threading.local()


def _forget_thread_loops() -> None:
    """In a forked child: the parent's event loops (and their threads) are not its own;
    the child's copies are closed as the old storage goes."""
    global _thread_loops
    _thread_loops = threading.local()


def _sync_function(tool: BaseTool | None) -> bool:
    """Whether a tool runs a synchronous function also when awaited (LangChain then runs it
    in a worker thread): it has no async implementation of its own."""
    if tool is None:  # an unknown tool: the guard answers without running anything
        return True
    return runs_in_thread_when_awaited(tool)


@lru_cache(maxsize=64)
def _all_sync(registry: ToolRegistry) -> bool:
    """Whether every tool of a tool set is a synchronous function (then so is any call's:
    a call of an unknown tool runs nothing). A registry does not change."""
    return all(_sync_function(tool) for tool in registry)


def sync_step_loop(run: LoopSettings, state: object) -> asyncio.AbstractEventLoop | None:
    """This thread's event loop for a tool step under ``invoke`` whose tools are all
    synchronous functions, or None (a tool of the step has an async implementation, which
    may be bound to another event loop; or an event loop already runs in this thread, as
    in a notebook).

    Run there, the step takes ``ToolNode``'s async path, as under ``ainvoke``: each sync
    tool runs in a worker thread and the guard's timeout is asyncio's. ``ToolNode``'s sync
    path starts a thread pool per step, and a timeout would need one more thread per call.
    With ``wrap_tool_call`` middleware the step keeps the sync path, where the middleware's
    sync wrappers run, as create_agent runs them under ``invoke``.
    """
    if run.middleware.tool_wrapper is not None:
        return None
    if not _all_sync(run.tools) and not all(
        _sync_function(run.tools.get(call["name"])) for call in calls_in(state)
    ):
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        held: _StepLoop | None = getattr(_thread_loops, "held", None)
        if held is None or held.loop.is_closed():
            held = _thread_loops.held = _StepLoop()
        return held.loop
    return None


def _new_loop() -> asyncio.AbstractEventLoop:
    """An event loop for tool steps, with a pool of tool threads of its own (closing the
    loop shuts its pool down).

    Its watch list lives in this process (``poll``, not ``epoll``): an epoll set is shared
    with forked children, and a child dropping its copy of the loop would take the
    parent's wake-up socket out of it, so the parent's loop would no longer hear its
    worker threads."""
    if hasattr(selectors, "PollSelector"):
        loop: asyncio.AbstractEventLoop = asyncio.SelectorEventLoop(selectors.PollSelector())
    else:
        loop = asyncio.new_event_loop()
    loop.set_default_executor(tool_threads())
    return loop


ResultT = TypeVar("ResultT")


def run_step(loop: asyncio.AbstractEventLoop, step: Awaitable[ResultT]) -> ResultT:
    """Run a tool step on this thread's event loop (see ``sync_step_loop``). When it stops
    early (a tool's ``interrupt()``), the step's other calls are still run to their end
    before it returns, as with ``ToolNode``'s threads, so that nothing of the step is left
    to finish later, in another step's time."""
    try:
        return loop.run_until_complete(step)
    except Exception:
        if left := asyncio.all_tasks(loop):
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        raise


def invoke_tools(
    node: ToolNode, run: LoopSettings, state: object, config: RunnableConfig
) -> object:
    """Run a tool node under ``invoke``: a step of synchronous tools on this thread's event
    loop (see ``sync_step_loop``); calls of async-only tools on an event loop of their own
    in a worker thread (with the caller's context, so interrupts and callbacks still reach
    the graph); any other step on ``ToolNode``'s threads."""
    loop = sync_step_loop(run, state)
    if loop is not None:
        return run_step(loop, node.ainvoke(state, config))
    if not _calls_async_only(run, state):
        return node.invoke(state, config)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, node.ainvoke(state, config)).result()


@lru_cache(maxsize=64)
def _direct_tools(registry: ToolRegistry) -> frozenset[str]:
    """The names of a tool set's ``return_direct`` tools (a registry does not change)."""
    return frozenset(tool.name for tool in registry if tool.return_direct)


def _return_direct(run: LoopSettings, output: object) -> object:
    direct = _direct_tools(run.tools)
    if not direct:
        return output
    updates = output if isinstance(output, list) else [output]
    for update in updates:
        messages = update.get("messages", []) if isinstance(update, dict) else []
        for message in messages:
            if getattr(message, "name", None) in direct and message.status != "error":
                answer = strip_fence(content_text(message.content)).strip()
                finish = {"scratch": {"tool_ended": True}, "answer": answer}
                if isinstance(output, dict):
                    return {**output, **finish}
                return [*updates, Command(update=finish)]
    return output


def _noted_human(output: object) -> object:
    """A tool step's output, noting a human message that a tool added (in a ``Command``)
    as taken in by the run (``scratch.seen``), so that the next step continues the run
    instead of taking the message for new input (see ``loopgraphs.state.starts_run``)."""
    updates = output if isinstance(output, list) else [output]
    seen = None
    for update in updates:
        values = update.update if isinstance(update, Command) else update
        for message in values.get("messages") or [] if isinstance(values, dict) else []:
            if isinstance(message, HumanMessage):
                # LangGraph gives a message without an id one in place when it stores it;
                # giving it now lets the run know which one it is.
                message.id = message.id or str(uuid.uuid4())
                seen = message.id
    if seen is None:
        return output
    note = {"scratch": {"seen": seen}}
    return {**output, **note} if isinstance(output, dict) else [*updates, Command(update=note)]


def call_tool(settings: LoopSettings, name: str = "call_tool") -> Runnable[Any, Any]:
    """The kit's tool step as a LangGraph node: the calls sent to it (``Send(name,
    [call])``, see ``dispatch``) or the last reply's pending calls run through
    LangGraph's ``ToolNode`` for the run's tools, inside the guard (approvals, limits,
    loop-break, timeouts, fencing of what the model reads) and the run's
    ``wrap_tool_call`` middleware; a tool's ``Command`` (``goto``, ``Command.PARENT``),
    interrupts, injected state, store and runtime, and its stream writer work as in any
    LangGraph graph.

    Args:
        settings: The loop's settings (each run applies its context to them).
        name: The node's name.
    """
    return ToolStep(settings).graph_node(name)
