"""The ReAct grammars: the text form (``Thought / Action / Action Input / FINAL_ANSWER``)
and JSON actions (``thought``, ``action``, ``action_input``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

from loopgraphs.nodes.parsing.json_text import (
    ToolInput,
    extract_json,
    json_spans,
    tool_input_value,
    unfenced,
)
from loopgraphs.nodes.parsing.text import FINAL_ANSWER_RE, after_marker, clip

ACTION_RE = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
ACTION_INPUT_RE = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
THOUGHT_RE = re.compile(r"^[ \t]*Thought[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
OBSERVATION_RE = re.compile(r"^[ \t]*Observation[ \t]*:", re.IGNORECASE | re.MULTILINE)
FINAL_ACTIONS = frozenset({"final_answer", "final answer", "finish", "answer", "final"})


@dataclass
class ParsedReply:
    """One parsed model reply.

    ``kind`` is ``"final"`` (``answer`` is set), ``"action"`` (``action`` and
    ``action_input`` are set) or ``"none"`` (nothing usable was found).
    """

    kind: Literal["final", "action", "none"]
    thought: str = ""
    answer: str = ""
    action: str = ""
    action_input: ToolInput = field(default_factory=dict)


def parse_react_text(text: str) -> ParsedReply:
    """Parse the ReAct text grammar (``Thought / Action / Action Input / FINAL_ANSWER``).

    ``FINAL_ANSWER:`` (or ``Final Answer:``) is checked before ``Action:``, so a reply
    holding both ends the loop. ``Action Input`` may span several lines (multi-line
    JSON); anything after a hallucinated ``Observation:`` is ignored.

    Args:
        text: The model's reply.

    Returns:
        The parsed step; ``kind="none"`` when neither an answer nor an action is present.
    """
    text = clip(text)
    thought_match = THOUGHT_RE.search(text)
    thought = thought_match.group(1).strip() if thought_match else ""
    answer = after_marker(text, FINAL_ANSWER_RE)
    if answer is not None:
        observation = OBSERVATION_RE.search(answer)
        return ParsedReply(
            "final",
            thought=thought,
            answer=answer[: observation.start()].strip() if observation else answer,
        )
    action_match = ACTION_RE.search(text)
    if action_match is None or not action_match.group(1).strip():
        return ParsedReply("none", thought=thought)
    action = action_match.group(1).strip().strip("`*").strip()
    rest = text[action_match.end() :]
    input_match = ACTION_INPUT_RE.search(rest)
    raw_input = ""
    if input_match is not None:
        raw_input = rest[input_match.end() :]
        observation = OBSERVATION_RE.search(raw_input)
        if observation is not None:
            raw_input = raw_input[: observation.start()]
    if action.lower() in FINAL_ACTIONS:
        return ParsedReply("final", thought=thought, answer=raw_input.strip())
    return ParsedReply(
        "action", thought=thought, action=action, action_input=tool_input_value(raw_input)
    )


def parse_json_action(data: dict[str, object] | None) -> ParsedReply:
    """Interpret a JSON action object (``thought``, ``action``, ``action_input``).

    Accepts the common variants small models produce: ``final_answer``/``answer`` keys,
    ``tool``/``name`` for the action, ``args``/``arguments``/``input`` for its input.

    Args:
        data: The decoded object, or None.

    Returns:
        The parsed step; ``kind="none"`` when the object holds neither.
    """
    if not isinstance(data, dict):
        return ParsedReply("none")
    thought = str(data.get("thought") or data.get("reasoning") or "")
    action = data.get("action") or data.get("tool") or data.get("name")
    action_input: object = next(
        (data[key] for key in ("action_input", "args", "arguments", "input") if key in data), {}
    )
    if isinstance(action, dict):
        action_input = action.get("action_input", action.get("args", action_input))
        action = action.get("name") or action.get("tool")
    if isinstance(action, str) and action.strip().lower() in FINAL_ACTIONS:
        return ParsedReply("final", thought=thought, answer=_answer_text(action_input))
    for key in ("final_answer", "answer"):
        if key in data and not action:
            return ParsedReply("final", thought=thought, answer=_answer_text(data[key]))
    if not isinstance(action, str) or not action.strip():
        return ParsedReply("none", thought=thought)
    if not isinstance(action_input, (dict, str)):
        action_input = str(action_input)
    return ParsedReply("action", thought=thought, action=action.strip(), action_input=action_input)


def _answer_text(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in ("answer", "final_answer", "text", "value"):
            if key in value:
                return _answer_text(value[key])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def parse_json_text(text: str) -> ParsedReply:
    """Extract a JSON action from free text and interpret it."""
    return parse_json_action(extract_json(text))


def final_answer_of(text: str, pattern: re.Pattern[str] = FINAL_ANSWER_RE) -> str:
    """The answer a reply gives: the text after an answer marker, else the whole reply;
    either read as a JSON final-answer action when it is nothing but one (see
    ``final_action_answer``)."""
    said = after_marker(text, pattern) or text.strip()
    return final_action_answer(said) or said


def final_action_answer(text: str) -> str:
    """The answer of a text that is one JSON final-answer action and nothing else (in a
    code fence or not), as a model that wrote JSON actions in its tool turns writes the
    answer of a turn that asks for plain text; "" for any other text."""
    body = unfenced(clip(text))
    if not body.startswith("{") or json_spans(body) != [(0, len(body))]:
        return ""
    read = parse_json_action(extract_json(body, max_candidates=1))
    return read.answer if read.kind == "final" else ""
