"""Structured output from any chat model, degrading through three levels (``LADDER``).

1. ``native``: the schema is offered as the only tool and the model is made to call it.
2. ``json``: provider-enforced JSON (``with_structured_output(method="json_schema")``;
   llama.cpp turns the schema into a grammar, OpenAI enforces it in strict mode).
3. ``text``: a plain call asking for JSON, extracted from free text, then an optional
   regex fallback.

The native and json levels send the schema in strict form, with ``strict=True``, where
the client takes it (see ``loopgraphs.nodes.strict_schema``). Each level that gets an
unusable reply is retried once with a reformat request, and the optional regex fallback
reads every reply's text at every level; a level the provider rejects as a form (see
``loopgraphs.nodes.errors.is_form_rejection``), or that the model's profile or the run's
tool mode rules out, is skipped, and when every level was rejected the last rejection is
raised. Any other failure is raised at once. The result says which level succeeded, which
the provider refused and what it cost, and the number of calls never exceeds
``max_calls``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonDict

from loopgraphs.models import capabilities
from loopgraphs.nodes.errors import failed_calls, is_form_rejection, mark_sent
from loopgraphs.nodes.model_call import ModelCall, ModelCaller, as_outcome, caller_for
from loopgraphs.nodes.model_send import Instructions, RequestForm
from loopgraphs.nodes.parsing.json_text import extract_json
from loopgraphs.nodes.parsing.text import content_text, stopped_at_cap
from loopgraphs.nodes.strict_schema import json_schema_of, without_nulls
from loopgraphs.prompts import REFORMAT_JSON, STRUCTURED_TEXT_INSTRUCTION
from loopgraphs.state import ModelSpend, Usage, add_usage, empty_usage

T = TypeVar("T", bound=BaseModel)
Level = Literal["native", "json", "text", "failed", "refused"]
LADDER: tuple[Level, ...] = ("native", "json", "text")
"""The forms a request steps down through when the provider refuses one: native tool
calling, provider-enforced JSON, plain text. Every model call of every loop takes it; a
run's ``tool_mode`` says where its tool calls are on it (see ``available_levels``)."""
PARSE_FAILURES = (ValidationError, OutputParserException)


@dataclass
class StructuredResult:
    """Outcome of ``structured_call``: the value and the level that produced it, the
    calls and tokens spent, the replies read, and the levels the provider refused (their
    form: tools or a response format), in order."""

    value: Any
    level: Level
    calls: int = 0
    usage: Usage = field(default_factory=empty_usage)
    replies: list[AIMessage] = field(default_factory=list)
    refused: list[Level] = field(default_factory=list)

    def state_update(self) -> ModelSpend:
        """The ``llm_calls``/``usage`` update that accounts for this call."""
        return {"llm_calls": self.calls, "usage": self.usage}


def available_levels(model: BaseChatModel, mode: str | None = None) -> list[Level]:
    """The levels worth trying for a model, in ``LADDER`` order: those its profile does
    not rule out (unknown means try), without the native level in a run whose tool
    ``mode`` is ``"json"`` or ``"text"`` (chosen so, or stepped down to because the
    provider refused tools)."""
    caps = capabilities(model)
    levels: list[Level] = []
    if mode not in ("json", "text") and caps.tool_calling is not False:
        levels.append("native")
    if caps.structured_output is not False:
        levels.append("json")
    levels.append("text")
    return levels


def _validate(schema: Any, data: object) -> object:
    """``data`` checked against ``schema``: a pydantic instance, a dict (TypedDict or
    JSON schema), or None when it does not fit."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        if isinstance(data, schema):
            return data
        if isinstance(data, BaseModel):
            data = data.model_dump()
    if isinstance(data, BaseModel):
        data = data.model_dump()
    if not isinstance(data, dict):
        return None
    if isinstance(schema, dict):
        body = schema.get("schema", schema)
        missing = [key for key in body.get("required", []) if key not in data]
        return None if missing else data
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate(data)
        return TypeAdapter(schema).validate_python(data)
    except ValidationError:
        return None


def structured_call(
    model: ModelCaller | BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: Any,
    *,
    instructions: Instructions = "",
    tools: Sequence[BaseTool | dict[str, Any]] = (),
    with_system: bool = False,
    levels: list[Level] | None = None,
    regex_fallback: Callable[[str], dict[str, Any] | None] | None = None,
    max_calls: int = 5,
    purpose: str = "structured_output",
    raise_refused: bool = True,
) -> Generator[ModelCall, object, StructuredResult]:
    """Ask the model for an object of ``schema``, degrading native → json → text.

    Each attempt is one ``ModelCall`` (through the run's middleware): the native level
    carries ``response_format=ToolStrategy(schema)``, the json level
    ``ProviderStrategy(schema)``, the text level none (the schema is asked for in words).
    A reply cut at the token cap is not read (a partial object, or a verdict read from
    half a sentence, is no answer): the next attempt asks again.

    Args:
        model: The node's ``ModelCaller`` (see ``loopgraphs.nodes.generate.node_caller``), or any
            chat model.
        messages: The prompt, without a system message.
        schema: A pydantic model (its docstring and field descriptions guide the model),
            a TypedDict or dataclass, or a JSON schema dict.
        instructions: The loop's system text for the call (or a function of the tools).
        tools: Tools the instructions describe (the request's ``tools``; they are not
            bound: the schema is the only tool of the native level, and the text level
            only describes them, so a model without function calling can answer it).
        with_system: Whether the caller's system prompt goes first.
        levels: Levels to try, in order; default: ``available_levels`` of the model, from
            the run's tool mode (the ``tool_mode`` of the state the caller carries) down.
        regex_fallback: Turns a free-text reply into a dict when no JSON is found.
        max_calls: Hard cap on model calls across all levels.
        purpose: What the call is for, in the run's metadata: every level is an internal
            call (see ``loopgraphs.nodes.model_call``), which a chat does not show.
        raise_refused: When the provider refused the form of every level it was sent at
            and no request got a reply, raise the last refusal (True), or return a result
            of level ``"refused"``, its ``refused`` naming those levels and its ``calls``
            the refused requests (False).

    Yields:
        Model calls.

    Returns:
        The validated object (``value``; None when every level failed), the level that
        produced it, and the calls and tokens spent.
    """
    ask = caller_for(model)
    form = RequestForm(instructions)
    described = RequestForm(instructions, tools="prompt")  # the text level binds no tool
    result = StructuredResult(value=None, level="failed")
    rejection: BaseException | None = None
    rejected = 0  # requests the provider refused; they count as calls, not as replies
    mode = ask.state.get("tool_mode")
    for level in levels or available_levels(ask.model, mode if isinstance(mode, str) else None):
        for attempt in range(2):
            if result.calls >= max_calls:
                result.calls += rejected
                return result
            prompt = list(messages)
            if level == "text":
                prompt.append(
                    HumanMessage(STRUCTURED_TEXT_INSTRUCTION.format(schema=_schema_text(schema)))
                )
            if attempt:
                prompt.append(HumanMessage(REFORMAT_JSON.format(schema=_schema_text(schema))))
            call = ask.call(
                prompt,
                described if level == "text" else form,
                tools=tools,
                response_format=_strategy(level, schema),
                with_system=with_system,
                purpose=purpose,
            )
            try:
                outcome = as_outcome((yield call))
            except PARSE_FAILURES:
                result.calls += 1
                continue
            except Exception as exc:
                if not is_form_rejection(exc):
                    raise
                rejection = exc
                rejected += failed_calls(exc)
                result.refused.append(level)
                break
            result.calls += outcome.calls
            result.usage = add_usage(result.usage, outcome.usage)
            raw = outcome.reply
            result.replies.append(raw)
            if stopped_at_cap(raw):
                continue  # cut at the token cap: whatever it holds is partial, never read
            data = outcome.response.structured_response
            if level == "text" or data is None:
                data = extract_json(content_text(raw.content))
            value = _validate(schema, data)
            if value is None and data is not None:  # a strict schema's nulls: keys left out
                value = _validate(schema, without_nulls(data))
            if value is None and regex_fallback is not None:
                value = _validate(schema, regex_fallback(_reply_text(raw)))
            if value is not None:
                result.value, result.level = value, level
                result.calls += rejected
                return result
    if rejection is not None and result.calls == 0:
        if raise_refused:
            mark_sent(rejection, rejected)
            raise rejection
        result.level = "refused"
    result.calls += rejected
    return result


ModelT = TypeVar("ModelT", bound=BaseModel)


def with_bounds(schema: type[ModelT], name: str, bounds: JsonDict) -> type[ModelT]:
    """``schema`` (same name and docstring) whose field ``name`` carries ``bounds`` in its
    JSON schema only (``maxItems``, an item's ``maxLength``, ...): a schema-constrained
    decoder (llama.cpp's grammar) then ends the field where a small model would write on
    to its token cap, while validation stays as lenient as ``schema``'s."""
    field = schema.model_fields[name]
    bounded = FieldInfo.merge_field_infos(field, json_schema_extra=bounds)
    made: type[ModelT] = create_model(  # type: ignore[call-overload]
        schema.__name__,
        __base__=schema,
        __doc__=schema.__doc__,
        **{name: (field.annotation, bounded)},
    )
    return made


_strategies: dict[tuple[str, int], tuple[object, ToolStrategy[Any] | ProviderStrategy[Any]]] = {}


def _strategy(level: Level, schema: Any) -> ToolStrategy[Any] | ProviderStrategy[Any] | None:
    """The response format of a level's request (made once per schema)."""
    if level == "text":
        return None
    key = (level, id(schema))
    cached = _strategies.get(key)
    if cached is None or cached[0] is not schema:
        if len(_strategies) >= 256:
            _strategies.clear()
        made = ToolStrategy(schema) if level == "native" else ProviderStrategy(schema)
        cached = _strategies[key] = (schema, made)
    return cached[1]


def _reply_text(reply: AIMessage) -> str:
    """A reply's text, with the arguments of any tool calls appended."""
    args = [json.dumps(call["args"], ensure_ascii=False) for call in reply.tool_calls]
    return "\n".join([content_text(reply.content), *args])


def _schema_text(schema: object) -> str:
    return json.dumps(json_schema_of(schema), ensure_ascii=False)
