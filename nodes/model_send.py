"""How the innermost handler sends a model request, in each form a loop asks for.

- with a ``response_format`` (a structured-output level): ``ToolStrategy`` binds the
  schema as the only tool and makes the model call it, ``ProviderStrategy`` asks for
  provider-enforced JSON (``with_structured_output(method="json_schema")``);
- ``RequestForm.tools == "bind"``: ``model.bind_tools(request.tools, tool_choice=...)`` (native
  function calling; no tools: a plain call);
- ``"schema"``: one JSON action constrained to ``request.tools`` (json mode);
- ``"prompt"``: the tools are only described in the prompt (text mode, Self-Ask's text
  form).

In json and text modes the loop's instructions and worked examples are rendered from the
request's tools, so a middleware that narrows ``request.tools`` changes what the model is
offered in every mode. The loop's instructions follow the request's system message (the
caller's ``system_prompt``) in one system message. The request's ``model_settings``
(``temperature``, say) go with it in every form but the structured-output levels: bound to
the model, or, where the form wraps the model (json mode), set as its fields
(``with_fields``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from loopgraphs.models import needs_guided_steps
from loopgraphs.nodes.parsing.json_text import extract_json
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.strict_schema import (
    ROOT_KEY,
    json_schema_of,
    object_root,
    sends_strict,
    strict_schema,
)
from loopgraphs.text import is_kind
from loopgraphs.toolkits.registry import ToolRegistry

ToolsForm = Literal["bind", "schema", "prompt"]
Render = Callable[[Sequence[AnyMessage], ToolRegistry], list[BaseMessage]]
Instructions = str | Callable[[ToolRegistry], str]
Schema = Callable[[ToolRegistry, str | None], dict[str, Any]]
# A loop's model request: its runtime's context is ``LoopContext`` or the caller's
# ``context_schema`` (see ``loopgraphs.state.LoopRuntime``), so its type stays open.
LoopRequest: TypeAlias = ModelRequest[Any]
# What the handler calls: the chat model, bound or structured (its output is read by
# the ``Reader`` that comes with it).
Sender: TypeAlias = Runnable[LanguageModelInput, object]


@dataclass(frozen=True)
class RequestForm:
    """How the innermost handler sends a loop's request.

    Attributes:
        instructions: The loop's own system text for this call (or a function of the
            request's tools), placed after the request's system message.
        tools: How ``request.tools`` reach the model: ``"bind"`` (native function
            calling), ``"schema"`` (one JSON action, schema-constrained) or ``"prompt"``
            (described in the instructions only).
        render: For ``"schema"`` and ``"prompt"``: the messages the model reads, made
            from the request's messages and tools (worked examples, observations as
            user messages). None: the messages as written.
        thoughts: Whether a json action has a ``thought`` field.
        schema: For ``"schema"``: the JSON schema the reply is constrained to, made from
            the request's tools and its ``tool_choice`` (as ``action_schema`` reads it).
            None: one ReAct action (``action_schema``).
    """

    instructions: Instructions = ""
    tools: ToolsForm = "bind"
    render: Render | None = None
    thoughts: bool = True
    schema: Schema | None = None


PLAIN = RequestForm()


Reader = Callable[[object], ModelResponse]
MessageView = Callable[[Sequence[AnyMessage]], list[AnyMessage]]
"""How a request's messages are shown to the model (see ``prepare``)."""


def prepare(
    request: LoopRequest,
    form: RequestForm,
    known: frozenset[str] | None = None,
    view: MessageView | None = None,
) -> tuple[Sender, list[BaseMessage], Reader]:
    """The runnable to call, its input and how to read its output, for one request; its
    messages as ``view`` shows them to the model (tool results cut and fenced: the thread
    keeps them as the tools returned them).

    Raises:
        ValueError: the request offers a tool the loop cannot run (``known`` lists the
            ones it can; None when a ``wrap_tool_call`` middleware may run others).
    """
    model = request.model
    if view is not None:
        request = request.override(messages=view(request.messages))
    tools = [tool for tool in request.tools if not isinstance(tool, dict)]
    if known is not None:
        unknown = [getattr(tool, "name", str(tool)) for tool in tools]
        unknown = [name for name in unknown if name not in known]
        if unknown:
            raise ValueError(
                f"a middleware offered the model tools the loop cannot run: {unknown}; "
                f"the loop's tools are {sorted(known)}. Pass them to the factory (or in a "
                "middleware's `tools`), or run them in a `wrap_tool_call` middleware."
            )
    registry = registry_of(tools)
    text = form.instructions(registry) if callable(form.instructions) else form.instructions
    system = joined_system(request.system_message, text)
    head = [system] if system is not None else []
    strategy = request.response_format
    if isinstance(strategy, ToolStrategy):
        return _tool_level(model, strategy), [*head, *request.messages], _read_tool_schema
    if strategy is not None:
        schema = strategy.schema if isinstance(strategy, ProviderStrategy) else strategy
        refused = isinstance(strategy, ProviderStrategy) and strategy.schema_spec.strict is False
        sender, wrapped = _json_level(model, schema_tool(schema)[0], strict=not refused)
        return sender, [*head, *request.messages], _provider_reader(wrapped)
    if form.tools == "bind" or not registry:
        configured, rest = with_settings(model, request.model_settings)
        runnable: Sender
        if request.tools:
            runnable = bound_model(configured, request.tools, request.tool_choice, rest)
        else:
            runnable = configured.bind(**rest) if rest else configured
        return runnable, [*head, *as_written(request.messages)], _read_reply
    body = form.render(request.messages, registry) if form.render else as_written(request.messages)
    if form.tools == "schema":
        require = _required(request.tool_choice)
        schema = (
            form.schema(registry, require)
            if form.schema is not None
            else action_schema(registry, require=require, thoughts=form.thoughts)
        )
        structured, wrapped = _json_level(with_fields(model, request.model_settings), schema)
        return structured, [*head, *body], _action_reader(wrapped)
    configured, rest = with_settings(model, request.model_settings)
    return (configured.bind(**rest) if rest else configured), [*head, *body], _read_reply


RAW_REPLY = "loopgraphs_reply"
"""Key in ``AIMessage.additional_kwargs`` holding the text a model wrote, where the stored
message shows something else (the answer of a final reply, the thought of a json- or
text-mode action)."""


def as_written(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The conversation as the model wrote it: replies stored with a shown text (see
    ``loopgraphs.nodes.generate.answer_message``) get their own text back, so that a model
    reads its earlier turns as it wrote them (and a server's prompt cache finds the same
    tokens)."""
    return [
        m.model_copy(update={"content": m.additional_kwargs[RAW_REPLY]})
        if is_kind(m, AIMessage) and RAW_REPLY in m.additional_kwargs
        else m
        for m in messages
    ]


def joined_system(message: SystemMessage | None, text: str) -> SystemMessage | None:
    """The request's system message followed by the loop's own ``text``, as one message."""
    if message is None or message.content in ("", []):
        return _system(text) if text else None
    if not text:
        return message
    if isinstance(message.content, list):
        return SystemMessage([*message.content, {"type": "text", "text": text}])
    return SystemMessage(f"{message.content}\n\n{text}")


_systems: dict[str, SystemMessage] = {}


def _system(text: str) -> SystemMessage:
    """A system message made once per text (the loops' instructions are a few fixed texts;
    a message is never changed once made)."""
    found = _systems.get(text)
    if found is None:
        if len(_systems) >= 256:
            _systems.clear()
        found = _systems[text] = SystemMessage(text)
    return found


def _required(choice: object) -> str | None:
    """A request's ``tool_choice`` as the json action schema reads it: None (the model may
    answer), ``"required"``, ``"none"`` (answer only) or a tool name."""
    if choice in (None, "auto"):
        return None
    if choice in ("any", "required", True):
        return "required"
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else "required"
    return str(choice)


def schema_tool(schema: Any) -> tuple[Any, str]:
    """What to bind (or ask the provider for) for a response schema, and its name: a JSON
    schema dict gets its title, a class (pydantic, TypedDict) is used as it is."""
    if isinstance(schema, dict):
        name = str(schema.get("title") or schema.get("name") or "response")
        return {"title": name, **schema.get("schema", schema)}, name
    return schema, str(getattr(schema, "__name__", "response"))


def _tool_level(model: BaseChatModel, strategy: ToolStrategy[Any]) -> Sender:
    """The model made to call the schema of a ``ToolStrategy`` as its only tool, bound in
    the provider's tool format (some chat models bind only dicts and tools), in strict
    form where the client takes it."""
    target, name = schema_tool(strategy.schema)
    tool = convert_to_openai_tool(target)
    if not sends_strict(model, "bind_tools"):
        return model.bind_tools([tool], tool_choice=name)
    function = tool["function"]
    parameters = strict_schema(function.get("parameters") or {"type": "object", "properties": {}})
    strict_tool = {**tool, "function": {**function, "parameters": parameters, "strict": True}}
    return model.bind_tools([strict_tool], tool_choice=name, strict=True)


def _json_level(model: BaseChatModel, schema: Any, *, strict: bool = True) -> tuple[Sender, bool]:
    """The model asked for provider-enforced JSON of ``schema`` (raw reply included), and
    whether the schema's root was wrapped (see ``object_root``).

    A small embedded model gets the schema as written (its llama.cpp server turns it into
    a grammar, bounds included); any other model a plain JSON schema with an object at
    its root, in strict form with ``strict=True`` where the client takes it.

    A model whose ``with_structured_output`` takes the schema alone (no ``method``, no
    ``include_raw``) gets the schema as the caller gave it, and its own structured output
    is read as the reply's object (``_raw_and_parsed``).

    Raises:
        NotImplementedError: the model has no structured output of its own at all (a form
            it lacks: the request steps down).
    """
    given, wrapped = schema, False
    options: dict[str, Any] = {"method": "json_schema", "include_raw": True}
    if not needs_guided_steps(model):
        schema, wrapped = object_root(json_schema_of(schema))
        if strict and sends_strict(model, "with_structured_output"):
            schema, options["strict"] = strict_schema(schema), True
    if not _takes_options(model):
        return _own_structured_output(model, given), False
    try:
        return model.with_structured_output(schema, **options), wrapped
    except TypeError as exc:
        raise NotImplementedError(
            f"{type(model).__name__}.with_structured_output does not take {sorted(options)}: {exc}"
        ) from exc


def _takes_options(model: BaseChatModel) -> bool:
    """Whether a model's ``with_structured_output`` takes keyword options besides the
    schema (every provider client does; a model of one's own may not)."""
    try:
        parameters = inspect.signature(model.with_structured_output).parameters.values()
    except (TypeError, ValueError):
        return True
    kinds = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = {p.name for p in parameters}
    return any(p.kind in kinds for p in parameters) or bool(named - {"schema"})


def _own_structured_output(model: BaseChatModel, schema: Any) -> Sender:
    """The model's own ``with_structured_output(schema)``, called as it is declared.

    Raises:
        NotImplementedError: the model refuses it (the request steps down).
    """
    try:
        return model.with_structured_output(schema)
    except (NotImplementedError, TypeError, ValueError) as exc:
        raise NotImplementedError(
            f"{type(model).__name__}.with_structured_output(schema) refused: {exc}"
        ) from exc


def _read_reply(output: object) -> ModelResponse:
    reply = output if isinstance(output, AIMessage) else AIMessage(content=content_text(output))
    return ModelResponse(result=[reply])


def _read_tool_schema(output: object) -> ModelResponse:
    reply = output if isinstance(output, AIMessage) else AIMessage(content=content_text(output))
    data = (
        reply.tool_calls[0]["args"]
        if reply.tool_calls
        else extract_json(content_text(reply.content))
    )
    return ModelResponse(result=[reply], structured_response=data)


def _raw_and_parsed(output: object, wrapped: bool) -> tuple[AIMessage, object, bool]:
    """The raw reply of a json-level call, the object it holds (read from the reply's
    text when the client parsed none), and whether that object was taken out of
    ``ROOT_KEY`` (the schema's root was wrapped and the reply followed it)."""
    if not isinstance(output, AIMessage) and not (isinstance(output, dict) and "raw" in output):
        # A model's own structured output: the object alone, no raw reply.
        own = output.model_dump() if isinstance(output, BaseModel) else output
        text = json.dumps(own, ensure_ascii=False, default=str) if own is not None else ""
        return AIMessage(content=text), own, False
    raw = output.get("raw") if isinstance(output, dict) else output
    parsed = output.get("parsed") if isinstance(output, dict) else None
    reply = raw if isinstance(raw, AIMessage) else AIMessage(content="")
    if parsed is None:
        parsed = extract_json(content_text(reply.content))
    if isinstance(parsed, BaseModel):
        parsed = parsed.model_dump()
    if wrapped and isinstance(parsed, dict) and set(parsed) == {ROOT_KEY}:
        return reply, parsed[ROOT_KEY], True
    return reply, parsed, False


def _provider_reader(wrapped: bool) -> Reader:
    def read(output: object) -> ModelResponse:
        reply, parsed, _ = _raw_and_parsed(output, wrapped)
        return ModelResponse(result=[reply], structured_response=parsed)

    return read


def _action_reader(wrapped: bool) -> Reader:
    """A json-mode action's reader: the raw reply, whose text is the action's JSON (the
    parsed action when the provider returned no text, the inner object when the reply
    followed a wrapped root)."""

    def read(output: object) -> ModelResponse:
        reply, parsed, unwrapped = _raw_and_parsed(output, wrapped)
        text = content_text(reply.content).strip()
        if parsed is not None and (unwrapped or not text):
            reply = reply.model_copy(update={"content": json.dumps(parsed, ensure_ascii=False)})
        return ModelResponse(result=[reply])

    return read


_registries: dict[tuple[int, ...], tuple[list[object], ToolRegistry]] = {}


def registry_of(tools: Sequence[BaseTool]) -> ToolRegistry:
    """The registry of a request's tools, made once per set of tool objects (keyed by
    their ids: an entry holds its tools, so no other object takes their ids while it is
    kept)."""
    key = tuple(map(id, tools))
    cached = _registries.get(key)
    if cached is None:
        if len(_registries) >= 256:
            _registries.clear()
        cached = _registries[key] = (list(tools), ToolRegistry(tools))
    return cached[1]


_bound: dict[tuple[int, tuple[int, ...], str, str], tuple[object, list[object], Sender]] = {}


def bound_model(
    model: BaseChatModel,
    tools: Sequence[BaseTool | dict[str, Any]],
    choice: Any = None,
    settings: dict[str, Any] | None = None,
) -> Sender:
    """``model.bind_tools(tools, tool_choice=choice, **settings)``, made once per model,
    set of tool objects and choice (the entry holds them, so their ids stay theirs)."""
    key = (id(model), tuple(map(id, tools)), repr(choice), repr(settings) if settings else "")
    cached = _bound.get(key)
    if cached is None:
        if len(_bound) >= 256:
            _bound.clear()
        options = {"tool_choice": choice} if choice is not None else {}
        bound = model.bind_tools(list(tools), **options, **(settings or {}))
        cached = _bound[key] = (model, list(tools), bound)
    return cached[2]


_with_fields: dict[tuple[int, str], tuple[object, BaseChatModel]] = {}


def with_settings(
    model: BaseChatModel, settings: Mapping[str, Any]
) -> tuple[BaseChatModel, dict[str, Any]]:
    """``model`` with the settings that are fields of its class set as its own (see
    ``with_fields``), and the others, to bind to it. A provider's client takes its
    sampling settings as the model's fields (Ollama's goes on to refuse a ``temperature``
    keyword), so a setting the model declares is set, never bound."""
    fields = getattr(type(model), "model_fields", {})
    rest = {key: value for key, value in settings.items() if key not in fields}
    return with_fields(model, settings), rest


def with_fields(model: BaseChatModel, settings: Mapping[str, Any]) -> BaseChatModel:
    """``model`` with ``settings`` set as its own fields (a copy, made once per model and
    settings), for a form that wraps the model (its structured output), where keyword
    arguments bound to it would not reach the request. Settings that are not fields of
    the model's class are left out; none left: the model as it is."""
    fields = getattr(type(model), "model_fields", {})
    own = {key: value for key, value in settings.items() if key in fields}
    if not own:
        return model
    key = (id(model), repr(sorted(own.items())))
    cached = _with_fields.get(key)
    if cached is None:
        if len(_with_fields) >= 256:
            _with_fields.clear()
        cached = _with_fields[key] = (model, model.model_copy(update=own))
    return cached[1]


def unbound(runnable: Sender) -> tuple[Sender, Mapping[str, Any]]:
    """The runnable a request goes to and the keyword arguments it goes with: a chat model
    bound to keyword arguments alone (what ``bind_tools`` and ``bind`` make: a
    ``RunnableBinding`` that calls as ``RunnableBinding`` does, with no config of its own)
    is called with them itself, as the binding would call it, without the binding's merge
    of the run's config into a copy on every call (the model reads the run's config
    itself). Any other runnable as it is."""
    kind = type(runnable)
    if (
        isinstance(runnable, RunnableBinding)
        and kind.invoke is RunnableBinding.invoke
        and kind.ainvoke is RunnableBinding.ainvoke
        and isinstance(runnable.bound, BaseChatModel)
        and not runnable.config
        and not runnable.config_factories
    ):
        return runnable.bound, runnable.kwargs
    return runnable, _NO_OPTIONS


_NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})


def action_schema(
    registry: ToolRegistry, *, require: str | None = None, thoughts: bool = True
) -> dict[str, Any]:
    """JSON schema of one step: one alternative per tool, linking ``action`` to that tool's
    arguments, plus the final answer unless a tool call is required (``require`` is
    ``"required"`` or a tool name); ``require="none"`` leaves only the final answer.
    Constrained decoding against it lets even a very small model produce only valid
    actions. ``thoughts=False`` leaves out the ``thought`` field."""

    def step(action: str, action_input: dict[str, Any]) -> dict[str, Any]:
        properties = {"action": {"const": action}, "action_input": action_input}
        if thoughts:
            properties = {"thought": {"type": "string"}, **properties}
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    schemas = [] if require == "none" else registry.schemas()
    if require and require not in ("required", "none"):
        schemas = [s for s in schemas if s["name"] == require]
    alternatives = [step(s["name"], s["parameters"]) for s in schemas]
    if not require or require == "none":
        alternatives.append(step("final_answer", {"type": "string"}))
    return {
        "name": "react_step",
        "description": "One step: call a tool, or give the final answer.",
        "schema": {"anyOf": alternatives},
    }
