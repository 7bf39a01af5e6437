"""Worked examples a tool carries for models that read tool calls as text.

A model without native function calling (json and text tool modes) sees a short solved
task per example before the user's question: the question, the call, the tool's result
and the answer taken from it. Very small models copy these patterns far more reliably
than they follow written rules. Attach examples to any tool through its metadata::

    my_tool.metadata = {"examples": [ToolExample("...", {"arg": "..."}, "...", "...")]}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from langchain_core.tools import BaseTool

EXAMPLES_KEY = "examples"
"""The key of a tool's ``metadata`` holding its :class:`ToolExample` list."""


@dataclass(frozen=True)
class ToolExample:
    """One solved task using one tool call.

    Args:
        question: The user's question.
        args: The arguments the tool is called with.
        result: What the tool returns for them.
        answer: The final answer read from the result.
    """

    question: str
    args: Mapping[str, object] = field(default_factory=dict)
    result: str = ""
    answer: str = ""


def tool_examples(tool: BaseTool) -> list[ToolExample]:
    """The examples in ``tool.metadata["examples"]`` (``ToolExample`` or dicts with the
    same keys).

    Raises:
        TypeError: If an entry is neither, naming the tool and the entry.
    """
    entries = (tool.metadata or {}).get(EXAMPLES_KEY) or ()
    examples = []
    for position, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            try:
                entry = ToolExample(**entry)
            except TypeError as exc:
                raise TypeError(
                    f"tool {tool.name!r}: metadata['examples'][{position}] must have the keys "
                    f"question, args, result and answer ({exc})"
                ) from exc
        if not isinstance(entry, ToolExample):
            raise TypeError(
                f"tool {tool.name!r}: metadata['examples'][{position}] must be a ToolExample "
                f"or a dict, got {type(entry).__name__}"
            )
        examples.append(entry)
    return examples
