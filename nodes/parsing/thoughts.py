"""Tree-of-Thoughts replies: proposed thoughts, the ``ANSWER:`` marker, and scores."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from loopgraphs.nodes.parsing.json_text import extract_json
from loopgraphs.nodes.parsing.text import after_marker, clip, list_items

MAX_THOUGHT_CHARS = 2000
ANSWER_RE = re.compile(r"ANSWER\**[ \t]*:")
MIN_SCORE, MAX_SCORE = 0, 10
MAX_SCORE_LINE = 200
SCORE_SEPARATORS = ".):=-\u2013\u2014"
SCORE_VALUE_RE = re.compile(r"(?:score[ \t]*[:=]?[ \t]*)?(\d{1,3})(?!\d)", re.IGNORECASE)
_SCORE_WORD_RE = re.compile(r"score[^0-9\n]{0,20}?(\d{1,3})(?!\d)", re.IGNORECASE)
_INT_RE = re.compile(r"(?<!\d)(\d{1,3})(?!\d)")
_INT_LIST_RE = re.compile(r"\[([0-9 \t\r\n,.]{1,4000})\]")


def answer_in(thought: str) -> str | None:
    """The text after ``ANSWER:`` in a thought, or None (no marker, or nothing after it)."""
    found = after_marker(thought, ANSWER_RE)
    return (found or "").strip("*").strip() or None


def parse_thoughts(text: str, limit: int) -> list[str]:
    """Read up to ``limit`` proposed thoughts from a reply.

    Accepts a JSON list (of strings or of objects with a ``thought``/``step`` field), a
    JSON object holding such a list, or a numbered/bulleted list (lines that follow an
    item continue it). A reply with no list at all is one thought; an empty one is none.
    """
    text = clip(text).strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        text = text.split("\n", 1)[1] if text.lower().startswith(("json\n", "text\n")) else text
    items = _json_items(text) if text[:1] in "[{" else None
    if items is None:
        items = ["\n".join([item.text, *item.more]) for item in list_items(text)] or (
            [text] if text else []
        )
    thoughts = [item.strip()[:MAX_THOUGHT_CHARS] for item in items if item and item.strip()]
    return thoughts[:limit]


def _json_items(text: str) -> list[str] | None:
    data: object = None
    if text.startswith("["):
        try:
            data = json.loads(text[: text.rfind("]") + 1])
        except (ValueError, RecursionError):
            return None
    else:
        found = extract_json(text) or {}
        data = next(
            (found[key] for key in ("thoughts", "steps", "candidates", "options") if key in found),
            None,
        )
    if not isinstance(data, list):
        return None
    items = []
    for entry in data:
        if isinstance(entry, dict):
            entry = next((entry[k] for k in ("thought", "step", "text") if k in entry), "")
        items.append(entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False))
    return items


def clamp(value: int) -> int:
    """Bring a score into 0..10."""
    return max(MIN_SCORE, min(MAX_SCORE, int(value)))


def parse_score(text: str) -> dict[str, Any] | None:
    """Read one score from free text: after the word "score", else the first integer 0..10."""
    text = clip(text)
    match = _SCORE_WORD_RE.search(text)
    if match is not None and int(match.group(1)) <= MAX_SCORE:
        return {"score": int(match.group(1)), "reason": ""}
    for found in _INT_RE.finditer(text):
        if int(found.group(1)) <= MAX_SCORE:
            return {"score": int(found.group(1)), "reason": ""}
    return None


def parse_scores(text: str, count: int) -> dict[str, Any] | None:
    """Read ``count`` scores from free text.

    List items such as ``1: 7``, ``Candidate 2 - 4`` or ``3) score 9`` are read by
    candidate number (missing candidates get 0); otherwise a bracketed list of integers, otherwise
    every integer in the text, in order. The list is padded with 0 or cut to ``count``.
    """
    text = clip(text)
    indexed: dict[int, int] = {}
    for item in list_items(text, separators=SCORE_SEPARATORS, tight=True):
        value = SCORE_VALUE_RE.match(item.text[:MAX_SCORE_LINE])
        if item.number is not None and value is not None:
            indexed.setdefault(item.number, int(value.group(1)))
    if indexed:
        base = 0 if 0 in indexed else 1
        values = [indexed.get(i + base, 0) for i in range(count)]
    else:
        bracket = _INT_LIST_RE.search(text)
        source = bracket.group(1) if bracket is not None else text
        values = [int(found.group(1)) for found in _INT_RE.finditer(source)]
        if not values:
            return None
    return {"scores": fit(values, count)}


def fit(values: Sequence[int], count: int) -> list[int]:
    """Clamp scores to 0..10, pad with 0 or cut to ``count``."""
    scores = [clamp(value) for value in values[:count]]
    return scores + [0] * (count - len(scores))
