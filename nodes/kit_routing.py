"""How the kit hands a loop's steps and routers what they take: a step's logic as the
node runner drives it (``as_logic``), a router of ``(state, step)`` as the graph calls
routers (``kit_router``), the steps a router's ``-> Literal[...]`` names
(``literal_targets``), and the start's way on while the run goes on (``while_running``)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langgraph.graph import END
from langgraph.types import Send

from loopgraphs.nodes.driver import LogicFactory, takes_runtime
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.routing import Router
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.state import LoopRuntime

# A step's logic: ``logic(state, step)``, a function returning the keys it changes or a
# generator that yields the kit's requests and returns them (the state is the loop's own
# TypedDict, so the first parameter stays open).
StepLogic = Callable[[Any, Step[Any]], Any]
# A router: ``router(state)`` or ``router(state, step)``, naming the next step (or
# ``Send``s into a step run as several tasks).
KitRouter = Callable[..., str | list[Send]]


def as_logic(step: StepLogic) -> LogicFactory:
    """A step's logic as the node runner drives it: a generator function as it is, a
    plain function of ``(state, step)`` as a generator that returns its update."""
    called = step.func if isinstance(step, functools.partial) else step
    if inspect.isgeneratorfunction(called):
        return step

    @functools.wraps(step)
    def logic(state: Any, kit_step: Step[Any]) -> Any:
        yield from ()
        return step(state, kit_step)

    return logic


def literal_targets(router: Callable[..., object]) -> list[str]:
    """The steps a router's ``-> Literal[...]`` return annotation names (empty when it
    has none)."""
    try:
        hint = typing.get_type_hints(router).get("return")
    except Exception:
        return []
    if typing.get_origin(hint) is not Literal:
        return []
    return [str(value) for value in typing.get_args(hint)]


def kit_router(router: KitRouter, settings: LoopSettings, plan: GraphPlan, source: str) -> Router:
    """``router(state)`` or ``router(state, step)`` as the graph calls routers: the step
    (the run's settings with its context, its options, its budget) made from the
    runtime."""
    takes_step = _positional(router) > 1
    if not takes_step:
        return router
    name = getattr(router, "__name__", f"route_{source}")

    def with_step(state: Mapping[str, object], runtime: LoopRuntime) -> str | list[Send]:
        return router(state, Step(settings.for_run(runtime), runtime, {}, source, plan))

    with_step.__name__ = name
    return with_step


def _positional(function: Callable[..., object]) -> int:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = inspect.signature(function).parameters.values()
    return sum(parameter.kind in kinds for parameter in parameters)


def while_running(router: Router) -> Router:
    """``router``, while the run's status is "running"; the end once the run is over."""
    if takes_runtime(router):

        def running_with(state: Mapping[str, object], runtime: LoopRuntime) -> str | list[Send]:
            return router(state, runtime) if state.get("status") == "running" else END

        return running_with

    def running(state: Mapping[str, object]) -> str | list[Send]:
        return router(state) if state.get("status") == "running" else END

    return running


__all__ = ["KitRouter", "StepLogic", "as_logic", "kit_router", "literal_targets", "while_running"]
