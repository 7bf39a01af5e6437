"""Whether a run's answer is the model's own.

A run's ``answer`` must be text the model wrote as its answer. Small models sometimes
reply with something else: a tool result copied whole ("No results for 1980."), the
library's own prompt text (a re-ask instruction read back), or the user's question
repeated. Such a reply is no answer. When a run ends on one, ``settle_answer`` empties
``answer`` and says why in ``error``; a run that would have been ``completed`` ends
``error`` instead (one that ran out of steps stays ``max_iterations``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar, cast

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

from loopgraphs import prompts
from loopgraphs.nodes.parsing.text import content_text, strip_fence
from loopgraphs.state import Bookkeeping, CommonState, messages_of, scratch_of
from loopgraphs.text import FENCE_MARKER, of_kind

ECHO_WORDS = 6
"""Words in a row that a reply shares with one of the library's prompts to be an echo."""

SCAN_CHARS = 24_000
"""How much of an answer the checks read: a prompt, and a tool result as the loops show it
(``max_tool_output_chars``), are far shorter, and a runaway reply of megabytes must cost
no more than this."""

ATOMIC_WORDS = 3
"""A tool result of at most this many words is a value ("323", "Paris, France") that a
model may rightly give back as its answer; a longer one copied whole is no answer."""

QUESTION_WORDS = 4
"""A question this long or longer, read back as the answer, is no answer (a short one,
"Paris?", may be answered by its own words)."""

NO_ANSWER = "no usable answer"
"""How ``error`` starts when a run ended without an answer of the model's own."""

_WORD = re.compile(r"[^\W_]+")
_ANSWER_LEAD = re.compile(
    r"^\s*(?:so\s+the\s+)?final[\s_]+answer\s*(?:is)?\s*[:\-]?\s*", re.IGNORECASE
)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_SLOT = re.compile(r"<([^<>{}]{1,40})>")


def words(text: str) -> tuple[str, ...]:
    """The text's words, lower-cased, without punctuation."""
    return tuple(word.lower() for word in _WORD.findall(text))


def _runs(tokens: Sequence[str], size: int) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1))


@lru_cache(maxsize=1)
def _prompt_texts() -> tuple[str, ...]:
    """Every prompt text of ``loopgraphs.prompts`` (worked examples' strings too)."""
    texts: list[str] = []
    for value in vars(prompts).values():
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            texts.extend(t for t in (item if isinstance(item, tuple) else (item,)))
    return tuple(t for t in texts if isinstance(t, str))


@lru_cache(maxsize=1)
def _prompt_pieces() -> tuple[tuple[tuple[str, ...], ...], ...]:
    """Each prompt as the words of its fixed pieces (the text between placeholders)."""
    return tuple(
        tuple(piece for piece in map(words, _PLACEHOLDER.split(text)) if piece)
        for text in _prompt_texts()
    )


@lru_cache(maxsize=1)
def prompt_runs() -> frozenset[tuple[str, ...]]:
    """Every ``ECHO_WORDS`` words in a row of the library's prompts."""
    return frozenset(
        run for pieces in _prompt_pieces() for piece in pieces for run in _runs(piece, ECHO_WORDS)
    )


def _spaced(tokens: Sequence[str]) -> str:
    """Words joined by single spaces, with a space at each end (so that a search for
    `` a b `` finds whole words)."""
    return f" {' '.join(tokens)} "


@lru_cache(maxsize=1)
def _prompt_text() -> str:
    """Every fixed piece of every prompt, normalised and spaced, one per line: where a
    part of a prompt is found with one substring search."""
    return "\n".join(_spaced(piece) for pieces in _prompt_pieces() for piece in pieces)


@lru_cache(maxsize=1)
def _templates() -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The templates whose fixed text has ``ECHO_WORDS`` words or more, each as the number
    of words of its fixed text and its spaced fixed pieces, in order."""
    return tuple(
        (sum(map(len, pieces)), tuple(_spaced(piece) for piece in pieces))
        for pieces in _prompt_pieces()
        if len(pieces) > 1 and sum(map(len, pieces)) >= ECHO_WORDS
    )


def _fills(spaced: str, pieces: Sequence[str]) -> bool:
    """Whether ``spaced`` holds a template's fixed pieces in order (a filled template);
    each piece is looked for after the one before it, so the search stays linear."""
    at = 0
    for piece in pieces:
        found = spaced.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece) - 1  # the next piece may start on this one's last space
    return True


@lru_cache(maxsize=1)
def _slots() -> tuple[frozenset[str], frozenset[tuple[str, ...]]]:
    """The prompts' slots for the model to fill, as written (``<answer>``) and, for those
    of two words or more, as words ("the final answer")."""
    slots = {slot for text in _prompt_texts() for slot in _SLOT.findall(text)}
    spoken = {words(slot) for slot in slots if len(words(slot)) > 1}
    return frozenset(f"<{slot}>" for slot in slots), frozenset(spoken)


def echoes_prompt(answer: str) -> bool:
    """Whether the answer is text of the library's own prompts: it holds ``ECHO_WORDS``
    words in a row of one, or a filled template's fixed text in order; it is a part of one
    (``ECHO_WORDS - 1`` words or more); or it is a prompt's slot left unfilled (``<answer>``
    as written, or "the final answer")."""
    return _echoes(answer, words(answer[:SCAN_CHARS]))


def _echoes(answer: str, said: tuple[str, ...]) -> bool:
    """``echoes_prompt`` with the words of the answer's first ``SCAN_CHARS`` characters
    (``said``) read already."""
    if not said:
        return False
    written, spoken = _slots()
    if answer.strip().strip(".") in written or said in spoken:
        return True
    if len(said) >= ECHO_WORDS:
        runs = prompt_runs()
        if any(run in runs for run in _runs(said, ECHO_WORDS)):
            return True
    if len(said) < ECHO_WORDS - 1:
        return False  # too short for a part of a prompt, or a filled template
    spaced = _spaced(said)
    if spaced in _prompt_text():
        return True
    # A filled template holds every word of its fixed text.
    return any(_fills(spaced, pieces) for size, pieces in _templates() if size <= len(said))


def _said(answer: str) -> tuple[str, ...]:
    """The answer's words without fence markers and a leading "final answer" label."""
    return words(_ANSWER_LEAD.sub("", FENCE_MARKER.sub(" ", answer)))


def copied_result(answer: str, messages: Sequence[AnyMessage]) -> bool:
    """Whether the answer is a tool result of the conversation copied whole: an error, or
    one longer than a value (``ATOMIC_WORDS``)."""
    if len(answer) > SCAN_CHARS:
        return False
    return _copied(_said(answer), messages)


def _copied(said: tuple[str, ...], messages: Sequence[AnyMessage]) -> bool:
    """``copied_result`` with the answer's words (``_said``) read already."""
    short = len(said) <= ATOMIC_WORDS  # as short as a value: only a failed result counts
    for message in of_kind(messages, ToolMessage):
        if short and not failed(message):
            continue
        if said == words(strip_fence(content_text(message.content))):
            return True
    return False


def failed(message: ToolMessage) -> bool:
    """Whether a tool result reports a failure: an error ``ToolMessage``, or an ``Error:``
    observation (how the bundled tools and the tool guard report a refused input)."""
    if message.status == "error":
        return True
    text = content_text(message.content)
    # "Error:" inside the fence is in the whole text too (a cheaper look first).
    return "Error:" in text and strip_fence(text).startswith("Error:")


def repeats_question(answer: str, messages: Sequence[AnyMessage], start: int) -> bool:
    """Whether the answer is the user's question repeated (the last human message before
    the run's own messages; one of ``QUESTION_WORDS`` words or more)."""
    if len(answer) > SCAN_CHARS:
        return False
    return _repeats(_said(answer), messages, start)


def _repeats(said: tuple[str, ...], messages: Sequence[AnyMessage], start: int) -> bool:
    """``repeats_question`` with the answer's words (``_said``) read already."""
    if len(said) < QUESTION_WORDS:
        return False  # shorter than any question it could repeat
    asked = next(
        (m for m in reversed(messages[:start] or messages) if isinstance(m, HumanMessage)), None
    )
    return asked is not None and said == words(content_text(asked.content))


def unusable(
    answer: str, messages: Sequence[AnyMessage], start: int = 0, *, fence: str = ""
) -> str:
    """Why the answer is not the model's own ("" when it is).

    Args:
        answer: The run's answer.
        messages: The run's messages (the conversation with the run's own messages).
        start: Index of the run's first own message.
        fence: The run's fence marker: an answer of nothing but the marker (a small
            model copies it from a fenced result) says nothing.

    Returns:
        A phrase that completes "the model's reply ..." or "" for a usable answer.
    """
    scanned = answer[:SCAN_CHARS]
    said = _said(scanned)
    if fence:
        marker = _said(fence)
        said = tuple(word for word in said if word not in marker)
    if not said:
        return "said nothing"
    if _echoes(answer, words(scanned)):
        return "repeated the instructions it was given"
    if len(answer) > SCAN_CHARS:
        return ""  # the checks below read only answers they can read whole
    if _copied(said, messages):
        return "only copied a tool result"
    if _repeats(said, messages, start):
        return "only repeated the question"
    return ""


SettledT = TypeVar("SettledT", bound=CommonState)


def settle_answer(state: Mapping[str, object], update: SettledT) -> SettledT:
    """The update of a step that ends a run, with an answer that is not the model's own
    taken out: ``answer`` empty, ``error`` saying why, and ``completed`` turned into
    ``error``. A run a tool ended (``return_direct``) keeps the tool's result; one a
    middleware hook ended, or one with a structured response, may end without an answer.
    Other updates are returned as they are."""
    given: CommonState = update  # its keys read with the types every loop's state gives them
    status = given.get("status")
    if status not in ("completed", "max_iterations"):
        return update
    answer = given["answer"] if "answer" in given else cast("str", state.get("answer") or "")
    scratch: Bookkeeping = {**scratch_of(state), **(given.get("scratch") or {})}
    if scratch.get("tool_ended"):
        return update  # a return_direct tool's result is the answer by its own contract
    written: Mapping[str, object] = update  # a loop's structured response, when it has one
    answered_otherwise = (
        scratch.get("hook_ended")
        or written.get("structured_response", state.get("structured_response")) is not None
    )
    if not answer and answered_otherwise:
        return update
    messages = [*messages_of(state), *(given.get("messages") or [])]
    start = scratch.get("transcript_start") or 0
    reason = unusable(answer, messages, start, fence=scratch.get("fence") or "")
    if not reason:
        return update
    error = f"{NO_ANSWER}: the model's reply {reason}"
    if not answer:
        error = f"{NO_ANSWER}: the model gave none before the run ended"
    settled = {**update, "answer": "", "error": error}
    if status == "completed":
        settled["status"] = "error"
    # The update's own type: its keys, with answer, error and status (keys of every
    # loop's state) given new values of their types.
    return cast(SettledT, settled)


__all__ = [
    "NO_ANSWER",
    "copied_result",
    "echoes_prompt",
    "repeats_question",
    "settle_answer",
    "unusable",
    "words",
]
