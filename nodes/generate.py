"""The generate node's building blocks: call the model, count the call, never crash.

``guard`` wraps any node logic so that a failure the retry policy will retry escapes to
LangGraph (which retries the node with backoff), while any other failure, or the last
failed attempt, ends the run with ``status="error"`` and an ``error`` naming the cause.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from loopgraphs.nodes.errors import describe_error, should_reraise
from loopgraphs.nodes.parse import content_text
from loopgraphs.nodes.runner import Logic, LogicFactory, ModelCall
from loopgraphs.state import counted


def call_model(
    runnable: Runnable[Any, Any], messages: Sequence[BaseMessage]
) -> Generator[ModelCall, Any, tuple[AIMessage, dict[str, Any]]]:
    """Call a model once; return its reply and the ``llm_calls``/``usage`` update."""
    reply = yield ModelCall(runnable, messages)
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=content_text(getattr(reply, "content", reply)))
    return reply, counted(reply)


def best_effort_answer(messages: Sequence[AnyMessage]) -> str:
    """The most useful text already in a transcript: the last assistant text, else the
    last tool result, else an empty string."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            text = content_text(message.content).strip()
            if text:
                return text
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return content_text(message.content).strip()
    return ""


def guard(logic: LogicFactory, policy: RetryPolicy | None) -> LogicFactory:
    """Turn exceptions escaping ``logic`` into an error end state, except retried ones."""

    def guarded(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        try:
            return (yield from logic(state, config, runtime))
        except Exception as exc:
            info = getattr(runtime, "execution_info", None)
            attempt = getattr(info, "node_attempt", 1) or 1
            if should_reraise(exc, attempt, policy):
                raise
            answer = state.get("answer") or best_effort_answer(state.get("messages", []))
            return {"status": "error", "error": describe_error(exc), "answer": answer}

    return guarded
