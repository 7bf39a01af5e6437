"""The kit's ``generate``: one model turn through the seam, as a step's logic asks for it.

A step's logic is a generator (see ``loopgraphs.nodes.driver``); it runs a turn with
``turn = yield from generate(step, state, messages, instructions=...)`` and gets a
``Turn``: the reply, the messages the thread keeps, and the calls and tokens spent. The
turn goes through the run's ``wrap_model_call`` middleware in the run's tool mode; a
reply cut at the token cap, or one that says nothing, is asked for once more (the
instruction goes into that request only); a refusal ends the run with the model's
words. A turn that names a ``purpose`` is internal (a plan, a verdict, a sample): it is
sent with LangGraph's ``nostream`` tag, so a chat does not show it. ``prompt_message``
makes a loop's prompt about the user's request carry the request's images, files and
audio.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool

from loopgraphs import prompts
from loopgraphs.nodes.driver import ModelBatch, Request
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import reasked, spent_together
from loopgraphs.nodes.model_call import (
    ModelCaller,
    as_outcome,
    call_model,
    first_accepted,
    spent_on,
)
from loopgraphs.nodes.model_send import Instructions, RequestForm
from loopgraphs.nodes.model_turn import model_turn
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.step import Step, check_step
from loopgraphs.state import ModelSpend, conversation_of
from loopgraphs.text import media_blocks, with_media


@dataclass(frozen=True)
class Turn:
    """What one ``generate`` produced.

    Attributes:
        reply: The reply to read: the model's, or its reply to the one re-ask when the
            first was cut at the token cap or said nothing.
        messages: What the thread keeps of the turn: the reply, and the reply to the
            re-ask when there was one (the re-ask itself is never kept). Empty for an
            internal turn, which a chat does not show.
        spent: The ``llm_calls``/``usage`` update for every request the turn sent.
        tool_mode: The tool mode the turn was answered in (turns that offered tools).
        fell_back: Whether the provider refused the turn's form and the turn was sent in
            ``generate``'s ``fallback`` form.
    """

    reply: AIMessage
    messages: list[AnyMessage]
    spent: ModelSpend
    tool_mode: str = ""
    fell_back: bool = False

    @property
    def cut(self) -> bool:
        """Whether the reply was cut at the token cap (or repeats itself until it)."""
        return cut_short(self.reply)

    @property
    def text(self) -> str:
        """The reply's text, stripped; empty when the reply was cut."""
        return "" if self.cut else content_text(self.reply.content).strip()


def generate(
    step: Step[Any],
    state: Mapping[str, object],
    messages: Sequence[BaseMessage],
    *,
    instructions: Instructions | RequestForm = "",
    purpose: str | None = None,
    again: bool = True,
    with_system: bool = True,
    tools: Sequence[BaseTool | dict[str, Any]] = (),
    tool_choice: str | None = None,
    model_settings: Mapping[str, object] | None = None,
    fallback: RequestForm | None = None,
) -> Generator[Request, Any, Turn]:
    """One model turn through the seam (the run's middleware, model and system prompt).

    Args:
        step: The running step (its run settings, runtime and budget).
        state: The loop's state (the requests carry it; a callable ``system_prompt``
            reads it).
        messages: The request, without a system message.
        instructions: The loop's system text for the turn (placed after the caller's
            ``system_prompt``), or a ``RequestForm`` saying how tools reach the model.
        purpose: What an internal turn is for (``"plan"``, ``"sample"``, ...): it does not
            stream as the chat's reply and ``messages`` stays empty. None: a chat turn.
        again: Ask once more when the reply is cut at the token cap (for a short answer)
            or says nothing (for the answer).
        with_system: Whether the caller's ``system_prompt`` goes first.
        tools: Tools offered to the model (bound, or as the form says).
        tool_choice: ``"required"``, ``"none"``, a tool name or None.
        model_settings: Keyword arguments bound to the model for this turn (for example
            ``max_tokens``, ``temperature``).
        fallback: The form to send the turn in, without ``tool_choice``, when the
            provider refuses the first one (its bound tools, tool choice or schema, see
            ``loopgraphs.nodes.errors.is_form_rejection``): ``auto`` mode's way down to
            tools described in the prompt. The refused request counts as a call.

    Returns:
        The ``Turn``.
    """
    check_step(step, "generate")
    ask = step.ask(state)
    form = instructions if isinstance(instructions, RequestForm) else RequestForm(instructions)
    forms = [form] if fallback is None else [form, fallback]

    def request(asked: Sequence[BaseMessage], index: int) -> Any:
        return ask.call(
            asked,
            forms[index],
            tools=tools,
            tool_choice=tool_choice if index == 0 else None,
            with_system=with_system,
            model_settings=model_settings,
            purpose=purpose,
        )

    makers = [functools.partial(request, messages, index) for index in range(len(forms))]
    index, outcome = yield from first_accepted(makers)
    reply, spent, fell_back = outcome.reply, outcome.update, index > 0
    kept: list[AnyMessage] = [] if purpose else [reply]
    again_asked = _reask_for(reply) if again else None
    if again_asked is None:
        return Turn(reply, kept, spent, fell_back=fell_back)
    retold: list[AnyMessage] = [*cast("Sequence[AnyMessage]", messages), reply]
    more_reply, more = yield from call_model(request(reasked(retold, again_asked), index))
    kept = [] if purpose else [reply, more_reply]
    return Turn(more_reply, kept, spent_together(spent, more), fell_back=fell_back)


def _reask_for(reply: AIMessage) -> str | None:
    """The re-ask a reply calls for: a short answer after a cut one, the answer after
    one that says nothing; None for a usable reply."""
    if cut_short(reply):
        return prompts.SHORT_ANSWER
    if not content_text(reply.content).strip() and not reply.tool_calls:
        return prompts.NO_ANSWER
    return None


def act(
    step: Step[Any],
    state: Mapping[str, object],
    messages: Sequence[AnyMessage],
    *,
    require: str | None = None,
    purpose: str | None = None,
    model_settings: Mapping[str, object] | None = None,
) -> Generator[Request, Any, Turn]:
    """One turn that offers the run's tools in its tool mode: bound to the model
    (native), as one schema-constrained JSON action (json) or described in the prompt
    (text), with ``auto`` mode's fallbacks when the provider refuses a form. Read the
    reply with ``read_action``.

    Args:
        step: The running step.
        state: The loop's state (its ``tool_mode`` is the mode the run is in).
        messages: The thread as the model reads it (tool calls and results included).
        require: ``"required"``, a tool name, ``"none"`` (answer now, no tool) or None.
        purpose: What an internal turn is for (``"expansion"``, a candidate action of a
            search, ...): it does not stream as the chat's reply in any mode and
            ``messages`` stays empty. None: a chat turn.
        model_settings: Keyword arguments for the model in this turn, in every tool mode
            (for example ``temperature``; see ``loopgraphs.models.takes_temperature``).

    Returns:
        The ``Turn``, with the mode that answered in ``tool_mode``. A json-mode chat turn's
        reply is JSON: it is sent as an internal call and kept in ``messages`` as sent,
        for the step to replace with what the chat shows (``read_action``'s message).
    """
    check_step(step, "act")
    update = yield from model_turn(
        step.run,
        state,
        messages,
        require=require,
        runtime=step.runtime,
        purpose=purpose,
        model_settings=model_settings,
    )
    reply = update["messages"][0]
    assert isinstance(reply, AIMessage)
    spent: ModelSpend = {"llm_calls": update["llm_calls"], "usage": update["usage"]}
    return Turn(reply, [] if purpose else [reply], spent, update["tool_mode"])


def samples(
    step: Step[Any],
    state: Mapping[str, object],
    messages: Sequence[BaseMessage] | Callable[[int], Sequence[BaseMessage]],
    count: int,
    *,
    instructions: Instructions | RequestForm = "",
    purpose: str = "sample",
    model_settings: Mapping[str, object] | None = None,
) -> Generator[Request, Any, tuple[list[AIMessage], ModelSpend]]:
    """``count`` internal turns, sent concurrently (self-consistency, sampled thoughts):
    on the same request, or each on its own (``messages`` a function of the sample's
    number). Failed turns are left out; when all fail, the first failure is raised.

    Args:
        messages: The request of every sample, or a function of the sample's number (1
            to ``count``) giving each its own (a prompt that says "attempt k of n").

    Returns:
        The replies that came back, in order, and the ``llm_calls``/``usage`` update of
        every request (failed ones included).
    """
    check_step(step, "samples")
    ask: ModelCaller = step.ask(state)
    form = instructions if isinstance(instructions, RequestForm) else RequestForm(instructions)
    if callable(messages):
        asked = [messages(number) for number in range(1, count + 1)]
        calls = [ask.call(m, form, model_settings=model_settings, purpose=purpose) for m in asked]
    else:
        calls = [ask.call(messages, form, model_settings=model_settings, purpose=purpose)] * count
    results = yield ModelBatch(calls)
    outcomes = [as_outcome(r) for r in results if not isinstance(r, BaseException)]
    if not outcomes:
        raise all_failed(results)
    spent = spent_on(outcomes)
    spent["llm_calls"] += failed_requests(results)
    return [outcome.reply for outcome in outcomes], spent


def prompt_message(
    state: Mapping[str, object], text: str, media: Sequence[dict[str, object]] = ()
) -> HumanMessage:
    """A loop's user-role prompt about the user's request: ``text`` (the loop's words,
    the request's text restated in them), followed by the images, files and audio of the
    request as the user gave them, so that a model answering the prompt sees them too.

    The request is the latest user message before the run's own transcript (see
    ``loopgraphs.state.conversation_of``); its non-text content blocks are passed as
    they are, never re-rendered. ``media``: more blocks the prompt is about (the images
    and files of the tool results it shows), sent after the request's.
    """
    return with_media(text, [*media_blocks(conversation_of(state)), *media])


__all__ = ["Turn", "act", "generate", "prompt_message", "samples"]
