"""Run tool calls through LangGraph's ``ToolNode``, with loopgraphs' guarantees around it.

Tools run inside the graph's runtime, so everything a LangGraph tool may do works:
``interrupt()``, injected state / store / tool-call id / ``ToolRuntime``, ``Command``
returns, artifacts, content blocks, callbacks and the stream writer. ``ToolGuard`` wraps
each call (``wrap_tool_call`` / ``awrap_tool_call``) to add what the loops promise:

- every failure (unknown tool, invalid arguments, exception, timeout) becomes an error
  ``ToolMessage`` the model reads;
- the output is kept as the tool returned it, for the thread and a chat to show; what the
  model is sent of it is truncated and fenced between per-run markers, as untrusted data
  (``fence_output``, applied when a request is sent: see
  ``loopgraphs.nodes.generate.results_view``);
- a call identical to an earlier successful call of the run is answered from history
  (the loop-break; failed calls run again; ``loop_break=False`` turns it off);
- a per-run tool-call budget: calls past it are answered, never run;
- human review decisions (edit, reject, respond) are applied;
- a tool returning ``Command(goto=END)`` ends the run: its update also sets ``answer``
  and ``tool_ended`` in the run's ``scratch`` (the loop finishes the run on it).

The guard reads the run's ``fence``, ``transcript_start`` and ``reviews`` from the
state's ``scratch`` (``loopgraphs.state.Bookkeeping``).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.graph import END
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import (
    AsyncToolCallWrapper,
    ToolCallRequest,
    ToolCallWrapper,
    ToolInvocationError,
)
from langgraph.types import Command
from pydantic import ValidationError
from typing_extensions import TypedDict

from loopgraphs.nodes.middleware import AsyncToolWrapper, ToolWrapper, UnsupportedPath
from loopgraphs.nodes.review import answer_without_running, reviewed_call
from loopgraphs.process_hooks import after_fork, at_exit
from loopgraphs.state import messages_of, scratch_of
from loopgraphs.text import FENCE_CLOSE, FENCE_OPEN, fenced
from loopgraphs.toolkits.registry import ToolRegistry

ToolResult = ToolMessage | Command
ToolErrorPolicy = (
    bool | str | Callable[[Exception], str] | type[Exception] | tuple[type[Exception], ...]
)
"""What a tool's exception becomes (``handle_tool_errors``, see ``ToolLoopOptions``)."""
DEFAULT_MAX_OUTPUT_CHARS = 4000
DEFAULT_TOOL_TIMEOUT = 30.0
TOOL_THREADS = 32
_timeout_pool: ThreadPoolExecutor | None = None


def fence_output(text: str, fence: str, limit: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """Truncate tool output and wrap it between markers the output cannot forge.

    Args:
        text: Raw tool output.
        fence: The run's marker (see ``loopgraphs.state.new_fence``).
        limit: Maximum characters of output kept.

    Returns:
        The fenced text, with a note saying how much was cut.
    """
    if fence:
        text = text.replace(fence, "[marker removed]")
    note = ""
    if len(text) > limit:
        note = f"\n[... truncated {len(text) - limit} of {len(text)} characters]"
        text = text[:limit]
    return fenced(f"{text}{note}", fence)


def unfence(text: str, fence: str) -> str:
    """Tool output without the run's fence markers (``fence_output`` undone)."""
    head, tail = FENCE_OPEN.format(fence=fence) + "\n", "\n" + FENCE_CLOSE.format(fence=fence)
    if fence and text.startswith(head) and text.endswith(tail):
        return text[len(head) : len(text) - len(tail)].strip()
    return text.strip()


def call_key(call: Mapping[str, object]) -> str:
    """Identity of a tool call for the loop-break: name and arguments."""
    return f"{call['name']}:{json.dumps(call['args'], sort_keys=True, default=str)}"


def describe_tool_error(exc: Exception) -> str:
    """One line for the model naming what went wrong in a tool call."""
    if isinstance(exc, ToolInvocationError) and isinstance(exc.source, ValidationError):
        errors = exc.filtered_errors if exc.filtered_errors is not None else exc.source.errors()
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'input'}: {error['msg']}"
            for error in errors
        )
        return f"invalid arguments ({problems})"
    return f"{type(exc).__name__}: {exc}"


def _same_args(left: ToolCall, right: ToolCall) -> bool:
    """Whether two calls have the same arguments (as ``call_key`` sees them); the plain
    comparison first, as it is much cheaper and almost always tells them apart."""
    return bool(left["args"] == right["args"]) and call_key(left) == call_key(right)


def calls_since(messages: Sequence[AnyMessage], start: int) -> Iterator[ToolCall]:
    """Every tool call the model made in this run (after message ``start``), in order."""
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            yield from message.tool_calls


# The config key that carries the tool calls (and results) a run made before one of its
# inner ReAct runs started: a Plan-and-Execute step's earlier steps, a Reflexion
# episode's earlier episodes. ``max_tool_calls`` and the loop-break count them, so both
# hold for the whole run; they are not part of the inner run's prompt.
EARLIER_CALLS = "loopgraphs_earlier_calls"


def earlier_calls(config: RunnableConfig | None) -> Sequence[AnyMessage]:
    """The run's calls and results made before the inner run that ``config`` belongs to
    (none outside an inner run)."""
    configurable = (config or {}).get("configurable") or {}
    return tuple(configurable.get(EARLIER_CALLS) or ())


def _own_results(
    request: ToolCallRequest, state: Mapping[str, object], update: object
) -> list[ToolMessage]:
    """The results of this call among the messages of a tool's ``Command`` update: the
    ``ToolMessage``s answering its id that the state does not hold yet. A tool may send
    the whole history back with its result (langgraph-swarm's handoff does): what the
    state holds already was fenced when it came in, and keeps its content and its id."""
    messages = update.get("messages") if isinstance(update, dict) else None
    if not messages:
        return []
    held = {m.id for m in messages_of(state) if getattr(m, "id", None)}
    call_id = request.tool_call["id"]
    return [
        m
        for m in messages
        if isinstance(m, ToolMessage) and m.tool_call_id == call_id and m.id not in held
    ]


def _own_handler(request: ToolCallRequest) -> bool:
    """Whether the tool handles its own errors (``handle_tool_error``): its error text
    then reaches the model as the tool wrote it, as in ``create_agent``."""
    return bool(getattr(request.tool, "handle_tool_error", False))


def _error(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(
        content=text, name=call["name"], tool_call_id=call["id"] or "", status="error"
    )


@dataclass(frozen=True)
class ToolGuard:
    """The checks and limits wrapped around every tool call (see the module docstring)."""

    registry: ToolRegistry
    timeout: float | None
    max_output_chars: int
    loop_break: bool = True
    max_tool_calls: int | None = None
    handle_errors: ToolErrorPolicy = True
    tool_wrapper: ToolWrapper | None = None
    async_tool_wrapper: AsyncToolWrapper | None = None

    def before(
        self, request: ToolCallRequest, served: bool = False
    ) -> ToolCallRequest | ToolMessage:
        """The request to run, or the answer given without running the tool.

        Args:
            request: The call as ``ToolNode`` hands it over.
            served: Whether a ``wrap_tool_call`` runs around the tool: a call of a name the
                loop does not know then goes on, as in ``create_agent``, for the wrapper
                may serve it with a tool of its own (``request.override(tool=...)``).

        Returns:
            The request to run, or the answer given without running the tool.
        """
        state: Mapping[str, object] = request.state if isinstance(request.state, Mapping) else {}
        scratch = scratch_of(state)
        call = request.tool_call
        reviews = scratch.get("reviews")
        decision = reviews.get(call["id"] or "") if reviews else None
        if decision:
            answered = answer_without_running(call, decision)
            if answered is not None:
                return answered
            call = reviewed_call(call, decision)
            tool = self.registry.get(call["name"])
            request = request.override(tool_call=call, **({"tool": tool} if tool else {}))
        if request.tool is not None and request.tool.name != call["name"]:
            request = dataclasses.replace(request, tool=None)
        if request.tool is None and not served:
            return self._unknown(call)
        if self.max_tool_calls is None and not self.loop_break:
            return request
        messages = messages_of(state)
        start = int(scratch.get("transcript_start") or 0)
        last = len(messages)  # the run's last reply, whose calls this step runs
        for index in range(last - 1, start - 1, -1):
            if isinstance(messages[index], AIMessage):
                last = index
                break
        before = earlier_calls(getattr(request.runtime, "config", None))
        current = messages[last] if last < len(messages) else None
        made, same = 0, []  # calls of the run before this one; those identical to it
        name, call_id = call["name"], call["id"]
        for message in (*before, *messages[start : last + 1]):
            if not isinstance(message, AIMessage):
                continue
            for earlier in message.tool_calls:
                if message is current and earlier["id"] == call_id:
                    break
                made += 1
                if earlier["name"] == name and _same_args(earlier, call):
                    same.append(earlier)
        if self.max_tool_calls is not None and made >= self.max_tool_calls:
            return _error(
                call,
                f"Not run: this run's budget of {self.max_tool_calls} tool calls is used up. "
                "Answer with what you have.",
            )
        if self.loop_break and same:
            repeated = self._repeated(call, same, [*before, *messages[start:last]])
            if repeated is not None:
                return repeated
        return request

    def _repeated(
        self, call: ToolCall, same: Sequence[ToolCall], log: Sequence[AnyMessage]
    ) -> ToolMessage | None:
        for previous in same:
            result = next(
                (
                    m
                    for m in reversed(log)
                    if isinstance(m, ToolMessage) and m.tool_call_id == (previous["id"] or "")
                ),
                None,
            )
            if result is None:
                return _error(
                    call,
                    f"Not run: the same call of {call['name']} is already running in this "
                    "step; use its result.",
                )
            if result.status != "error":
                return _error(
                    call,
                    f"You already called {call['name']} with these arguments. The result "
                    f"was:\n{result.content}\nDo not repeat the call: use a different "
                    "approach or give the final answer.",
                )
        return None

    def after(self, request: ToolCallRequest, result: Any) -> Any:
        """Name the tool in the error it reported; refuse a ``goto`` the loop cannot
        honour; note a run a tool ended (``goto=END``)."""
        state = request.state if isinstance(request.state, Mapping) else {}
        fence = scratch_of(state).get("fence", "")
        if isinstance(result, list):
            return [self.after(request, item) for item in result]
        if isinstance(result, ToolMessage):
            verbatim = result.status == "error" and _own_handler(request)
            return self._reported(result, request.tool_call["name"], verbatim)
        update = result.update
        if result.graph is None and result.goto not in ((), [], None, END):
            return _error(
                request.tool_call,
                f"Error: {request.tool_call['name']} returned Command(goto={result.goto!r}); "
                "inside a loopgraphs loop a tool may only end the run (goto=END) or route "
                "the parent graph (graph=Command.PARENT).",
            )
        own = {id(m) for m in _own_results(request, state, update)}
        if own:
            verbatim = _own_handler(request)
            update = {
                **update,
                "messages": [
                    self._reported(m, request.tool_call["name"], verbatim) if id(m) in own else m
                    for m in update["messages"]
                ],
            }
        if result.graph is None and result.goto == END:
            answer = next(
                (
                    unfence(str(m.content), fence)
                    for m in (update or {}).get("messages", [])
                    if isinstance(m, ToolMessage) and m.tool_call_id == request.tool_call["id"]
                ),
                "",
            )
            update = {**(update or {}), "scratch": {"tool_ended": True}, "answer": answer}
            return dataclasses.replace(result, update=update, goto=())
        return dataclasses.replace(result, update=update)

    def _reported(
        self, message: ToolMessage, tool: str = "", verbatim: bool = False
    ) -> ToolMessage:
        """The result as the thread keeps it: as the tool returned it; an error the tool
        reported itself gets the tool's name in front, unless its own
        ``handle_tool_error`` wrote it (``verbatim``)."""
        content = message.content
        if message.status != "error" or not isinstance(content, str) or verbatim:
            return message
        if content.startswith("Error:"):
            return message
        text = f"Error: {message.name or tool or 'the tool'} failed: {content}"
        return message.model_copy(update={"content": text})

    def wrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """``wrap_tool_call`` for ``ToolNode``: the guard's checks, then the middleware's
        ``wrap_tool_call`` chain around the tool, within the timeout; a failure becomes an
        error observation, and an error the tool reported names it (see ``after``)."""
        wrapper = self.tool_wrapper
        checked = self.before(request, served=wrapper is not None)
        if isinstance(checked, ToolMessage):
            return checked

        def known(request: ToolCallRequest) -> ToolResult:
            return self._unknown(request.tool_call) if request.tool is None else execute(request)

        def run(request: ToolCallRequest) -> ToolResult:
            return wrapper(request, known) if wrapper is not None else execute(request)

        try:
            if self.timeout is None:
                result = run(checked)
            else:
                future = _pool().submit(contextvars.copy_context().run, run, checked)
                result = future.result(timeout=self.timeout)
        except FutureTimeout:
            return self._timed_out(checked)
        except Exception as exc:
            result = self._failed(checked, exc)
        return self.after(checked, result)

    async def awrap(
        self,
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """``awrap_tool_call`` for ``ToolNode`` (see ``wrap``)."""
        wrapper = self.async_tool_wrapper
        checked = self.before(request, served=wrapper is not None)
        if isinstance(checked, ToolMessage):
            return checked

        async def known(request: ToolCallRequest) -> ToolResult:
            if request.tool is None:
                return self._unknown(request.tool_call)
            return await execute(request)

        run = wrapper(checked, known) if wrapper is not None else execute(checked)
        try:
            result = await _limited(run, self.timeout)
        except asyncio.TimeoutError:
            return self._timed_out(checked)
        except Exception as exc:
            result = self._failed(checked, exc)
        return self.after(checked, result)

    def _unknown(self, call: ToolCall) -> ToolMessage:
        """The observation for a call of a tool neither the loop nor a wrapper serves."""
        available = ", ".join(self.registry.names) or "none"
        return _error(call, f"Error: unknown tool '{call['name']}'. Available tools: {available}.")

    def _failed(self, request: ToolCallRequest, exc: Exception) -> ToolMessage:
        """The observation for a tool call that raised (after the middleware's chain had
        its chance to retry or handle it): interrupts and resume errors go on up."""
        if isinstance(exc, (GraphBubbleUp, UnsupportedPath)) or is_invalid_resume(exc):
            raise exc
        policy = self.handle_errors
        if policy is True:
            return _error(request.tool_call, describe_tool_error(exc))
        if isinstance(policy, str):
            return _error(request.tool_call, policy)
        classes = policy if isinstance(policy, tuple) else (policy,)
        if all(isinstance(c, type) and issubclass(c, Exception) for c in classes):
            if isinstance(exc, cast("tuple[type[Exception], ...]", classes)):
                return _error(request.tool_call, describe_tool_error(exc))
            raise exc
        if callable(policy):
            return _error(request.tool_call, str(policy(exc)))
        raise exc

    def _timed_out(self, request: ToolCallRequest) -> ToolMessage:
        message = _error(request.tool_call, f"timed out after {self.timeout:g} s")
        return self.after(request, message)  # type: ignore[return-value]


async def _limited(awaitable: Awaitable[ToolResult], seconds: float | None) -> ToolResult:
    """Await with a time limit; from Python 3.11 without the extra task of ``wait_for``."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there."""
    global _timeout_pool
    _timeout_pool = None


def tool_threads() -> ThreadPoolExecutor:
    """A new pool of threads for sync tool calls: ``TOOL_THREADS`` of them, as a call that
    times out keeps its thread until the tool returns."""
    return ThreadPoolExecutor(max_workers=TOOL_THREADS, thread_name_prefix="loopgraphs-tool")


def _pool() -> ThreadPoolExecutor:
    """The guard's threads for sync tool calls with a timeout under ``ToolNode``'s sync path."""
    global _timeout_pool
    if _timeout_pool is None:
        at_exit(_shutdown_pool)
        after_fork(_forget_pool)
        _timeout_pool = tool_threads()
    return _timeout_pool


def _shutdown_pool() -> None:
    """At exit: shut the guard's pool down (calls still queued are dropped, so no thread
    is started for them); threads of calls that timed out end as their tools return."""
    pool = _timeout_pool
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


class GuardedOptions(TypedDict):
    """The ``ToolNode`` keyword arguments that put a guard around every call."""

    handle_tool_errors: bool
    wrap_tool_call: ToolCallWrapper
    awrap_tool_call: AsyncToolCallWrapper


def guarded_options(guard: ToolGuard) -> GuardedOptions:
    """``ToolNode`` keyword arguments that put ``guard`` around every call."""
    return {
        # Failures reach the middleware's wrappers as the tool raised them; the guard
        # turns what comes out of the chain into an observation.
        "handle_tool_errors": False,
        "wrap_tool_call": guard.wrap,
        "awrap_tool_call": guard.awrap,
    }


def make_tool_node(guard: ToolGuard, name: str = "call_tool") -> ToolNode:
    """A ``ToolNode`` for the guard's tools with the guard wrapped around every call."""
    return ToolNode(guard.registry.tools, name=name, **guarded_options(guard))
