"""The one way every loop starts a run (``starter``): in a ``prepare`` node of its own
(``add_start``), or in the loop's first step, when the step runs first in a new run.

The start checks the input before any model call, resets the run's counters and
bookkeeping, records the tool mode the run starts in, and writes the loop's own starting
values (its ``opening``), so a run starts the same way in every loop, on a new thread and
on one that already holds runs. A start made in the first step saves the run a superstep
and a checkpoint: the kit does so where no middleware hook runs before that step (see
``loopgraphs.nodes.loop.LoopBuild.start``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START
from langgraph.types import Command

from loopgraphs.internals import state_channels
from loopgraphs.nodes.driver import changed_only, keeps_totals
from loopgraphs.nodes.hooks import can_jump_to
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.routing import Router, chosen_step
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_loop import check_history
from loopgraphs.nodes.tool_modes import resolve_mode
from loopgraphs.state import CommonState, LoopBuilder, LoopRuntime, run_defaults, start_run

# A loop's own starting values: ``opening(state, step)``, the run's settings resolved in
# ``step.run`` (the state is the loop's own state type, so the first parameter stays open).
Opening = Callable[[Any, Step[Any]], Mapping[str, object]]


Starter = Callable[[Any, LoopRuntime, RunnableConfig], dict[str, object]]
"""A run's start: the update that starts a run on ``state`` (see ``starter``)."""


def starter(
    builder: LoopBuilder,
    settings: LoopSettings,
    opening: Opening,
    *,
    scratch: Mapping[str, object] | None = None,
    plan: GraphPlan | None = None,
    node: str = "prepare",
) -> Starter:
    """The start of a run of the loop ``builder`` builds: ``start(state, runtime, config)`` is the
    update that starts a run (see ``add_start``); the opening's ``step`` is ``node``'s.

    Raises:
        ValueError: when started, on a history no model could read (``check_history``).
    """
    fresh = run_defaults if keeps_totals(builder) else start_run
    # The errors of a fan-out step's tasks (``FanOutState``): none yet.
    failures = {"failures": None} if "failures" in state_channels(builder) else {}
    own_scratch = dict(scratch or {})
    # A before_model hook that may jump to the tools runs the calls the input leaves
    # open before the model sees them (create_agent's pattern): the check would refuse
    # the history it is about to complete.
    completes_calls = any(
        "tools" in can_jump_to(m, "before_model") for m in settings.middleware.items
    )

    def start(
        state: Mapping[str, Any], runtime: LoopRuntime, config: RunnableConfig
    ) -> dict[str, object]:
        if not completes_calls:
            check_history(state.get("messages") or [])  # before any model call
        run = settings.for_run(runtime)
        base = {**fresh(state, **own_scratch), **failures}
        step: Step[Any] = Step(run, runtime, config, node, plan)
        update = {**base, "tool_mode": resolve_mode(run), **opening(state, step)}
        if base["status"] == "error":
            update.update(status="error", error=base["error"])
        return update

    return start


def add_start(
    builder: LoopBuilder,
    settings: LoopSettings,
    opening: Opening,
    then: Router,
    targets: Sequence[str],
    *,
    scratch: Mapping[str, object] | None = None,
    plan: GraphPlan | None = None,
) -> None:
    """Add the run's first node, ``prepare``, after ``START``, and its way on: the step
    ``then(state)`` names among ``targets`` (or ``Send`` packets into them), unless the
    run is over at once (``run_over``).

    It raises on a history no model could read (``check_history``; not when a
    ``before_model`` hook may jump to the tools, which runs the calls the input leaves
    open), before any model call. Otherwise it writes the run's starting values (those
    that change: see ``loopgraphs.nodes.driver.changed_only``): the
    counters reset (to zero where the graph keeps running totals, else through their
    reducers), a new ``scratch`` holding the loop's own starting ``scratch`` values, the
    tool mode the run starts in, and then the loop's ``opening(state, step)``, which may
    end the run at once (``status="max_iterations"`` when too few graph steps are left
    for it). A run without input messages ends with ``status="error"`` whatever the
    opening says. A state with ``failures`` (see ``loopgraphs.nodes.fan_out``) starts with
    none. The node reads the whole state, so ``then`` sees the caller's keys too. The
    node picks the next step itself (a ``Command``), as a routed step does (see
    ``loopgraphs.nodes.routing.add_routed_step``): no router copies the state at the
    start of every run.
    """
    start = starter(builder, settings, opening, scratch=scratch, plan=plan)

    def prepare(state: CommonState, config: RunnableConfig, runtime: LoopRuntime) -> Command[Any]:
        # The node's config as LangGraph passes it: a sync node under ``ainvoke`` on
        # Python 3.10 runs where ``get_config()`` cannot find it.
        update = start(state, runtime, config)
        goto = next_step(state, [update], runtime)
        return Command(update=changed_only(channels, state, update), goto=goto)

    next_step, destinations = chosen_step(builder, then, targets)
    channels = state_channels(builder)
    # LangGraph passes a node both its config and its runtime by parameter name; the
    # overloads of ``add_node`` type a node taking one or the other.
    node: Any = prepare
    builder.add_node("prepare", node, input_schema=builder.state_schema, destinations=destinations)
    builder.add_edge(START, "prepare")
