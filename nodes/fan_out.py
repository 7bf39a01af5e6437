"""Steps run as concurrent tasks: one task per ``Send``, their errors kept apart.

A loop's step may run as several tasks side by side (Tree-of-Thoughts grows every branch
of its beam at once): ``LoopBuild.step(name, logic, fan_out=tasks, then=join)``. Whenever
a router (or the run's start) names the step, ``tasks(state)`` gives one ``Send`` to the
step per task, each carrying the state its task reads (the run's state and what the task
is about). With middleware, the step's ``before_model`` hooks run once, before all the
tasks, which read the state as the hooks left it. The tasks join at the step ``then``.

Tasks side by side cannot all write the run's ``status`` (it takes one value per step):
a task that fails writes its error to ``failures`` instead (``FanOutState``), its model
calls and retries still counted, and the step the tasks join at ends the run with it.
The kit empties ``failures`` when a run starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from langgraph.types import RetryPolicy, Send
from typing_extensions import TypedDict

from loopgraphs.internals import has_reducer, state_channels
from loopgraphs.nodes.driver import Logic, LogicFactory, add_step, guard, takes_runtime
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.state import LoopBuilder

# A fan-out step's tasks: ``tasks(state)``, one ``Send`` to the step per task.
Tasks = Callable[[Any], list[Send]]
# A router as the graph calls it: ``router(state)`` or ``router(state, runtime)``.
GraphRouter = Callable[..., str | list[Send]]


def add_failures(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer: failures of concurrent tasks add up (one task's error never clobbers
    another's); ``None`` empties the list (a run's start)."""
    if right is None:
        return []
    return [*(left or []), *right]


class FanOutState(TypedDict, total=False):
    """What the state of a loop with a fan-out step declares besides ``LoopState``: the
    errors of its tasks, in the order they came (see the module's docstring)."""

    failures: Annotated[list[str], add_failures]


def as_failure(update: Mapping[str, object]) -> dict[str, object]:
    """A task's update as its step keeps it: an error becomes a failure record (its
    calls and retries counted, a refusal's reply kept for the chat), so that no task's
    status write clobbers another's; any other update stays as it is."""
    if update.get("status") != "error":
        return dict(update)
    failed: dict[str, object] = {
        "failures": [update.get("error") or "task failed"],
        "llm_calls": update.get("llm_calls", 0),
        "retries": update.get("retries", 0),
    }
    if "messages" in update:
        failed["messages"] = update["messages"]
    return failed


def contained(logic: LogicFactory, policy: RetryPolicy | None) -> LogicFactory:
    """A task's logic behind the step guard (``guard``: a failure the retry policy retries
    escapes to LangGraph), its error written as a failure record (``as_failure``)."""
    guarded = guard(logic, policy)

    def run(state: Any, step: Step[Any]) -> Logic:
        return as_failure((yield from guarded(state, step)))

    return run


def add_fan_out(
    graph: LoopBuilder,
    settings: LoopSettings,
    plan: GraphPlan,
    name: str,
    logic: LogicFactory,
    tasks: Tasks,
    then: object,
    model: bool,
) -> None:
    """Add a step run as concurrent tasks (see the module's docstring) and its way on to
    ``then``, where its tasks join.

    Raises:
        ValueError: ``then`` is not a step's name, or a step leading to this one was
            added before it (its router could not send the tasks).
        TypeError: the loop's state lacks ``failures``, or its counters have no reducers
            (``TotalsState``), so the tasks' writes could not add up.
    """
    if not isinstance(then, str):
        raise ValueError(f"the tasks of step {name!r} join at one step: give then= its name")
    if name in plan.successors:
        raise ValueError(f"add step {name!r}, run as tasks, before the steps that lead to it")
    channels = state_channels(graph)
    if not has_reducer(channels, "failures") or not has_reducer(channels, "llm_calls"):
        raise TypeError(
            f"step {name!r} runs as tasks side by side: the loop's state must extend "
            "FanOutState and LoopState (not TotalsState), whose keys add their writes up"
        )
    add_step(
        graph, name, contained(logic, settings.retry_policy), settings, guarded=False, plan=plan
    )
    if model and hasattr(graph, "add_model_step"):
        graph.add_model_step(name, fan_out=tasks)
    graph.add_edge(name, then)
    plan.lead(name, [then])


def spreading(
    router: GraphRouter, fan_outs: Mapping[str, Tasks], targets: Sequence[str], graph: LoopBuilder
) -> GraphRouter:
    """``router`` (leading to ``targets``), its answer naming a fan-out step turned into
    the step's tasks; where ``before_model`` hook nodes stand before the step, the last
    of them sends the tasks and the answer stays the step's name."""
    fan_outs = {name: tasks for name, tasks in fan_outs.items() if name in targets}
    if not fan_outs:
        return router
    wiring = getattr(graph, "wiring", None)
    hooked: Mapping[str, str] = wiring.entries if wiring is not None else {}

    def spread(state: Mapping[str, object], chosen: str | list[Send]) -> str | list[Send]:
        if isinstance(chosen, str) and chosen in fan_outs and chosen not in hooked:
            return fan_outs[chosen](state)
        return chosen

    def with_runtime(state: Mapping[str, object], runtime: Any) -> str | list[Send]:
        return spread(state, router(state, runtime))

    def without_runtime(state: Mapping[str, object]) -> str | list[Send]:
        return spread(state, router(state))

    chosen = with_runtime if takes_runtime(router) else without_runtime
    chosen.__name__ = getattr(router, "__name__", chosen.__name__)
    return chosen


__all__ = [
    "FanOutState",
    "Tasks",
    "add_failures",
    "add_fan_out",
    "as_failure",
    "contained",
    "spreading",
]
