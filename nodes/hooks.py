"""Middleware hooks as graph nodes: ``before_agent``, ``before_model``, ``after_model`` and
``after_agent`` run where create_agent runs them.

A loop is built on a ``LoopGraph``: a ``StateGraph`` whose edges know the hook nodes.
When a loop adds a model-calling step (``add_step(..., model_step=True)``), each
middleware's ``before_model`` gets a node before it (in list order) and each
``after_model`` a node after it (in reverse order), so an edge *to* the step enters its
first ``before_model`` node and the step's own edges leave from its last ``after_model``
node. ``before_agent`` nodes run after ``START``, ``after_agent`` nodes before ``END``
(every end of the run goes through them).

Hook updates go through the state's reducers (``RemoveMessage(id=REMOVE_ALL_MESSAGES)``
clears the transcript, as summarization needs). A hook whose method is declared with
``can_jump_to`` (``@hook_config`` or the decorators' argument) may return ``jump_to``:
``"model"`` goes back to the step's first ``before_model`` node, ``"tools"`` to the
loop's tool node, ``"end"`` ends the run at once: no further model call, the status is
set (see ``finish``) and the ``after_agent`` nodes run. A ``before_model`` hook ending the
run stops it before the model could answer (a call limit, say): the status is
"max_iterations" and the answer the best one the run had before the hook's message.
``jump_to`` is never part of the state a user sees.

ReAct's first model step (``generate``) gets create_agent's node names
(``"{name}.before_model"``); other model steps' hooks add the step's (``".{step}"``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from loopgraphs.internals import Channels, declared_jumps, state_channels, untraced_callable
from loopgraphs.nodes.answer_check import settle_answer
from loopgraphs.nodes.driver import keeps_totals, node_callable, takes_runtime
from loopgraphs.nodes.middleware import Middleware, Middlewares, defines
from loopgraphs.nodes.own_reply import seeing_own_reply
from loopgraphs.nodes.parsing.react import final_answer_of
from loopgraphs.nodes.parsing.text import best_effort_answer, content_text
from loopgraphs.state import (
    CommonState,
    CompiledLoop,
    LoopBuilder,
    LoopRuntime,
    empty_usage,
    messages_of,
    scratch_of,
    starts_run,
    state_after,
)

FINISH = "finish"
STOPPED = "stopped"


def can_jump_to(middleware: Middleware, hook: str) -> list[str]:
    """Where a middleware's hook may jump, as its method declares (sync method first)."""
    for name in (hook, f"a{hook}"):
        method = getattr(type(middleware), name, None)
        if method is not None and method is not getattr(AgentMiddleware, name, None):
            declared = declared_jumps(method)
            if declared:
                return declared
    return []


def tool_jump_refused(middleware: Middleware, hook: str, loop: str) -> ValueError:
    """The error for a hook that may jump to 'tools' in a loop without a tool step."""
    return ValueError(
        f"middleware {middleware.name}: its {hook} hook may jump to 'tools', but {loop} "
        "has no tool step; use it with a loop that runs its tool calls itself (one whose "
        "graph has the call_tool step) or drop 'tools' from can_jump_to"
    )


def _hook_node(
    middleware: Middleware,
    hook: str,
    *,
    settles: Channels | None = None,
    follows: Channels | None = None,
) -> Runnable[Any, Any]:
    """A node running one hook: the sync method under ``invoke``, the async one under
    ``ainvoke`` (a sync-only hook runs in a worker thread there, as in create_agent).
    ``settles`` (the graph's channels): read a finished run's answer again after the
    hook's update (``_settled``); ``follows``: move the run's transcript start to where
    the update leaves the run's own messages (``_following``)."""
    sync = getattr(middleware, hook) if defines(middleware, hook) else None
    asynchronous = getattr(middleware, f"a{hook}") if defines(middleware, f"a{hook}") else None
    if hook == "after_model":
        sync, asynchronous = seeing_own_reply(sync, asynchronous)
    if hook == "after_model" and "end" in can_jump_to(middleware, hook):
        sync, asynchronous = _noting_close(sync, asynchronous)
    if follows is not None:
        sync, asynchronous = _keeping_start(sync, asynchronous, follows)
    if settles is not None:
        sync, asynchronous = _settling(sync, asynchronous, settles)
    return node_callable(sync, asynchronous, name=f"{middleware.name}.{hook}")


# A hook's update is what ``AgentMiddleware`` declares: values of the state's keys, of any
# schema (the caller's, the middleware's), or None.
HookUpdate = dict[str, Any] | None
# Routers and hook steps take the whole state as a Mapping: LangGraph reads a router's
# first parameter type as the schema of the state it passes, so a TypedDict there would
# hide the caller's and the middleware's keys from the routers and hooks they wrap.
Hook = Callable[[Mapping[str, object], LoopRuntime], HookUpdate]
AsyncHook = Callable[[Mapping[str, object], LoopRuntime], Awaitable[HookUpdate]]
# A router's answer: the next node, a ``Send`` to one, or several of them.
Route = str | Send | list[str | Send]
# A router of the state returning ``Send``s to a model step (see ``add_model_step``).
FanOut = Callable[..., list[Send]]


def _settling(
    sync: Hook | None, asynchronous: AsyncHook | None, channels: Channels
) -> tuple[Hook | None, AsyncHook | None]:
    """A hook's sync and async methods, each followed by ``_settled``."""

    def settled_sync(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert sync is not None
        return _settled(channels, state, sync(state, runtime))

    async def settled_async(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert asynchronous is not None
        return _settled(channels, state, await asynchronous(state, runtime))

    return (
        settled_sync if sync is not None else None,
        settled_async if asynchronous is not None else None,
    )


def _noting_close(
    sync: Hook | None, asynchronous: AsyncHook | None
) -> tuple[Hook | None, AsyncHook | None]:
    """A hook's sync and async methods, each followed by ``_closed``."""

    def noted_sync(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert sync is not None
        return _closed(sync(state, runtime))

    async def noted_async(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert asynchronous is not None
        return _closed(await asynchronous(state, runtime))

    return (
        noted_sync if sync is not None else None,
        noted_async if asynchronous is not None else None,
    )


def _closed(update: HookUpdate) -> HookUpdate:
    """An ``after_model`` hook's update, noting in the run's ``scratch`` that the hook
    ends the run with a closing message of its own (a tool-call limit's): that message
    is not the model's answer, and the run did not finish (see ``_finish_node``)."""
    if not isinstance(update, dict) or update.get("jump_to") != "end":
        return update
    messages = update.get("messages") or []
    if not any(isinstance(m, AIMessage) and not m.tool_calls for m in messages):
        return update
    return {**update, "scratch": {**(update.get("scratch") or {}), "hook_ended": True}}


def _keeping_start(
    sync: Hook | None, asynchronous: AsyncHook | None, channels: Channels
) -> tuple[Hook | None, AsyncHook | None]:
    """A hook's sync and async methods, each followed by ``_following``."""

    def kept_sync(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert sync is not None
        return _following(channels, state, sync(state, runtime))

    async def kept_async(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert asynchronous is not None
        return _following(channels, state, await asynchronous(state, runtime))

    return (
        kept_sync if sync is not None else None,
        kept_async if asynchronous is not None else None,
    )


def _following(channels: Channels, state: Mapping[str, object], update: HookUpdate) -> HookUpdate:
    """A hook's update, with the run's ``transcript_start`` moved to where the update
    leaves the run's own messages, when it removes or replaces messages (a trimming or a
    summary): after the last message of the caller's conversation that is left, else at
    the first of the run's own messages that is left (or the end)."""
    scratch = scratch_of(state)
    if not isinstance(update, dict) or "messages" not in update:
        return update
    if "transcript_start" not in scratch:
        return update
    before, start = messages_of(state), scratch["transcript_start"]
    given = {message.id for message in before[:start]}
    own = {message.id for message in before[start:]}
    after = state_after(channels, state, [{"messages": update["messages"]}])["messages"]
    kept = [index for index, message in enumerate(after) if message.id in given]
    ahead = [index for index, message in enumerate(after) if message.id in own]
    moved = kept[-1] + 1 if kept else (ahead[0] if ahead else len(after))
    if moved == start:
        return update
    return {**update, "scratch": {**(update.get("scratch") or {}), "transcript_start": moved}}


def _settled(channels: Channels, state: Mapping[str, object], update: HookUpdate) -> dict[str, Any]:
    """A hook's update, with the run's answer read again from the last message when the
    run has finished (the hook may have rewritten the reply: a PII redaction, say)."""
    update = dict(update or {})
    # The status has no reducer: an unfinished run is told without applying the update.
    if update.get("status", state.get("status")) not in ("completed", "max_iterations"):
        return update
    after = state_after(channels, state, [update])
    messages = after.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.tool_calls:
        return update
    text = content_text(last.content).strip()
    if text and text != after.get("answer"):
        update["answer"] = text
    return update


@dataclass
class Wiring:
    """Where a loop's edges really start and end once the hook nodes are in."""

    middleware: Middlewares
    loop: str
    tools_node: str | None = None
    agent_hooks: bool = True
    resets: Mapping[str, object] = field(default_factory=dict)
    main_step: str | None = None
    entries: dict[str, str] = field(default_factory=dict)
    exits: dict[str, str] = field(default_factory=dict)
    first_model_step: str | None = None
    start: str = START
    end: str = END

    def entry(self, node: str) -> str:
        """The node an edge to ``node`` enters."""
        if node == END:
            return self.end
        return self.entries.get(node, node)

    def exit(self, node: str) -> str:
        """The node a step's own edges leave from."""
        return self.exits.get(node, node)

    def exit_hook(self, step: str) -> tuple[Middleware, list[str]] | None:
        """The middleware whose ``after_model`` node a step's edges leave from, and where
        that hook may jump (None when the step has no such node or it cannot jump)."""
        if step not in self.exits:
            return None
        last = self.middleware.with_hook("after_model")[0]
        jumps = can_jump_to(last, "after_model")
        return (last, jumps) if jumps else None

    def jump_targets(self, step: str) -> dict[str, str]:
        """Where a jump from the hook a step's edges leave from goes."""
        found = self.exit_hook(step)
        if found is None:
            return {}
        _, jumps = found
        targets = {"model": self.entry(step), "tools": self.tools_node or "", "end": FINISH}
        return {jump: targets[jump] for jump in jumps if targets.get(jump)}

    def jumped(self, step: str, state: Mapping[str, Any]) -> str | None:
        """The node a ``jump_to`` left by a step's last hook leads to, if any."""
        wanted = state.get("jump_to")
        return self.jump_targets(step).get(wanted) if wanted else None

    @overload
    def route_to(self, target: str) -> str: ...
    @overload
    def route_to(self, target: Send) -> Send: ...
    @overload
    def route_to(self, target: list[Send]) -> list[Send]: ...
    @overload
    def route_to(self, target: Route) -> Route: ...
    def route_to(self, target: Route | list[Send]) -> Route | list[Send]:
        """A router's answer, with step names turned into their entries."""
        if isinstance(target, Send):
            return Send(self.entry(target.node), target.arg)
        if isinstance(target, list):
            return [self.route_to(item) for item in target]
        return self.entry(target)


class LoopGraph(LoopBuilder):
    """A loop's ``StateGraph``: ``add_edge`` and ``add_conditional_edges`` lead through the
    middleware's hook nodes (see the module docstring). Without middleware it is a plain
    ``StateGraph``."""

    wiring: Wiring
    _deferred: list[Callable[[], object]]

    def use(self, wiring: Wiring) -> None:
        """Set the wiring up: the agent hooks at ``START`` and ``END``."""
        self.wiring = wiring
        self._deferred = []
        mw = wiring.middleware
        after = mw.with_hook("after_agent") if wiring.agent_hooks else []
        if after:
            names = [f"{m.name}.after_agent" for m in after]
            for m, name in zip(after, names, strict=True):  # pragma: no mutate
                StateGraph.add_node(self, name, _hook_node(m, "after_agent"))  # pragma: no mutate
            wiring.end = names[-1]
            for index in range(len(after) - 1, 0, -1):
                self._hook_edge(after[index], "after_agent", names[index], names[index - 1])
            self._hook_edge(after[0], "after_agent", names[0], END)
        if any("end" in can_jump_to(m, hook) for m in mw.items for hook in _HOOK_NAMES):
            StateGraph.add_node(self, FINISH, _finish_node(wiring.resets))  # pragma: no mutate
            StateGraph.add_edge(self, FINISH, wiring.end)
        if any("end" in can_jump_to(m, "before_model") for m in mw.items):
            StateGraph.add_node(self, STOPPED, _finish_node(wiring.resets, stopped=True))
            StateGraph.add_edge(self, STOPPED, wiring.end)

    def add_model_step(
        self, step: str, *, settles_answer: bool = False, fan_out: FanOut | None = None
    ) -> None:
        """Put the ``before_model`` and ``after_model`` hooks around a model step. With
        ``settles_answer`` the step's answer is read again from the last message after the
        ``after_model`` hooks, in the node of the last one (a hook may have rewritten it:
        a PII redaction, say). With ``fan_out`` (a router of the state returning ``Send``s
        to the step) the last ``before_model`` node leaves through it: a step run as
        several concurrent tasks gets its hooks once, before all of them, and the tasks
        read the state as the hooks left it."""
        wiring = getattr(self, "wiring", None)
        if wiring is None:
            return
        if wiring.first_model_step is None:
            wiring.first_model_step = wiring.main_step or step
        suffix = "" if step == wiring.first_model_step else f".{step}"
        before = wiring.middleware.with_hook("before_model")
        after = wiring.middleware.with_hook("after_model")
        names = [f"{m.name}.before_model{suffix}" for m in before]
        for m, name in zip(before, names, strict=True):  # pragma: no mutate
            hook_node = _hook_node(m, "before_model", follows=state_channels(self))
            StateGraph.add_node(self, name, hook_node)  # pragma: no mutate
        for index, m in enumerate(before):
            last = index + 1 == len(names)
            target = step if last else names[index + 1]
            spread = fan_out if last else None
            self._hook_edge(m, "before_model", names[index], target, step=step, fan_out=spread)
        if names:
            wiring.entries[step] = names[0]
        after_names = [f"{m.name}.after_model{suffix}" for m in after]
        for index, (m, name) in enumerate(zip(after, after_names, strict=True)):
            # The last hook to run reads the answer again after its update (``_settled``).
            settles = state_channels(self) if settles_answer and index == 0 else None
            hook_node = _hook_node(m, "after_model", settles=settles, follows=state_channels(self))
            StateGraph.add_node(self, name, hook_node)
        if after_names:
            StateGraph.add_edge(self, step, after_names[-1])
            for index in range(len(after) - 1, 0, -1):
                self._hook_edge(
                    after[index],
                    "after_model",
                    after_names[index],
                    after_names[index - 1],
                    step=step,
                )
            wiring.exits[step] = after_names[0]

    def finish_hooks(self) -> None:
        """Wire the ``before_agent`` hooks between ``START`` and the loop's first node, and
        the last ``after_model`` node of each step to where the step's edges go (call
        after the loop's own edges are in). A loop without the tool step it was wired for
        refuses a model hook that may jump to 'tools'."""
        wiring = getattr(self, "wiring", None)
        if wiring is not None and wiring.tools_node not in self.nodes:
            wiring.tools_node = None  # its tools, if any, run in a loop inside its steps
            for hook in ("before_model", "after_model"):
                for middleware in wiring.middleware.with_hook(hook):
                    if "tools" in can_jump_to(middleware, hook):
                        raise tool_jump_refused(middleware, hook, wiring.loop)
        if wiring is None or not wiring.agent_hooks:
            return
        before = wiring.middleware.with_hook("before_agent")
        if not before:
            return
        names = [f"{m.name}.before_agent" for m in before]
        for m, name in zip(before, names, strict=True):  # pragma: no mutate
            StateGraph.add_node(self, name, _hook_node(m, "before_agent"))  # pragma: no mutate
        StateGraph.add_edge(self, START, names[0])
        first = wiring.entry(wiring.start)
        for index, m in enumerate(before):
            target = names[index + 1] if index + 1 < len(names) else first
            self._hook_edge(m, "before_agent", names[index], target)

    def _hook_edge(
        self,
        middleware: Middleware,
        hook: str,
        source: str,
        default: str,
        *,
        step: str | None = None,
        fan_out: FanOut | None = None,
    ) -> None:
        """The edge out of a hook node: to ``default`` (through the ``fan_out`` router when
        given), or where ``jump_to`` says."""
        wiring = self.wiring
        jumps = can_jump_to(middleware, hook)
        if not jumps:
            if fan_out is None:
                StateGraph.add_edge(self, source, default)
            else:
                spread = fan_out

                # LangGraph reads a router's state annotation as the state it passes: the
                # loop's fan-out router, typed with the loop's state, must still see the
                # caller's and the middleware's keys, which its tasks carry to the step.
                def fan(state: Mapping[str, Any]) -> list[Send]:
                    return spread(state)

                path = untraced_callable(fan, None, name=f"{source}.fan_out")  # pragma: no mutate
                StateGraph.add_conditional_edges(self, source, path, [default])
            return
        if "tools" in jumps and wiring.tools_node is None:
            raise tool_jump_refused(middleware, hook, wiring.loop)
        model_step = step or wiring.first_model_step
        targets = {
            "model": wiring.entry(model_step) if model_step else default,
            "tools": wiring.tools_node or default,
            "end": STOPPED if hook == "before_model" else FINISH,
        }

        def jump(state: Mapping[str, Any]) -> str | list[Send]:
            wanted = state.get("jump_to")
            if wanted in jumps and wanted in targets:
                return targets[wanted]
            return fan_out(state) if fan_out is not None else default

        destinations = [default, *(targets[j] for j in jumps if j in targets)]
        path = untraced_callable(jump, None, name=f"{source}.jump")  # pragma: no mutate
        StateGraph.add_conditional_edges(self, source, path, list(dict.fromkeys(destinations)))

    def compile(self, *args: Any, **kwargs: Any) -> CompiledLoop:
        """Compile the graph, after adding the edges that lead to steps added later than
        them (see ``_later``)."""
        pending = getattr(self, "_deferred", [])
        while pending:
            pending.pop(0)()
        return super().compile(*args, **kwargs)

    def _later(self, targets: str | list[str], add: Callable[[], object]) -> bool:
        """Whether an edge to ``targets`` waits for compile time, and if so keep ``add``
        for then: an edge to a step not added yet would enter the step itself, before its
        ``before_model`` hook nodes exist, so a router naming it would find no branch."""
        names = targets if isinstance(targets, list) else [targets]
        if all(name == END or name in self.nodes for name in names):
            return False
        self._deferred.append(add)
        return True

    def add_edge(self, start_key: str | list[str], end_key: str) -> LoopGraph:
        wiring = getattr(self, "wiring", None)
        if wiring is None:
            return super().add_edge(start_key, end_key)  # type: ignore[return-value]
        if self._later(end_key, lambda: self.add_edge(start_key, end_key)):
            return self
        if start_key == START:
            wiring.start = end_key
            if wiring.agent_hooks and wiring.middleware.with_hook("before_agent"):
                return self
            return super().add_edge(START, wiring.entry(end_key))  # type: ignore[return-value]
        if isinstance(start_key, str) and wiring.jump_targets(start_key):
            targets = wiring.jump_targets(start_key)
            default = wiring.entry(end_key)

            def leave(state: Mapping[str, Any]) -> str:
                return wiring.jumped(start_key, state) or default

            path = untraced_callable(leave, None, name=f"{start_key}.jump")
            destinations = list(dict.fromkeys([default, *targets.values()]))
            super().add_conditional_edges(wiring.exit(start_key), path, destinations)
            return self
        starts = [wiring.exit(k) for k in start_key] if isinstance(start_key, list) else None
        start = starts if starts is not None else wiring.exit(start_key)  # type: ignore[arg-type]
        return super().add_edge(start, wiring.entry(end_key))  # type: ignore[return-value]

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None) -> LoopGraph:
        wiring = getattr(self, "wiring", None)
        if wiring is None:
            return super().add_conditional_edges(source, path, path_map)  # type: ignore[return-value]
        if path_map and self._later(
            list(path_map), lambda: self.add_conditional_edges(source, path, path_map)
        ):
            return self
        mapped = [wiring.entry(target) for target in path_map] if path_map else path_map
        if inspect.isfunction(path):
            path = _mapped_router(path, wiring)
        return super().add_conditional_edges(  # type: ignore[return-value]
            wiring.exit(source), path, mapped
        )


def _mapped_router(router: Callable[..., Route], wiring: Wiring) -> Callable[..., Route]:
    """A plain router function whose answers lead through the hook nodes (its parameters
    kept, as LangGraph passes the runtime by name)."""
    if takes_runtime(router):

        def with_runtime(state: Mapping[str, Any], runtime: LoopRuntime) -> Route:
            return wiring.route_to(router(state, runtime))

        return with_runtime

    def without_runtime(state: Mapping[str, Any]) -> Route:
        return wiring.route_to(router(state))

    return without_runtime


_HOOK_NAMES = ("before_agent", "before_model", "after_model", "after_agent")


def _finish_node(resets: Mapping[str, object], *, stopped: bool = False) -> Runnable[Any, Any]:
    """The node a jump to ``"end"`` goes to: the run ends with the transcript's last
    answer (``completed`` when the last message is an answer, else ``max_iterations``).
    With ``stopped`` (a ``before_model`` hook's jump: the model was not let answer), and
    after an ``after_model`` hook that closed the run with a message of its own, the run
    ends ``max_iterations`` with the best answer its messages held before that closing
    message. A jump before the run's first step also resets the run's counters
    (``resets``)."""

    def finish(state: CommonState) -> Mapping[str, object]:
        new_run = starts_run(state)
        if not new_run and state.get("status") != "running":
            return {}  # the run had already ended
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        answer = last if isinstance(last, AIMessage) and not last.tool_calls else None
        answered = answer is not None
        if stopped or scratch_of(state).get("hook_ended"):
            update: CommonState = {
                "status": "max_iterations",
                "answer": best_effort_answer(_before_closing(messages, answer)),
                "error": "",
                "scratch": {"hook_ended": True},  # a loop running this one ends too
            }
        else:
            said = content_text(last.content) if answered and last is not None else ""
            text = final_answer_of(said).strip()  # the loop's parse step may not have run
            update = {
                "status": "completed" if answered else "max_iterations",
                "answer": text or best_effort_answer(_before_closing(messages, None)),
                "error": "",
            }
        if update["answer"]:  # the hook ended the run: no answer is needed, but a
            update = settle_answer(state, update)  # given one must be the model's own
        return {**resets, **update} if new_run else update

    return untraced_callable(finish, None, name=STOPPED if stopped else FINISH)


def _before_closing(messages: list[AnyMessage], closing: AIMessage | None) -> list[AnyMessage]:
    """The run's own messages (after the last human message) without the hook's ``closing``
    message and its copies (a step inside the loop may have ended on it already)."""
    start = next(
        (i + 1 for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
        0,
    )
    if closing is None:
        return messages[start:]
    return [
        m
        for m in messages[start:]
        if not (isinstance(m, AIMessage) and m.content == closing.content and not m.tool_calls)
    ]


def wire(
    builder: LoopBuilder,
    middleware: Middlewares,
    *,
    loop: str,
    tools_node: str | None = None,
    main_step: str | None = None,
    agent_hooks: bool = True,
) -> None:
    """Start a loop's hook wiring, before its nodes and edges are added (no-op without
    hooks). ``agent_hooks=False`` leaves ``before_agent``/``after_agent`` out (ReAct run
    inside another loop: they run around the outer loop)."""
    hooks = _HOOK_NAMES if agent_hooks else ("before_model", "after_model")
    if not isinstance(builder, LoopGraph) or not any(middleware.with_hook(h) for h in hooks):
        return
    zero = {"llm_calls": 0, "retries": 0, "usage": empty_usage()}
    resets = zero if keeps_totals(builder) else dict.fromkeys(zero)
    builder.use(Wiring(middleware, loop, tools_node, agent_hooks, resets, main_step=main_step))


__all__ = ["FINISH", "STOPPED", "LoopGraph", "Wiring", "can_jump_to", "wire"]
