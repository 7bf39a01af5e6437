"""Answer repair for small models: a final answer that is the expression the last tool
call computed is given as its result; one that copies a worked example's answer, or says
nothing, is no answer (the loop asks again)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    ToolCall,
    ToolMessage,
)

from loopgraphs.nodes.answer_check import failed
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.tool_guard import unfence
from loopgraphs.text import FENCE_MARKER

_NOT_KEPT = re.compile(r"[^\w+\-*/^%().]|_")  # \w is a letter, digit or underscore


def _squashed(text: str) -> str:
    """The text lower-cased, with only its letters, digits and ``+-*/^%().`` kept."""
    return _NOT_KEPT.sub("", text.lower())


def _expression(text: str) -> bool:
    return any(ch.isdigit() for ch in text) and any(op in text for op in "+-*/^%")


def _held(observed: str, call: ToolCall) -> str:
    """What a tool result says (squashed) without its quotes of the call's own arguments
    (a search echoing its query: "No results for 'Ada Quinlan'.")."""
    for value in map(str, call["args"].values()):
        for left, right in ("''", '""', "\u2018\u2019", "\u201c\u201d"):
            observed = observed.replace(f"{left}{value}{right}", " ")
    return _squashed(observed)


def says_nothing(answer: str, fence: str) -> bool:
    """Whether a final answer holds nothing a reader could use: empty, or only the run's
    fence marker or the ``final_answer`` keyword."""
    return not _said(answer, fence)


def _said(answer: str, fence: str) -> str:
    """What an answer says (squashed), without fence markers and the ``final_answer``
    keyword."""
    unmarked = FENCE_MARKER.sub("", unfence(answer, fence).replace(fence or "\0", ""))
    return _squashed(unmarked).removeprefix("finalanswer")


def _last_call(
    messages: Sequence[AnyMessage], start: int
) -> tuple[ToolCall | None, ToolMessage | None]:
    """The run's last tool call that succeeded, and its result (None, None when none did):
    a repeated call answered from history, say, is an error and is passed over."""
    # Read from the end: the last result that succeeded, and the latest call of its id
    # made before it in the run (as a reading from the start that notes each call and
    # each answered one would end with).
    for index in range(len(messages) - 1, start - 1, -1):
        result = messages[index]
        if not isinstance(result, ToolMessage) or failed(result):
            continue
        for earlier in range(index - 1, start - 1, -1):
            message = messages[earlier]
            if not isinstance(message, AIMessage):
                continue
            for call in reversed(message.tool_calls):
                if (call["id"] or "") == result.tool_call_id:
                    return call, result
    return None, None


def restated_answer(
    answer: str,
    messages: Sequence[AnyMessage],
    start: int,
    fence: str,
    *,
    examples: Sequence[str] = (),
) -> str:
    """The final answer, with a small model's restatement of its own calculation resolved.

    An answer that is the expression the last tool call computed (a small model answering
    "17 * 19 + 4" after the calculator said 323) is given as that result: it is the
    model's answer, evaluated. An answer that copies one of the worked ``examples``'
    answers, which the last result does not hold (beyond quoting the call's own arguments,
    as in "No results for 'Ada Quinlan'."), is no answer: "" (the loop asks again). Any
    other answer is returned as it is; a tool result never stands in for a missing one.
    """
    last_call, result = _last_call(messages, start)
    if last_call is None or result is None:
        return answer
    observed = unfence(content_text(result.content), fence)
    asked = {_squashed(str(v)) for v in last_call["args"].values() if _expression(str(v))}
    said = _said(answer, fence)
    if said and said in asked:
        return observed or answer
    if said in {_squashed(e) for e in examples} and said not in _held(observed, last_call):
        return ""
    return answer
