"""The provider server (tests/support/provider_server.py) speaks each wire format as the
real clients expect.

Each test drives a real client (``ChatOpenAI`` on Chat Completions and on the Responses
API, ``ChatAnthropic``, ``ChatOllama``) against the loopback server and checks what the
client makes of the reply: text and token usage (cached tokens included), tool calls, a
reply cut at the token cap, a refusal, reasoning, errors in the provider's own shape and
exception class, structured output, and the server-wide refusals of tools, of response
schemas and of schemas that break OpenAI's strict mode. The last tests check the strict
mode rules on their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

import anthropic
import ollama
import openai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from loopgraphs.models import detect_server
from tests.support.provider_server import (
    Call,
    Fail,
    Provider,
    ProviderServer,
    Request,
    Turn,
    context_overflow,
    schema_unsupported,
    strict_schema_violations,
    tools_unsupported,
)

PROVIDERS: tuple[Provider, ...] = ("openai", "responses", "anthropic", "ollama")
# Providers whose wire format reports prompt tokens read from a cache.
CACHING = {"openai", "responses", "anthropic"}


def chat_model(server: ProviderServer, provider: Provider, **settings: Any) -> BaseChatModel:
    """The real client of `provider`, pointed at the server (no retries)."""
    if provider in ("openai", "responses"):
        return ChatOpenAI(
            model="gpt-test",
            base_url=server.openai_url,
            api_key=SecretStr("test"),
            max_retries=0,
            use_responses_api=provider == "responses",
            **{"stream_usage": True, **settings},
        )
    if provider == "anthropic":
        return ChatAnthropic(
            model_name="claude-test",
            base_url=server.anthropic_url,
            api_key=SecretStr("test"),
            max_retries=0,
            **settings,
        )
    return ChatOllama(model="llama3.2", base_url=server.ollama_url, **settings)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def collect(chunks: Iterable[Any]) -> tuple[AIMessageChunk, int]:
    """The streamed chunks added up, and how many of them carried text."""
    total: AIMessageChunk | None = None
    texts = 0
    for chunk in chunks:
        assert isinstance(chunk, AIMessageChunk)
        texts += bool(chunk.text)
        total = chunk if total is None else total + chunk
    assert total is not None
    return total, texts


async def acollect(model: Runnable[Any, Any], prompt: str) -> tuple[AIMessageChunk, int]:
    return collect([chunk async for chunk in model.astream(prompt)])


def reply(model: Runnable[Any, Any], prompt: str, mode: str) -> tuple[AIMessage, int]:
    """Ask in one of four ways; the reply and how many streamed chunks carried text."""
    if mode.endswith("stream"):
        if mode == "stream":
            return collect(model.stream(prompt))
        return asyncio.run(acollect(model, prompt))
    message = model.invoke(prompt) if mode == "invoke" else asyncio.run(model.ainvoke(prompt))
    assert isinstance(message, AIMessage)
    return message, 0


def stop_of(provider: Provider, message: AIMessage) -> object:
    """The provider's own words for why a reply ended, as its client reports them."""
    metadata = message.response_metadata
    if provider == "openai":
        return metadata["finish_reason"]
    if provider == "responses":
        return metadata["status"], (metadata.get("incomplete_details") or {}).get("reason")
    if provider == "anthropic":
        return metadata["stop_reason"]
    return metadata["done_reason"]


# -- replies -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["invoke", "stream", "ainvoke", "astream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_text_reply_arrives_with_its_token_usage(
    server: ProviderServer, provider: Provider, mode: str
) -> None:
    cached = 8 if provider in CACHING else 0
    server.script(
        Turn(text="The answer is five.", input_tokens=20, output_tokens=6, cached_tokens=cached)
    )
    message, text_chunks = reply(chat_model(server, provider), "What is 2 + 3?", mode)

    assert message.text == "The answer is five."
    usage = message.usage_metadata
    assert usage is not None
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (20, 6, 26)
    if provider in CACHING:
        assert usage.get("input_token_details", {}).get("cache_read") == 8
    if mode.endswith("stream"):
        assert text_chunks >= 4, "text streams word by word"
    (request,) = server.requests
    assert request.provider == provider
    # ChatOllama asks for a stream even when invoked, and adds the pieces up itself.
    assert request.stream is (provider == "ollama" or mode.endswith("stream"))
    assert request.last_user_text == "What is 2 + 3?"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def lookup(query: str) -> str:
    """Look a word up."""
    return query


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_calls_arrive_with_parsed_arguments(
    server: ProviderServer, provider: Provider, mode: str
) -> None:
    server.script(
        Turn(tool_calls=[Call("add", {"a": 2, "b": 3}), Call("lookup", {"query": "x"}, id="c7")])
    )
    model = chat_model(server, provider).bind_tools([add, lookup])
    message, _ = reply(model, "What is 2 + 3?", mode)

    calls = [(call["name"], call["args"]) for call in message.tool_calls]
    assert calls == [("add", {"a": 2, "b": 3}), ("lookup", {"query": "x"})]
    assert all(call["id"] for call in message.tool_calls)
    if provider != "ollama":  # Ollama's wire carries no call ids; its client makes its own
        assert message.tool_calls[1]["id"] == "c7"
        prefix = "toolu_" if provider == "anthropic" else "call_"
        assert str(message.tool_calls[0]["id"]).startswith(prefix)
    assert (
        stop_of(provider, message)
        == {
            "openai": "tool_calls",
            "responses": ("completed", None),
            "anthropic": "tool_use",
            "ollama": "stop",
        }[provider]
    )
    assert server.requests[0].has_tools


# How each provider says why a reply ended, for each `Turn.stop`.
STOPS: dict[str, dict[Provider, object]] = {
    "stop": {
        "openai": "stop",
        "responses": ("completed", None),
        "anthropic": "end_turn",
        "ollama": "stop",
    },
    "length": {
        "openai": "length",
        "responses": ("incomplete", "max_output_tokens"),
        "anthropic": "max_tokens",
        "ollama": "length",
    },
    "content_filter": {
        "openai": "content_filter",
        "responses": ("incomplete", "content_filter"),
        "anthropic": "refusal",
        "ollama": "stop",
    },
    "refusal": {
        "openai": "stop",
        "responses": ("completed", None),
        "anthropic": "refusal",
        "ollama": "stop",
    },
}


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_stop_is_said_in_the_providers_words(
    server: ProviderServer, provider: Provider, stop: Any, mode: str
) -> None:
    server.script(Turn(text="It was a dark and stormy", stop=stop))
    message, _ = reply(chat_model(server, provider), "Tell me a story.", mode)
    assert stop_of(provider, message) == STOPS[stop][provider]


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refusal_reaches_the_client_where_it_looks_for_one(
    server: ProviderServer, provider: Provider, mode: str
) -> None:
    words = "I can't help with that."
    server.script(Turn(refusal=words))
    message, _ = reply(chat_model(server, provider), "Do something bad.", mode)

    refusals = [block for block in message.content_blocks if block["type"] == "refusal"]
    if provider == "openai" and mode == "stream":
        # ChatOpenAI drops the `refusal` deltas of a Chat Completions stream (it reads
        # them only through the structured-output stream); the raw SDK sees them below.
        assert message.text == ""
    elif provider == "openai":
        assert message.additional_kwargs["refusal"] == words
        assert refusals == [{"type": "refusal", "refusal": words}]
        assert message.text == ""
    elif provider == "responses":
        assert [block.get("refusal") for block in refusals] == [words]
    elif provider == "anthropic":
        assert message.response_metadata["stop_reason"] == "refusal"
        assert message.text == words
        assert len(refusals) == 1
    else:
        assert message.text == words


@pytest.mark.parametrize("asked", [True, False])
def test_a_chat_completions_stream_ends_with_usage_only_when_asked(
    server: ProviderServer, asked: bool
) -> None:
    server.script(Turn(text="Five.", input_tokens=20, output_tokens=2))
    model = chat_model(server, "openai", stream_usage=asked)
    message, _ = collect(model.stream("What is 2 + 3?"))

    assert server.requests[0].body.get("stream_options") == (
        {"include_usage": True} if asked else None
    )
    usage = message.usage_metadata
    assert (usage["input_tokens"] if usage else None) == (20 if asked else None)


def test_a_streamed_chat_completions_refusal_comes_in_refusal_deltas(
    server: ProviderServer,
) -> None:
    server.script(Turn(refusal="I can't help with that."))
    client = openai.OpenAI(base_url=server.openai_url, api_key="test", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    pieces = [chunk.choices[0].delta.refusal for chunk in stream if chunk.choices]
    assert "".join(piece or "" for piece in pieces) == "I can't help with that."
    assert sum(bool(piece) for piece in pieces) > 1


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_anthropic_thinking_comes_as_signed_thinking_blocks(
    server: ProviderServer, mode: str
) -> None:
    server.script(Turn(text="Five.", thinking="Two plus three is five.", reasoning_tokens=4))
    model = chat_model(
        server, "anthropic", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024}
    )
    message, _ = reply(model, "What is 2 + 3?", mode)

    assert isinstance(message.content, list)
    blocks = [block for block in message.content if isinstance(block, dict)]
    (thinking,) = [block for block in blocks if block["type"] == "thinking"]
    assert thinking["thinking"] == "Two plus three is five."
    assert thinking["signature"]
    assert message.text == "Five."
    assert message.usage_metadata is not None
    assert message.usage_metadata.get("output_token_details", {}).get("reasoning") == 4
    assert server.requests[0].body["thinking"]["type"] == "enabled"


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_a_responses_reasoning_summary_becomes_a_reasoning_block(
    server: ProviderServer, mode: str
) -> None:
    server.script(Turn(text="Five.", thinking="Two plus three is five.", reasoning_tokens=4))
    model = chat_model(server, "responses", reasoning={"effort": "low", "summary": "auto"})
    message, _ = reply(model, "What is 2 + 3?", mode)

    (reasoning,) = [block for block in message.content_blocks if block["type"] == "reasoning"]
    assert reasoning.get("reasoning") == "Two plus three is five."
    assert message.text == "Five."
    assert message.usage_metadata is not None
    assert message.usage_metadata.get("output_token_details", {}).get("reasoning") == 4


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_thinking_is_the_clients_reasoning_content(
    server: ProviderServer, stream: bool
) -> None:
    server.script(Turn(text="Five.", thinking="Two plus three is five."))
    message = chat_model(server, "ollama", reasoning=True).invoke("What is 2 + 3?", stream=stream)

    assert message.additional_kwargs["reasoning_content"] == "Two plus three is five."
    assert message.text == "Five."
    assert server.requests[0].body["think"] is True
    assert server.requests[0].stream is stream


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_context_overflow_raises_the_clients_own_error(
    server: ProviderServer, provider: Provider, mode: str
) -> None:
    server.script(context_overflow(provider))
    with pytest.raises(Exception) as caught:
        reply(chat_model(server, provider), "A very long prompt.", mode)

    error = caught.value
    if provider in ("openai", "responses"):
        assert isinstance(error, openai.BadRequestError)
        assert error.code == "context_length_exceeded"
    elif provider == "anthropic":
        assert isinstance(error, anthropic.BadRequestError)
        assert isinstance(error, ContextOverflowError)
        assert "prompt is too long" in error.message
    else:
        assert isinstance(error, ollama.ResponseError)
        assert error.status_code == 400
        assert "exceeds the available context size" in error.error


# Each client's exception for a status, and the type Anthropic's body names.
STATUS_ERRORS: dict[
    int, tuple[type[openai.APIStatusError], type[anthropic.APIStatusError], str]
] = {
    401: (openai.AuthenticationError, anthropic.AuthenticationError, "authentication_error"),
    404: (openai.NotFoundError, anthropic.NotFoundError, "not_found_error"),
    429: (openai.RateLimitError, anthropic.RateLimitError, "rate_limit_error"),
    500: (openai.InternalServerError, anthropic.InternalServerError, "api_error"),
    529: (openai.InternalServerError, anthropic.OverloadedError, "overloaded_error"),
}


@pytest.mark.parametrize("status", list(STATUS_ERRORS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_status_raises_the_clients_class_for_it(
    server: ProviderServer, provider: Provider, status: int
) -> None:
    server.script(Fail(status, "Something went wrong.", code="some_code"))
    with pytest.raises(Exception) as caught:
        chat_model(server, provider).invoke("Hi")

    openai_class, anthropic_class, anthropic_type = STATUS_ERRORS[status]
    error = caught.value
    if provider in ("openai", "responses"):
        assert isinstance(error, openai_class)
        assert error.code == "some_code"
        assert error.body == {
            "message": "Something went wrong.",
            "type": "server_error" if status >= 500 else "invalid_request_error",
            "param": None,
            "code": "some_code",
        }
    elif provider == "anthropic":
        assert isinstance(error, anthropic_class)
        assert isinstance(error.body, dict)
        assert error.body["error"] == {"type": anthropic_type, "message": "Something went wrong."}
    else:
        assert isinstance(error, ollama.ResponseError)
        assert (error.status_code, error.error) == (status, "Something went wrong.")


# What each provider's "does not support tools" says, and the client error it raises.
NO_TOOLS: dict[Provider, tuple[type[Exception], str]] = {
    "openai": (openai.BadRequestError, '"auto" tool choice requires --enable-auto-tool-choice'),
    "responses": (openai.BadRequestError, "tools is not supported in this model"),
    "anthropic": (
        anthropic.BadRequestError,
        "registry.ollama.ai/library/claude-test:latest does not support tools",
    ),
    "ollama": (
        ollama.ResponseError,
        "registry.ollama.ai/library/llama3.2:latest does not support tools",
    ),
}


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refuse_tools_answers_a_request_with_tools_with_the_providers_400(
    provider: Provider, mode: str
) -> None:
    with ProviderServer(refuse_tools=True) as server:
        model = chat_model(server, provider)
        with pytest.raises(Exception) as caught:
            reply(model.bind_tools([add]), "What is 2 + 3?", mode)
        assert reply(model, "Hi", mode)[0].text == "The default reply."

    error_class, words = NO_TOOLS[provider]
    assert isinstance(caught.value, error_class)
    assert words in str(caught.value)
    assert getattr(caught.value, "status_code", None) == 400
    assert [request.has_tools for request in server.requests] == [True, False]


class Answer(BaseModel):
    """A number with its unit."""

    value: int
    unit: str


# What each provider says when it refuses a response schema.
NO_SCHEMAS: dict[Provider, tuple[type[Exception], str]] = {
    "openai": (openai.BadRequestError, "'response_format' of type 'json_schema' is not supported"),
    "responses": (openai.BadRequestError, "'text.format' of type 'json_schema' is not supported"),
    "anthropic": (
        anthropic.BadRequestError,
        "output_config.format: Extra inputs are not permitted",
    ),
    "ollama": (ollama.ResponseError, "invalid format"),
}


@pytest.mark.filterwarnings("ignore:This model does not support OpenAI's structured output")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refuse_schemas_answers_a_request_with_a_schema_with_the_providers_400(
    provider: Provider,
) -> None:
    with ProviderServer(refuse_schemas=True) as server:
        model = chat_model(server, provider)
        with pytest.raises(Exception) as caught:
            model.with_structured_output(Answer, method="json_schema").invoke("Five apples?")
        assert model.invoke("Hi").text == "The default reply."

    error_class, words = NO_SCHEMAS[provider]
    assert isinstance(caught.value, error_class)
    assert words in str(caught.value)
    assert [request.has_schema for request in server.requests] == [True, False]


@pytest.mark.filterwarnings("ignore:This model does not support OpenAI's structured output")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_responder_can_refuse_in_the_providers_words(provider: Provider) -> None:
    refusals: list[Fail] = []

    def refuse_tools_and_schemas(request: Request) -> Turn | Fail:
        if request.has_tools:
            refusals.append(tools_unsupported(request.provider, request.model))
        elif request.has_schema:
            refusals.append(schema_unsupported(request.provider))
        else:
            return Turn(text="Plain text is fine.")
        return refusals[-1]

    with ProviderServer(responder=refuse_tools_and_schemas) as server:
        model = chat_model(server, provider)
        structured = model.with_structured_output(Answer, method="json_schema")
        for refused in (model.bind_tools([add]), structured):
            with pytest.raises(Exception) as caught:
                refused.invoke("Hi")
            assert refusals[-1].message in str(caught.value)
        assert model.invoke("Hi").text == "Plain text is fine."
    assert len(refusals) == 2


def test_a_responder_that_fails_answers_500_and_is_recorded() -> None:
    def broken(request: Request) -> Turn:
        raise RuntimeError("no answer for " + request.last_user_text)

    with (
        ProviderServer(responder=broken) as server,
        pytest.raises(openai.InternalServerError, match="no answer for Hi"),
    ):
        chat_model(server, "openai").invoke("Hi")
    assert [type(error) for error in server.errors] == [RuntimeError]


# -- structured output -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_output_round_trips_through_a_json_schema(provider: Provider, mode: str) -> None:
    with ProviderServer(strict_schemas=True) as server:
        server.script(Turn(text='{"value": 5, "unit": "apples"}'))
        structured = chat_model(server, provider).with_structured_output(
            Answer, method="json_schema"
        )
        if mode == "invoke":
            answer = structured.invoke("How many apples?")
        else:
            answer = list(structured.stream("How many apples?"))[-1]

    assert answer == Answer(value=5, unit="apples")
    (request,) = server.requests
    assert request.schema is not None
    assert set(request.schema["properties"]) == {"value", "unit"}


class Measure(BaseModel):
    """A number with a unit that has a default, which strict mode does not allow."""

    value: int
    unit: str = "apples"


class Tally(BaseModel):
    """Counts by name: an object whose additional properties are open."""

    counts: dict[str, int]


def strict_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A schema `ChatOpenAI` sends as it is, with `strict: true`."""
    return {"name": name, "strict": True, "schema": schema}


# Schemas OpenAI's strict mode refuses, and what its 400 names.
NOT_STRICT: dict[str, tuple[Any, str]] = {
    "default": (Measure, "In context=('properties', 'unit'), 'default' is not permitted."),
    "open-object": (
        Tally,
        "In context=('properties', 'counts'), 'additionalProperties' is required to be "
        "supplied and to be false.",
    ),
    "optional-key": (
        strict_format(
            "Answer",
            {
                "type": "object",
                "properties": {"value": {"type": "integer"}, "unit": {"type": "string"}},
                "required": ["value"],
                "additionalProperties": False,
            },
        ),
        "'required' is required to be supplied and to be an array including every key in "
        "properties. Missing 'unit'.",
    ),
    "root-any-of": (
        strict_format("Either", {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        "'anyOf' is not permitted at the root",
    ),
}


@pytest.mark.filterwarnings("ignore:Invalid schema for OpenAI's structured output")
@pytest.mark.parametrize("case", list(NOT_STRICT))
@pytest.mark.parametrize("provider", ["openai", "responses"])
def test_strict_schemas_refuses_a_schema_strict_mode_does_not_allow(
    provider: Provider, case: str
) -> None:
    schema, words = NOT_STRICT[case]
    with ProviderServer(strict_schemas=True) as server:
        structured = chat_model(server, provider).with_structured_output(
            schema, method="json_schema", strict=True
        )
        with pytest.raises(openai.BadRequestError) as caught:
            structured.invoke("How many apples?")

    assert words in caught.value.message
    assert caught.value.message.startswith("Error code: 400 - Invalid schema for response_format")
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["param"] in ("response_format", "text.format.schema")


@pytest.mark.parametrize("provider", ["openai", "responses"])
def test_strict_schemas_accepts_strict_tools_and_checks_them(provider: Provider) -> None:
    loose_tool = {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "minLength": 1}},
                "required": ["query"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    with ProviderServer(strict_schemas=True) as server:
        server.script(Turn(tool_calls=[Call("add", {"a": 2, "b": 3})]))
        model = chat_model(server, provider)
        message = model.bind_tools([add], strict=True).invoke("What is 2 + 3?")
        assert isinstance(message, AIMessage)
        with pytest.raises(openai.BadRequestError) as caught:
            model.bind_tools([loose_tool]).invoke("Look up x.")

    assert message.tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert "Invalid schema for function 'lookup'" in caught.value.message
    assert "In context=('properties', 'query'), 'minLength' is not permitted." in str(caught.value)


# -- what the server records and answers -------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_requests_read_the_same_in_every_format(server: ProviderServer, provider: Provider) -> None:
    conversation = [
        SystemMessage("Be brief."),
        HumanMessage("What is 2 + 3?"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1"}]),
        ToolMessage("5", tool_call_id="call_1"),
    ]
    chat_model(server, provider).bind_tools([add]).invoke(conversation)

    (request,) = server.requests
    spoken = [(role, text) for role, text in request.messages if role != "assistant"]
    assert spoken == [("system", "Be brief."), ("user", "What is 2 + 3?"), ("tool", "5")]
    assert request.last_user_text == "What is 2 + 3?"
    assert "Be brief." in request.text
    assert request.has_tools
    assert not request.has_schema


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_responder_answers_concurrent_requests_from_their_content(provider: Provider) -> None:
    def echo(request: Request) -> Turn:
        return Turn(text=f"You said: {request.last_user_text}")

    questions = [f"question {n}" for n in range(6)]
    prompts: list[LanguageModelInput] = list(questions)
    with ProviderServer(responder=echo) as server:
        answers = chat_model(server, provider).batch(prompts, config={"max_concurrency": 6})

    assert [answer.text for answer in answers] == [f"You said: {q}" for q in questions]
    assert sorted(request.last_user_text for request in server.requests) == questions


def test_scripted_replies_come_in_order_then_the_default(server: ProviderServer) -> None:
    server.script(Turn(text="one"), Turn(text="two"))
    model = chat_model(server, "anthropic")
    assert [model.invoke("Hi").text for _ in range(3)] == ["one", "two", "The default reply."]


def test_ollama_lists_its_models_and_says_what_they_can_do() -> None:
    with ProviderServer(models=["llama3.2:latest"]) as server:
        chat_model(server, "ollama", validate_model_on_init=True)
        with pytest.raises(ValueError, match="not found in Ollama"):
            ChatOllama(model="qwen3", base_url=server.ollama_url, validate_model_on_init=True)
        show = ollama.Client(host=server.ollama_url).show("llama3.2")
        info = detect_server(server.openai_url, "llama3.2")
    with ProviderServer(refuse_tools=True) as server:
        without_tools = detect_server(server.openai_url, "llama3.2")

    assert "tools" in (show.capabilities or [])
    assert (info.kind, info.profile.get("tool_calling")) == ("ollama", True)
    assert (without_tools.kind, without_tools.profile.get("tool_calling")) == ("ollama", False)


# -- OpenAI's strict-mode rules ----------------------------------------------------------


def closed(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An object schema that strict mode accepts."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **more,
    }


def test_a_compliant_schema_has_no_violations() -> None:
    item = closed({"name": {"type": "string", "pattern": "^[a-z]+$", "format": "email"}})
    schema = closed(
        {
            "count": {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 1},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Or null."},
            "kind": {"enum": ["a", "b"], "title": "Kind"},
            "fixed": {"const": 1},
            "items": {
                "type": "array",
                "items": {"$ref": "#/$defs/Item"},
                "minItems": 1,
                "maxItems": 3,
            },
            "nested": closed({"flag": {"type": "boolean"}}),
        },
        **{"$defs": {"Item": item}, "definitions": {"Other": closed({})}},
    )
    assert strict_schema_violations(schema) == []
    assert (
        strict_schema_violations(Answer.model_json_schema() | {"additionalProperties": False}) == []
    )


@pytest.mark.parametrize(
    "keyword",
    [
        "default",
        "minLength",
        "maxLength",
        "allOf",
        "oneOf",
        "not",
        "patternProperties",
        "uniqueItems",
    ],
)
def test_an_unsupported_keyword_is_refused_where_it_stands(keyword: str) -> None:
    schema = closed({"tags": {"type": "array", "items": {"type": "string", keyword: 1}}})
    assert strict_schema_violations(schema) == [
        f"In context=('properties', 'tags', 'items'), '{keyword}' is not permitted."
    ]


def test_every_object_must_be_closed_and_require_all_its_keys() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "inner": {"type": "object", "properties": {"b": {"type": "integer"}}},
        },
        "required": ["a", "inner", "ghost"],
        "additionalProperties": False,
        "$defs": {"Open": {"type": "object", "additionalProperties": True}},
    }
    assert strict_schema_violations(schema) == [
        "In context=(), Extra required key 'ghost' supplied.",
        "In context=('properties', 'inner'), 'additionalProperties' is required to be "
        "supplied and to be false.",
        "In context=('properties', 'inner'), 'required' is required to be supplied and to be "
        "an array including every key in properties. Missing 'b'.",
        "In context=('$defs', 'Open'), 'additionalProperties' is required to be supplied and "
        "to be false.",
    ]


@pytest.mark.parametrize(
    ("schema", "first"),
    [
        ({"type": "array", "items": {"type": "string"}}, "got 'type: \"array\"'"),
        ({"anyOf": [closed({}), {"type": "string"}]}, "'anyOf' is not permitted at the root"),
        ("not a schema", "got a non-object"),
    ],
    ids=["array", "any-of", "string"],
)
def test_the_root_must_be_an_object(schema: object, first: str) -> None:
    violations = strict_schema_violations(schema)
    assert violations
    assert first in violations[0]


def test_the_switches_answer_before_the_queue_and_leave_it_untouched() -> None:
    with ProviderServer(refuse_tools=True) as server:
        server.script(Turn(text="kept"))
        model = chat_model(server, "ollama")
        with pytest.raises(ollama.ResponseError):
            model.bind_tools([add]).invoke("Hi")
        assert model.invoke("Hi").text == "kept"
