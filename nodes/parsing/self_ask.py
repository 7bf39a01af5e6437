"""The Self-Ask grammar: follow-up questions, intermediate answers, named tools and the
final answer line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from loopgraphs.nodes.parsing.json_text import ToolInput, json_objects, tool_input_value
from loopgraphs.nodes.parsing.react import final_action_answer, final_answer_of
from loopgraphs.nodes.parsing.text import clip, tidy
from loopgraphs.text import STOP_WORDS

SO_FINAL_RE = re.compile(r"So[ \t]+the[ \t]+final[ \t]+answer[ \t]+is[ \t]*:", re.IGNORECASE)
NEEDED_RE = re.compile(
    r"\s*Are[ \t]+follow[ \t_-]*up[ \t]+questions[ \t]+needed[ \t]+here[ \t]*\??[ \t]*:?"
    r"[ \t]*(?:yes|no)?[ \t.!,]*",
    re.IGNORECASE,
)
SELF_ASK_LINE_RE = re.compile(
    r"[ \t>*_#-]*(follow[ \t_-]*up(?:[ \t]+question)?|intermediate[ \t_]+answer"
    r"|tool[ \t_]*input|tool)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE,
)

SelfAskKind = Literal["final", "tool", "follow_up", "intermediate", "none"]


@dataclass
class SelfAskTurn:
    """One parsed Self-Ask reply.

    ``kind`` is ``"final"`` (``answer`` set; with ``question``, and ``tool`` and
    ``tool_input`` when named, if the reply asked something before its final line),
    ``"tool"`` (a named tool: ``tool`` and
    ``tool_input`` set, ``question`` when a follow-up was also written), ``"follow_up"``
    (``question`` set), ``"intermediate"`` (only an intermediate answer, nothing asked)
    or ``"none"`` (no marker: ``answer`` is the reply's text). ``intermediate`` is an
    intermediate answer the model wrote itself before anything else in the reply (the
    answer to its previous follow-up when no tool answers them).
    """

    kind: SelfAskKind
    answer: str = ""
    question: str = ""
    tool: str = ""
    tool_input: ToolInput = ""
    intermediate: str | None = None


def _marker_key(raw: str) -> str:
    word = raw.lower()
    if word.startswith("follow"):
        return "follow_up"
    if word.startswith("intermediate"):
        return "intermediate"
    return "tool_input" if "input" in word else "tool"


def _without_preamble(text: str) -> str:
    match = NEEDED_RE.match(text)
    rest = text[match.end() :].strip() if match else text.strip()
    return rest or text.strip()


def parse_self_ask(text: str) -> SelfAskTurn:
    """Parse one Self-Ask reply.

    ``So the final answer is:`` wins over everything else (a follow-up asked before it is
    kept on the turn, for a loop whose tools answer follow-ups). Otherwise the reply is read
    up to the first follow-up question: an ``Intermediate answer:`` before it is kept
    (the model answering its previous question), a named tool (``Tool:`` with
    ``Tool Input:``) wins over a bare ``Follow up:``, and anything after an intermediate
    answer that follows the question is ignored (a model inventing the tool's result).
    Replies in JSON (``final_answer``, ``follow_up``, ``tool``, ``tool_input``) are read
    too when no marker is found.

    Args:
        text: The model's reply.

    Returns:
        The parsed turn; ``kind="none"`` carries the reply's text as the answer.
    """
    text = clip(text)
    final = SO_FINAL_RE.search(text)
    head = text[: final.start()] if final else text
    intermediate: list[str] | None = None
    question: str | None = None
    tool: str | None = None
    tool_input: list[str] | None = None
    collecting: list[str] | None = None
    for line in head.splitlines():
        if NEEDED_RE.match(line):
            collecting = None
            continue
        match = SELF_ASK_LINE_RE.match(line)
        if match is None:
            if collecting is not None and (line.strip() or collecting is intermediate):
                collecting.append(line)
            elif not line.strip():
                collecting = None
            continue
        key, rest = _marker_key(match.group(1)), line[match.end() :]
        if key == "intermediate":
            if question is not None or tool is not None:
                break
            if intermediate is None:
                intermediate = [rest]
                collecting = intermediate
            continue
        if key == "follow_up":
            if question is not None:
                break
            question, collecting = tidy(rest), None
        elif key == "tool":
            if tool is not None:
                break
            tool, collecting = tidy(rest), None
        elif tool_input is None:
            tool_input = [rest]
            collecting = tool_input
    said = "\n".join(intermediate).strip() if intermediate is not None else None
    asked: SelfAskTurn | None = None
    if tool:
        raw_input = "\n".join(tool_input).strip() if tool_input is not None else ""
        if not raw_input and "(" in tool and tool.endswith(")"):
            tool, raw_input = tool[: tool.index("(")].strip(), tool[tool.index("(") + 1 : -1]
        value: ToolInput = tool_input_value(raw_input) if raw_input else question or ""
        asked = SelfAskTurn(
            "tool",
            question=question or (value if isinstance(value, str) else json.dumps(value)),
            tool=tool,
            tool_input=value,
            intermediate=said,
        )
    elif question:
        asked = SelfAskTurn("follow_up", question=question, intermediate=said)
    if final is not None:
        answer = tidy(text[final.end() :])
        answer = final_action_answer(answer) or answer
        if answer:
            if asked is None:
                return SelfAskTurn("final", answer=answer, intermediate=said)
            return replace(asked, kind="final", answer=answer)
    if asked is not None:
        return asked
    if said:
        return SelfAskTurn("intermediate", intermediate=said)
    from_json = _self_ask_json(text)
    if from_json is not None:
        return from_json
    return SelfAskTurn("none", answer=final_answer_of(_without_preamble(text)))


def asked_part(text: str) -> str:
    """A reply up to the end of its first question (the ``Follow up:`` line, or the named
    tool and its input): what a loop whose tools answer follow-ups keeps of a reply that
    goes on to answer its own question."""
    text = clip(text)
    final = SO_FINAL_RE.search(text)
    kept: list[str] = []
    seen: set[str] = set()
    for line in (text[: final.start()] if final else text).splitlines():
        match = SELF_ASK_LINE_RE.match(line)
        key = _marker_key(match.group(1)) if match else ""
        if seen & {"follow_up", "tool"} and (key == "intermediate" or key in seen):
            break
        if key:
            seen.add(key)
        kept.append(line)
    return "\n".join(kept).strip()


def _text_field(data: Mapping[str, object], *keys: str) -> str:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _self_ask_json(text: str) -> SelfAskTurn | None:
    objects = json_objects(text, limit=3)
    if not objects:
        return None
    data = objects[0]
    answer = _text_field(data, "final_answer", "answer")
    if answer:
        return SelfAskTurn("final", answer=answer)
    question = _text_field(data, "follow_up", "question")
    tool = _text_field(data, "tool", "tool_name")
    raw_input = data.get("tool_input", data.get("input"))
    if tool:
        value: ToolInput
        if isinstance(raw_input, dict):
            value = raw_input
        elif raw_input is None:
            value = question
        else:
            value = str(raw_input)
        return SelfAskTurn("tool", question=question or str(value), tool=tool, tool_input=value)
    if question:
        return SelfAskTurn("follow_up", question=question)
    return None


_WORD_RE = re.compile(r"\w+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_STEM_CHARS = 5  # words are compared by their first letters ("founder" meets "founded")
_MAX_SENTENCES = 400
_READ_MARKER_RE = re.compile(
    r"^[ \t>*_#-]*(?:intermediate[ \t_]+answer|answer|so[ \t]+the[ \t]+final[ \t]+answer[ \t]+is)"
    r"[ \t*_]*:[ \t*_]*",
    re.IGNORECASE,
)


def _stems(text: str) -> set[str]:
    """What a text is about: its words, lower-cased and cut to their first letters, without
    the stop words of the bundled search tool."""
    return {
        word[:_STEM_CHARS]
        for word in (token.lower() for token in _WORD_RE.findall(text))
        if word not in STOP_WORDS
    }


def question_features(text: str) -> set[str]:
    """What kind of question a text asks, to match it with a tool's worked examples: its
    words cut to their first letters (stop words left out), ``#`` for a number, ``Name``
    for a capitalised word after the first and the symbols other than punctuation
    (``*``, ``+``)."""
    features = set()
    for position, token in enumerate(re.findall(r"\w+|[^\w\s]", clip(text))):
        if token.isdigit():
            features.add("#")
        elif token[0].isupper() and position:
            features.add("Name")
        elif token.isalnum() and token.lower() not in STOP_WORDS:
            features.add(token.lower()[:_STEM_CHARS])
        elif not token.isalnum() and token not in "?.,!;:'\"":
            features.add(token)
    return features


ASKING_WORDS = frozenset(
    {
        "at",
        "by",
        "do",
        "give",
        "has",
        "have",
        "it",
        "its",
        "many",
        "me",
        "much",
        "name",
        "person",
        "someone",
        "tell",
        "that",
        "this",
        "whether",
        "with",
    }
)
"""Words that ask rather than name what is asked ("Name the ...", "that person's ..."):
neither a fact a question still needs nor a fact read from a tool result."""


def _content(word: str) -> bool:
    """Whether a word may name a fact: not a stop word of the search tool, not an asking
    word, and more than one letter (the "s" of "Ada's")."""
    low = word.lower()
    return (len(word) > 1 or word.isdigit()) and low not in STOP_WORDS | ASKING_WORDS


def needed_words(question: str, known: Sequence[str]) -> list[str]:
    """What a question still asks for once ``known`` is known: its words (in order, each
    once) that name something, whose stems no text of ``known`` (the follow-ups asked so
    far and their answers) uses. For "What is the profession of Ada's mentor?" after
    "Who is Ada's mentor?" it is ``["profession"]``.

    Args:
        question: The user's question.
        known: The follow-ups asked so far and their intermediate answers.

    Returns:
        The words, as the question writes them.
    """
    said = set().union(*(_stems(text) for text in known))
    found: dict[str, None] = {}
    for word in _WORD_RE.findall(clip(question)):
        if _content(word) and word.lower()[:_STEM_CHARS] not in said:
            found.setdefault(word, None)
    return list(found)


def builds_on(question: str, answer: str, needed: Sequence[str]) -> bool:
    """Whether a follow-up asks the fact a question needs of the answer found before:
    it holds that answer and, when the question still needs something, one of ``needed``
    (see ``needed_words``), so "Who is Tessford?" does not build on "Tessford" when the
    river it lies on is needed, and "On which river lies Tessford?" does."""
    asked = _stems(question)
    holds = bool(_stems(answer)) and _stems(answer) <= asked
    return holds and (not needed or bool(_stems(" ".join(needed)) & asked))


def _sentences(text: str) -> list[str]:
    return [
        piece.strip()
        for line in clip(text).splitlines()
        for piece in _SENTENCE_END_RE.split(line)
        if piece.strip()
    ][:_MAX_SENTENCES]


def _ranks(sentences: Sequence[str], question: str, needed: str) -> list[tuple[int, int]]:
    """How close each sentence is to a question: the stems it shares with the question,
    then those it shares with ``needed`` (the words the user's question still needs)."""
    wanted, more = _stems(question), _stems(needed)
    return [(len(_stems(s) & wanted), len(_stems(s) & more)) for s in sentences]


def relevant_sentences(text: str, question: str, limit: int = 3, needed: str = "") -> str:
    """The sentences of a tool result that share the most words with a question, in the
    result's order: what a small model reads an intermediate answer from (a long result
    buries the sentence that answers).

    Args:
        text: The tool's result.
        question: The follow-up question the result answers.
        limit: How many sentences to keep.
        needed: Words that break ties between sentences that share as many words with
            the question: what the user's question still needs (see ``needed_words``),
            so "Who is Ada Quinlan?" keeps her profession when the profession is needed.

    Returns:
        The kept sentences joined by spaces; the whole (stripped) text when it holds no
        more than ``limit`` sentences.
    """
    sentences = _sentences(text)
    if len(sentences) <= limit:
        return " ".join(sentences)
    ranks = _ranks(sentences, question, needed)
    ranked = sorted(range(len(sentences)), key=lambda i: (-ranks[i][0], -ranks[i][1], i))
    return " ".join(sentences[i] for i in sorted(ranked[:limit]))


def facts_read(
    text: str, question: str, needed: str = "", known: str = "", page: str = ""
) -> list[list[str]]:
    """The facts a tool result gives for a follow-up: for each of its sentences (those
    sharing the most words with the follow-up, then with ``needed``, first), the words
    that name something and that neither the follow-up nor ``known`` (the user's
    question) uses. For "Who founded Harrowby Looms?" and "Harrowby Looms was founded by
    Ada Quinlan." it is ``[["Ada", "Quinlan"]]``: the fact, never a word of the sentence's
    frame such as "born" or "founded".

    Args:
        text: The sentences of the tool result shown for the follow-up.
        question: The follow-up.
        needed: What the user's question still needs (see ``needed_words``).
        known: Text whose words are not the fact (the user's question).
        page: The whole tool result: a word it writes in lower case in more than one
            sentence ("born", "year", "lies") frames its facts and is not one.

    Returns:
        One list of words per sentence that holds such words, the closest first.
    """
    sentences = _sentences(text)
    ranks = _ranks(sentences, question, needed)
    said = _stems(question) | _stems(known)
    uses: dict[str, int] = {}
    for sentence in _sentences(page):
        for word in {w for w in _WORD_RE.findall(sentence) if w.islower()}:
            uses[word] = uses.get(word, 0) + 1
    said |= {word[:_STEM_CHARS] for word, count in uses.items() if count > 1}
    facts: list[tuple[tuple[int, int], int, list[str]]] = []
    for index, (sentence, rank) in enumerate(zip(sentences, ranks, strict=True)):
        words = [
            w
            for w in _WORD_RE.findall(sentence)
            if _content(w) and w.lower()[:_STEM_CHARS] not in said
        ]
        if words:
            facts.append(((-rank[0], -rank[1]), index, list(dict.fromkeys(words))))
    return [words for _, _, words in sorted(facts)]


def read_answer(text: str) -> str:
    """The intermediate answer in a reply to "what does the tool result say": its first
    non-empty line, without an ``Intermediate answer:`` or ``Answer:`` marker."""
    for line in clip(text).splitlines():
        line = tidy(_READ_MARKER_RE.sub("", line, count=1))
        if line:
            return line
    return ""


_OPEN_FIELD_CHARS = 300


def open_json_field(text: str, key: str) -> str:
    """The value of a JSON string field, read even when the reply was cut before the
    string ended (``{"follow_up": "Who founded ...``): the escaped text up to the closing
    quote or the end, at most 300 characters."""
    match = re.search(rf'"{re.escape(key)}"\s*:\s*"', clip(text))
    if match is None:
        return ""
    chars: list[str] = []
    escaped = False
    for char in match.string[match.end() : match.end() + _OPEN_FIELD_CHARS]:
        if escaped:
            chars.append({"n": " ", "t": " "}.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            break
        else:
            chars.append(char)
    return tidy("".join(chars))
