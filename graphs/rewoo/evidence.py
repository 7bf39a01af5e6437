"""The evidence a ReWOO run has gathered, read from its transcript.

Each step of the plan runs as a tool call the loop writes (see ``steps.work``); its
evidence is the ``ToolMessage`` that answers the call: the tool's result, an error
observation when the tool failed, the reviewer's answer when the call was rejected. A
call the loop-break answered from an identical call of another step gets that step's
evidence, the result it stands for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, ToolCall, ToolMessage

from loopgraphs import prompts
from loopgraphs.graphs.rewoo.plans import input_text
from loopgraphs.graphs.rewoo.state import PlannedStep
from loopgraphs.nodes import content_text, transcript_of
from loopgraphs.nodes.parsing.text import strip_fence
from loopgraphs.text import media_of


@dataclass(frozen=True)
class Gathered:
    """What the run's steps have gathered so far.

    Attributes:
        plan: The plan.
        sent: The id of the tool call each step was sent as ("" while it waits).
        results: The evidence of each step that has some, by the step's index.
        calls: Each sent step's call as it ran (a reviewer may have edited it).
    """

    plan: Sequence[PlannedStep]
    sent: Sequence[str]
    results: Mapping[int, ToolMessage] = field(default_factory=dict)
    calls: Mapping[int, ToolCall] = field(default_factory=dict)

    def value(self, index: int) -> str:
        """Step ``index``'s evidence as a later step's input takes it: the result's text
        without the run's fence markers (a note when the call got no result)."""
        found = self.results.get(index)
        if found is None:
            return prompts.NO_TOOL_RESULT if self.sent[index] else prompts.REWOO_NOT_RUN
        return strip_fence(content_text(found.content))

    def shown(self, index: int) -> str:
        """Step ``index`` as the solver reads it: its plan, its call as it ran (as planned
        when it did not run) and its evidence, fenced as tool output reaches a model."""
        step = self.plan[index]
        call = self.calls.get(index)
        found = self.results.get(index)
        return prompts.REWOO_STEP.format(
            plan=step["plan"] or "-",
            evidence=step["evidence"],
            tool=call["name"] if call else step["tool"],
            tool_input=input_text(call["args"] if call else step["tool_input"]),
            result=content_text(found.content) if found is not None else self.value(index),
        )

    def media(self) -> list[dict[str, object]]:
        """The images, files and audio the steps' tools returned, in the plan's order, as
        the tools returned them: the solver's request sends them after its text."""
        return [
            block
            for index in range(len(self.plan))
            if (found := self.results.get(index)) is not None
            for block in media_of(found.content)
        ]

    def evidence(self) -> list[str]:
        """Every step's evidence, in the plan's order (see ``value``)."""
        return [self.value(index) for index in range(len(self.plan))]


def gathered(
    state: Mapping[str, object], plan: Sequence[PlannedStep], sent: Sequence[str], loop_break: bool
) -> Gathered:
    """The evidence of the run's sent steps, read from its transcript (see the module).

    Args:
        state: The run's state.
        plan: The plan.
        sent: The id of each step's call ("" while it waits).
        loop_break: Whether the run's loop-break answers repeated calls.
    """
    own = transcript_of(state)
    answers = {m.tool_call_id: m for m in own if isinstance(m, ToolMessage)}
    ran = {c["id"]: c for m in own if isinstance(m, AIMessage) for c in m.tool_calls}
    steps = [(index, call_id) for index, call_id in enumerate(sent) if call_id]
    calls = {index: ran[call_id] for index, call_id in steps if call_id in ran}
    results = {index: answers[call_id] for index, call_id in steps if call_id in answers}
    if loop_break:
        results = {index: _stood_for(index, results, calls) for index in results}
    return Gathered(plan, sent, results, calls)


def _stood_for(
    index: int, results: Mapping[int, ToolMessage], calls: Mapping[int, ToolCall]
) -> ToolMessage:
    """A step's evidence: its own result, or, when the loop-break answered its call, the
    result of another step's identical call that ran."""
    own = results[index]
    call = calls.get(index)
    if own.status != "error" or call is None:
        return own
    for other, result in results.items():
        same = calls.get(other)
        if other == index or same is None or result.status == "error":
            continue
        if (same["name"], same["args"]) == (call["name"], call["args"]):
            return result
    return own


__all__ = ["Gathered", "gathered"]
