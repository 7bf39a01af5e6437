"""JSON objects in free text, and tool inputs written by a model.

Objects are found with a balanced-brace scan (strings and escapes respected); each
candidate is parsed strictly first and then repaired (trailing commas, single quotes, a
missing closing brace) while the reply's repair budget lasts: ``MAX_REPAIR_CHARS`` in all,
on candidates nested at most ``MAX_REPAIR_DEPTH``, so the time stays linear in the input.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import json_repair

from loopgraphs.nodes.parsing import MAX_JSON_CANDIDATES, MAX_REPAIR_CHARS, MAX_REPAIR_DEPTH
from loopgraphs.nodes.parsing.text import clip

ToolInput = dict[str, Any] | str
"""A tool's input as a model writes it: the tool's arguments (keyword arguments of any
type, as a ``ToolCall`` holds them), or one text."""


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


def _objects(text: str, limit: int) -> Iterator[dict[str, object]]:
    text = clip(text)
    budget = MAX_REPAIR_CHARS
    for start, end in json_spans(text)[:limit]:
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
            yield value


def json_objects(text: str, limit: int = MAX_JSON_CANDIDATES) -> list[dict[str, object]]:
    """The non-empty JSON objects among the first ``limit`` top-level ``{...}`` spans of
    free text (the objects of a JSON list included), in order."""
    return list(_objects(text, limit))


def extract_json(text: str, *, max_candidates: int = 5) -> dict[str, object] | None:
    """Extract the first JSON object from free text.

    Args:
        text: Any model output.
        max_candidates: How many ``{...}`` spans to try, in order.

    Returns:
        The first non-empty object that parses (strictly or repaired), or None.
    """
    return next(_objects(text, max_candidates), None)


def unfenced(text: str) -> str:
    """Text without surrounding whitespace and the markdown code fence around it, if any
    (its ``json`` label too)."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        if text[:4].lower() == "json":
            text = text[4:].strip()
    return text


def tool_input_value(raw: str) -> ToolInput:
    """A tool input as written by a model: a JSON object when it is one (in a code fence
    or not), else the plain text without surrounding quotes or backticks."""
    raw = unfenced(raw)
    if raw.startswith("{"):
        found = extract_json(raw)
        if found is not None:
            return found
    return raw.strip("\"'`").strip()
