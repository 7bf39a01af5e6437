"""Another loop run inside a step of this one (the kit's ``InnerLoop``): ReAct as
Plan-and-Execute's steps and Reflexion's episodes.

The inner loop is compiled once, as a subgraph drawn inside the step that runs it, with
the caller's schemas and middleware; its ``before_agent``/``after_agent`` hooks run around
the outer loop only. Each run gets the supersteps its budget needs, the run's tool calls
so far (budgets and loop-break count the whole run), the caller's own state keys (and
hands them back), and, with ``relay``, streams its chat turns as the calling step's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config, get_stream_writer
from langgraph.errors import ParentCommand
from langgraph.types import Command, Overwrite
from pydantic import BaseModel

from loopgraphs.internals import streams_subgraphs
from loopgraphs.nodes.build import caller_keys, caller_reducers, subgraph_options
from loopgraphs.nodes.chat_relay import AsyncChatRelay, ChatRelay, relaying
from loopgraphs.nodes.driver import Call
from loopgraphs.nodes.loop import LoopSpec
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_guard import EARLIER_CALLS, earlier_calls
from loopgraphs.state import InnerOutput, LoopRuntime, empty_usage, scratch_of

# Supersteps an inner run needs besides its rounds: a margin for what its main cycle does
# not count (tool selection, the final answer, synthesis).
EXTRA_STEPS = 10


@dataclass(frozen=True)
class InnerCall(Call):
    """A run of an inner loop inside a node, with enough supersteps for its budget.

    The subgraph counts its supersteps on its own; a small ``recursion_limit`` meant for
    the outer graph would otherwise cut a step's inner loop short (or end it in a
    recursion error), so the subgraph gets at least what ``max_iterations`` rounds of
    ``round_steps`` need. With ``relay`` its chat turns stream as the calling node's (see
    ``loopgraphs.nodes.chat_relay``).
    """

    max_iterations: int = 10
    context: object = None  # the run context for the subgraph; None: the caller's
    earlier: tuple[AnyMessage, ...] = ()  # the run's calls and results before this run
    relay: bool = False
    round_steps: int = 3

    def _config(self, config: RunnableConfig) -> RunnableConfig:
        needed = self.round_steps * self.max_iterations + EXTRA_STEPS
        limit = max(int(config.get("recursion_limit") or 0), needed)
        configurable = {**(config.get("configurable") or {}), EARLIER_CALLS: self.earlier}
        return {**config, "recursion_limit": limit, "configurable": configurable}

    def invoke(self, config: RunnableConfig) -> Any:
        with relaying(ChatRelay(config)) if self.relay else contextlib.nullcontext():
            return self._run(self._config(config), streams_subgraphs(config))

    async def ainvoke(self, config: RunnableConfig) -> Any:
        with relaying(AsyncChatRelay(config)) if self.relay else contextlib.nullcontext():
            return await self._arun(self._config(config), streams_subgraphs(config))

    def _run(self, config: RunnableConfig, shown: bool) -> Any:
        """The inner run's output. Its ``custom`` events (a tool's progress, written with
        ``get_stream_writer()``) are passed on as the calling node's when the caller does
        not stream subgraphs (when it does, LangGraph streams them as the inner run's)."""
        if shown:
            return self.runnable.invoke(self.input, config, context=self.context)
        writer, output = get_stream_writer(), None
        chunks = self.runnable.stream(
            self.input, config, context=self.context, stream_mode=["values", "custom"]
        )
        for mode, chunk in chunks:
            if mode == "custom":
                writer(chunk)
            else:
                output = chunk
        return output

    async def _arun(self, config: RunnableConfig, shown: bool) -> Any:
        """``_run`` awaited."""
        if shown:
            return await self.runnable.ainvoke(self.input, config, context=self.context)
        writer, output = get_stream_writer(), None
        chunks = self.runnable.astream(
            self.input, config, context=self.context, stream_mode=["values", "custom"]
        )
        async for mode, chunk in chunks:
            if mode == "custom":
                writer(chunk)
            else:
                output = chunk
        return output


class InnerLoop:
    """A loop (``spec``) compiled for ``settings`` (without a structured response) and the
    caller's schemas in ``options``, run from inside a step of another loop. The caller's
    own state keys go into every run and come back from it, so tools can read and update
    them.

    Args:
        spec: The inner loop (ReAct, say); kept as ``spec``.
        settings: The calling loop's settings; the inner loop runs with them.
        options: The calling loop's shared options (its schemas and middleware).
        **own: The inner loop's own keywords (its defaults for the rest).
    """

    def __init__(
        self,
        spec: LoopSpec[Any],
        settings: LoopSettings,
        options: Mapping[str, object],
        **own: object,
    ) -> None:
        self.spec = spec
        resolved = spec.resolve(own)
        budget = resolved.get(spec.iterations_option) if spec.iterations_option else None
        self.settings = dataclasses.replace(
            settings,
            response_format=None,
            step_run=True,
            options=resolved,
            max_iterations=settings.max_iterations if budget is None else cast(int, budget),
        )
        self.graph, plan = spec.build_inner(self.settings, subgraph_options(options))
        main = spec.main_step or ""
        self.round_steps = max(plan.counts(main).round, 1) if main else 3
        self.extra = caller_keys(options)
        self.reducers = caller_reducers(options)

    def selects_tools(self, runtime: LoopRuntime) -> bool:
        """Whether an inner run picks its tools first: it has more tools (the run's
        context applied) than the inner loop's ``selects_tools_above``."""
        above = self.spec.selects_tools_above
        return above is not None and len(self.settings.for_run(runtime).tools) > above

    def limited(self, runtime: LoopRuntime, max_iterations: int) -> object:
        """The run context that gives the inner loop ``max_iterations`` iterations: the caller's
        context with that value, of the same kind; None when it is not below the run's
        own budget, or when the context's type has no ``max_iterations`` field."""
        if max_iterations >= self.settings.for_run(runtime).max_iterations:
            return None
        context = getattr(runtime, "context", None)
        if isinstance(context, BaseModel):
            if "max_iterations" not in type(context).model_fields:
                return None
            return context.model_copy(update={"max_iterations": max_iterations})
        if dataclasses.is_dataclass(context) and not isinstance(context, type):
            if "max_iterations" not in {f.name for f in dataclasses.fields(context)}:
                return None
            return dataclasses.replace(context, max_iterations=max_iterations)
        if context is not None and not isinstance(context, Mapping):
            return None
        schema = self.graph.context_schema
        if isinstance(schema, type) and (
            issubclass(schema, BaseModel) or dataclasses.is_dataclass(schema)
        ):
            return None  # LangGraph would build the schema's type from a dict
        return {**(context or {}), "max_iterations": max_iterations}

    def iterations(self, runtime: LoopRuntime, wanted: int) -> int:
        """The iterations an inner run asked for ``wanted`` gets (see ``limited``)."""
        budget = self.settings.for_run(runtime).max_iterations
        return wanted if self.limited(runtime, wanted) is not None else budget

    def run(
        self,
        step: Step,
        state: Mapping[str, Any],
        messages: Sequence[AnyMessage],
        max_iterations: int | None = None,
        *,
        relay: bool = False,
    ) -> Generator[Call, Any, tuple[InnerOutput, InnerOutput]]:
        """Run the inner loop on ``messages`` with the run's iteration budget.

        Args:
            step: The calling step (the run's settings, and the runtime whose context may
                change ``max_iterations``).
            state: The calling loop's state.
            messages: The inner loop's input conversation.
            max_iterations: A smaller budget for this run, which ``iterations`` says
                whether it gets; None: the run's own.
            relay: Stream the run's chat turns as the calling step's (``stream_mode=
                "messages"`` then shows them without ``subgraphs=True``).

        Returns:
            The inner loop's output, and the calling loop's update for it: the model calls, retries
            and tokens it spent, the tool mode it ran in and the caller's own keys. When a
            middleware hook ended the run (a call limit with ``exit_behavior="end"``), the
            update ends the calling loop too: status "max_iterations", and the mark that
            has its routers end the run (see ``ended_by_hook``).
        """
        context = None if max_iterations is None else self.limited(step.runtime, max_iterations)
        budget = step.run.max_iterations
        if max_iterations is not None and context is not None:
            budget = max_iterations
        carried = {key: state[key] for key in self.extra if key in state}
        given = [m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in messages]
        start = scratch_of(state).get("transcript_start") or 0
        earlier = (*earlier_calls(step.config), *tool_work((state.get("messages") or [])[start:]))
        inner = InnerCall(
            self.graph,
            {"messages": given, **carried},
            budget,
            context,
            earlier,
            relay,
            self.round_steps,
        )
        try:
            out = yield inner
        except ParentCommand as handoff:
            raise handed_on(handoff, state.get("messages") or [], given) from None
        # The caller's own keys go back too: keys beside those the type names.
        spent = cast(
            InnerOutput,
            {
                "llm_calls": out.get("llm_calls", 0),
                "retries": out.get("retries", 0),
                "usage": out.get("usage") or empty_usage(),
                "tool_mode": out.get("tool_mode") or state.get("tool_mode", ""),
                **{
                    key: carried_back(self.reducers.get(key), carried.get(key, _ABSENT), out[key])
                    for key in self.extra
                    if key in out
                },
            },
        )
        if ended_by_hook(out):
            spent.update({"status": "max_iterations", "scratch": {"hook_ended": True}})
        return out, spent


_ABSENT = object()


def most_calls(
    spec: LoopSpec[Any], options: Mapping[str, object], *, tool_selection: bool = False
) -> int:
    """The most model calls one run of ``spec`` makes: its ``call_budget`` for ``options``
    (its own keywords, checked; the rest at their defaults), the calls that pick its tools
    included with ``tool_selection`` (for a loop that does, see
    ``LoopSpec.selects_tools_above``). A loop running another inside its steps counts
    those runs with it.

    Raises:
        TypeError, ValueError: a keyword is of the wrong type or out of range.
        ValueError: the loop declares no ``call_budget``.
    """
    if spec.call_budget is None:
        raise ValueError(f"loop {spec.name} declares no call_budget")
    resolved = spec.resolve(options)
    if tool_selection and spec.selects_tools_above is not None:
        return spec.call_budget(resolved, tool_selection=True)
    return spec.call_budget(resolved)


def ended_by_hook(out: Mapping[str, object]) -> bool:
    """Whether a middleware hook ended the inner run ``out`` (a ``before_model`` jump to
    the end, or an ``after_model`` hook's closing message), which ends the calling loop."""
    return bool(scratch_of(out).get("hook_ended"))


def closing_message(out: InnerOutput) -> list[AnyMessage]:
    """The closing message a hook ended the inner run ``out`` with (a tool-call limit's
    notice), which joins the calling loop's transcript; empty when there is none."""
    messages = out.get("messages") or []
    last = messages[-1] if messages else None
    if ended_by_hook(out) and isinstance(last, AIMessage) and not last.tool_calls:
        return [last]
    return []


def tool_work(messages: Sequence[AnyMessage]) -> tuple[AnyMessage, ...]:
    """The tool calls and results among ``messages``: each assistant message that called
    tools and each ``ToolMessage``."""
    return tuple(
        m
        for m in messages
        if isinstance(m, ToolMessage) or (isinstance(m, AIMessage) and m.tool_calls)
    )


def handed_on(
    handoff: ParentCommand, run_messages: Sequence[AnyMessage], given: Sequence[AnyMessage]
) -> ParentCommand:
    """A tool's ``Command(graph=Command.PARENT)`` from inside the inner run, sent on to the
    parent of the calling loop, which is where the tool meant it to go.

    LangGraph addresses such a command to the graph one level above the tool's: here the
    calling loop itself, which would drop a ``goto`` to a node it does not have (and carry
    on). Re-addressed ``Command.PARENT`` from the calling node, it reaches the loop's
    parent (a supervisor, a swarm, your own graph), as from a ReAct loop used there. A
    tool that sends the history along (``[*state["messages"], result]``) sent the inner
    run's; the loop's private input (a step's prompt, the lessons) is replaced by the
    run's own messages, so no prompt of the loop becomes a message of its host.
    """
    command: Command[Any] = handoff.args[0]
    if command.graph == Command.PARENT or not _addressed_here(command.graph):
        return handoff
    update = command.update
    if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
        inputs = {m.id for m in given}
        sent = update["messages"]
        if any(getattr(m, "id", None) in inputs for m in sent):
            own = [m for m in sent if getattr(m, "id", None) not in inputs]
            update = {**update, "messages": [*run_messages, *own]}
    return ParentCommand(dataclasses.replace(command, graph=Command.PARENT, update=update))


def _addressed_here(graph: str | None) -> bool:
    """Whether a command's ``graph`` names the graph of the node running now (LangGraph
    names a graph by its checkpoint namespace, with or without the task ids)."""
    here = str(get_config().get("configurable", {}).get("checkpoint_ns", ""))
    return graph is not None and _names(graph) == _names(here)


def _names(namespace: str) -> list[str]:
    return [part.split(":")[0] for part in namespace.split("|") if part]


def carried_back(reducer: Callable[[Any, Any], Any] | None, before: Any, after: Any) -> Any:
    """The update that takes a caller's key from ``before`` (its value when the inner run
    started) to ``after`` (its value when it ended) through the key's ``reducer``.

    A key without a reducer takes ``after`` as it is. With a reducer, writing ``after``
    would apply the inner run's changes a second time (``figs`` + ``figs, plums``), so the
    update is the part the run added: ``after`` itself when the reducer keeps it as it is
    (merging dicts or sets, ``add_messages``), else what follows ``before`` in a sequence
    or the difference of two numbers, whichever the reducer turns into ``after``; any
    other reducer gets ``Overwrite(after)``.
    """
    if reducer is None or before is _ABSENT:
        return after
    candidates: list[object] = [after]
    if isinstance(after, (list, tuple, str)) and after[: len(before)] == before:
        candidates.insert(0, after[len(before) :])
    elif isinstance(after, (int, float)) and isinstance(before, (int, float)):
        candidates.insert(0, after - before)
    for update in candidates:
        with contextlib.suppress(Exception):
            if reducer(before, update) == after:
                return update
    return Overwrite(after)
