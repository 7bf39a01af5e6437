"""Readings of whole answers: the key answers are voted by (Chain-of-Thought), the
evaluator's verdict and the reflection text (Reflexion)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from loopgraphs.nodes.parsing.text import clip

NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d{1,4})?", re.IGNORECASE)
GROUPED_RE = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
TRAILING_PUNCTUATION = " \t\r\n.,;:!?。"
MAX_FEEDBACK_CHARS = 2000
NEGATIVE_RE = re.compile(r"\b(?:UN|NOT[ \t]+)SATISFACTORY\b", re.IGNORECASE)
POSITIVE_RE = re.compile(r"\bSATISFACTORY\b", re.IGNORECASE)
FEEDBACK_TRIM = " \t\r\n:;,.-–—*_\"'`()[]"
MAX_REFLECTION_CHARS = 1200
LABEL_RE = re.compile(r"[\s*#>_]*reflection[\s*_]*:[\s*_]*", re.IGNORECASE)
SPACES_RE = re.compile(r"\s+")


def answer_key(answer: str) -> str:
    """Normalise an answer for voting: trimmed, case-folded, without trailing punctuation,
    markdown emphasis or quotes; numbers compare by value (``"323.0"`` equals ``"323"``,
    ``"1,000"`` equals ``"1000"``)."""
    text = answer.strip().strip("*_`\"'").strip().casefold().rstrip(TRAILING_PUNCTUATION)
    text = text.strip("*_`\"'").strip()
    if len(text) <= 100:
        number = text.replace(",", "") if GROUPED_RE.fullmatch(text) else text
        if NUMBER_RE.fullmatch(number):
            try:
                value = Decimal(number)
            except InvalidOperation:
                return text
            return "number:" + ("0" if value.is_zero() else str(value.normalize()))
    return text


def parse_verdict(text: str) -> dict[str, Any] | None:
    """Read a verdict from free text.

    ``UNSATISFACTORY`` (or ``NOT SATISFACTORY``) anywhere wins over ``SATISFACTORY``,
    which it contains. The text after the verdict word (else before it) is the feedback.

    Args:
        text: Any model output.

    Returns:
        ``{"satisfactory": bool, "feedback": str}``, or None when no verdict word is present.
    """
    text = clip(text)
    match = NEGATIVE_RE.search(text)
    satisfactory = match is None
    if match is None:
        match = POSITIVE_RE.search(text)
    if match is None:
        return None
    after = text[match.end() :].strip(FEEDBACK_TRIM)
    before = text[: match.start()].strip(FEEDBACK_TRIM)
    return {"satisfactory": satisfactory, "feedback": (after or before)[:MAX_FEEDBACK_CHARS]}


def normalise_reflection(text: str) -> str:
    """Drop a leading ``Reflection:`` label, collapse whitespace and cap the length."""
    text = clip(text).strip()
    label = LABEL_RE.match(text)
    if label is not None:
        text = text[label.end() :]
    text = SPACES_RE.sub(" ", text).strip().strip('"').strip()
    if len(text) > MAX_REFLECTION_CHARS:
        text = text[:MAX_REFLECTION_CHARS].rstrip() + " …"
    return text
