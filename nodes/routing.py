"""How a loop's steps lead to the next: routers, and steps that route themselves.

``route`` adds a conditional edge whose router first ends the run on an error or after a
middleware hook ended it.
``add_routed_step`` adds a step that runs its router itself, on the state as the step's
own writes leave it (``loopgraphs.state.state_after``), and returns the next step as a
``Command``: a conditional edge would have LangGraph copy every channel of the state
after the step.
Both lead through the middleware's hook nodes where there are some (see
``loopgraphs.nodes.hooks``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.graph import END
from langgraph.types import Send

from loopgraphs.internals import state_channels, untraced_callable
from loopgraphs.nodes.driver import LogicFactory, NextStep, add_step, takes_runtime
from loopgraphs.nodes.hooks import Wiring
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import LoopBuilder, LoopRuntime, scratch_of, state_after

# Routers and hook steps take the whole state as a Mapping: LangGraph reads a router's
# first parameter type as the schema of the state it passes, so a TypedDict there would
# hide the caller's and the middleware's keys from the routers and hooks they wrap.
Router = Callable[..., str | list[Send]]


def route(
    builder: LoopBuilder,
    source: str,
    router: Router,
    targets: Sequence[str],
) -> None:
    """Add a conditional edge from ``source``: the run ends when it is over (``run_over``),
    otherwise ``router(state)`` (or ``router(state, runtime)``) names the next node, or
    returns ``Send`` packets for a fan-out into ``targets``.

    The router runs as LangGraph's own callable without tracing, in the caller's thread
    also under ``ainvoke`` (a plain function would be sent to a worker thread there)."""

    def with_runtime(state: Mapping[str, object], runtime: LoopRuntime) -> str | list[Send]:
        return END if run_over(state) else router(state, runtime)

    def without_runtime(state: Mapping[str, object]) -> str | list[Send]:
        return END if run_over(state) else router(state)

    # LangGraph has no runtime to give when it routes an update_state write, so a router
    # that does not need one must not ask for it.
    guarded: Router = with_runtime if takes_runtime(router) else without_runtime
    wiring = getattr(builder, "wiring", None)
    if wiring is not None:
        guarded = _through_hooks(guarded, wiring, source)
        targets = [*targets, *wiring.jump_targets(source).values()]
    named = router.func if isinstance(router, functools.partial) else router
    name = getattr(named, "__name__", None) or f"route_{source}"
    path = untraced_callable(guarded, None, name=name)  # pragma: no mutate
    builder.add_conditional_edges(source, path, list(dict.fromkeys([*targets, END])))


def add_routed_step(
    builder: LoopBuilder,
    name: str,
    logic: LogicFactory,
    settings: LoopSettings,
    router: Router,
    targets: Sequence[str],
    **step: Any,
) -> None:
    """Add a step (see ``add_step``, which takes ``step``'s options) and its way out:
    ``router`` names the next step among ``targets`` as ``route`` describes.

    When no middleware has model hooks (so no hook node stands after the step or before
    a target), the step's node runs the router itself on the state its writes leave and
    returns the answer as a ``Command(goto=...)``, its ``targets`` declared for the drawn
    graph. A conditional edge would instead have LangGraph copy every channel of the state
    to read it again after each step, a cost that grows with the state's keys. Otherwise
    the router is a conditional edge from the step's last hook node."""
    wiring: Wiring | None = getattr(builder, "wiring", None)
    if wiring is not None and (
        wiring.middleware.with_hook("before_model") or wiring.middleware.with_hook("after_model")
    ):
        add_step(builder, name, logic, settings, **step)
        route(builder, name, router, targets)
        return
    next_step, destinations = chosen_step(builder, router, targets)
    add_step(builder, name, logic, settings, next_step=next_step, destinations=destinations, **step)


def chosen_step(
    builder: LoopBuilder, router: Router, targets: Sequence[str]
) -> tuple[NextStep, tuple[str, ...]]:
    """For a node that names the step after it itself (a ``Command(goto=...)``): the
    function that names it, ``next_step(state, outputs, runtime)``, and the nodes it may
    name, declared for the drawn graph. ``next_step`` reads the state as the node's
    ``outputs`` leave it, ends the run when it is over (``run_over``) and otherwise asks
    ``router``, its answers leading through the middleware's hook nodes."""
    wiring: Wiring | None = getattr(builder, "wiring", None)
    wants_runtime = takes_runtime(router)
    channels = state_channels(builder)

    def next_step(
        state: Mapping[str, object], outputs: Sequence[object], runtime: LoopRuntime
    ) -> str | list[Send]:
        after = state_after(channels, state, outputs)
        if run_over(after):
            return wiring.entry(END) if wiring is not None else END
        chosen = router(after, runtime) if wants_runtime else router(after)
        return wiring.route_to(chosen) if wiring is not None else chosen

    ends = [*targets, END]
    named = [wiring.entry(t) for t in ends] if wiring is not None else ends
    return next_step, tuple(dict.fromkeys(named))


def _through_hooks(router: Router, wiring: Wiring, source: str) -> Router:
    """A router whose answers lead through the middleware's hook nodes (see
    ``loopgraphs.nodes.hooks``), after a ``jump_to`` the step's last hook left."""

    def with_runtime(state: Mapping[str, object], runtime: LoopRuntime) -> str | list[Send]:
        return wiring.jumped(source, state) or wiring.route_to(router(state, runtime))

    def without_runtime(state: Mapping[str, object]) -> str | list[Send]:
        return wiring.jumped(source, state) or wiring.route_to(router(state))

    return with_runtime if takes_runtime(router) else without_runtime


def run_over(state: Mapping[str, object]) -> bool:
    """Whether the run ends whatever the router would say: its status is "error", or a
    middleware hook ended it (in a ReAct run inside the loop, see ``Bookkeeping.hook_ended``)."""
    return state.get("status") == "error" or bool(scratch_of(state).get("hook_ended"))


def while_running(target: str) -> Router:
    """A router to ``target`` while the run's status is "running", and to the end after."""

    def running(state: Mapping[str, object]) -> str:
        return target if state.get("status") == "running" else END

    return running
