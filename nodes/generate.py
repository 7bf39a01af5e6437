"""The generate node's building blocks: the system message and one counted model call."""

from __future__ import annotations

import uuid
from collections.abc import Generator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.runner import ModelCall
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import counted


def call_model(
    runnable: Runnable[Any, Any], messages: Sequence[BaseMessage]
) -> Generator[ModelCall, Any, tuple[AIMessage, dict[str, Any]]]:
    """Call a model once; return its reply and the ``llm_calls``/``usage`` update."""
    reply = yield ModelCall(runnable, messages)
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=content_text(getattr(reply, "content", reply)))
    return reply, counted(reply)


RAW_REPLY = "loopgraphs_reply"
"""Key in ``AIMessage.additional_kwargs`` holding the text a model wrote, where the stored
message shows something else (the answer of a final reply, the thought of a json- or
text-mode action)."""


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


def as_written(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The conversation as the model wrote it: replies stored with a shown text (see
    ``answer_message``) get their own text back, so that a model reads its earlier turns
    as it wrote them (and a server's prompt cache finds the same tokens)."""
    return [
        m.model_copy(update={"content": m.additional_kwargs[RAW_REPLY]})
        if isinstance(m, AIMessage) and RAW_REPLY in m.additional_kwargs
        else m
        for m in messages
    ]


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


@lru_cache(maxsize=64)
def _system(text: str) -> SystemMessage:
    """A system message made once per text (the loops' instructions are a few fixed texts;
    a message is never changed once made)."""
    return SystemMessage(text)


def system_message(settings: LoopSettings, state: Mapping[str, Any], text: str) -> SystemMessage:
    """The caller's ``system_prompt`` followed by a loop's own instructions ``text``, as
    one system message (stable within a run, for prompt caching)."""
    user = user_system(settings, state)
    if user is None:
        return _system(text)
    if isinstance(user.content, list):
        return SystemMessage([*user.content, {"type": "text", "text": text}])
    return SystemMessage(f"{user.content}\n\n{text}")
