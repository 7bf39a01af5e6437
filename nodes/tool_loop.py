"""The run-level rules every tool loop shares: a chat history with unanswered tool calls
is refused, the tool-call budget, and human review of tool calls (``review``).

The tool modes live in ``tool_modes``, the model turn in ``model_turn``, answer repair
for small models in ``answer_repair`` and the tool step in ``tool_step``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langgraph.types import Send

from loopgraphs.nodes.driver import node_callable
from loopgraphs.nodes.model_send import RAW_REPLY
from loopgraphs.nodes.review import ask_reviewer, flagged_calls, reviewed_call
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_step import dispatch, pending_calls
from loopgraphs.state import CommonState, LoopRuntime, ReviewDecision, messages_of
from loopgraphs.text import of_kind


def check_history(messages: Sequence[AnyMessage]) -> None:
    """Raise ``ValueError`` when an assistant message's tool calls have no results.

    Providers reject such a history; the caller must add a ``ToolMessage`` per call (or
    drop the calls) before starting a run.
    """
    answered = {m.tool_call_id for m in of_kind(messages, ToolMessage)}
    open_calls = [
        f"{call['name']} (id {call['id']})"
        for message in of_kind(messages, AIMessage)
        for call in message.tool_calls
        if call["id"] not in answered
    ]
    if open_calls:
        raise ValueError(
            "the chat history has tool calls without a ToolMessage result: "
            f"{', '.join(open_calls)}. Add a ToolMessage for each call (or remove the "
            "calls) before invoking, or resume the interrupted run with Command(resume=...)."
        )


def review_node(settings: LoopSettings) -> Runnable[Any, Any]:
    """The ``review`` node: it pauses for human review of the last reply's flagged tool
    calls (``interrupt_before_tools``)."""

    def review(state: CommonState, runtime: LoopRuntime) -> CommonState:
        run = settings.for_run(runtime)
        about = {
            tool.name: (tool.description.splitlines() or ["unknown tool"])[0] for tool in run.tools
        }
        reply = state["messages"][-1]
        if not isinstance(reply, AIMessage):  # the router sends only a reply with calls here
            return {}
        reviews = ask_reviewer(run.review, reply, about)
        update: CommonState = {"scratch": {"reviews": reviews}}
        edited = with_edits(reply, reviews)
        if edited is not reply:
            update["messages"] = [edited]
        return update

    return node_callable(review, None, name="review")


def pending_step(settings: LoopSettings, state: Mapping[str, object]) -> str | list[Send]:
    """Where the last reply's pending tool calls go: the ``review`` node when some pause
    for a human, else one ``Send`` per call to the shared ``call_tool`` step (see
    ``dispatch``); an empty list when none is pending (a middleware answered them all)."""
    pending = pending_calls(messages_of(state))
    if pending and needs_review(settings, state):
        return "review"
    return dispatch(pending)


def with_edits(reply: AIMessage, reviews: Mapping[str, ReviewDecision]) -> AIMessage:
    """The reply with the reviewer's edits written into its tool calls (ids kept, so the
    stored reply is replaced): the transcript, and the model on its next turn, show the
    call that ran. A json- or text-mode reply then reads back as its edited action."""
    calls = [reviewed_call(call, reviews.get(call["id"] or "")) for call in reply.tool_calls]
    if calls == reply.tool_calls:
        return reply
    extra = {k: v for k, v in reply.additional_kwargs.items() if k != RAW_REPLY}
    return reply.model_copy(update={"tool_calls": calls, "additional_kwargs": extra})


def needs_review(settings: LoopSettings, state: Mapping[str, object]) -> bool:
    """Whether the last reply has tool calls that pause for review."""
    messages = messages_of(state)
    return bool(messages) and bool(flagged_calls(settings.review, messages[-1]))
