"""Run node logic written once for both ``invoke`` and ``ainvoke``.

A node's logic is a generator: it yields requests (a model call, a batch of model calls,
a batch of tool jobs) and receives their results, or has the request's exception thrown
back into it. ``as_node`` turns such a generator function into a runnable with a sync
and an async path, so every compiled graph supports ``invoke`` and ``ainvoke`` without
duplicating the logic, and without running async code on a foreign event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeAlias, TypeVar, cast

from langchain_core.exceptions import ModelRefusalError
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import get_executor_for_config, var_child_runnable_config
from langgraph.types import Command, RetryPolicy, Send

from loopgraphs.internals import (
    Channels,
    has_reducer,
    state_channels,
    takes_last_write,
    untraced_callable,
)
from loopgraphs.nodes.answer_check import settle_answer
from loopgraphs.nodes.errors import (
    describe_error,
    failed_calls,
    refused,
    should_reraise,
)
from loopgraphs.nodes.middleware import UnsupportedPath
from loopgraphs.nodes.model_call import PASS_ASYNC_CONFIG, attempt, attempt_async
from loopgraphs.nodes.parsing.text import best_effort_answer
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.run_context import load_context
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.state import (
    CommonState,
    LoopBuilder,
    LoopRuntime,
    add_totals,
    starts_run,
    state_after,
    transcript_of,
)

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class Call(Generic[InputT, OutputT]):
    """One call of any runnable (a compiled subgraph, say) with an arbitrary input."""

    runnable: Runnable[InputT, OutputT]
    input: InputT

    def invoke(self, config: RunnableConfig) -> OutputT:
        return self.runnable.invoke(self.input, config)

    async def ainvoke(self, config: RunnableConfig) -> OutputT:
        return await self.runnable.ainvoke(self.input, config)


class Request(Protocol):
    """What node logic yields: anything the drivers can run sync or async (a model call,
    see ``loopgraphs.nodes.model_call.ModelCall``; a subgraph run; a batch)."""

    def invoke(self, config: RunnableConfig) -> object: ...

    async def ainvoke(self, config: RunnableConfig) -> object: ...


@dataclass(frozen=True)
class ModelBatch:
    """Several model calls run concurrently; each result is an outcome or the exception
    raised."""

    calls: Sequence[Request]

    def invoke(self, config: RunnableConfig) -> list[object]:
        with get_executor_for_config(config) as pool:
            futures = [pool.submit(_capture, call.invoke, config) for call in self.calls]
            return [future.result() for future in futures]

    async def ainvoke(self, config: RunnableConfig) -> list[object]:
        return list(
            await asyncio.gather(
                *(call.ainvoke(config) for call in self.calls), return_exceptions=True
            )
        )


def _capture(func: Callable[[RunnableConfig], object], config: RunnableConfig) -> object:
    try:
        return func(config)
    except Exception as exc:
        return exc


ResultT = TypeVar("ResultT")


def in_parallel(
    logics: Sequence[Generator[Request, Any, ResultT]],
) -> Generator[ModelBatch, list[object], list[ResultT | BaseException]]:
    """Drive several logics side by side (scoring candidates, sampling thoughts): each
    round sends the pending request of every unfinished logic as one ``ModelBatch`` (so
    they run concurrently) and hands each its result, or throws its exception into it.

    Args:
        logics: Generators that yield single requests (model calls, subgraph runs), not
            batches.

    Returns:
        Per logic, in order: its return value, or the exception it raised.
    """
    results: dict[int, ResultT | BaseException] = {}
    pending: dict[int, Request] = {}

    def advance(index: int, value: object, error: BaseException | None) -> None:
        logic = logics[index]
        try:
            request = logic.throw(error) if error is not None else logic.send(value)
        except StopIteration as stop:
            results[index] = stop.value
            return
        except Exception as exc:
            results[index] = exc
            return
        if isinstance(request, ModelBatch):
            logic.close()
            results[index] = TypeError(f"in_parallel drives single requests only; got {request!r}")
            return
        pending[index] = request

    for index in range(len(logics)):
        advance(index, None, None)
    while pending:
        order = sorted(pending)
        batch = ModelBatch([pending.pop(index) for index in order])
        replies = yield batch
        for index, reply in zip(order, replies, strict=True):
            if isinstance(reply, BaseException):
                advance(index, None, reply)
            else:
                advance(index, reply, None)
    return [results[index] for index in range(len(logics))]


UpdateT = TypeVar("UpdateT", bound=Mapping[str, object])
# Node logic returning an update of type ``UpdateT``: the state keys it writes, typed
# by the loop's state (a TypedDict whose keys are all optional).
LogicOf: TypeAlias = Generator[Request, Any, UpdateT]
Logic: TypeAlias = LogicOf[Mapping[str, object]]
# A step's logic: ``logic(state, step)``, the run's settings resolved in ``step.run``. The
# state is the loop's own TypedDict (a parameter type, so no one TypedDict fits every loop).
LogicFactory = Callable[[Any, Step], Logic]
# The same logic as a node drives it, before the run's settings are resolved.
NodeLogic = Callable[[CommonState, RunnableConfig, LoopRuntime], Logic]
# A run's start (see ``loopgraphs.nodes.run_start.starter``): the update that starts a run.
Begin = Callable[[Any, LoopRuntime, RunnableConfig], Mapping[str, object]]
# What a node returns to LangGraph: its update, or its update and commands.
Written = Mapping[str, object] | list[Mapping[str, object] | Command[object]]


class _Driven:
    """Node logic being driven: it is resumed with each request's result (or has the
    request's exception thrown into it) until it returns its update."""

    __slots__ = ("commands", "logic", "outcome", "update")

    def __init__(self, logic: Logic, commands: list[Command[object]] | None) -> None:
        self.logic = logic
        self.commands = commands
        self.outcome: tuple[object, Exception | None] = (None, None)
        self.update: Mapping[str, object] = {}

    def next(self) -> Request | None:
        """The next request of the logic, given the last one's outcome (None: it returned,
        its update is ``update``); the ``Command``s of the last result go to ``commands``."""
        result, error = self.outcome
        if self.commands is not None:
            self.commands.extend(_commands_of(result))
        try:
            return self.logic.throw(error) if error is not None else self.logic.send(result)
        except StopIteration as stop:
            self.update = stop.value
            return None


def run_sync(
    logic: Logic, config: RunnableConfig, commands: list[Command[object]] | None = None
) -> Mapping[str, object]:
    """Drive node logic with blocking calls; the ``Command``s that middleware returned
    with model responses are added to ``commands``."""
    driven = _Driven(logic, commands)
    while (request := driven.next()) is not None:
        driven.outcome = attempt(request.invoke, config)
    return driven.update


async def run_async(
    logic: Logic, config: RunnableConfig, commands: list[Command[object]] | None = None
) -> Mapping[str, object]:
    """Drive node logic with awaited calls (see ``run_sync``)."""
    driven = _Driven(logic, commands)
    while (request := driven.next()) is not None:
        driven.outcome = await attempt_async(request.ainvoke(config))
    return driven.update


_SCALARS = frozenset({str, int, float, bool, type(None)})


def changed_only(
    channels: Channels, state: Mapping[str, object], update: dict[str, object]
) -> dict[str, object]:
    """The update without the writes that leave a key as it is: a key without a reducer
    written the value it holds (the same object, or an equal string, number, bool or
    None). LangGraph stores every write and checkpoints every key written, changed or
    not."""
    kept = {
        key: value
        for key, value in update.items()
        if key not in state
        or not takes_last_write(channels, key)
        or not _same_value(state[key], value)
    }
    return kept if len(kept) != len(update) else update


def _same_value(current: object, value: object) -> bool:
    return current is value or (
        type(value) in _SCALARS and type(current) is type(value) and current == value
    )


def _commands_of(result: object) -> Sequence[Command[object]]:
    """The commands a request's result carries (a model call's, or a batch's)."""
    if not isinstance(result, list):
        return getattr(result, "commands", None) or ()
    return [command for item in result for command in getattr(item, "commands", None) or ()]


NextStep = Callable[[CommonState, Sequence[object], LoopRuntime], str | list[Send]]


def config_set(config: RunnableConfig) -> contextlib.AbstractContextManager[None]:
    """The node's config as the current one, on Python 3.10 (from 3.11 LangGraph runs an
    async node in it already, and this sets nothing): ``interrupt()`` and ``get_config()``
    read it there."""
    return _config_set(config) if PASS_ASYNC_CONFIG else _NOTHING_SET


_NOTHING_SET: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


@contextlib.contextmanager
def _config_set(config: RunnableConfig) -> Iterator[None]:
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def takes_runtime(router: Callable[..., object]) -> bool:
    """Whether a router takes the runtime after the state (``router(state, runtime)``):
    LangGraph passes it only to routers that ask for it. Read from the signature, so a
    bound method or a ``functools.partial`` counts only the parameters left to fill, and
    keyword-only ones (a partial's bound options) do not count."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = inspect.signature(router).parameters.values()
    return sum(parameter.kind in positional for parameter in parameters) > 1


def node_callable(
    sync: Callable[..., object] | None,
    asynchronous: Callable[..., Awaitable[object]] | None,
    *,
    name: str,
) -> Runnable[Any, Any]:
    """A graph node from a sync and (or) an async function taking the state and any of
    ``config``/``runtime`` by name, as LangGraph passes them. On Python 3.10 the async
    path (a sync-only function runs in a worker thread there) has the node's config as the
    current one, so that an ``interrupt()`` in it works, as from 3.11."""
    if not PASS_ASYNC_CONFIG:
        return untraced_callable(sync, asynchronous, name=name)
    target = asynchronous or sync
    assert target is not None
    wanted = set(inspect.signature(target).parameters)

    def passed(config: RunnableConfig, runtime: LoopRuntime) -> dict[str, object]:
        return {k: v for k, v in (("config", config), ("runtime", runtime)) if k in wanted}

    def plain(state: object, config: RunnableConfig, runtime: LoopRuntime) -> object:
        assert sync is not None
        return sync(state, **passed(config, runtime))

    async def in_config(state: object, config: RunnableConfig, runtime: LoopRuntime) -> object:
        with config_set(config):
            if asynchronous is not None:
                return await asynchronous(state, **passed(config, runtime))
            call = functools.partial(plain, state, config, runtime)
            return await asyncio.to_thread(contextvars.copy_context().run, call)

    return untraced_callable(plain if sync else None, in_config, name=name)


def as_node(
    name: str,
    logic: LogicFactory,
    settings: LoopSettings,
    *,
    guarded: bool = True,
    totals: bool = False,
    subgraph: Runnable[Any, Any] | None = None,
    next_step: NextStep | None = None,
    plan: GraphPlan | None = None,
    begins: Mapping[str, Begin] | None = None,
    channels: Channels | None = None,
) -> Runnable[Any, Any]:
    """Turn generator logic ``logic(state, step)`` into a graph node.

    The node resolves the run's settings once when it starts (``settings.for_run`` with
    the run's context; a bad context value raises, as it did in the run's ``prepare``
    step already) and hands them to the logic in ``step``. It has a sync and an
    async path (LangGraph's own callable, one layer). With ``guarded`` (the default) a
    failure the retry policy (``settings.retry_policy``) will retry escapes to LangGraph,
    which retries the node; any other failure, or the last attempt, ends the run with
    ``status="error"`` (see ``guard``). Logic reports the model calls and tokens it
    spent; with ``totals`` the node writes them as the run's new totals (see
    ``loopgraphs.state.add_totals``). ``subgraph`` names a compiled graph the logic runs
    (Reflexion's inner ReAct, say), so that ``get_graph(xray=True)`` draws it inside the
    node. With ``next_step`` the node picks the step that follows it:
    ``next_step(state, outputs, runtime)`` reads the node's input and outputs (its update
    and commands) and names the step, which the node returns as a ``Command(goto=...)``
    (see ``loopgraphs.nodes.routing.add_routed_step``). ``plan`` is the loop's graph as
    the kit counts its steps (``Step.may_continue``). When ``begins`` (filled when the
    graph is compiled) holds a start for ``name``, the node starts a new run itself (see
    ``loopgraphs.nodes.run_start.starter``) before its logic, which then reads the state
    as the start leaves it (``channels``: the graph's, to apply it); the graph keeps
    running totals (``totals``), so one update holds both. The node's update leaves out
    the keys it would write the value they hold (``changed_only``).
    """
    inner = guard(logic, settings.retry_policy) if guarded else logic
    run = with_settings(inner, settings, name, plan)

    def opened(
        state: CommonState, runtime: LoopRuntime, config: RunnableConfig
    ) -> Mapping[str, object] | None:
        begin = begins.get(name) if begins else None
        if begin is None or not starts_run(state):
            return None
        return begin(state, runtime, config)

    def sync_node(state: CommonState, config: RunnableConfig, runtime: LoopRuntime) -> Written:
        commands: list[Command[object]] = []
        start = opened(state, runtime, config)
        if start is None:
            update = run_sync(run(state, config, runtime), config, commands)
            return written(state, state, update, commands, runtime)
        started = cast(CommonState, state_after(channels or {}, state, [start]))
        if start.get("status") != "running":
            return written(state, started, {}, commands, runtime, start)
        update = run_sync(run(started, config, runtime), config, commands)
        return written(state, started, update, commands, runtime, start)

    async def async_node(
        state: CommonState, config: RunnableConfig, runtime: LoopRuntime
    ) -> Written:
        await load_context(runtime)
        commands: list[Command[object]] = []
        with config_set(config):
            start = opened(state, runtime, config)
            if start is None:
                update = await run_async(run(state, config, runtime), config, commands)
                return written(state, state, update, commands, runtime)
            started = cast(CommonState, state_after(channels or {}, state, [start]))
            if start.get("status") != "running":
                return written(state, started, {}, commands, runtime, start)
            update = await run_async(run(started, config, runtime), config, commands)
        return written(state, started, update, commands, runtime, start)

    def written(
        state: CommonState,
        started: CommonState,
        update: Mapping[str, object],
        commands: list[Command[object]],
        runtime: LoopRuntime,
        start: Mapping[str, object] | None = None,
    ) -> Written:
        if totals:  # node logic returns a dict (a TypedDict is one), which this adds to
            update = add_totals(started, cast(dict[str, object], update))
        if start is not None:
            update = with_start(start, update)
        if isinstance(update, dict) and not settings.step_run:
            # node logic returns an update of its loop's state, which holds CommonState's keys
            update = settle_answer(started, cast(CommonState, update))
        if channels is not None and isinstance(update, dict):
            update = changed_only(channels, state, update)
        if next_step is not None:
            goto = next_step(state, [update, *commands], runtime)
            commands = [*commands, Command(goto=goto)]
        return [update, *commands] if commands else update

    return untraced_callable(sync_node, async_node, name=name, subgraph=subgraph)


def with_start(start: Mapping[str, object], update: Mapping[str, object]) -> dict[str, object]:
    """One update of a step that started its run: the start's values and the step's own
    on top (its ``scratch`` values added to the new run's; its counters are the run's
    totals already, counted from the start's zeros)."""
    merged = {**start, **update}
    if "scratch" in update:
        merged["scratch"] = {
            **cast("Mapping[str, object]", start.get("scratch") or {}),
            **cast("Mapping[str, object]", update["scratch"]),
        }
    return merged


def add_step(
    builder: LoopBuilder,
    name: str,
    logic: LogicFactory,
    settings: LoopSettings,
    *,
    subgraph: Runnable[Any, Any] | None = None,
    model_step: bool = False,
    settles_answer: bool = False,
    next_step: NextStep | None = None,
    destinations: Sequence[str] = (),
    plan: GraphPlan | None = None,
    guarded: bool = True,
    begins: Mapping[str, Begin] | None = None,
) -> None:
    """Add generator logic ``logic(state, step)`` as a node retried by the run's retry
    policy (drawn with the compiled ``subgraph`` it runs), ``guarded`` (see ``as_node``)
    unless told otherwise. Its counts are added up the graph's way: by the state's
    reducers, or as running totals when the counters have none. A ``model_step`` gets
    the middleware's ``before_model``/``after_model`` hooks around it (see
    ``loopgraphs.nodes.hooks``). With ``next_step`` the node picks the step after it
    among ``destinations``; with a start in ``begins`` it starts a new run itself (see
    ``as_node``)."""
    node = as_node(
        name,
        logic,
        settings,
        guarded=guarded,
        totals=keeps_totals(builder),
        subgraph=subgraph,
        next_step=next_step,
        plan=plan,
        begins=begins,
        channels=state_channels(builder),
    )
    ends = tuple(dict.fromkeys(destinations)) or None
    builder.add_node(name, node, retry_policy=settings.retry_policy, destinations=ends)
    if model_step and hasattr(builder, "add_model_step"):
        builder.add_model_step(name, settles_answer=settles_answer)


def keeps_totals(builder: LoopBuilder) -> bool:
    """Whether the graph's counters hold running totals (no reducer adds the steps'
    counts up; see ``loopgraphs.state.TotalsOutput``)."""
    return not has_reducer(state_channels(builder), "llm_calls")


def with_settings(
    logic: LogicFactory, settings: LoopSettings, node: str = "", plan: GraphPlan | None = None
) -> NodeLogic:
    """The logic as a node runs it: the run's settings resolved once, when the step
    starts, and handed to it with the step's runtime and config, the node's name and the
    loop's ``plan``."""

    def resolved(state: CommonState, config: RunnableConfig, runtime: LoopRuntime) -> Logic:
        step: Step[Any] = Step(settings.for_run(runtime), runtime, config, node, plan)
        return (yield from logic(state, step))

    return resolved


def guard(logic: LogicFactory, policy: RetryPolicy | None) -> LogicFactory:
    """Turn exceptions escaping ``logic`` into an error end state, except retried ones.

    A model that refused ends the run with its words in ``error`` and its reply in the
    transcript (see ``loopgraphs.nodes.errors.refused``). Failed attempts are counted:
    every earlier attempt of a retried node sent a model request that failed, so it adds
    to ``llm_calls`` and ``retries``; a model request that fails for good adds to
    ``llm_calls`` too.
    """

    def guarded(state: CommonState, step: Step) -> Logic:
        info = getattr(step.runtime, "execution_info", None)
        earlier = (getattr(info, "node_attempt", 1) or 1) - 1
        try:
            update = yield from logic(state, step)
        except Exception as exc:
            if should_reraise(exc, earlier + 1, policy) or isinstance(exc, UnsupportedPath):
                raise
            sent = failed_calls(exc)
            spent = {"llm_calls": sent * (earlier + 1) if sent else earlier, "retries": earlier}
            if isinstance(exc, ModelRefusalError):
                return {**refused(exc), **spent}
            answer = state.get("answer") or best_effort_answer(transcript_of(state))
            return {"status": "error", "error": describe_error(exc), "answer": answer, **spent}
        if earlier and isinstance(update, dict):
            calls = update.get("llm_calls", 0)
            update = {**update, "llm_calls": calls + earlier, "retries": earlier}
        return update

    return guarded
