"""Message text, answer markers, the question, and the items of plain-text lists."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from langchain_core.messages import AIMessage, AnyMessage

from loopgraphs.nodes.parsing import MAX_PARSE_CHARS
from loopgraphs.text import FENCED, content_text

FINAL_ANSWER_RE = re.compile(r"FINAL[ _]ANSWER\s*:[ \t]*", re.IGNORECASE)
ITEM_LABELS = r"(?:step|thought|option|idea|candidate|branch|path)"
ITEM_SEPARATORS = ".):"


def clip(text: str, limit: int = MAX_PARSE_CHARS) -> str:
    """Cut text to the size the parsers look at."""
    return text if len(text) <= limit else text[:limit]


def tidy(text: str) -> str:
    """Text without surrounding whitespace, markdown emphasis and backticks."""
    return text.strip().strip("*_`").strip()


def after_marker(text: str, pattern: re.Pattern[str]) -> str | None:
    """Return the stripped text after the first match of ``pattern``, or None."""
    match = pattern.search(clip(text))
    if match is None:
        return None
    return match.string[match.end() :].strip()


# Where each provider says a reply stopped at its token cap: the response metadata key
# its LangChain client fills, and the values that mean "cut".
CUT_REASONS: dict[str, frozenset[str]] = {
    # OpenAI Chat Completions, OpenAI-compatible servers, Google Gemini (an enum's name)
    "finish_reason": frozenset({"length", "max_tokens", "MAX_TOKENS"}),
    # Anthropic, Bedrock's invoke API
    "stop_reason": frozenset({"max_tokens", "model_context_window_exceeded", "length"}),
    # Bedrock's Converse API
    "stopReason": frozenset({"max_tokens", "model_context_window_exceeded"}),
    # Ollama
    "done_reason": frozenset({"length"}),
}
# OpenAI's Responses API: ``status: "incomplete"`` and the reason in ``incomplete_details``.
INCOMPLETE_CUT = frozenset({"max_output_tokens"})
REPEAT_UNITS = (4, 200)  # lengths of a repeated piece of text, in characters
REPEAT_MIN_CHARS = 48  # repeats shorter than this in all are not a runaway


def ends_in_repetition(text: str) -> bool:
    """Whether ``text`` ends by repeating one piece of it three times or more in a row
    (48 characters or more in all), the way a small model runs on until its token cap:
    "the United States of America the United States of America …". The piece may be cut
    anywhere at the very end; whitespace is collapsed first."""
    tail = " ".join(text[-4 * REPEAT_UNITS[1] :].split())
    low, high = REPEAT_UNITS
    for size in range(low, min(high, len(tail) // 3) + 1):
        times = max(3, -(-REPEAT_MIN_CHARS // size))
        for cut in range(size):
            end = len(tail) - cut
            if end < times * size:
                break
            unit = tail[end - size : end]
            if tail[end - times * size : end] == unit * times:
                return True
    return False


def _reason(value: object) -> str:
    """A stop reason as text: an enum's member name (``FinishReason.MAX_TOKENS``) or the
    string itself."""
    name = getattr(value, "name", value)
    return str(name).rsplit(".", 1)[-1] if name is not None else ""


def stopped_at_cap(message: AnyMessage) -> bool:
    """Whether the provider says a reply stopped at its token cap, in whichever way it
    says it: ``finish_reason="length"`` (OpenAI, OpenAI-compatible servers, Gemini's
    ``MAX_TOKENS``), ``stop_reason="max_tokens"`` (Anthropic, Bedrock), ``stopReason``
    (Bedrock Converse), ``done_reason="length"`` (Ollama), or an ``incomplete`` response
    cut at ``max_output_tokens`` (OpenAI's Responses API).

    Args:
        message: A model's reply.

    Returns:
        True when the reply is cut at the cap; False otherwise, or when nothing says.
    """
    metadata = getattr(message, "response_metadata", None) or {}
    for key, reasons in CUT_REASONS.items():
        if _reason(metadata.get(key)) in reasons:
            return True
    details = metadata.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return metadata.get("status") == "incomplete" and _reason(reason) in INCOMPLETE_CUT


# Stop reasons that mean the provider's filter, not the model, ended the reply.
FILTERED = frozenset({"content_filter", "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST"})
FILTERED_TEXT = "the provider's content filter stopped the reply"


def refusal_of(message: AnyMessage) -> str | None:
    """The words of a reply in which the model refused, or None when it did not refuse.

    Providers say it in their own ways: OpenAI's ``refusal`` field (Chat Completions) or
    ``refusal`` content part (Responses API), Anthropic's ``stop_reason="refusal"``, and a
    content filter's stop reason (``content_filter``, Gemini's ``SAFETY``). A refusal the
    model writes as ordinary text is not one here: it reads as an answer.

    Args:
        message: A model's reply.

    Returns:
        The refusal's text (the reply's text, or a note naming the filter, when the
        provider gave none); None for any other reply.
    """
    if not isinstance(message, AIMessage):
        return None
    stated = message.additional_kwargs.get("refusal")
    if isinstance(stated, str) and stated.strip():
        return stated.strip()
    if isinstance(message.content, list):
        for block in message.content:
            if isinstance(block, dict) and block.get("type") == "refusal":
                return str(block.get("refusal") or "").strip() or _said_or(message, "")
    metadata = message.response_metadata or {}
    if metadata.get("stop_reason") == "refusal":
        details = metadata.get("stop_details")
        explained = details.get("explanation") if isinstance(details, dict) else None
        return _said_or(message, str(explained or "").strip())
    details = metadata.get("incomplete_details")
    reasons = [
        metadata.get("finish_reason"),
        details.get("reason") if isinstance(details, dict) else None,
    ]
    if any(_reason(reason) in FILTERED for reason in reasons if reason):
        return _said_or(message, FILTERED_TEXT)
    return None


def _said_or(message: AIMessage, fallback: str) -> str:
    """The reply's text, else ``fallback``."""
    return content_text(message.content).strip() or fallback


def cut_short(message: AnyMessage) -> bool:
    """Whether a reply is cut: it stopped at the token cap (``stopped_at_cap``), or its
    text ends in a run of repeats. Such a reply is not an answer."""
    return stopped_at_cap(message) or ends_in_repetition(content_text(message.content))


def strip_fence(text: str) -> str:
    """A tool message's text without its fence markers, whatever the run's fence (for
    showing tool output to people; the model reads it fenced). Other text is returned as
    it is.

    Args:
        text: The content of a ``ToolMessage`` (see ``fence_output``).

    Returns:
        The output between the markers, with the truncation note if it was cut.
    """
    found = FENCED.match(text)
    return found.group(2) if found else text


def best_effort_answer(messages: Sequence[AnyMessage]) -> str:
    """The model's last answer-like text in a transcript: the last assistant text without
    tool calls, else an empty string (a tool result is never taken for an answer)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            text = content_text(message.content).strip()
            if text:
                return text
    return ""


@dataclass(frozen=True)
class ListItem:
    """One item of a plain-text list: its number (None for a bullet), the text on the
    marker's line and the lines that follow it up to the next item."""

    number: int | None
    text: str
    more: tuple[str, ...] = ()


@lru_cache(maxsize=8)
def _item_pattern(separators: str, tight: bool) -> re.Pattern[str]:
    # Quote and heading marks, then a number with its separator (``1.``, ``2)``,
    # ``**Step 3**:``; a labelled number may also take ``-``) or a bullet (``-``, ``+``,
    # ``•``, ``*``). Neighbouring repeats never share a character, so a long run of any
    # one character is matched in linear time.
    seps = re.escape(separators)
    after = r"[ \t*]*" if tight else r"\**(?:[ \t]+|$)"
    return re.compile(
        r"[>#\s]*(?:\**(?:"
        rf"{ITEM_LABELS}[ \t#]*(?P<labelled>\d{{1,3}})[ \t*]*[{seps}\-]"
        rf"|(?P<number>\d{{1,3}})[ \t*]*[{seps}]"
        r"|[-+\u2022])|\*)" + after,
        re.IGNORECASE,
    )


def _marker(line: str, separators: str, tight: bool) -> tuple[int | None, str] | None:
    match = _item_pattern(separators, tight).match(line)
    if match is None:
        return None
    digits = match.group("labelled") or match.group("number")
    return (int(digits) if digits else None), line[match.end() :].strip()


def strip_marker(line: str) -> str:
    """A line without its list marker (``1.``, ``2)``, ``- ``, ``Step 3:``), stripped."""
    found = _marker(line.strip(), ITEM_SEPARATORS, False)
    return found[1] if found is not None else line.strip()


def list_items(
    text: str, *, separators: str = ITEM_SEPARATORS, tight: bool = False
) -> list[ListItem]:
    """Read the items of a plain-text list.

    An item starts at a line holding a number and a separator (``1.``, ``2)``, ``3:``,
    ``Step 4:``, ``**5.**``, ``Candidate 6 -``) or a bullet (``-``, ``*``, ``+``, ``•``),
    after optional quote or heading marks, followed by a space or the line's end. Its text
    is the rest of that line without markdown emphasis; the non-empty lines after it, up to
    the next item, are its ``more`` lines. Lines before the first item are ignored.

    Args:
        text: Any model output (cut to ``MAX_PARSE_CHARS``).
        separators: The characters that may follow an item's number.
        tight: Let the text follow a numbered marker without a space (``1:7``), as lists
            of scores do.

    Returns:
        The items in order; empty when the text holds no list.
    """
    items: list[tuple[int | None, str, list[str]]] = []
    for line in clip(text).splitlines():
        stripped = line.strip()
        found = _marker(stripped, separators, tight)
        if found is not None:
            number, rest = found
            items.append((number, rest.strip("*_").strip(), []))
        elif items and stripped:
            items[-1][2].append(stripped)
    return [ListItem(number, first, tuple(more)) for number, first, more in items]
