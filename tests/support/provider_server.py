"""A loopback server that answers in the wire formats of four chat-model providers.

``ProviderServer`` runs a ``ThreadingHTTPServer`` on ``127.0.0.1:<free port>`` and serves,
on that one port, what the real provider clients talk to:

* OpenAI Chat Completions, ``POST /v1/chat/completions`` (``ChatOpenAI``);
* the OpenAI Responses API, ``POST /v1/responses`` (``ChatOpenAI(use_responses_api=True)``);
* Anthropic Messages, ``POST /v1/messages`` (``ChatAnthropic``);
* Ollama's chat, ``POST /api/chat`` (``ChatOllama``), with ``GET /api/tags`` and
  ``POST /api/show`` for a client that asks which models exist and what they can do.

A reply is scripted once, as a ``Turn`` (or a ``Fail``), and rendered in the format of
the request that gets it: one JSON body, or the provider's own stream when the request
asks for one (server-sent ``data:`` chunks ending with ``data: [DONE]`` for Chat
Completions, named server-sent events for the Responses API and Anthropic, JSON lines
for Ollama, which streams unless told not to). Streamed text comes word by word and
tool-call arguments in a few pieces, as the providers send them.

Replies come from, in order: the server-wide refusals (``refuse_tools``,
``refuse_schemas``, ``strict_schemas``), which answer before any reply is taken; the
queue filled by ``script``; the ``responder``, which answers from the request; the
``default``. Every chat request is kept in ``requests`` as a ``Request``.

A ``Fail`` is an HTTP error in the provider's own error shape; ``context_overflow``,
``tools_unsupported`` and ``schema_unsupported`` make the common ones in each
provider's words. ``strict_schema_violations`` is the check of OpenAI's strict mode
that ``strict_schemas`` applies, usable on its own.

Example::

    with ProviderServer() as server:
        server.script(Turn(tool_calls=[Call("add", {"a": 2, "b": 3})]), Turn(text="5"))
        model = ChatOllama(model="llama3.2", base_url=server.ollama_url)
        # or ChatOpenAI(model=..., base_url=server.openai_url, api_key="x"), with
        # use_responses_api=True for the Responses API, or
        # ChatAnthropic(model=..., base_url=server.anthropic_url, api_key="x")
        ...

Token counts follow OpenAI's meaning everywhere: ``input_tokens`` is the whole prompt,
``cached_tokens`` the part of it read from the provider's cache, ``reasoning_tokens``
the part of ``output_tokens`` spent thinking. Anthropic counts its ``input_tokens``
without the cached part, so it is sent as ``input_tokens - cached_tokens`` with
``cache_read_input_tokens``; ``ChatAnthropic`` adds them back up.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import secrets
import string
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

Provider = Literal["openai", "responses", "anthropic", "ollama"]
Stop = Literal["stop", "length", "refusal", "content_filter"]

PATHS: dict[str, Provider] = {
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/v1/messages": "anthropic",
    "/api/chat": "ollama",
}

# Anthropic's error type for each status (its errors page).
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

# The keywords OpenAI's structured outputs accept in a schema sent with `strict: true`.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)


@dataclass(frozen=True)
class Call:
    """One tool call of a scripted reply.

    Attributes:
        name: The tool's name.
        args: Its arguments: a JSON string on OpenAI's wire, an object on Anthropic's
            and Ollama's.
        id: The call's id; `None` makes one in the provider's style (`call_...` for
            OpenAI, `toolu_...` for Anthropic). Ollama's wire carries no ids.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Turn:
    """One model reply, rendered in whichever format the request came in.

    Attributes:
        text: What the model wrote.
        tool_calls: The tools it calls.
        stop: Why the reply ended, mapped to each provider's own value. `"stop"`: a
            natural end (finish_reason `"stop"` or `"tool_calls"`, Anthropic's
            `"end_turn"` or `"tool_use"`, Ollama's `"stop"`). `"length"`: cut at the
            token cap (finish_reason `"length"`, a Responses status `"incomplete"` with
            reason `"max_output_tokens"`, Anthropic's `"max_tokens"`, Ollama's
            `"length"`). `"refusal"`: the model refused (see `refusal`).
            `"content_filter"`: stopped by a filter (finish_reason `"content_filter"`, a
            Responses reason `"content_filter"`, Anthropic's `"refusal"`; Ollama has no
            filter and says `"stop"`).
        thinking: Reasoning text: a Responses reasoning summary, an Anthropic thinking
            block, Ollama's `message.thinking`. Chat Completions has no field for it.
            Real providers send it only when the request asks for it.
        refusal: The model's refusal; setting it makes the turn a refusal. Its words
            (`refusal`, or `text` when only `stop="refusal"` is given) are OpenAI's
            `message.refusal` field, a Responses content part of type `refusal`, the
            text of an Anthropic reply with `stop_reason: "refusal"`, and plain content
            on Ollama, which has no refusal of its own.
        input_tokens: Prompt tokens, the cached ones included.
        output_tokens: Generated tokens, the reasoning ones included.
        cached_tokens: Prompt tokens read from the cache (OpenAI's `cached_tokens`,
            Anthropic's `cache_read_input_tokens`; Ollama reports none).
        reasoning_tokens: Generated tokens spent reasoning (OpenAI's
            `reasoning_tokens`, Anthropic's `thinking_tokens`).
    """

    text: str = ""
    tool_calls: Sequence[Call] = ()
    stop: Stop = "stop"
    thinking: str = ""
    refusal: str = ""
    input_tokens: int = 11
    output_tokens: int = 7
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        if self.stop not in get_args(Stop):
            raise ValueError(f"stop must be one of {get_args(Stop)}, got {self.stop!r}")
        if not 0 <= self.cached_tokens <= self.input_tokens:
            raise ValueError("cached_tokens must be between 0 and input_tokens")
        if not 0 <= self.reasoning_tokens <= self.output_tokens:
            raise ValueError("reasoning_tokens must be between 0 and output_tokens")

    @property
    def refused(self) -> bool:
        """Whether the model refused."""
        return bool(self.refusal) or self.stop == "refusal"

    @property
    def words(self) -> str:
        """The reply's text: the refusal's words when the model refused."""
        return (self.refusal or self.text) if self.refused else self.text


@dataclass(frozen=True)
class Fail:
    """An HTTP error whose body has the provider's own error shape, so that each client
    raises its own exception class (`openai.BadRequestError`, `anthropic.BadRequestError`,
    `ollama.ResponseError`, ...).

    OpenAI's shape is `{"error": {"message", "type", "param", "code"}}`, Anthropic's
    `{"type": "error", "error": {"type", "message"}}`, Ollama's `{"error": message}`.
    `context_overflow`, `tools_unsupported` and `schema_unsupported` make the failures
    tests need most, in each provider's words.

    Attributes:
        status: The HTTP status.
        message: The error's message.
        code: OpenAI's `code` (e.g. `"context_length_exceeded"`); other providers have none.
        kind: The error's type: OpenAI's `type` (default `"invalid_request_error"`, or
            `"server_error"` from 500 up) or Anthropic's `error.type` (default from the
            status: `"invalid_request_error"`, `"rate_limit_error"`, `"overloaded_error"`...).
        param: OpenAI's `param`, the request field at fault.
    """

    status: int
    message: str
    code: str | None = None
    kind: str | None = None
    param: str | None = None


Reply = Turn | Fail


@dataclass(frozen=True)
class Request:
    """A chat request the server received.

    Attributes:
        provider: The wire format it came in: `"openai"` (Chat Completions),
            `"responses"`, `"anthropic"` or `"ollama"`.
        path: The URL path it was sent to.
        body: Its parsed JSON body.
    """

    provider: Provider
    path: str
    body: dict[str, Any]

    @property
    def model(self) -> str:
        """The model the request names."""
        return str(self.body.get("model") or "")

    @property
    def stream(self) -> bool:
        """Whether the client asked for a stream (Ollama streams unless told not to)."""
        if self.provider == "ollama":
            return self.body.get("stream") is not False
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[tuple[str, str]]:
        """`(role, text)` for each message in order, in one vocabulary for every format:
        `"system"` (a system or developer message, Anthropic's `system`, the Responses
        `instructions`), `"user"`, `"assistant"` and `"tool"` (a tool's result)."""
        return _messages(self.provider, self.body)

    @property
    def text(self) -> str:
        """The text of every message, one per line."""
        return "\n".join(text for _, text in self.messages)

    @property
    def last_user_text(self) -> str:
        """The text of the last user message, or `""`."""
        return next((text for role, text in reversed(self.messages) if role == "user"), "")

    @property
    def has_tools(self) -> bool:
        """Whether the request carries tools or a tool choice."""
        return bool(self.body.get("tools")) or self.body.get("tool_choice") is not None

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema the reply must follow, if the request sent one: OpenAI's
        `response_format.json_schema.schema`, the Responses `text.format.schema`,
        Anthropic's `output_config.format.schema` (or the older `output_format`),
        Ollama's `format` when it is a schema rather than `"json"`."""
        body = self.body
        if self.provider == "ollama":
            return _dict_or_none(body.get("format"))
        fmt = {
            "openai": body.get("response_format"),
            "responses": (body.get("text") or {}).get("format"),
            "anthropic": (body.get("output_config") or {}).get("format")
            or body.get("output_format"),
        }[self.provider]
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
            return None
        # Chat Completions nests the schema one level deeper than the others.
        spec = fmt.get("json_schema") if self.provider == "openai" else fmt
        return _dict_or_none((spec or {}).get("schema"))

    @property
    def has_schema(self) -> bool:
        """Whether the request sent a JSON schema for the reply."""
        return self.schema is not None


Responder = Callable[[Request], Reply]


def _dict_or_none(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _text_of(content: object) -> str:
    """The text in a message's content: a string, or the text of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        if content.get("type") == "tool_result":
            return _text_of(content.get("content"))
    return ""


def _role(role: object) -> str:
    return "system" if role == "developer" else str(role)


def _messages(provider: Provider, body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`Request.messages` for each wire format."""
    found: list[tuple[str, str]] = []
    if provider == "responses":
        if body.get("instructions"):
            found.append(("system", _text_of(body["instructions"])))
        items = body.get("input")
        if isinstance(items, str):
            return [*found, ("user", items)]
        for item in items or []:
            if item.get("type") == "function_call_output":
                found.append(("tool", _text_of(item.get("output"))))
            elif "role" in item:
                found.append((_role(item["role"]), _text_of(item.get("content"))))
        return found
    if provider == "anthropic":
        if body.get("system"):
            found.append(("system", _text_of(body["system"])))
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                results = [part for part in content if part.get("type") == "tool_result"]
                found.extend(("tool", _text_of(part)) for part in results)
                rest = [part for part in content if part.get("type") != "tool_result"]
                if rest or not results:
                    found.append((message.get("role", "user"), _text_of(rest)))
            else:
                found.append((message.get("role", "user"), _text_of(content)))
        return found
    return [
        (_role(message.get("role")), _text_of(message.get("content")))
        for message in body.get("messages") or []
    ]


# -- failures in each provider's words ---------------------------------------------------


def _ollama_model(model: str) -> str:
    """The name Ollama puts in its messages: `registry.ollama.ai/library/<name>:<tag>`."""
    name = model or "llama3.2"
    return f"registry.ollama.ai/library/{name if ':' in name else name + ':latest'}"


def context_overflow(provider: Provider, *, tokens: int = 140_000, limit: int = 128_000) -> Fail:
    """A 400 for a prompt longer than the model's context window, in the provider's words.

    OpenAI answers with code `context_length_exceeded` (the exception's `code`),
    Anthropic with `prompt is too long: ...` (which `ChatAnthropic` raises as a
    `langchain_core.exceptions.ContextOverflowError`), Ollama (when told not to shorten
    the prompt) with `request (N tokens) exceeds the available context size ...`.

    Args:
        provider: The wire format to answer in.
        tokens: The prompt's length in tokens.
        limit: The model's context window.

    Returns:
        The failure to script.
    """
    if provider == "openai":
        return Fail(
            400,
            f"This model's maximum context length is {limit} tokens. However, your "
            f"messages resulted in {tokens} tokens. Please reduce the length of the "
            "messages.",
            code="context_length_exceeded",
            param="messages",
        )
    if provider == "responses":
        return Fail(
            400,
            "Your input exceeds the context window of this model. Please adjust your "
            "input and try again.",
            code="context_length_exceeded",
            param="input",
        )
    if provider == "anthropic":
        return Fail(400, f"prompt is too long: {tokens} tokens > {limit} maximum")
    return Fail(
        400,
        f"request ({tokens} tokens) exceeds the available context size ({limit} tokens), "
        "try increasing it",
    )


def tools_unsupported(provider: Provider, model: str = "") -> Fail:
    """A 400 refusing tools, as a server says it of a model that cannot call them.

    Chat Completions: vLLM started without a tool-call parser (`"auto" tool choice
    requires --enable-auto-tool-choice and --tool-call-parser to be set`). Responses:
    OpenAI's words for a model without function calling. Ollama, and Ollama's
    Anthropic-compatible `/v1/messages` for the Anthropic format:
    `registry.ollama.ai/library/<model> does not support tools`.

    Args:
        provider: The wire format to answer in.
        model: The model the request named.

    Returns:
        The failure to script.
    """
    if provider == "openai":
        return Fail(
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
            "to be set",
            kind="BadRequestError",
        )
    if provider == "responses":
        return Fail(
            400,
            "tools is not supported in this model. For a list of supported models, refer "
            "to https://platform.openai.com/docs/guides/function-calling"
            "#models-supporting-function-calling.",
        )
    return Fail(400, f"{_ollama_model(model)} does not support tools")


def schema_unsupported(provider: Provider) -> Fail:
    """A 400 refusing a JSON-schema response format, in the provider's words.

    Chat Completions: OpenAI's `Invalid parameter: 'response_format' of type
    'json_schema' is not supported with this model.` (which `ChatOpenAI` recognises);
    Responses: the same for `text.format`. Anthropic: what an endpoint without
    structured outputs says of the field (`output_config.format: Extra inputs are not
    permitted`). Ollama accepts any schema; the refusal is its words for a `format` it
    cannot use.

    Args:
        provider: The wire format to answer in.

    Returns:
        The failure to script.
    """
    if provider == "openai":
        return Fail(
            400,
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
            "with this model.",
            param="response_format",
        )
    if provider == "responses":
        return Fail(
            400,
            "Invalid parameter: 'text.format' of type 'json_schema' is not supported with "
            "this model.",
            param="text.format",
        )
    if provider == "anthropic":
        return Fail(400, "output_config.format: Extra inputs are not permitted")
    return Fail(400, 'invalid format: expected "json" or a valid JSON Schema')


# -- OpenAI's strict mode ----------------------------------------------------------------


def strict_schema_violations(schema: object) -> list[str]:
    """What OpenAI's structured outputs refuse in a schema sent with `strict: true`.

    The root must be an object (`type: "object"`, not an `anyOf`); every object must
    say `additionalProperties: false` and list every key of `properties` in `required`;
    only the supported keywords may appear (`STRICT_KEYWORDS`: `type`, `properties`,
    `required`, `additionalProperties`, `items`, `anyOf`, `enum`, `const`, `$ref`,
    `$defs`/`definitions`, `description`, `title`, and the constraints `pattern`,
    `format`, `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`,
    `exclusiveMaximum`, `minItems`, `maxItems`), so that `default`, `minLength`,
    `maxLength`, `allOf`, `oneOf`, `not`, `patternProperties`, `uniqueItems` and the
    like are refused. Messages follow OpenAI's, naming the place in the schema as
    `In context=(...)`.

    Args:
        schema: The JSON schema.

    Returns:
        One message per violation, in schema order; empty for a compliant schema.
    """
    if not isinstance(schema, dict):
        return ["schema must be a JSON Schema of 'type: \"object\"', got a non-object"]
    problems: list[str] = []
    if "anyOf" in schema:
        problems.append("In context=(), 'anyOf' is not permitted at the root of the schema.")
    if schema.get("type") != "object":
        problems.append(
            "schema must be a JSON Schema of 'type: \"object\"', got "
            f"'type: \"{schema.get('type')}\"'."
        )
    _check_strict(schema, (), problems)
    return problems


def _check_strict(node: object, context: tuple[str, ...], problems: list[str]) -> None:
    """Append the strict-mode violations of one subschema and of those below it."""
    if not isinstance(node, dict):
        problems.append(f"In context={context}, schema must be a JSON object.")
        return
    for key in node:
        if key not in STRICT_KEYWORDS:
            problems.append(f"In context={context}, '{key}' is not permitted.")
    types = node.get("type")
    is_object = "object" in (types if isinstance(types, list) else [types])
    properties = node.get("properties")
    if is_object or isinstance(properties, dict):
        properties = properties if isinstance(properties, dict) else {}
        if node.get("additionalProperties") is not False:
            problems.append(
                f"In context={context}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        keys = list(properties)
        required = node.get("required")
        listed = required if isinstance(required, list) else []
        missing = [key for key in keys if key not in listed]
        if missing:
            problems.append(
                f"In context={context}, 'required' is required to be supplied and to be "
                f"an array including every key in properties. Missing '{missing[0]}'."
            )
        problems.extend(
            f"In context={context}, Extra required key '{key}' supplied."
            for key in listed
            if key not in keys
        )
        for key in keys:
            _check_strict(properties[key], (*context, "properties", key), problems)
    if "items" in node:
        _check_strict(node["items"], (*context, "items"), problems)
    for index, variant in enumerate(node.get("anyOf") or []):
        _check_strict(variant, (*context, "anyOf", str(index)), problems)
    for defs in ("$defs", "definitions"):
        for name, sub in (node.get(defs) or {}).items():
            _check_strict(sub, (*context, defs, name), problems)


def _strict_schemas(request: Request) -> Iterator[tuple[str, str, object]]:
    """`(what, param, schema)` for each schema an OpenAI request sends with `strict: true`."""
    body = request.body
    if request.provider == "openai":
        fmt = body.get("response_format") or {}
        spec = fmt.get("json_schema") or {}
        if fmt.get("type") == "json_schema" and spec.get("strict") is True:
            name = spec.get("name", "")
            yield f"response_format '{name}'", "response_format", spec.get("schema")
        for index, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") or {}
            if tool.get("type") == "function" and function.get("strict") is True:
                yield (
                    f"function '{function.get('name', '')}'",
                    f"tools[{index}].function.parameters",
                    function.get("parameters", {}),
                )
    elif request.provider == "responses":
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema" and fmt.get("strict") is True:
            name = fmt.get("name", "")
            yield f"response_format '{name}'", "text.format.schema", fmt.get("schema")
        for index, tool in enumerate(body.get("tools") or []):
            if tool.get("type") == "function" and tool.get("strict") is True:
                name = tool.get("name", "")
                yield f"function '{name}'", f"tools[{index}].parameters", tool.get("parameters")


def _strict_failure(request: Request) -> Fail | None:
    """OpenAI's 400 for the first strict schema of the request that breaks the rules."""
    for what, param, schema in _strict_schemas(request):
        problems = strict_schema_violations(schema)
        if problems:
            return Fail(400, f"Invalid schema for {what}: {problems[0]}", param=param)
    return None


# -- ids and stream pieces ---------------------------------------------------------------

_ALPHANUMERIC = string.ascii_letters + string.digits


def _token(length: int) -> str:
    return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(length))


def _words(text: str) -> list[str]:
    """Text in word-sized pieces (each word with the spaces after it), as it streams."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _pieces(text: str, count: int = 3) -> list[str]:
    """A string in `count` pieces, as providers stream tool-call arguments."""
    size = max(1, -(-len(text) // count))
    return [text[start : start + size] for start in range(0, len(text), size)]


def _arguments(call: Call) -> str:
    return json.dumps(dict(call.args))


# -- OpenAI Chat Completions -------------------------------------------------------------


def _chat_finish(turn: Turn) -> str:
    if turn.stop in ("length", "content_filter"):
        return turn.stop
    return "tool_calls" if turn.tool_calls else "stop"


def _chat_usage(turn: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
        "prompt_tokens_details": {"cached_tokens": turn.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": turn.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_calls(turn: Turn) -> list[tuple[str, Call]]:
    return [(call.id or f"call_{_token(24)}", call) for call in turn.tool_calls]


def _chat_completion(turn: Turn, request: Request) -> dict[str, Any]:
    """A Chat Completions body (`object: "chat.completion"`)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if turn.refused else (turn.text or None),
        "refusal": turn.words if turn.refused else None,
        "annotations": [],
    }
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call_id, call in _chat_calls(turn)
        ]
    return {
        "id": f"chatcmpl-{_token(29)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _chat_finish(turn),
            }
        ],
        "usage": _chat_usage(turn),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def _chat_chunks(turn: Turn, request: Request) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed Chat Completions reply; the usage
    chunk (no choices) comes last when `stream_options.include_usage` is set."""
    with_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": f"chatcmpl-{_token(29)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.model,
        "service_tier": "default",
        "system_fingerprint": None,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], **({"usage": None} if with_usage else {})}

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    key = "refusal" if turn.refused else "content"
    for piece in _words(turn.words):
        yield chunk({key: piece})
    for index, (call_id, call) in enumerate(_chat_calls(turn)):
        function = {"name": call.name, "arguments": ""}
        yield chunk(
            {
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": function}
                ]
            }
        )
        for piece in _pieces(_arguments(call)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _chat_finish(turn))
    if with_usage:
        yield {**base, "choices": [], "usage": _chat_usage(turn)}


# -- OpenAI Responses --------------------------------------------------------------------


def _responses_status(turn: Turn) -> tuple[str, str | None]:
    """`(status, incomplete reason)` of a Responses reply."""
    if turn.stop == "length":
        return "incomplete", "max_output_tokens"
    if turn.stop == "content_filter":
        return "incomplete", "content_filter"
    return "completed", None


def _responses_output(turn: Turn) -> list[dict[str, Any]]:
    """The output items of a finished Responses reply: a reasoning summary, a message
    (its text, or a refusal part), then one `function_call` per tool call."""
    status, _ = _responses_status(turn)
    items: list[dict[str, Any]] = []
    if turn.thinking:
        summary = [{"type": "summary_text", "text": turn.thinking}]
        items.append({"id": f"rs_{secrets.token_hex(24)}", "type": "reasoning", "summary": summary})
    if turn.refused or turn.text or not turn.tool_calls:
        part = (
            {"type": "refusal", "refusal": turn.words}
            if turn.refused
            else {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
        )
        items.append(
            {
                "id": f"msg_{secrets.token_hex(24)}",
                "type": "message",
                "role": "assistant",
                "status": "completed" if turn.refused else status,
                "content": [part],
            }
        )
    items.extend(
        {
            "id": f"fc_{secrets.token_hex(24)}",
            "type": "function_call",
            "status": "completed",
            "arguments": _arguments(call),
            "call_id": call.id or f"call_{_token(24)}",
            "name": call.name,
        }
        for call in turn.tool_calls
    )
    return items


def _response_object(
    request: Request,
    identity: tuple[str, int],
    output: list[dict[str, Any]],
    turn: Turn | None,
) -> dict[str, Any]:
    """A Responses `response` object; `turn` is `None` while it is still in progress."""
    body = request.body
    status, reason = _responses_status(turn) if turn else ("in_progress", None)
    usage = turn and {
        "input_tokens": turn.input_tokens,
        "input_tokens_details": {"cached_tokens": turn.cached_tokens},
        "output_tokens": turn.output_tokens,
        "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    return {
        "id": identity[0],
        "object": "response",
        "created_at": identity[1],
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": request.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, **(body.get("text") or {})},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage,
        "user": None,
        "metadata": body.get("metadata", {}),
    }


def _identity() -> tuple[str, int]:
    return f"resp_{secrets.token_hex(24)}", int(time.time())


def _responses_body(turn: Turn, request: Request) -> dict[str, Any]:
    """A Responses body (`object: "response"`), `completed` or `incomplete`."""
    return _response_object(request, _identity(), _responses_output(turn), turn)


def _responses_events(turn: Turn, request: Request) -> Iterator[dict[str, Any]]:
    """The events of a streamed Responses reply, from `response.created` to
    `response.completed` (or `response.incomplete` for a cut reply)."""
    identity = _identity()
    output = _responses_output(turn)
    numbers = itertools.count()

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(numbers), **fields}

    yield event("response.created", response=_response_object(request, identity, [], None))
    yield event("response.in_progress", response=_response_object(request, identity, [], None))
    for index, item in enumerate(output):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            text = item["summary"][0]["text"]
            yield event(
                "response.output_item.added", output_index=index, item={**item, "summary": []}
            )
            yield event(
                "response.reasoning_summary_part.added",
                **at,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
            for piece in _words(text):
                yield event(
                    "response.reasoning_summary_text.delta", **at, summary_index=0, delta=piece
                )
            yield event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            yield event(
                "response.reasoning_summary_part.done",
                **at,
                summary_index=0,
                part={"type": "summary_text", "text": text},
            )
        elif item["type"] == "message":
            opened = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=opened)
            for content_index, part in enumerate(item["content"]):
                where = {**at, "content_index": content_index}
                if part["type"] == "refusal":
                    empty = {"type": "refusal", "refusal": ""}
                    yield event("response.content_part.added", **where, part=empty)
                    for piece in _words(part["refusal"]):
                        yield event("response.refusal.delta", **where, delta=piece)
                    yield event("response.refusal.done", **where, refusal=part["refusal"])
                else:
                    empty = {**part, "text": ""}
                    yield event("response.content_part.added", **where, part=empty)
                    for piece in _words(part["text"]):
                        yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
                    yield event(
                        "response.output_text.done", **where, text=part["text"], logprobs=[]
                    )
                yield event("response.content_part.done", **where, part=part)
        else:
            opened = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=opened)
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    final = _response_object(request, identity, output, turn)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield event(kind, response=final)


# -- Anthropic Messages ------------------------------------------------------------------


def _anthropic_stop(turn: Turn) -> str:
    if turn.refused or turn.stop == "content_filter":
        return "refusal"
    if turn.stop == "length":
        return "max_tokens"
    return "tool_use" if turn.tool_calls else "end_turn"


def _anthropic_usage(turn: Turn, *, output_tokens: int | None = None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": turn.input_tokens - turn.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": turn.cached_tokens,
        "output_tokens": turn.output_tokens if output_tokens is None else output_tokens,
    }
    if turn.reasoning_tokens:
        usage["output_tokens_details"] = {"thinking_tokens": turn.reasoning_tokens}
    return usage


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    """The content blocks of a reply: thinking (signed), text, then one `tool_use` per call."""
    blocks: list[dict[str, Any]] = []
    if turn.thinking:
        signature = base64.b64encode(secrets.token_bytes(48)).decode()
        blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": signature})
    if turn.words:
        blocks.append({"type": "text", "text": turn.words})
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id or f"toolu_01{_token(22)}",
            "name": call.name,
            "input": dict(call.args),
        }
        for call in turn.tool_calls
    )
    return blocks


def _anthropic_stop_fields(turn: Turn) -> dict[str, Any]:
    stop_reason = _anthropic_stop(turn)
    fields: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
    if stop_reason == "refusal":
        fields["stop_details"] = {"type": "refusal", "category": None, "explanation": None}
    return fields


def _anthropic_message(turn: Turn, request: Request) -> dict[str, Any]:
    """A Messages body (`type: "message"`)."""
    return {
        "id": f"msg_01{_token(22)}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": _anthropic_blocks(turn),
        **_anthropic_stop_fields(turn),
        "usage": _anthropic_usage(turn),
    }


def _anthropic_events(turn: Turn, request: Request) -> Iterator[dict[str, Any]]:
    """The events of a streamed Messages reply, `message_start` to `message_stop`."""
    started: dict[str, Any] = {
        "id": f"msg_01{_token(22)}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(turn, output_tokens=1),
    }
    yield {"type": "message_start", "message": started}
    yield {"type": "ping"}
    for index, block in enumerate(_anthropic_blocks(turn)):
        opened: dict[str, Any]
        deltas: list[dict[str, Any]]
        if block["type"] == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _words(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _words(block["text"])]
        else:
            opened = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments)]
        yield {"type": "content_block_start", "index": index, "content_block": opened}
        for delta in deltas:
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": _anthropic_stop_fields(turn),
        "usage": _anthropic_usage(turn),
    }
    yield {"type": "message_stop"}


# -- Ollama ------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _ollama_done(turn: Turn, request: Request, message: dict[str, Any]) -> dict[str, Any]:
    """The last object of an Ollama reply: `done: true` with the reason and the counts."""
    prompt_ns, eval_ns, load_ns = turn.input_tokens * 10**6, turn.output_tokens * 10**7, 10**6
    return {
        "model": request.model,
        "created_at": _now(),
        "message": message,
        "done": True,
        "done_reason": "length" if turn.stop == "length" else "stop",
        "total_duration": prompt_ns + eval_ns + load_ns,
        "load_duration": load_ns,
        "prompt_eval_count": turn.input_tokens,
        "prompt_eval_duration": prompt_ns,
        "eval_count": turn.output_tokens,
        "eval_duration": eval_ns,
    }


def _ollama_calls(turn: Turn) -> list[dict[str, Any]]:
    return [{"function": {"name": c.name, "arguments": dict(c.args)}} for c in turn.tool_calls]


def _ollama_reply(turn: Turn, request: Request) -> dict[str, Any]:
    """An Ollama chat reply in one object (`stream: false`)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.words}
    if turn.thinking:
        message["thinking"] = turn.thinking
    if turn.tool_calls:
        message["tool_calls"] = _ollama_calls(turn)
    return _ollama_done(turn, request, message)


def _ollama_lines(turn: Turn, request: Request) -> Iterator[dict[str, Any]]:
    """The objects of a streamed Ollama reply, one per line: thinking, text, the tool
    calls (whole, in one object), then the `done: true` object."""

    def part(**message: Any) -> dict[str, Any]:
        return {
            "model": request.model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
        }

    for piece in _words(turn.thinking):
        yield part(thinking=piece)
    for piece in _words(turn.words):
        yield part(content=piece)
    if turn.tool_calls:
        yield part(tool_calls=_ollama_calls(turn))
    yield _ollama_done(turn, request, {"role": "assistant", "content": ""})


def _error_body(provider: Provider, fail: Fail) -> dict[str, Any]:
    """The body of a failure in the provider's error shape."""
    if provider == "anthropic":
        default = "api_error" if fail.status >= 500 else "invalid_request_error"
        kind = fail.kind or ANTHROPIC_ERROR_TYPES.get(fail.status, default)
        return {
            "type": "error",
            "error": {"type": kind, "message": fail.message},
            "request_id": f"req_011{_token(21)}",
        }
    if provider == "ollama":
        return {"error": fail.message}
    kind = fail.kind or ("server_error" if fail.status >= 500 else "invalid_request_error")
    return {
        "error": {"message": fail.message, "type": kind, "param": fail.param, "code": fail.code}
    }


# -- the server --------------------------------------------------------------------------


class ProviderServer:
    """The server; use it as a context manager.

    Args:
        default: The reply when the queue is empty and there is no responder; a short
            text turn when not given.
        responder: Answers each request the queue does not, from its content; for calls
            that run concurrently or whose number is not known in advance.
        refuse_tools: Answer any request that carries tools or a tool choice with the
            provider's "does not support tools" 400 (`tools_unsupported`).
        refuse_schemas: Answer any request that carries a JSON-schema response format
            with the provider's 400 for it (`schema_unsupported`).
        strict_schemas: Check every schema an OpenAI request (Chat Completions or
            Responses) sends with `strict: true` against OpenAI's strict-mode rules
            (`strict_schema_violations`), and answer a violation with OpenAI's 400
            naming it.
        models: The model names Ollama's `GET /api/tags` lists.

    Attributes:
        default: The reply of last resort.
        responder: The reply chooser, if any.
        errors: Exceptions raised while choosing or rendering a reply (each was
            answered with a 500); empty when all went well.
    """

    def __init__(
        self,
        default: Reply | None = None,
        *,
        responder: Responder | None = None,
        refuse_tools: bool = False,
        refuse_schemas: bool = False,
        strict_schemas: bool = False,
        models: Sequence[str] = ("llama3.2:latest",),
    ) -> None:
        self.default: Reply = Turn(text="The default reply.") if default is None else default
        self.responder = responder
        self.refuse_tools = refuse_tools
        self.refuse_schemas = refuse_schemas
        self.strict_schemas = strict_schemas
        self.models = tuple(models)
        self.errors: list[BaseException] = []
        self._queue: deque[Reply] = deque()
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = _HTTPServer(self)
        # The serving loop looks for a shutdown this often: closing takes no longer.
        serve = partial(self._httpd.serve_forever, poll_interval=0.02)
        self._thread = threading.Thread(target=serve, daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """`ChatOpenAI`'s `base_url`, for Chat Completions and the Responses API alike."""
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        """`ChatAnthropic`'s `base_url` (its client adds `/v1/messages`)."""
        return self.url

    @property
    def ollama_url(self) -> str:
        """`ChatOllama`'s `base_url`."""
        return self.url

    @property
    def requests(self) -> list[Request]:
        """Every chat request received so far, in order of arrival."""
        with self._lock:
            return list(self._requests)

    def script(self, *replies: Reply) -> ProviderServer:
        """Queue replies for the next requests, in order.

        Args:
            *replies: Turns and failures.

        Returns:
            The server, so that calls chain.
        """
        with self._lock:
            self._queue.extend(replies)
        return self

    def _answer(self, request: Request) -> Reply:
        """Record a request and choose its reply (refusals, queue, responder, default)."""
        with self._lock:
            self._requests.append(request)
            refusal = self._refusal(request)
            if refusal is None and self._queue:
                return self._queue.popleft()
        if refusal is not None:
            return refusal
        if self.responder is not None:
            return self.responder(request)
        return self.default

    def _refusal(self, request: Request) -> Fail | None:
        if self.refuse_tools and request.has_tools:
            return tools_unsupported(request.provider, request.model)
        if self.refuse_schemas and request.has_schema:
            return schema_unsupported(request.provider)
        if self.strict_schemas:
            return _strict_failure(request)
        return None

    def _ollama_show(self, model: str) -> dict[str, Any]:
        """Ollama's `POST /api/show` answer; its capabilities follow `refuse_tools`."""
        capabilities = ["completion", "thinking"] + ([] if self.refuse_tools else ["tools"])
        return {
            "modelfile": f"FROM {model}\n",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            "capabilities": capabilities,
        }

    def _ollama_tags(self) -> dict[str, Any]:
        """Ollama's `GET /api/tags` answer: the models named at construction."""
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": _now(),
                    "size": 2_019_393_189,
                    "digest": secrets.token_hex(32),
                    "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
                }
                for name in self.models
            ]
        }

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: ProviderServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that closes its end mid-stream is not the server's fault.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") == "/api/tags":
            self._send_json(200, self.server.owner._ollama_tags())
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = None
        provider = PATHS.get(path)
        if path == "/api/show" and isinstance(body, dict):
            model = str(body.get("model") or body.get("name") or "")
            self._send_json(200, self.server.owner._ollama_show(model))
        elif provider is None:
            self._send_json(404, {"error": f"no route for {path}"})
        elif not isinstance(body, dict):
            self._send_json(400, _error_body(provider, Fail(400, "invalid JSON body")))
        else:
            self._reply(Request(provider, path, body))

    def _reply(self, request: Request) -> None:
        """Answer a chat request: choose and render its reply, then send it."""
        owner = self.server.owner
        events: list[dict[str, Any]] | None = None
        try:
            reply = owner._answer(request)
            if isinstance(reply, Fail):
                status, payload = reply.status, _error_body(request.provider, reply)
            elif request.stream:
                status, payload = 200, None
                events = list(_STREAM[request.provider](reply, request))
            else:
                status, payload = 200, _RENDER[request.provider](reply, request)
        except Exception as error:  # a bug in a responder or here: tell the test
            owner.errors.append(error)
            fail = Fail(500, f"provider server error: {error!r}")
            status, payload = 500, _error_body(request.provider, fail)
        if events is None:
            self._send_json(status, payload)
        else:
            self._stream(request.provider, events)

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, provider: Provider, events: list[dict[str, Any]]) -> None:
        """Send a reply's events as the provider streams them, in chunked encoding."""
        ndjson = provider == "ollama"
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if ndjson else "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            data = json.dumps(event)
            if ndjson:
                self._write_chunk(f"{data}\n")
            elif provider == "openai":
                self._write_chunk(f"data: {data}\n\n")
            else:
                self._write_chunk(f"event: {event['type']}\ndata: {data}\n\n")
        if provider == "openai":
            self._write_chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


_RENDER: dict[Provider, Callable[[Turn, Request], dict[str, Any]]] = {
    "openai": _chat_completion,
    "responses": _responses_body,
    "anthropic": _anthropic_message,
    "ollama": _ollama_reply,
}
_STREAM: dict[Provider, Callable[[Turn, Request], Iterator[dict[str, Any]]]] = {
    "openai": _chat_chunks,
    "responses": _responses_events,
    "anthropic": _anthropic_events,
    "ollama": _ollama_lines,
}
