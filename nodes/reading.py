"""The kit's ``parse``: a reply read into a typed value, with the one re-ask.

Two ways to read, one result (``Parsed``):

* with a ``schema`` (a pydantic model, a ``TypedDict``, a dataclass or a JSON schema):
  the structured-output ladder of ``loopgraphs.nodes.structured`` (the schema as the only
  tool, provider-enforced JSON, JSON asked for in words and found in the text), each
  level retried once with a reformat request;
* with a ``reader`` (a function of the reply's text returning the value or None): a
  plain turn read by the function, and, when it finds nothing, one more turn that ends
  with ``reask`` (an instruction for that request only, never kept in the thread).

Every request of ``parse`` is internal (it names its ``purpose``): a chat shows the value
the step makes of it, not the reply.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.tools import BaseTool

from loopgraphs import prompts
from loopgraphs.nodes.driver import Request
from loopgraphs.nodes.generate import reasked, spent_together
from loopgraphs.nodes.model_call import call_model
from loopgraphs.nodes.model_send import Instructions, RequestForm
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.step import Step, check_step
from loopgraphs.nodes.structured import Level, structured_call
from loopgraphs.state import ModelSpend

ValueT = TypeVar("ValueT")


@dataclass(frozen=True)
class Parsed(Generic[ValueT]):
    """What ``parse`` read.

    Attributes:
        value: The value (None when no reply could be read).
        spent: The ``llm_calls``/``usage`` update for every request sent.
        replies: The replies read, in order.
        level: How the value was read: a level of the structured-output ladder
            (``"native"``, ``"json"``, ``"text"``), ``"reader"``, ``"refused"`` (the
            provider refused the form of every level, with ``raise_refused=False``), or
            ``"failed"``.
        refused: The ladder's levels the provider refused as a form, in order.
    """

    value: ValueT | None
    spent: ModelSpend
    replies: list[AIMessage] = field(default_factory=list)
    level: str = "failed"
    refused: list[Level] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether a value was read."""
        return self.value is not None


def parse(
    step: Step[Any],
    state: Mapping[str, object],
    messages: Sequence[BaseMessage],
    *,
    schema: Any = None,
    reader: Callable[[str], ValueT | None] | None = None,
    instructions: Instructions = "",
    purpose: str = "structured_output",
    max_calls: int = 2,
    fallback: Callable[[str], dict[str, Any] | None] | None = None,
    levels: list[Level] | None = None,
    reask: str = prompts.REFORMAT_ANSWER,
    tools: Sequence[BaseTool | dict[str, Any]] = (),
    with_system: bool = False,
    model_settings: Mapping[str, object] | None = None,
    raise_refused: bool = True,
) -> Generator[Request, Any, Parsed[Any]]:
    """Ask the model for a value and read it from the reply (give ``schema`` or ``reader``).

    Args:
        step: The running step.
        state: The loop's state.
        messages: The request, without a system message.
        schema: The value's type, read through the structured-output ladder.
        reader: Reads the value from a reply's text (None: nothing found), for a value
            written in a grammar of the loop's own.
        instructions: The loop's system text for the request.
        purpose: What the request is for, in the run's metadata (every request of
            ``parse`` is internal).
        max_calls: Most requests sent, re-asks included.
        fallback: With ``schema``: reads a dict from a free-text reply (a regex
            fallback) when no JSON is found.
        levels: With ``schema``: the ladder's levels to try (default: those the model's
            profile and the run's tool mode allow).
        reask: With ``reader``: the instruction the one re-ask ends with.
        tools: Tools the instructions describe.
        with_system: Whether the caller's ``system_prompt`` goes first.
        model_settings: With ``reader``: keyword arguments bound to the model.
        raise_refused: With ``schema``: when the provider refuses the form of every level
            (its tools, its response format; see ``levels``), raise its last refusal
            (True), or return a ``Parsed`` of level ``"refused"`` whose ``refused`` names
            those levels and whose ``spent`` counts the refused requests (False), for a
            step that then asks in a form of its own.

    Returns:
        The ``Parsed`` value.

    Raises:
        TypeError: neither or both of ``schema`` and ``reader`` were given.
        ValueError: ``max_calls`` is below 1.
    """
    check_step(step, "parse")
    if (schema is None) == (reader is None):
        raise TypeError("parse takes a schema= or a reader=, exactly one of them")
    if max_calls < 1:
        raise ValueError(f"parse: max_calls must be >= 1; got {max_calls}")
    if schema is not None:
        result = yield from structured_call(
            step.ask(state),
            messages,
            schema,
            instructions=instructions,
            tools=tools,
            with_system=with_system,
            levels=levels,
            regex_fallback=fallback,
            max_calls=max_calls,
            purpose=purpose,
            raise_refused=raise_refused,
        )
        return Parsed(
            result.value, result.state_update(), result.replies, result.level, result.refused
        )
    assert reader is not None
    ask = step.ask(state)
    form = RequestForm(instructions)

    def request(asked: Sequence[BaseMessage]) -> Any:
        return ask.call(
            asked,
            form,
            tools=tools,
            with_system=with_system,
            model_settings=model_settings,
            purpose=purpose,
        )

    reply, spent = yield from call_model(request(messages))
    replies = [reply]
    value = None if cut_short(reply) else reader(content_text(reply.content))
    if value is None and max_calls > 1:
        retold: list[AnyMessage] = [*cast("Sequence[AnyMessage]", messages), reply]
        again, more = yield from call_model(request(reasked(retold, reask)))
        replies.append(again)
        spent = spent_together(spent, more)
        value = None if cut_short(again) else reader(content_text(again.content))
    return Parsed(value, spent, replies, "reader" if value is not None else "failed")


__all__ = ["Parsed", "parse"]
