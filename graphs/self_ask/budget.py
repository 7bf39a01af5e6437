"""What Self-Ask's run budget still allows from the step running: another turn, the
tools for a turn's follow-ups, the answer. Its own count is ``max_follow_ups`` (the run's
``max_iterations``); the graph steps left are counted by the kit (``Step.may_continue``,
``Step.may_finish``)."""

from __future__ import annotations

from loopgraphs.graphs.self_ask.state import SelfAskState, SelfAskStep
from loopgraphs.nodes import REVIEW, TOOL_STEP, scratch_of


def can_continue(state: SelfAskState, step: SelfAskStep) -> bool:
    """Whether another turn fits: calls left in ``max_iterations`` and graph steps left
    for it and the answer."""
    made = scratch_of(state).get("iterations", 0)
    return made < step.run.max_iterations and step.may_continue(state)


def may_call_tools(state: SelfAskState, step: SelfAskStep) -> bool:
    """Whether the graph steps left allow a turn's follow-ups to go to the tools (through
    the review when the run has one) and the answer to come after them."""
    return step.may_finish(state, through=REVIEW if step.run.review else TOOL_STEP)


def may_answer(state: SelfAskState, step: SelfAskStep) -> bool:
    """Whether the graph steps left allow ``final_answer`` to ask for the answer."""
    return step.may_finish(state, through="final_answer")
