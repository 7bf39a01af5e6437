"""Parsers for the Self-Ask and CRITIC grammars, and answer normalisation for voting.

Like ``nodes/parse.py``, every function here is total (any input gives a result, never an
exception) and runs in time linear in its input: replies are read line by line with
anchored patterns whose repeated parts are separated by literals.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import json_repair

from loopgraphs.nodes.parse import clip, final_answer_of, json_spans

# JSON that fails to parse is repaired only when small and shallow: repairing deeply
# nested or very long broken JSON is far slower than linear.
MAX_REPAIR_CHARS = 20_000
MAX_REPAIR_DEPTH = 32
MAX_JSON_CANDIDATES = 20


def _nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]" and depth:
            depth -= 1
    return deepest


def loads_lenient(candidate: str, repair_limit: int = MAX_REPAIR_CHARS) -> Any:
    """Decode JSON, repairing small broken objects; None when it cannot be read."""
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    if len(candidate) > repair_limit or _nesting(candidate) > MAX_REPAIR_DEPTH:
        return None
    try:
        return json_repair.loads(candidate)
    except Exception:
        return None


def json_objects(text: str, limit: int = MAX_JSON_CANDIDATES) -> list[dict[str, Any]]:
    """The top-level JSON objects in free text (a JSON list of objects included), in order."""
    found = []
    budget = MAX_REPAIR_CHARS  # repair work shared by all candidates of one text
    for start, end in json_spans(text)[:limit]:
        value = loads_lenient(text[start:end], budget)
        budget -= end - start
        if isinstance(value, dict) and value:
            found.append(value)
    return found


# ---------------------------------------------------------------- Self-Ask

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

    ``kind`` is ``"final"`` (``answer`` set), ``"tool"`` (a named tool: ``tool`` and
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
    tool_input: dict[str, Any] | str = ""
    intermediate: str | None = None


def _marker_key(raw: str) -> str:
    word = raw.lower()
    if word.startswith("follow"):
        return "follow_up"
    if word.startswith("intermediate"):
        return "intermediate"
    return "tool_input" if "input" in word else "tool"


def tool_input_value(raw: str) -> dict[str, Any] | str:
    """A tool input as written by a model: a JSON object when it is one, else plain text."""
    raw = raw.strip()
    if raw.startswith("```"):
        raw = raw.strip("`").strip()
        if raw[:4].lower() == "json":
            raw = raw[4:].strip()
    if raw.startswith("{"):
        found = json_objects(raw, limit=1)
        if found:
            return found[0]
    return raw.strip().strip("\"'`").strip()


def _tidy(text: str) -> str:
    return text.strip().strip("*_`").strip()


def _without_preamble(text: str) -> str:
    match = NEEDED_RE.match(text)
    rest = text[match.end() :].strip() if match else text.strip()
    return rest or text.strip()


def parse_self_ask(text: str) -> SelfAskTurn:
    """Parse one Self-Ask reply.

    ``So the final answer is:`` wins over everything else. Otherwise the reply is read
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
            question, collecting = _tidy(rest), None
        elif key == "tool":
            if tool is not None:
                break
            tool, collecting = _tidy(rest), None
        elif tool_input is None:
            tool_input = [rest]
            collecting = tool_input
    said = "\n".join(intermediate).strip() if intermediate is not None else None
    if final is not None:
        answer = _tidy(text[final.end() :])
        if answer:
            return SelfAskTurn("final", answer=answer, intermediate=said)
    if tool:
        raw_input = "\n".join(tool_input).strip() if tool_input is not None else ""
        if not raw_input and "(" in tool and tool.endswith(")"):
            tool, raw_input = tool[: tool.index("(")].strip(), tool[tool.index("(") + 1 : -1]
        value: dict[str, Any] | str = tool_input_value(raw_input) if raw_input else question or ""
        return SelfAskTurn(
            "tool",
            question=question or (value if isinstance(value, str) else json.dumps(value)),
            tool=tool,
            tool_input=value,
            intermediate=said,
        )
    if question:
        return SelfAskTurn("follow_up", question=question, intermediate=said)
    if said:
        return SelfAskTurn("intermediate", intermediate=said)
    from_json = _self_ask_json(text)
    if from_json is not None:
        return from_json
    return SelfAskTurn("none", answer=final_answer_of(_without_preamble(text)))


def _text_field(data: dict[str, Any], *keys: str) -> str:
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
        value: dict[str, Any] | str
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


# ---------------------------------------------------------------- CRITIC

CLAIM_LINE_RE = re.compile(
    r"[ \t>*_#-]*(?:\d{1,3}[.)][ \t]*[*_]*)?(claim|tool[ \t_]*input|tool)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE,
)
VERIFIED_LINE_RE = re.compile(r"[ \t>*_#-]*VERIFIED\b", re.IGNORECASE)
VERIFIED_WORD_RE = re.compile(r"(?<![A-Za-z])(?<![Nn][Oo][Tt] )VERIFIED\b")
MAX_CLAIMS = 10


@dataclass
class Critique:
    """A parsed critique: ``verified`` (the draft was accepted as it is) and the claims
    to check, each ``{"claim", "tool", "tool_input"}``."""

    verified: bool = False
    claims: list[dict[str, Any]] = field(default_factory=list)


def make_claim(claim: Any, tool: Any, tool_input: Any) -> dict[str, Any] | None:
    """A claim to check as ``{"claim", "tool", "tool_input"}``, or None without a tool.

    A missing input becomes the claim's text; ``TOOL: search(eiffel tower)`` is split
    into the tool name and its input.
    """
    name = _tidy(str(tool or ""))
    if not name:
        return None
    text = _tidy(str(claim or ""))
    value: dict[str, Any] | str
    if isinstance(tool_input, dict):
        value = tool_input
    elif tool_input is None or not str(tool_input).strip():
        value = text
    else:
        value = tool_input_value(str(tool_input))
    if "(" in name and name.endswith(")") and value == text:
        name, value = (
            name[: name.index("(")].strip(),
            tool_input_value(name[name.index("(") + 1 : -1]),
        )
    return {
        "claim": text or (value if isinstance(value, str) else json.dumps(value)),
        "tool": name,
        "tool_input": value,
    }


def _claim_blocks(text: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    current: dict[str, list[str]] | None = None
    collecting: str | None = None
    depth = 0

    def close() -> None:
        if current is not None:
            claim = " ".join(current["claim"]) if "claim" in current else None
            tool = current["tool"][0] if "tool" in current else None
            tool_input = "\n".join(current["tool_input"]) if "tool_input" in current else None
            found = make_claim(claim, tool, tool_input)
            if found is not None:
                blocks.append(found)

    for line in text.splitlines():
        match = CLAIM_LINE_RE.match(line)
        if match is None:
            if not line.strip():
                collecting = None
            elif current is not None and collecting == "claim":
                current["claim"].append(line.strip())
            elif current is not None and collecting == "tool_input" and depth > 0:
                current["tool_input"].append(line)
                depth += line.count("{") - line.count("}")
            continue
        key = match.group(1).lower()
        value = line[match.end() :]
        if key == "claim" or current is None or (key == "tool" and "tool" in current):
            close()
            current = {}
        if key == "claim":
            current["claim"], collecting = [value.strip()], "claim"
        elif key == "tool":
            current["tool"], collecting = [value.strip()], None
        else:
            current["tool_input"], collecting = [value.strip()], "tool_input"
            depth = value.count("{") - value.count("}")
    close()
    return blocks


def _json_claims(text: str) -> Critique:
    critique = Critique()
    for data in json_objects(text):
        items = data.get("claims")
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    found = make_claim(item.get("claim"), item.get("tool"), item.get("tool_input"))
                    if found is not None:
                        critique.claims.append(found)
        elif "tool" in data:
            found = make_claim(data.get("claim"), data.get("tool"), data.get("tool_input"))
            if found is not None:
                critique.claims.append(found)
        if data.get("verified") is True and not critique.claims:
            critique.verified = True
    return critique


def parse_critique(text: str) -> Critique:
    """Parse a critique: ``VERIFIED`` or ``CLAIM: / TOOL: / TOOL INPUT:`` blocks.

    A reply whose first line starts with ``VERIFIED`` accepts the draft. Otherwise the
    claim blocks are read (markdown bullets, bold and numbering tolerated; a multi-line
    JSON tool input is followed to its closing brace); when there are none, JSON is
    tried: a list of ``{"claim", "tool", "tool_input"}`` objects or an object with
    ``verified`` and ``claims``. Blocks without a tool are dropped; a missing tool input
    becomes the claim itself. At most ``MAX_CLAIMS`` claims are returned.

    Args:
        text: The critique reply.

    Returns:
        The critique; no claims and ``verified=False`` when nothing could be read.
    """
    text = clip(text)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if VERIFIED_LINE_RE.match(first):
        return Critique(verified=True)
    claims = _claim_blocks(text)
    if claims:
        return Critique(claims=claims[:MAX_CLAIMS])
    critique = _json_claims(text)
    critique.claims = critique.claims[:MAX_CLAIMS]
    if not critique.claims and not critique.verified:
        critique.verified = VERIFIED_WORD_RE.search(text) is not None
    return critique


# ---------------------------------------------------------------- tool output


def unfence(text: str, fence: str) -> str:
    """Tool output without the run's fence markers (``fence_output`` undone), for state
    that people read; text without the markers is returned stripped."""
    head, tail = f"<<tool_output {fence}>>\n", f"\n<<end_tool_output {fence}>>"
    if fence and text.startswith(head) and text.endswith(tail):
        return text[len(head) : len(text) - len(tail)].strip()
    return text.strip()


# ---------------------------------------------------------------- voting

NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d{1,4})?", re.IGNORECASE)
GROUPED_RE = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
TRAILING_PUNCTUATION = " \t\r\n.,;:!?。"


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
