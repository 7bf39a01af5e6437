"""ReAct run as one step of another loop: Plan-and-Execute's steps, Reflexion's episodes."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from loopgraphs.graphs.react import build_react
from loopgraphs.nodes.build import caller_keys, caller_reducers, subgraph_options
from loopgraphs.nodes.runner import Call
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import empty_usage

# Supersteps ReAct needs: up to three per iteration (generate, review, call_tool) and a
# margin for tool selection, the final answer and synthesis.
REACT_STEPS_PER_ITERATION = 3
REACT_EXTRA_STEPS = 10


@dataclass(frozen=True)
class ReactCall(Call):
    """A run of the ReAct subgraph inside a node, with enough supersteps for its budget.

    The subgraph counts its supersteps on its own; a small ``recursion_limit`` meant for
    the outer graph would otherwise cut a step's ReAct loop short (or end it in a
    recursion error), so the subgraph gets at least what ``max_iterations`` needs.
    """

    max_iterations: int = 10

    def _config(self, config: RunnableConfig) -> RunnableConfig:
        needed = REACT_STEPS_PER_ITERATION * self.max_iterations + REACT_EXTRA_STEPS
        limit = max(int(config.get("recursion_limit") or 0), needed)
        return {**config, "recursion_limit": limit}

    def invoke(self, config: RunnableConfig) -> Any:
        return self.runnable.invoke(self.input, self._config(config))

    async def ainvoke(self, config: RunnableConfig) -> Any:
        return await self.runnable.ainvoke(self.input, self._config(config))


class ReactSubgraph:
    """The ReAct graph compiled for ``settings`` (without a structured response) and the
    caller's schemas in ``options``, run from inside a node of another loop. The caller's
    own state keys go into every run and come back from it, so tools can read and update
    them."""

    def __init__(self, settings: LoopSettings, options: Mapping[str, Any]) -> None:
        self.settings = dataclasses.replace(settings, response_format=None)
        self.graph = build_react(
            self.settings, subgraph_options(options), agent_hooks=False
        ).compile(name="react")
        self.extra = caller_keys(options)
        self.reducers = caller_reducers(options)

    def run(
        self, runtime: Runtime[Any], state: Mapping[str, Any], messages: Sequence[AnyMessage]
    ) -> Generator[Call, Any, tuple[dict[str, Any], dict[str, Any]]]:
        """Run ReAct on ``messages`` with the run's iteration budget.

        Args:
            runtime: The calling node's runtime (its context may change ``max_iterations``).
            state: The calling loop's state.
            messages: ReAct's input conversation.

        Returns:
            ReAct's output, and the calling loop's update for it: the model calls, retries
            and tokens it spent, the tool mode it ran in and the caller's own keys.
        """
        run = self.settings.for_run(runtime)
        carried = {key: state[key] for key in self.extra if key in state}
        out = yield ReactCall(
            self.graph, {"messages": list(messages), **carried}, run.max_iterations
        )
        spent = {
            "llm_calls": out.get("llm_calls", 0),
            "retries": out.get("retries", 0),
            "usage": out.get("usage") or empty_usage(),
            "tool_mode": out.get("tool_mode") or state.get("tool_mode", ""),
            **{
                key: carried_back(self.reducers.get(key), carried.get(key, _ABSENT), out[key])
                for key in self.extra
                if key in out
            },
        }
        return out, spent


_ABSENT = object()


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
    candidates: list[Any] = [after]
    if isinstance(after, (list, tuple, str)) and after[: len(before)] == before:
        candidates.insert(0, after[len(before) :])
    elif isinstance(after, (int, float)) and isinstance(before, (int, float)):
        candidates.insert(0, after - before)
    for update in candidates:
        with contextlib.suppress(Exception):
            if reducer(before, update) == after:
                return update
    return Overwrite(after)
