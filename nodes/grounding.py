"""Grounded strings: JSON-schema strings that a reply may write only from given words.

A small model asked for a follow-up question or an answer drifts to whatever it saw last
(a year from a worked example, a name from nowhere). In json mode the reply is decoded
under its schema, so a string field can be held to the words of its evidence: the
question, the tool results read so far, a few function words. ``grounded_string`` makes
such a field; providers that enforce ``pattern`` (llama.cpp turns it into a grammar)
keep the reply to those words, the others still read the field as a plain string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loopgraphs.models import default_tool_choice
from loopgraphs.nodes.parsing.self_ask import question_features

if TYPE_CHECKING:
    from loopgraphs.nodes.settings import LoopSettings
    from loopgraphs.toolkits.registry import ToolRegistry

WORD_RE = re.compile(r"\w+")
MAX_WORDS = 400  # distinct words a pattern lists (a long tool result is cut here)

QUESTION_WORDS = frozenset(
    {
        "who",
        "what",
        "which",
        "where",
        "when",
        "how",
        "many",
        "much",
        "is",
        "was",
        "are",
        "were",
        "did",
        "does",
        "do",
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "to",
        "and",
        "year",
    }
)
"""Words any grounded follow-up question may use besides its evidence."""


def words_of(*texts: str) -> list[str]:
    """The distinct words of ``texts`` in order of first use, each also capitalised and
    in lower case (a sentence may start with any of them), at most ``MAX_WORDS``."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in WORD_RE.findall(text):
            for form in (word, word.lower(), word[:1].upper() + word[1:]):
                seen.setdefault(form, None)
            if len(seen) >= MAX_WORDS:
                return list(seen)[:MAX_WORDS]
    return list(seen)


def grounded_string(
    words: Iterable[str], *, most: int, end: str = "", holding: str = "", after: int = 0
) -> dict[str, Any]:
    """A JSON-schema string of 1 to ``most`` of ``words`` (repeats allowed), separated by
    a space, a hyphen or an apostrophe, then optionally ``end``; with ``holding``, a
    string that holds that text, with up to ``most`` words before it and ``after`` words
    after it.

    Args:
        words: The words the string may use (see ``words_of``).
        most: The most words the string may hold (before ``holding``, with one).
        end: A punctuation mark the string may end with (``"?"``, ``"."``; one character).
        holding: A text the string must hold, word by word (an earlier answer a
            follow-up builds on); its punctuation is left out, the words may be separated
            as any others (grammar converters such as llama.cpp's support few escapes).
        after: The most words after ``holding``.

    Returns:
        ``{"type": "string", "pattern": ...}``; ``{"type": "string"}`` when ``words`` is
        empty and nothing is held.

    Raises:
        ValueError: ``most`` is below 1, or ``end`` is not one punctuation mark.
    """
    if most < 1:
        raise ValueError(f"most must be >= 1, got {most}")
    if len(end) > 1 or end in ("]", "\\", "^"):
        raise ValueError(f"end must be one punctuation mark, got {end!r}")
    chosen = sorted({w for w in words if w}, key=lambda w: (-len(w), w))
    tail = f"[{end}]?" if end else ""  # a class: no escape for the grammar to refuse
    sep = "( |-|')"
    held = sep.join(WORD_RE.findall(holding))
    if not chosen:
        return {"type": "string", "pattern": f"^{held}{tail}$"} if held else {"type": "string"}
    word = "(" + "|".join(re.escape(w) for w in chosen) + ")"
    if held:
        before = f"({word}{sep}){{0,{most}}}"
        rest = f"({sep}{word}){{0,{after}}}"
        return {"type": "string", "pattern": f"^{before}{held}{rest}{tail}$"}
    return {"type": "string", "pattern": f"^{word}({sep}{word}){{0,{most - 1}}}{tail}$"}


def new_words(words: Iterable[str], known: str) -> list[str]:
    """``words`` without those of ``known`` (compared in lower case): what an answer may
    say that its question did not."""
    said = {w.lower() for w in WORD_RE.findall(known)}
    return [w for w in words if w.lower() not in said]


def guides(run: LoopSettings) -> bool:
    """Whether a run's replies are guided (decoded under grounded schemas in json mode):
    it has tools, and its model is one whose tool call is required by default (the
    embedded small model, see ``loopgraphs.models.default_tool_choice``), unless the run
    asks for ``tool_choice="auto"``."""
    if not run.tools or run.tool_choice == "auto":
        return False
    return default_tool_choice(run.chat_model) is not None


def tool_for(tools: ToolRegistry, question: str, choice: str = "required") -> str:
    """The tool a guided run's question goes to unless the model names another: the tool
    named by ``choice``, else the tool whose own worked examples share the most with the
    question (see ``question_features``), else the first tool."""
    if choice in tools.names:
        return choice
    wanted = question_features(question)
    best, shared = tools.names[0], 0
    for name, example in tools.examples():
        score = len(question_features(example.question) & wanted)
        if score > shared:
            best, shared = name, score
    return best


def closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema object of exactly ``properties``, every one required, in that order
    (the order a constrained reply writes them in)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def takes_one_input(tools: ToolRegistry, name: str) -> bool:
    """Whether a tool takes at most one argument, so that a text (a question, a claim's
    check) can be its whole input."""
    return len(tools.parameters(name).get("properties", {})) <= 1
