"""Plan-and-Execute's plans as text: numbered or bulleted steps, or ``DONE``."""

from __future__ import annotations

import re
from typing import Any

from loopgraphs.nodes.parsing.text import clip, list_items, strip_marker

STEP_CHARS = 500
STEP_KEYS = ("step", "description", "task", "text", "title", "action")
DONE_RE = re.compile(r"^[ \t*]*DONE\b", re.MULTILINE)


def numbered_items(text: str) -> list[str]:
    """The steps of a plain list in text (``1. x``, ``2) y``, ``- z``, ``Step 3: w``): the
    non-empty items, each on its own line and cut to ``STEP_CHARS``."""
    return [item.text[:STEP_CHARS] for item in list_items(text) if item.text]


def clean_steps(value: Any) -> Any:
    """Normalise what a model gives as steps into a list of non-empty strings: a text is
    read as a list, list entries lose their numbering and objects give their step text.
    Anything else is returned as it is (for validation to reject)."""
    if isinstance(value, str):
        return numbered_items(value) or ([value.strip()[:STEP_CHARS]] if value.strip() else [])
    if not isinstance(value, list):
        return value
    steps = []
    for item in value:
        if isinstance(item, dict):
            item = next((item[k] for k in STEP_KEYS if isinstance(item.get(k), str)), "")
        text = strip_marker(str(item))
        if text:
            steps.append(text[:STEP_CHARS])
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
