"""The generate node's building blocks: who asks the model (``asker``), the caller's
system message, and how a reply is shown in the transcript."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from loopgraphs.nodes.model_call import Asker, call_model
from loopgraphs.nodes.model_send import RAW_REPLY
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import LoopSettings

__all__ = [
    "answer_message",
    "asker",
    "call_model",
    "loop_prompt",
    "shown_as",
    "user_system",
]


def asker(run: LoopSettings, state: Mapping[str, Any], runtime: Runtime[Any] | None) -> Asker:
    """The model calls of one node run: the run's model, the caller's system prompt (as
    the state makes it), the state and runtime the requests carry, and the run's
    ``wrap_model_call`` middleware."""
    known = None if run.middleware.tool_wrapper else run.known_tools
    return Asker(run.chat_model, user_system(run, state), state, runtime, run.model_chain, known)


def answer_message(reply: AIMessage, answer: str) -> AIMessage:
    """The reply as a chat view shows it: its text is the run's ``answer``, and the text
    the model wrote (a JSON action, reasoning before ``FINAL ANSWER:``) is kept in
    ``additional_kwargs[RAW_REPLY]`` when it differs. The id stays, so the stored reply is
    replaced, not repeated."""
    if content_text(reply.content) == answer and not reply.tool_calls:
        return reply
    return shown_as(reply, answer)


def shown_as(reply: AIMessage, text: str) -> AIMessage:
    """The reply with ``text`` as its content and its own text kept under ``RAW_REPLY``."""
    extra = dict(reply.additional_kwargs)
    extra.setdefault(RAW_REPLY, content_text(reply.content))
    return reply.model_copy(update={"content": text, "additional_kwargs": extra})


def user_system(settings: LoopSettings, state: Mapping[str, Any]) -> SystemMessage | None:
    """The caller's ``system_prompt`` (string, message or callable of the state) as a
    message, or None when there is none."""
    user: Any = settings.system_prompt
    if callable(user) and not isinstance(user, SystemMessage):
        user = user(state)
    if user is None or user == "":
        return None
    if not isinstance(user, (str, SystemMessage)):
        raise TypeError(
            f"system_prompt returned {type(user).__name__}; expected a string or SystemMessage"
        )
    return user if isinstance(user, SystemMessage) else SystemMessage(user)


def loop_prompt(text: str) -> HumanMessage:
    """A user-role message the loop itself adds to the transcript (asking the model to call
    a tool, say), with an id of its own so that the run knows it wrote it (see
    ``loopgraphs.state.starts_run``)."""
    return HumanMessage(text, id=str(uuid.uuid4()))
