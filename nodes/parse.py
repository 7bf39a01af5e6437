"""Parsers for model replies: ReAct text grammar, JSON actions, answer markers.

Every parser is total: it returns a result (possibly "nothing found") for any input and
runs in time linear in the input, so a hostile or broken reply can never crash a loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import json_repair
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

MAX_PARSE_CHARS = 200_000
# Broken JSON is repaired only while small and shallow: json_repair is pure Python and far
# slower than linear on long or deeply nested input, so one reply may spend at most
# MAX_REPAIR_CHARS characters of repair work, on candidates nested at most MAX_REPAIR_DEPTH.
MAX_REPAIR_CHARS = 20_000
MAX_REPAIR_DEPTH = 32
FINAL_ANSWER_RE = re.compile(r"FINAL[ _]ANSWER\s*:[ \t]*", re.IGNORECASE)
ACTION_RE = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
ACTION_INPUT_RE = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
THOUGHT_RE = re.compile(r"^[ \t]*Thought[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
OBSERVATION_RE = re.compile(r"^[ \t]*Observation[ \t]*:", re.IGNORECASE | re.MULTILINE)
FINAL_ACTIONS = frozenset({"final_answer", "final answer", "finish", "answer", "final"})


@dataclass
class Step:
    """One parsed model reply.

    ``kind`` is ``"final"`` (``answer`` is set), ``"action"`` (``action`` and
    ``action_input`` are set) or ``"none"`` (nothing usable was found).
    """

    kind: Literal["final", "action", "none"]
    thought: str = ""
    answer: str = ""
    action: str = ""
    action_input: dict[str, Any] | str = field(default_factory=dict)


def clip(text: str, limit: int = MAX_PARSE_CHARS) -> str:
    """Cut text to the size the parsers look at."""
    return text if len(text) <= limit else text[:limit]


def content_text(content: Any) -> str:
    """Flatten message content (a string or a list of content blocks) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def after_marker(text: str, pattern: re.Pattern[str]) -> str | None:
    """Return the stripped text after the first match of ``pattern``, or None."""
    match = pattern.search(clip(text))
    if match is None:
        return None
    return match.string[match.end() :].strip()


def json_spans(text: str) -> list[tuple[int, int]]:
    """Find top-level ``{...}`` spans in one linear pass, honouring JSON strings."""
    spans: list[tuple[int, int]] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth > 0:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, index + 1))
    if depth > 0 and start >= 0:
        spans.append((start, len(text)))
    return spans


def nesting_depth(text: str) -> int:
    """The deepest ``{``/``[`` nesting in text, in one linear pass (strings not honoured)."""
    depth = deepest = 0
    for char in text:
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]" and depth:
            depth -= 1
    return deepest


def extract_json(text: str, *, max_candidates: int = 5) -> dict[str, Any] | None:
    """Extract the first JSON object from free text.

    Objects are found with a balanced-brace scan (strings and escapes respected); each
    candidate is parsed strictly first and then repaired (trailing commas, single
    quotes, a missing closing brace) while the repair budget (``MAX_REPAIR_CHARS`` in all,
    nesting up to ``MAX_REPAIR_DEPTH``) lasts, so the time stays linear in the input.

    Args:
        text: Any model output.
        max_candidates: How many ``{...}`` spans to try, in order.

    Returns:
        The first object that parses, or None.
    """
    text = clip(text)
    budget = MAX_REPAIR_CHARS
    for start, end in json_spans(text)[:max_candidates]:
        candidate = text[start:end]
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            if len(candidate) > budget or nesting_depth(candidate) > MAX_REPAIR_DEPTH:
                continue
            budget -= len(candidate)
            try:
                value = json_repair.loads(candidate)
            except Exception:
                continue
        if isinstance(value, dict) and value:
            return value
    return None


def _input_value(raw: str) -> dict[str, Any] | str:
    raw = raw.strip()
    if raw.startswith("```"):
        raw = raw.strip("`").removeprefix("json").strip()
    if raw.startswith("{"):
        found = extract_json(raw)
        if found is not None:
            return found
    return raw.strip().strip('"').strip()


def parse_react_text(text: str) -> Step:
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
        return Step(
            "final",
            thought=thought,
            answer=answer[: observation.start()].strip() if observation else answer,
        )
    action_match = ACTION_RE.search(text)
    if action_match is None or not action_match.group(1).strip():
        return Step("none", thought=thought)
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
        return Step("final", thought=thought, answer=raw_input.strip())
    return Step("action", thought=thought, action=action, action_input=_input_value(raw_input))


def parse_json_action(data: dict[str, Any] | None) -> Step:
    """Interpret a JSON action object (``thought``, ``action``, ``action_input``).

    Accepts the common variants small models produce: ``final_answer``/``answer`` keys,
    ``tool``/``name`` for the action, ``args``/``arguments``/``input`` for its input.

    Args:
        data: The decoded object, or None.

    Returns:
        The parsed step; ``kind="none"`` when the object holds neither.
    """
    if not isinstance(data, dict):
        return Step("none")
    thought = str(data.get("thought") or data.get("reasoning") or "")
    action = data.get("action") or data.get("tool") or data.get("name")
    action_input: Any = next(
        (data[key] for key in ("action_input", "args", "arguments", "input") if key in data), {}
    )
    if isinstance(action, dict):
        action_input = action.get("action_input", action.get("args", action_input))
        action = action.get("name") or action.get("tool")
    if isinstance(action, str) and action.strip().lower() in FINAL_ACTIONS:
        return Step("final", thought=thought, answer=_answer_text(action_input))
    for key in ("final_answer", "answer"):
        if key in data and not action:
            return Step("final", thought=thought, answer=_answer_text(data[key]))
    if not isinstance(action, str) or not action.strip():
        return Step("none", thought=thought)
    if not isinstance(action_input, (dict, str)):
        action_input = str(action_input)
    return Step("action", thought=thought, action=action.strip(), action_input=action_input)


def _answer_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in ("answer", "final_answer", "text", "value"):
            if key in value:
                return _answer_text(value[key])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def parse_json_text(text: str) -> Step:
    """Extract a JSON action from free text and interpret it."""
    return parse_json_action(extract_json(text))


def final_answer_of(text: str, pattern: re.Pattern[str] = FINAL_ANSWER_RE) -> str:
    """The text after an answer marker, or the whole reply when the marker is absent."""
    found = after_marker(text, pattern)
    return found if found else text.strip()


def best_effort_answer(messages: Sequence[AnyMessage]) -> str:
    """The most useful text already in a transcript: the last assistant text, else the
    last tool result, else an empty string."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            text = content_text(message.content).strip()
            if text:
                return text
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return content_text(message.content).strip()
    return ""
