"""Helpers shared by the compatibility suite: reading fenced tool output, transcripts."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tests.compat.fake import FakeToolModel, message_text
from tests.support.scripts import MODES, act, final, model_for

__all__ = [
    "FENCE_LINE",
    "MODES",
    "FakeToolModel",
    "act",
    "ai_messages",
    "fences_in",
    "final",
    "message_text",
    "model_for",
    "paused",
    "seen",
    "tool_messages",
    "tool_text",
    "unfence",
]

FENCE_LINE = re.compile(r"<<(end_)?tool_output ([^\s>]+)>>")
_OPEN = re.compile(r"<<tool_output [^\s>]+>>\n?")
_CLOSE = re.compile(r"\n?<<end_tool_output [^\s>]+>>")


def unfence(text: str) -> str:
    """Tool output without loopgraphs' untrusted-data fence (unchanged when unfenced)."""
    return _CLOSE.sub("", _OPEN.sub("", text))


def fences_in(text: str) -> set[str]:
    """The fence markers used in a text."""
    return {match.group(2) for match in FENCE_LINE.finditer(text)}


def tool_text(message: BaseMessage) -> str:
    """The text a tool call produced, as the tool returned it."""
    return unfence(message_text(message))


def tool_messages(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def ai_messages(out: dict[str, Any]) -> list[AIMessage]:
    return [m for m in out["messages"] if isinstance(m, AIMessage)]


def seen(prompt: list[BaseMessage]) -> str:
    """Everything one model call was shown, as text."""
    return "\n".join(message_text(m) for m in prompt)


SENT_RESULT = re.compile(r"<<tool_output (\S+)>>\n(.*?)\n<<end_tool_output \1>>", re.DOTALL)


def sent_results(prompt: list[BaseMessage]) -> list[tuple[str, str]]:
    """The tool results one model call was shown, each as (its fence marker, its text):
    the model is sent them fenced (the thread keeps them as the tools returned them)."""
    return [(m.group(1), m.group(2)) for m in SENT_RESULT.finditer(seen(prompt))]


def paused(graph: Any, config: dict[str, Any]) -> list[Any]:
    """Values of the interrupts the thread is paused on."""
    return [i.value for task in graph.get_state(config).tasks for i in task.interrupts]


def answered_once(out: dict[str, Any]) -> bool:
    """Every tool call in the transcript is answered by exactly one ToolMessage."""
    wanted = [c["id"] for m in ai_messages(out) for c in m.tool_calls]
    got = [m.tool_call_id for m in tool_messages(out)]
    return sorted(wanted) == sorted(got)
