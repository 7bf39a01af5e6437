"""Every loop on the real provider clients, against a loopback server speaking their wire.

``ChatOpenAI`` (Chat Completions and the Responses API), ``ChatAnthropic`` and
``ChatOllama`` talk to ``tests/support/provider_server.py``, which answers as each
provider does (its JSON, its stream, its errors, its cut replies and refusals). The
server's ``strict_schemas`` check refuses, in OpenAI's words, any schema sent with
``strict: true`` that OpenAI's strict mode would refuse. Where ``create_agent`` has the
behaviour (a permanent error is sent once), it is checked on the same server too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs import registry
from tests.support.provider_server import (
    Call,
    ProviderServer,
    Request,
    Turn,
    context_overflow,
    strict_schema_violations,
)
from tests.support.scripts import FAST_RETRY, FIRST_REQUESTS

CLIENTS = ("openai", "responses", "anthropic", "ollama")
LOOP_NAMES = sorted(LOOPS)
TOOL_LOOPS = sorted(registry.TOOL_LOOPS)
QUESTION = {"messages": [("user", "What is the capital of France?")]}
ANSWER = "So the final answer is: Paris."


def lookup(query: str) -> str:
    """Look a fact up."""
    return f"Paris is the capital of France ({query})."


def client(kind: str, server: ProviderServer) -> BaseChatModel:
    """The real client of one provider, pointed at the loopback server (client retries
    off: the loops' retry policy decides what is sent again)."""
    if kind in ("openai", "responses"):
        return ChatOpenAI(
            model="gpt-test",
            base_url=server.openai_url,
            api_key="sk-test",
            max_retries=0,
            use_responses_api=kind == "responses",
        )
    if kind == "anthropic":
        return ChatAnthropic(
            model_name="claude-test",
            base_url=server.anthropic_url,
            api_key="sk-test",
            max_retries=0,
        )
    return ChatOllama(model="llama3.2", base_url=server.ollama_url)


def loop_on(name: str, model: BaseChatModel) -> Any:
    """A loop in auto mode, with the tool loops' one tool."""
    tools = [lookup] if name in TOOL_LOOPS else []
    return build_loop(name, model, tools, retry_policy=FAST_RETRY)


# --- a model that answers every request in its form ------------------------------------


def instance(schema: Any, defs: dict[str, Any]) -> Any:
    """A small valid instance of a JSON schema: the one a model that wants to finish
    would write (a final answer, a satisfactory verdict, a verified draft)."""
    if not isinstance(schema, dict):
        return "Paris"
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        real = [o for o in options if o.get("type") != "null"] or options
        final = [o for o in real if "final_answer" in json.dumps(o.get("properties", {}))]
        return instance((final or real)[0], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {key: instance(value, defs) for key, value in properties.items()}
    if kind == "array":
        return [instance(schema.get("items", {}), defs)] * max(1, schema.get("minItems", 0))
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return max(7, schema.get("minimum", 0))
    return "Paris"


def forced_tool(request: Request) -> tuple[str, dict[str, Any]] | None:
    """The one tool a structured-output request makes the model call (its name and
    parameters), or None: a request offering the loop's own tools, or none."""
    tools = request.body.get("tools") or []
    if len(tools) != 1:
        return None
    tool = tools[0]
    spec = tool.get("function", tool)
    name = spec.get("name", "")
    if name == "lookup":
        return None
    return name, spec.get("parameters") or spec.get("input_schema") or {}


def finisher(request: Request) -> Turn:
    """A reply that lets any loop finish: the schema's instance when one is asked for, the
    forced tool called with one, else a final answer in words every grammar reads."""
    schema = request.schema
    if schema is not None:
        return Turn(text=json.dumps(instance(schema, schema.get("$defs", {}))))
    forced = forced_tool(request)
    if forced is not None:
        name, parameters = forced
        return Turn(tool_calls=[Call(name, instance(parameters, parameters.get("$defs", {})))])
    return Turn(text=ANSWER)


@pytest.fixture
def served() -> Iterator[Callable[..., ProviderServer]]:
    """Start a provider server with the given options; stopped after the test."""
    started: list[ProviderServer] = []

    def start(**options: Any) -> ProviderServer:
        server = ProviderServer(**options).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


# --- the cases -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_every_loop_finishes_on_every_provider_with_strict_schemas(served, loop, kind):
    server = served(responder=finisher, strict_schemas=True)
    out = loop_on(loop, client(kind, server)).invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert not server.errors
    for request in server.requests:
        for schema in strict_schemas_sent(request):
            assert strict_schema_violations(schema) == []
    if kind in ("openai", "responses"):
        # Every schema a loop sends goes strict where the provider enforces schemas.
        sent = [r for r in server.requests if r.has_schema or forced_tool(r)]
        assert all(list(strict_schemas_sent(r)) for r in sent), "a schema went without strict"


def strict_schemas_sent(request: Request) -> Iterator[dict[str, Any]]:
    """The schemas of an OpenAI request sent with ``strict: true`` (a response format's or
    a function tool's)."""
    body = request.body
    formats = [body.get("response_format") or {}, (body.get("text") or {}).get("format") or {}]
    for fmt in formats:
        spec = fmt.get("json_schema", fmt)
        if spec.get("strict") and isinstance(spec.get("schema"), dict):
            yield spec["schema"]
    for tool in body.get("tools") or []:
        spec = tool.get("function", tool)
        if spec.get("strict") and isinstance(spec.get("parameters"), dict):
            yield spec["parameters"]


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_a_reply_cut_at_the_cap_is_never_a_completed_answer(served, loop, kind):
    server = served(default=Turn(text="The capital of France is Par", stop="length"))
    out = loop_on(loop, client(kind, server)).invoke(QUESTION)
    assert out["status"] != "completed", out["answer"]
    assert out["answer"] != "Par"


WORDS = "I can't help with that."


@pytest.mark.parametrize("kind", ("openai", "responses", "anthropic"))
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_a_refusal_ends_the_run_with_the_models_words(served, loop, kind):
    server = served(default=Turn(refusal=WORDS, stop="refusal"))
    out = loop_on(loop, client(kind, server)).invoke(QUESTION)
    assert (out["status"], out["error"], out["answer"]) == (
        "error",
        f"the model refused: {WORDS}",
        "",
    )
    # Each request of the first step is sent once (LATS sends its candidates' at once).
    assert len(server.requests) == FIRST_REQUESTS.get(loop, 1)


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_a_context_too_long_is_sent_once_and_named(served, loop, kind):
    server = served(default=context_overflow(kind))
    out = loop_on(loop, client(kind, server)).invoke(QUESTION)
    assert out["status"] == "error"
    sent = FIRST_REQUESTS.get(loop, 1)
    assert len(server.requests) == sent == out["llm_calls"], [r.path for r in server.requests]
    assert "400" in out["error"] or "context" in out["error"].lower()


@pytest.mark.parametrize("kind", CLIENTS)
def test_create_agent_sends_a_context_too_long_once_too(served, kind):
    server = served(default=context_overflow(kind))
    with pytest.raises(Exception):  # noqa: B017 - each client raises its own class
        create_agent(client(kind, server), [lookup]).invoke(QUESTION)
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", CLIENTS)
def test_lats_samples_its_candidates_at_its_temperature_on_every_client(served, kind):
    """The candidates' temperature reaches each provider in its own wire format (Ollama's
    in ``options``, where its client takes it), and the judges' requests go without it."""
    server = served(responder=finisher)
    model = client(kind, server)
    out = build_loop("lats", model, [lookup], temperature=0.7, retry_policy=FAST_RETRY).invoke(
        QUESTION
    )
    assert out["status"] == "completed", out.get("error")

    def temperature(request: Any) -> Any:
        body = request.body
        return (
            (body.get("options") or {}).get("temperature")
            if kind == "ollama"
            else (body.get("temperature"))
        )

    sampled = [temperature(r) for r in server.requests[: FIRST_REQUESTS["lats"]]]
    assert sampled == [0.7] * FIRST_REQUESTS["lats"]
    judged = [temperature(r) for r in server.requests[FIRST_REQUESTS["lats"] :]]
    assert judged and 0.7 not in judged


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_every_tool_loop_steps_down_when_the_server_refuses_tools(served, loop, kind):
    server = served(responder=finisher, refuse_tools=True, strict_schemas=True)
    out = loop_on(loop, client(kind, server)).invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert out["tool_mode"] in ("json", "text")
    assert out["llm_calls"] == len(server.requests)


def streamed_then_kept(graph: Any, subgraphs: bool) -> tuple[dict[str, str], list[Any]]:
    """The text that streamed under each message id (``stream_mode="messages"``), and the
    messages of the thread when the run ended."""
    streamed: dict[str, str] = {}
    final: dict[str, Any] = {}
    for part in graph.stream(QUESTION, stream_mode=["messages", "values"], subgraphs=subgraphs):
        mode, data = part[-2], part[-1]
        if (mode == "values" and len(part) == 2) or (mode == "values" and not part[0]):
            final = data
        elif mode == "messages":
            chunk, _ = data
            if chunk.id:
                streamed[chunk.id] = streamed.get(chunk.id, "") + str(chunk.text)
    return streamed, list(final.get("messages") or [])


@pytest.mark.parametrize("subgraphs", [False, True], ids=["plain", "subgraphs"])
@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_what_streams_on_a_real_client_is_what_the_thread_keeps(served, loop, kind, subgraphs):
    server = served(responder=finisher, strict_schemas=True)
    streamed, kept = streamed_then_kept(loop_on(loop, client(kind, server)), subgraphs)
    assert streamed, "nothing streamed"
    for text in streamed.values():
        assert not text.lstrip().startswith("{"), text  # no raw JSON in the chat view
    if kind != "responses":
        assert set(streamed) <= {message.id for message in kept}
        return
    # ChatOpenAI on the Responses API streams a reply's text under LangChain's run id and
    # names the reply after the provider's response (langchain-openai's chunking, the
    # same under create_agent): each text that streamed holds a kept message's text (the
    # loop may keep only the answer of a reply, as Self-Ask keeps "Paris." of "So the
    # final answer is: Paris.").
    kept_texts = [str(message.text) for message in kept if str(message.text)]
    for text in filter(None, streamed.values()):
        assert any(shown in text for shown in kept_texts), text
