"""The generate node's building blocks: who asks the model (``node_caller``), the caller's
system message, how a reply is shown in the transcript, and the loop's re-ask after a
reply it could not use (which goes into the next request only, never into the
transcript)."""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from loopgraphs import prompts
from loopgraphs.nodes.json_stream import REACT_ANSWER
from loopgraphs.nodes.model_call import ModelCall, ModelCaller, call_model
from loopgraphs.nodes.model_send import RAW_REPLY, MessageView, RequestForm
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_guard import fence_output
from loopgraphs.state import LoopRuntime, ModelSpend, OutputState, add_usage, scratch_of
from loopgraphs.text import is_kind

__all__ = [
    "answer_message",
    "call_model",
    "node_caller",
    "reask_for",
    "reasked",
    "short_again",
    "shown_as",
    "user_system",
    "without_answer",
]


def node_caller(
    run: LoopSettings, state: Mapping[str, object], runtime: LoopRuntime | None
) -> ModelCaller:
    """The model calls of one node run: the run's model, the caller's system prompt (as
    the state makes it), the state and runtime the requests carry, and the run's
    ``wrap_model_call`` middleware."""
    known = None if run.middleware.tool_wrapper else run.known_tools
    system = user_system(run, state)
    view = results_view(scratch_of(state).get("fence", ""), run.max_tool_output_chars)
    return ModelCaller(
        run.chat_model, system, state, runtime, run.model_chain, known, run.agent_name, view
    )


def results_view(fence: str, limit: int) -> MessageView:
    """The messages of a request as the model is sent them: each tool result cut to
    ``limit`` characters and fenced as untrusted data between the run's ``fence`` markers
    (see ``loopgraphs.nodes.tool_guard.fence_output``). The thread keeps the results as
    the tools returned them, as a chat shows them."""

    def view(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        return [fenced_result(m, fence, limit) if is_kind(m, ToolMessage) else m for m in messages]

    return view


def fenced_result(message: ToolMessage, fence: str, limit: int) -> ToolMessage:
    """A tool result cut and fenced: its text, or each text block of its content (an
    image or file block passes as it is).

    A thread's results are sent again in every later request, under the same fence (see
    ``loopgraphs.state.new_fence``): the copy made for a stored result is kept (the
    latest ``FENCED_KEPT``) and given again while the result is the same, so that a turn
    late in a long thread does not copy every earlier result anew."""
    key = (message.id, fence, limit) if message.id else None
    if key is not None:
        kept = _FENCED.get(key)  # one dict read is atomic; writes hold the lock
        if kept is not None and _same_result(kept[0], message):
            if kept[0] is not message:  # read back from a checkpoint: the next request
                with _FENCED_LOCK:  # of the run sends this copy, found by identity
                    _FENCED[key] = (message, kept[1])
            return kept[1]
    content = message.content
    if isinstance(content, str):
        shown: str | list[str | dict[str, Any]] = fence_output(content, fence, limit)
    else:
        shown = [
            {**block, "text": fence_output(str(block.get("text", "")), fence, limit)}
            if isinstance(block, dict) and block.get("type") == "text"
            else fence_output(block, fence, limit)
            if isinstance(block, str)
            else block
            for block in content
        ]
    fenced = message.model_copy(update={"content": shown})
    if key is not None:
        with _FENCED_LOCK:
            _FENCED[key] = (message, fenced)
            if len(_FENCED) > FENCED_KEPT:
                del _FENCED[next(iter(_FENCED))]
    return fenced


FENCED_KEPT = 2048
"""How many fenced copies of tool results ``fenced_result`` keeps (the latest made)."""
_FENCED: dict[tuple[str, str, int], tuple[ToolMessage, ToolMessage]] = {}
_FENCED_LOCK = threading.Lock()


def _same_result(kept: ToolMessage, message: ToolMessage) -> bool:
    """Whether ``message`` is the result a copy was made of: the same object, or one read
    back from a checkpoint with every field equal (its artifact the same object)."""
    if kept is message:
        return True
    return (
        kept.content == message.content
        and kept.artifact is message.artifact
        and kept.status == message.status
        and kept.tool_call_id == message.tool_call_id
        and kept.name == message.name
        and kept.additional_kwargs == message.additional_kwargs
        and kept.response_metadata == message.response_metadata
    )


def answer_message(reply: AIMessage, answer: str) -> AIMessage:
    """The reply as a chat view shows it: its text is the run's ``answer``, and the text
    the model wrote (a JSON action, reasoning before ``FINAL ANSWER:``) is kept in
    ``additional_kwargs[RAW_REPLY]`` when it differs. The id stays, so the stored reply is
    replaced, not repeated. With no answer, the reply is kept as the chat was shown it
    (see ``without_answer``): never emptied."""
    if not answer.strip():
        return without_answer(reply)
    if content_text(reply.content) == answer and not reply.tool_calls:
        return reply
    return shown_as(reply, answer)


def without_answer(reply: AIMessage) -> AIMessage:
    """A reply that gave the run no answer (cut at the token cap, saying nothing usable),
    as the thread keeps it when the run ends on it: what the chat was shown of it (its
    text; for a json turn, the answer it had begun to write), or, when nothing of it can
    be shown, a sentence saying there is no answer. Never an empty message, whose bubble
    would empty, and never raw JSON. Its tool calls are dropped."""
    text = content_text(reply.content)
    if text.lstrip().startswith(("{", "[")):
        text = REACT_ANSWER.read(text) or ""
    if not text.strip():
        text = prompts.NO_ANSWER_SHOWN
    extra = {k: v for k, v in reply.additional_kwargs.items() if k != "tool_calls"}
    extra.setdefault(RAW_REPLY, content_text(reply.content))
    update = {
        "content": text,
        "additional_kwargs": extra,
        "tool_calls": [],
        "invalid_tool_calls": [],
    }
    return reply.model_copy(update=update)


def shown_as(reply: AIMessage, text: str) -> AIMessage:
    """The reply with ``text`` as its content and its own text kept under ``RAW_REPLY``."""
    extra = dict(reply.additional_kwargs)
    extra.setdefault(RAW_REPLY, content_text(reply.content))
    return reply.model_copy(update={"content": text, "additional_kwargs": extra})


def user_system(settings: LoopSettings, state: Mapping[str, object]) -> SystemMessage | None:
    """The caller's ``system_prompt`` (string, message or callable of the state) as a
    message, or None when there is none."""
    user: object = settings.system_prompt
    if callable(user) and not isinstance(user, SystemMessage):
        user = user(state)
    if user is None or user == "":
        return None
    if not isinstance(user, (str, SystemMessage)):
        raise TypeError(
            f"system_prompt returned {type(user).__name__}; expected a string or SystemMessage"
        )
    return user if isinstance(user, SystemMessage) else SystemMessage(user)


def reask_for(reply: AIMessage) -> str | None:
    """The re-ask a reply calls for, as ``generate`` asks once more: for a short answer
    after a reply cut at the token cap (see ``cut_short``), for the answer after one that
    says nothing (no text and no tool call).

    Args:
        reply: The model's reply.

    Returns:
        The re-ask's instruction (``prompts.SHORT_ANSWER`` or ``prompts.NO_ANSWER``), or
        None for a reply the step can read.
    """
    if cut_short(reply):
        return prompts.SHORT_ANSWER
    if not content_text(reply.content).strip() and not reply.tool_calls:
        return prompts.NO_ANSWER
    return None


def reasked(history: Sequence[AnyMessage], reask: str | None) -> list[AnyMessage]:
    """The messages of a request that ends with the loop's re-ask ``reask`` (none when it
    is empty): a user-role instruction for this request only, which no transcript keeps."""
    return [*history, HumanMessage(reask)] if reask else list(history)


def spent_together(first: ModelSpend | OutputState, second: ModelSpend | OutputState) -> ModelSpend:
    """The ``llm_calls``/``usage`` update of two updates that report model calls together
    (a model call's, or a step's update of its loop's state: every loop's state holds
    ``OutputState``'s counters)."""
    return {
        "llm_calls": int(first.get("llm_calls") or 0) + int(second.get("llm_calls") or 0),
        "usage": add_usage(first.get("usage"), second.get("usage")),
    }


def short_again(
    ask: ModelCaller,
    history: Sequence[AnyMessage],
    form: RequestForm,
    reply: AIMessage,
    spent: ModelSpend,
) -> Generator[ModelCall, Any, tuple[AIMessage, list[AnyMessage], ModelSpend]]:
    """Ask once more when ``reply`` (to ``history``) is no answer: for a short one when it
    was cut at the token cap (see ``cut_short``), for the answer itself when it said
    nothing (no text and no tool call).

    Args:
        ask: The node's ``ModelCaller``.
        history: The messages ``reply`` answered.
        form: The form of the first request (its instructions).
        reply: The model's reply.
        spent: The ``llm_calls``/``usage`` update of the first request.

    Yields:
        One model call when ``reply`` was cut or empty, none otherwise.

    Returns:
        The reply to read (the new one, itself possibly no answer), the messages for the
        transcript (``reply``, and the new reply when one was made: the request for it is
        not kept) and the ``llm_calls``/``usage`` update of all the calls.
    """
    again_asked = reask_for(reply)
    if again_asked is None:
        return reply, [reply], spent.copy()
    request = reasked([*history, reply], again_asked)
    again, more = yield from call_model(ask.call(request, form))
    return again, [reply, again], spent_together(spent, more)
