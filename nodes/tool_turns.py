"""What the kit gives a loop whose replies call tools, besides ``act`` and the tool
step: reading a turn's reply (``read_action``), the tool the run must still call
(``must_call``), and an answer checked for what small models write in its place
(``repaired_answer``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopgraphs.nodes.answer_repair import restated_answer, says_nothing
from loopgraphs.nodes.model_turn import Reading, interpret, read_reply, without_tool_calls
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_modes import example_answers, required_tool, run_registry
from loopgraphs.nodes.turns import Turn
from loopgraphs.state import messages_of, scratch_of


def read_action(
    step: Step[Any], state: Mapping[str, object], turn: Turn, *, require: str | None = None
) -> Reading:
    """What a turn's reply means for the loop, read in the mode it was answered in: tool
    calls to run (in json and text modes the parsed action attached as an ordinary tool
    call, so the same tool step runs it in every mode), a final answer, or an unreadable
    reply (``retry``). The reading's message is the reply as the chat shows it.

    Args:
        step: The running step.
        state: The loop's state.
        turn: The turn ``act`` made.
        require: The tool choice the turn was asked with (a reply without a call is then
            no answer).
    """
    mode = turn.tool_mode or str(state.get("tool_mode") or "native")
    return read_reply(mode, turn.reply, run_registry(step.run, state), require=require)


def must_call(step: Step[Any], state: Mapping[str, object]) -> str | None:
    """``"required"`` or a tool's name while the run must still call a tool
    (``tool_choice``, or the model's own default), else None."""
    return required_tool(step.run, state, model_default=True)


def repaired_answer(step: Step[Any], state: Mapping[str, object], answer: str) -> str:
    """A final answer as the run keeps it: one that only restates the expression the last
    tool call computed is given as its result; one that copies a worked example's answer,
    or says nothing but a fence marker, is empty (no answer)."""
    scratch = scratch_of(state)
    fence, start = scratch.get("fence", ""), scratch.get("transcript_start", 0)
    examples = example_answers(run_registry(step.run, state))
    repaired = restated_answer(answer, messages_of(state), start, fence, examples=examples)
    return "" if says_nothing(repaired, fence) else repaired


__all__ = [
    "Reading",
    "interpret",
    "must_call",
    "read_action",
    "repaired_answer",
    "without_tool_calls",
]
