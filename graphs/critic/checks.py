"""CRITIC's checks: the forms a critique is asked in, how its claims become a round's
tool calls, and how the results of those calls are read back and shown.

The steps that use them are in ``loopgraphs.graphs.critic.steps``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from pydantic import BaseModel, Field

from loopgraphs import prompts
from loopgraphs.graphs.critic.state import CriticState, PendingClaim
from loopgraphs.nodes import (
    Level,
    Parsed,
    call_key,
    coerce_args,
    content_text,
    fence_output,
    observed,
    scratch_of,
    unfence,
)
from loopgraphs.nodes.parsing.critic import (
    MAX_CLAIMS,
    CheckedClaim,
    Claim,
    Critique,
    ToolInput,
    make_claim,
    parse_critique,
)
from loopgraphs.text import media_of
from loopgraphs.toolkits.registry import ToolRegistry


class ClaimCheck(BaseModel):
    """One claim of the draft and how to verify it."""

    claim: str = Field(default="", description="The claim, as the draft states it.")
    tool: str = Field(default="", description="Name of the tool that can verify the claim.")
    tool_input: ToolInput = Field(
        default="", description="Input for the tool: text, or the tool's JSON arguments."
    )


class CritiqueReport(BaseModel):
    """The critique of a draft answer."""

    verified: bool = Field(default=False, description="True when no claim needs checking.")
    claims: list[ClaimCheck] = Field(
        default_factory=list, description="Claims to verify with tools."
    )


class RequiredCritique(BaseModel):
    """The critique of a draft answer when a tool must check it (``tool_choice``)."""

    claims: list[ClaimCheck] = Field(
        min_length=1, description="Claims to verify with tools (at least one)."
    )


def critique_levels(tool_mode: str, mode: str) -> list[Level]:
    """The structured-output levels a critique tries in a run in ``mode`` (the run's
    ``tool_mode`` option being ``tool_mode``), before its text form: native function
    calling, which steps down to provider-enforced JSON in ``auto`` mode; provider JSON in
    json mode; none in text mode."""
    if mode == "native":
        return ["native", "json"] if tool_mode == "auto" else ["native"]
    return ["json"] if mode == "json" else []


def steps_down(tool_mode: str, mode: str) -> bool:
    """Whether a critique whose structured levels the provider refused goes on in the text
    form: in ``auto`` mode, and in json mode (which reads JSON from free text when the
    provider enforces none); a run in native mode by choice ends instead, as ReAct's does."""
    return tool_mode == "auto" or mode == "json"


def stepped_down(tool_mode: str, mode: str, refused: Sequence[Level]) -> CriticState:
    """The run's new ``tool_mode`` after the provider refused the critique's ``refused``
    levels, in ``auto`` mode (the next rounds start where the provider accepts the form);
    no update otherwise."""
    if tool_mode != "auto" or mode not in refused:
        return {}
    below = "json" if mode == "native" and "json" not in refused else "text"
    return {"tool_mode": below}


def critique_of(data: Mapping[str, Any] | None, text: str) -> Critique:
    """The critique a reply gives.

    Args:
        data: The structured critique (a ``CritiqueReport``'s fields), if there is one.
        text: The reply's text, parsed when ``data`` names no readable claim.

    Returns:
        The critique: verified, or up to ``MAX_CLAIMS`` claims to check.
    """
    if data is not None:
        if data.get("verified"):
            return Critique(verified=True)
        claims = [
            found
            for item in data.get("claims") or []
            if (found := make_claim(item.get("claim"), item.get("tool"), item.get("tool_input")))
        ]
        if claims:
            return Critique(claims=claims[:MAX_CLAIMS])
    return parse_critique(text)


def reported_critique(result: Parsed[Any]) -> Critique:
    """The critique a structured request read: its value, else the text of its reply (the
    arguments of the reply's tool call when it wrote no text)."""
    reply = result.replies[0] if result.replies else None
    text = content_text(reply.content) if reply is not None else ""
    if not text and reply is not None and reply.tool_calls:
        text = json.dumps(reply.tool_calls[0].get("args"), default=str)
    value = result.value
    return critique_of(value.model_dump() if isinstance(value, BaseModel) else value, text)


def input_text(value: ToolInput) -> str:
    """A check's input as text: text as it is, JSON arguments as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def results_text(claims: Sequence[CheckedClaim], fence: str, limit: int) -> str:
    """Checked claims as a request shows them: numbered, each with its check and its
    result fenced (see ``loopgraphs.nodes.fence_output``).

    Args:
        claims: The checked claims.
        fence: The run's fence around tool output.
        limit: The most characters of a result shown (``max_tool_output_chars``).

    Returns:
        The claims, one numbered entry each.
    """
    lines = []
    for number, item in enumerate(claims, 1):
        observation = fence_output(
            item.get("observation", ""), fence, max(limit, len(item.get("observation", "")))
        )
        lines.append(
            f"{number}. Claim: {item['claim']}\n"
            f"   Check: {item['tool']}({input_text(item['tool_input'])})\n"
            f"   Result:\n{observation}"
        )
    return "\n".join(lines)


def checks_text(pending: Sequence[PendingClaim]) -> str:
    """A round's checks as a chat shows them: each claim with its check (the tool and
    its input: an only argument's value, else ``name=value`` pairs), one a line."""

    def shown(args: Mapping[str, Any]) -> str:
        if len(args) == 1:
            return input_text(next(iter(args.values())))
        return ", ".join(f"{name}={input_text(value)}" for name, value in args.items())

    return "\n".join(
        prompts.CRITIQUE_CHECK_LINE.format(
            claim=item["claim"], tool=item["tool"], tool_input=shown(item["args"])
        )
        for item in pending
    )


def round_checks(
    tools: ToolRegistry, claims: Sequence[Claim], number: int
) -> tuple[list[ToolCall], list[PendingClaim]]:
    """The tool calls checking a round's claims, one per distinct check.

    Args:
        tools: The run's tools (a claim's input becomes its tool's arguments).
        claims: The claims the critique names.
        number: The round's number.

    Returns:
        The calls (their ids unique to the run, so that no other run's result in a shared
        transcript is taken for theirs), and the claims each with the id of its call and
        the args it was given.
    """
    tag = uuid.uuid4().hex[:8]
    calls: list[ToolCall] = []
    ids: dict[str, str] = {}
    pending: list[PendingClaim] = []
    for index, claim in enumerate(claims):
        args = coerce_args(tools, claim["tool"], claim["tool_input"])
        call = ToolCall(name=claim["tool"], args=args, id=f"claim_{number}_{index}_{tag}")
        key = call_key(call)
        if key not in ids:
            ids[key] = call["id"] or ""
            calls.append(call)
        pending.append(PendingClaim(**claim, id=ids[key], args=args))
    return calls, pending


def checks_media(state: CriticState, ids: Collection[str] | None = None) -> list[dict[str, object]]:
    """The images and files the run's checks returned (those answering ``ids`` only,
    when given), in order, as the tools returned them: a request showing the checks'
    results sends them after its text."""
    messages: Sequence[AnyMessage] = state.get("messages") or []
    start = scratch_of(state).get("transcript_start") or 0
    return [
        block
        for message in messages[start:]
        if isinstance(message, ToolMessage) and (ids is None or message.tool_call_id in ids)
        for block in media_of(message.content)
    ]


def checked_claims(state: CriticState, fence: str) -> list[CheckedClaim]:
    """The round's claims with the observations of their checks: each read from the
    ``ToolMessage`` answering its call (a call a reviewer edited is recorded as it ran; a
    rejected one has the rejection as its observation).

    Args:
        state: The state after the round's checks ran.
        fence: The run's fence around tool output, taken off the observations.

    Returns:
        The ``pending`` claims, checked.
    """
    messages: Sequence[AnyMessage] = state.get("messages") or []
    start = scratch_of(state).get("transcript_start") or 0
    ran: dict[str, ToolCall] = {}
    results: dict[str, ToolMessage] = {}
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            ran.update((call["id"] or "", call) for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
    checked: list[CheckedClaim] = []
    for item in state.get("pending") or []:
        call = ran.get(item["id"])
        tool, tool_input = item["tool"], item["tool_input"]
        if call is not None and (call["name"], call["args"]) != (tool, item["args"]):
            tool, tool_input = call["name"], call["args"]
        result = results.get(item["id"])
        observation = unfence(observed([result])[0], fence) if result else prompts.NO_TOOL_RESULT
        checked.append(
            CheckedClaim(
                claim=item["claim"],
                tool=tool,
                tool_input=tool_input,
                observation=observation,
                round=state.get("round", 1),
            )
        )
    return checked
