"""What a loop step's logic is handed besides the state: ``Step``.

The node runner (``loopgraphs.nodes.driver``) resolves the run's settings once when a
step starts and hands them to the step's logic with the step's runtime and config, so no
logic looks them up again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from langchain_core.runnables import RunnableConfig

from loopgraphs.nodes.generate import node_caller
from loopgraphs.nodes.model_call import ModelCaller
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import LoopRuntime

OptionsT = TypeVar("OptionsT", bound=Mapping[str, Any])


@dataclass(frozen=True)
class Step(Generic[OptionsT]):
    """One run of a loop step: what its logic (and its router) is handed besides the state.

    Attributes:
        run: The run's settings: the factory's, with the run's context applied
            (``LoopSettings.for_run``).
        runtime: The step's LangGraph runtime (the run's context, store, stream writer).
        config: The step's config.
        node: The name of the node running (what the run budget counts from).
        plan: The loop's graph as the kit counts its steps (None outside a loop built
            with ``LoopBuild``).
    """

    run: LoopSettings
    runtime: LoopRuntime
    config: RunnableConfig
    node: str = ""
    plan: GraphPlan | None = None

    @property
    def options(self) -> OptionsT:
        """The loop's own keywords (its budgets and switches), resolved: each one the
        caller gave, the rest at their defaults."""
        return cast(OptionsT, self.run.options)

    def ask(self, state: Mapping[str, object]) -> ModelCaller:
        """The step's model calls: the run's model, system prompt (as ``state`` makes
        it), middleware, and the state and runtime each request carries."""
        return node_caller(self.run, state, self.runtime)

    def may_continue(self, state: Mapping[str, object], *, tools: bool = False) -> bool:
        """Whether the run may go round its cycle once more from this step and still
        finish: the graph steps that takes, counted by the kit from the loop's wiring
        (see ``loopgraphs.nodes.plan``), are left under ``recursion_limit``, and, with
        ``tools``, the run may still call tools (``max_tool_calls``)."""
        needed = self.plan.counts(self.node).another_round if self.plan else 0
        return self.run.budget.allows(state, steps=needed, tools=tools)

    def may_finish(
        self,
        state: Mapping[str, object],
        *,
        through: str | None = None,
        longest: bool = False,
    ) -> bool:
        """Whether the graph steps the shortest way from this step to the end takes (its
        own ``after_model`` hook nodes included) are left under ``recursion_limit``.

        Args:
            state: The loop's state (its ``remaining_steps``).
            through: A step this one leads to, for the way to the end through it: that
                step's own supersteps and the shortest way from it to the end (a step
                that may end the run itself asks whether its ``final_answer`` still fits).
            longest: Count the longest way to the end instead (each step on it once): for
                a step that hands work to the steps after it (tool calls to run and read)
                only when all of them still fit.
        """
        needed = 0
        if self.plan is not None:
            longest_way = self.plan.counts(self.node).finish
            needed = longest_way if longest else self.plan.shortest_finish(self.node, through)
        return self.run.budget.allows(state, steps=needed)


def check_step(step: object, node: str) -> None:
    """Refuse a kit node's call whose ``step`` is not the ``Step`` a loop's step is handed.

    Raises:
        TypeError: naming the node and where its ``step`` comes from.
    """
    if not isinstance(step, Step):
        raise TypeError(
            f"{node}(step, state, ...): step must be the Step a loop's step is handed, as "
            "in def my_step(state, step): ... added with LoopBuild.step; got "
            f"{type(step).__name__}"
        )


__all__ = ["Step", "check_step"]
