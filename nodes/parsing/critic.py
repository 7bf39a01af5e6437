"""The CRITIC critique grammar: ``VERIFIED``, ``CLAIM: / TOOL: / TOOL INPUT:`` blocks,
or claims in JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from typing_extensions import TypedDict

from loopgraphs.nodes.parsing.json_text import ToolInput, json_objects, tool_input_value
from loopgraphs.nodes.parsing.text import clip, tidy

CLAIM_LINE_RE = re.compile(
    r"[ \t>*_#-]*(?:\d{1,3}[.)][ \t]*[*_]*)?(claim|tool[ \t_]*input|tool)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE,
)
VERIFIED_LINE_RE = re.compile(r"[ \t>*_#-]*VERIFIED\b", re.IGNORECASE)
VERIFIED_WORD_RE = re.compile(r"(?<![A-Za-z])(?<![Nn][Oo][Tt] )VERIFIED\b")
MAX_CLAIMS = 10


class Claim(TypedDict):
    """A claim of a draft to check: its text, the tool that checks it and its input."""

    claim: str
    tool: str
    tool_input: ToolInput


class CheckedClaim(Claim):
    """A claim checked: the check as it ran (a reviewer may have edited it), the tool's
    result (or the rejection) and the round of critique that made it."""

    observation: str
    round: int


@dataclass
class Critique:
    """A parsed critique: ``verified`` (the draft was accepted as it is) and the claims
    to check."""

    verified: bool = False
    claims: list[Claim] = field(default_factory=list)


def make_claim(claim: object, tool: object, tool_input: object) -> Claim | None:
    """A claim to check as ``{"claim", "tool", "tool_input"}``, or None without a tool.

    A missing input becomes the claim's text; ``TOOL: search(eiffel tower)`` is split
    into the tool name and its input.
    """
    name = tidy(str(tool or ""))
    if not name:
        return None
    text = tidy(str(claim or ""))
    value: ToolInput
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


def _claim_blocks(text: str) -> list[Claim]:
    blocks: list[Claim] = []
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
