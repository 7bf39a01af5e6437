"""The run budget: the limits every run shares, and the one place a loop asks about them.

A loop's own counters (ReAct's turns, CRITIC's rounds, Reflexion's episodes) stay the
loop's; what every run shares is here: LangGraph's step budget (``remaining_steps``, from
the run's ``recursion_limit``) and the tool-call budget (``max_tool_calls``). Every loop
asks ``RunBudget.allows`` before it starts another round and finishes with its best
answer when the budget says no, so a new run-wide limit is one more field and one more
check in this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from loopgraphs.nodes.tool_guard import calls_since, earlier_calls
from loopgraphs.state import messages_of, scratch_of


def steps_left(state: Mapping[str, object], needed: int) -> bool:
    """Whether LangGraph's remaining step budget still allows ``needed`` more steps
    (outside a graph run, where the state has no ``remaining_steps``, it always does)."""
    return int(cast("int", state.get("remaining_steps", needed + 1))) > needed


@dataclass(frozen=True)
class RunBudget:
    """What one run may spend besides each loop's own counters.

    Attributes:
        max_tool_calls: Tool calls the run may make (None: no limit), counting, in a
            ReAct run inside another loop's step, the calls the run made before it.
    """

    max_tool_calls: int | None = None

    def allows(self, state: Mapping[str, object], *, steps: int, tools: bool = False) -> bool:
        """Whether the run may go on for ``steps`` more graph steps (and, with ``tools``,
        whether it may still call tools) before it must finish with its answer.

        Args:
            state: The run's state (its ``remaining_steps``, messages and scratch).
            steps: The graph steps the next round takes, finishing included.
            tools: Whether the next round may call tools.
        """
        if not steps_left(state, steps):
            return False
        return not (tools and self.tool_calls_spent(state))

    def tool_calls_spent(self, state: Mapping[str, object]) -> bool:
        """Whether the run has made all the tool calls ``max_tool_calls`` allows."""
        return self.tool_calls_left(state) == 0

    def tool_calls_left(self, state: Mapping[str, object]) -> int | None:
        """How many more tool calls the run may make under ``max_tool_calls``, for a step
        that sends several at once and keeps the rest for later (None: no limit).

        Args:
            state: The run's state (its messages since the run began, and the calls made
                before an inner run of it, count).
        """
        if self.max_tool_calls is None:
            return None
        start = scratch_of(state).get("transcript_start") or 0
        made = sum(1 for _ in calls_since(messages_of(state), start))
        made += sum(1 for _ in calls_since(earlier_calls(_running_config()), 0))
        return max(self.max_tool_calls - made, 0)


def _running_config() -> RunnableConfig | None:
    """The config of the node or router running now (None outside a graph run)."""
    try:
        return get_config()
    except RuntimeError:
        return None
