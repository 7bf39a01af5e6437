"""How Self-Ask's requests are written and its replies kept: the system text and request
form of a turn, the transcript as a json- or text-mode model reads it, a reply with or
without its follow-ups' tool calls, the follow-ups answered from their tool results, and
the best answer a run holds when its budget is spent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage

from loopgraphs import prompts
from loopgraphs.graphs.self_ask.guided import asked_before, guided_fallback
from loopgraphs.graphs.self_ask.state import FollowUp, SelfAskState
from loopgraphs.nodes import (
    RequestForm,
    as_written,
    best_effort_answer,
    content_text,
    cut_short,
    observed,
    scratch_of,
    transcript_of,
    unfence,
    with_media,
)
from loopgraphs.nodes.parsing.self_ask import SelfAskTurn
from loopgraphs.toolkits.registry import ToolRegistry

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


def self_ask_text(tools: ToolRegistry, mode: str) -> str:
    """The loop's own system text in one tool mode, for a set of tools."""
    if mode == "none" or not tools:
        text = prompts.SELF_ASK_SOLO.format(format=prompts.SELF_ASK_FORMAT)
    elif mode == "native":
        text = prompts.SELF_ASK_NATIVE.format(
            format=prompts.SELF_ASK_FORMAT, fence_note=prompts.FENCE_NOTE
        )
    else:
        text = prompts.SELF_ASK_TOOLS.format(
            format=prompts.SELF_ASK_FORMAT,
            first=tools.names[0],
            input_note=prompts.SELF_ASK_JSON_INPUT
            if mode == "json"
            else prompts.SELF_ASK_TEXT_INPUT,
            tools=tools.describe(),
            fence_note=prompts.FENCE_NOTE,
        )
    return text


@lru_cache(maxsize=64)
def self_ask_form(mode: str) -> RequestForm:
    """How a Self-Ask turn in ``mode`` is sent: native mode binds the tools; json and text
    modes describe them in the instructions, rendered from the request's tools, and show
    the transcript in the grammar (see ``self_ask_view``)."""
    if mode == "native":
        return RequestForm(lambda tools: self_ask_text(tools, mode), tools="bind")
    return RequestForm(
        lambda tools: self_ask_text(tools, mode),
        tools="prompt",
        render=lambda messages, tools: self_ask_view(messages),
    )


def self_ask_view(messages: Sequence[AnyMessage]) -> list[BaseMessage]:
    """The transcript as a json- or text-mode model reads it: each follow-up as the text
    the model wrote, without its tool calls, and the results answering it as one
    ``Intermediate answer:`` user message."""
    view: list[BaseMessage] = []
    results: list[ToolMessage] = []
    for message in as_written(messages):
        if isinstance(message, ToolMessage):
            results.append(message)
            continue
        if results:
            text, media = observed(results)
            view.append(with_media(prompts.SELF_ASK_INTERMEDIATE.format(content=text), media))
            results = []
        if isinstance(message, AIMessage) and message.tool_calls:
            view.append(AIMessage(content=message.content))
        else:
            view.append(message)
    if results:
        text, media = observed(results)
        view.append(with_media(prompts.SELF_ASK_INTERMEDIATE.format(content=text), media))
    return view


def without_calls(message: AIMessage) -> AIMessage:
    """The same message (same id, so it replaces the stored one) with no tool calls."""
    extra = {
        k: v
        for k, v in message.additional_kwargs.items()
        if k not in ("tool_calls", "function_call")
    }
    return message.model_copy(
        update={"tool_calls": [], "invalid_tool_calls": [], "additional_kwargs": extra}
    )


def with_calls(reply: AIMessage, calls: Sequence[ToolCall]) -> AIMessage:
    """The reply (its text as the model wrote it) with the follow-up's tool calls."""
    return reply.model_copy(update={"tool_calls": list(calls), "invalid_tool_calls": []})


def new_call_id() -> str:
    """A tool call id unique to the run, so that no other run's result in a shared
    transcript is taken for its own."""
    return f"call_{uuid.uuid4().hex[:16]}"


def args_text(args: dict[str, object] | str) -> str:
    """A tool call's arguments as a follow-up question: a single argument's value, else
    the arguments as JSON."""
    if isinstance(args, dict) and len(args) == 1:
        return str(next(iter(args.values())))
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def answered(state: SelfAskState) -> list[FollowUp]:
    """The run's follow-ups with those of the last turn answered: each by the
    ``ToolMessage`` answering its call (a call a reviewer edited is recorded with the
    tool it ran; a rejected one has the rejection as its answer)."""
    pending = state.get("pending") or []
    scratch = scratch_of(state)
    ran: dict[str, str] = {}
    results: dict[str, ToolMessage] = {}
    for message in transcript_of(state):
        if isinstance(message, AIMessage):
            ran.update((call["id"] or "", call["name"]) for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
    fence = scratch.get("fence", "")
    found: list[FollowUp] = []
    for item in pending:
        result = results.get(item["id"])
        answer = unfence(content_text(result.content), fence) if result else prompts.NO_TOOL_RESULT
        tool = ran.get(item["id"], item["name"])
        found.append(FollowUp(question=item["question"], answer=answer, tool=tool))
    return [*state.get("follow_ups", []), *found]


def record_intermediate(follow_ups: list[FollowUp], turn: SelfAskTurn) -> list[FollowUp]:
    """Give the model's own intermediate answer to its open follow-up question."""
    if (
        turn.intermediate
        and follow_ups
        and follow_ups[-1]["tool"] is None
        and not follow_ups[-1]["answer"]
    ):
        last = follow_ups[-1]
        return [
            *follow_ups[:-1],
            FollowUp(question=last["question"], answer=turn.intermediate, tool=None),
        ]
    return follow_ups


def asks_anew(turn: SelfAskTurn, follow_ups: Sequence[FollowUp]) -> bool:
    """Whether a turn asks a follow-up that no earlier follow-up of the run asked."""
    return bool(turn.question.strip()) and not asked_before(turn.question, follow_ups)


def best_answer(state: SelfAskState, follow_ups: Sequence[FollowUp], *, guided_run: bool) -> str:
    """The answer a run ends with when its budget is spent and its model gave none.

    Args:
        state: The run's state (its ``messages`` and ``phase``).
        follow_ups: The run's follow-ups as the step leaves them.
        guided_run: Whether the run is guided (see ``guided``).

    Returns:
        In a guided run, the last intermediate answer (the last tool result's closest
        sentences while it is still to read, see ``guided_fallback``); otherwise the
        last intermediate answer that says something, else the model's last
        answer-like text that was not cut at the token cap.
    """
    if guided_run:
        return guided_fallback(follow_ups, state.get("phase") == "reading")
    for item in reversed(follow_ups):
        if item.get("answer"):
            return str(item["answer"])
    kept = [m for m in transcript_of(state) if not (isinstance(m, AIMessage) and cut_short(m))]
    found = best_effort_answer(kept)
    if not found:
        replies = (m for m in reversed(kept) if isinstance(m, AIMessage))
        found = next((text for m in replies if (text := content_text(m.content).strip())), "")
    return found
