"""Plan-and-Execute's plans as text: numbered or bulleted steps, or ``DONE``."""

from __future__ import annotations

import re
from typing import Any

from loopgraphs.nodes.parsing.text import clip, list_items, strip_marker

STEP_CHARS = 500
STEP_KEYS = ("step", "description", "task", "text", "title", "action")
DONE_RE = re.compile(r"^[ \t*]*DONE\b", re.MULTILINE)
WORD_RE = re.compile(r"[^\W\d_]")
EXPRESSION_RE = re.compile(r"\d\s*[-+*/^%×÷]\s*[\d(]")


def numbered_items(text: str) -> list[str]:
    """The steps of a plain list in text (``1. x``, ``2) y``, ``- z``, ``Step 3: w``): the
    non-empty items, each on its own line and cut to ``STEP_CHARS``."""
    return [item.text[:STEP_CHARS] for item in list_items(text) if item.text]


def clean_steps(value: object) -> object:
    """Normalise what a model gives as steps into a list of distinct non-empty strings: a
    text is read as a list, list entries lose their numbering, objects give their step
    text and a step written again is dropped (see ``distinct``). Anything else is returned
    as it is (for validation to reject)."""
    if isinstance(value, str):
        items = numbered_items(value) or ([value.strip()[:STEP_CHARS]] if value.strip() else [])
        return distinct(items)
    if not isinstance(value, list):
        return value
    steps = []
    for item in value:
        if isinstance(item, dict):
            item = next((item[k] for k in STEP_KEYS if isinstance(item.get(k), str)), "")
        text = strip_marker(str(item))
        if text:
            steps.append(text[:STEP_CHARS])
    return distinct(steps)


def distinct(steps: list[str]) -> list[str]:
    """The steps without repeats: a step equal to an earlier one (ignoring case, spacing
    and end punctuation), as a small model writes the same step over and over, is dropped."""
    seen: set[str] = set()
    kept = []
    for step in steps:
        key = normal(step)
        if key not in seen:
            seen.add(key)
            kept.append(step)
    return kept


def normal(text: str) -> str:
    """Text as a step is compared: case-folded, spaces collapsed, end punctuation dropped."""
    return " ".join(text.casefold().split()).strip(" .?!:;")


def asks_for_something(step: str) -> bool:
    """Whether a step is a task: it has a word, or is an expression to compute ("81 * 31").
    Neither are "2.1.1" nor a calculation the planner did itself ("93 + 27 = 120"), as a
    small model writes them one after the other."""
    if WORD_RE.search(step):
        return True
    return bool(EXPRESSION_RE.search(step)) and "=" not in step


def sized_plan(steps: list[str], request: str) -> list[str]:
    """The plan sized to the request: without the steps that ask for nothing (see
    ``asks_for_something``), and the request itself as its one step when one step is left
    or the first step already asks for the whole request (the steps after it, which a
    small model writes as it runs on, have nothing left to do)."""
    steps = [step for step in steps if asks_for_something(step)]
    whole = normal(request)
    if whole and (len(steps) <= 1 or whole in normal(steps[0])):
        return [request.strip()]
    return steps


def plan_from_text(text: str) -> dict[str, Any] | None:
    """The planner's reply read as text: a plain numbered or bulleted list."""
    items = numbered_items(text)
    return {"steps": items} if items else None


def update_from_text(text: str) -> dict[str, Any] | None:
    """The replanner's reply read as text: a list, or ``DONE`` for nothing left."""
    items = numbered_items(text)
    if items:
        return {"steps": items}
    return {"steps": []} if DONE_RE.search(clip(text)) else None
