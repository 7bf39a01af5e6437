"""Bounded calls and profile detection for servers on this machine.

A loopback stand-in (``tests/support/fault_server.py``) plays llama.cpp's server (``GET /props``,
``GET /v1/models``), Ollama (``POST /api/show``) and a server that says nothing about
itself (vLLM's OpenAI API); the real embedded llama.cpp server checks what the stand-in
assumes.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from loopgraphs import create_react_graph
from loopgraphs.models import (
    DEFAULT_LOCAL_MAX_TOKENS,
    LLAMACPP_SAMPLING,
    Capabilities,
    LocalServer,
    capabilities,
    detect_server,
    load_model,
    local_request_timeout,
)
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.toolkits import calculator
from tests.support.fault_server import FaultServer, Reply
from tests.support.local_server import LOCAL_TEST_TIMEOUT_SECONDS

SMOLLM2_PROPS: dict[str, Any] = {
    "default_generation_settings": {"n_ctx": 8192, "params": {"repeat_penalty": 1.0}},
    "chat_template_caps": {"supports_tool_calls": False, "supports_tools": False},
    "model_alias": "smollm2",
}
TOOL_TEMPLATE_PROPS: dict[str, Any] = {
    "default_generation_settings": {"n_ctx": 32768},
    "chat_template_caps": {"supports_tool_calls": True, "supports_tools": True},
}
LLAMACPP_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [{"id": "qwen", "object": "model", "meta": {"size": 2_000_000_000}}],
}
ANSWER_JSON = '{"thought": "done", "action": "final_answer", "action_input": "5"}'


class Answer(BaseModel):
    answer: str


@pytest.fixture(autouse=True)
def no_cap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGRAPHS_MAX_TOKENS", raising=False)
    monkeypatch.delenv("LOOPGRAPHS_API_KEY", raising=False)


@pytest.fixture
def llamacpp() -> Iterator[FaultServer]:
    """A stand-in llama.cpp server whose model's template cannot call tools."""
    with FaultServer(
        default=Reply(content=ANSWER_JSON), props=SMOLLM2_PROPS, models=LLAMACPP_MODELS
    ) as server:
        yield server


@pytest.fixture
def plain() -> Iterator[FaultServer]:
    """A stand-in server that says nothing about itself, like vLLM."""
    with FaultServer(default=Reply(content=ANSWER_JSON)) as server:
        yield server


def root(server: FaultServer) -> str:
    return server.base_url.removesuffix("/v1")


# --- token cap, timeout, retries --------------------------------------------------------


def test_llamacpp_spec_is_capped_and_bounded(llamacpp: FaultServer) -> None:
    model = load_model(f"llamacpp:{root(llamacpp)}", max_retries=3)
    assert isinstance(model, ChatOpenAI)
    assert model.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    # Sized from the cap and the weights' size reported by /v1/models (2 GB).
    assert model.request_timeout == local_request_timeout(DEFAULT_LOCAL_MAX_TOKENS, 2_000_000_000)
    # The client of a local server never retries, whatever was asked.
    assert model.max_retries == 0


def test_cap_and_timeout_can_be_overridden(
    llamacpp: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = f"llamacpp:{root(llamacpp)}"
    explicit = load_model(spec, max_tokens=64)
    assert isinstance(explicit, ChatOpenAI)
    assert explicit.max_tokens == 64
    assert explicit.request_timeout == local_request_timeout(64, 2_000_000_000)
    assert load_model(spec, max_tokens=64, timeout=5.0).request_timeout == 5.0  # type: ignore[attr-defined]
    monkeypatch.setenv("LOOPGRAPHS_MAX_TOKENS", "200")
    from_env = load_model(spec)
    assert isinstance(from_env, ChatOpenAI) and from_env.max_tokens == 200
    assert load_model(spec, max_tokens=30).max_tokens == 30  # type: ignore[attr-defined]


def test_loopback_server_of_unknown_kind_is_capped_without_llamacpp_sampling(
    plain: FaultServer,
) -> None:
    model = load_model(plain.base_url)
    assert isinstance(model, ChatOpenAI)
    assert model.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    # Its model's size is unknown, so the timeout counts 1 GB of weights.
    assert model.request_timeout == local_request_timeout(DEFAULT_LOCAL_MAX_TOKENS)
    assert model.max_retries == 0
    model.invoke("hi")
    body = plain.requests[-1]
    assert body["max_completion_tokens"] == DEFAULT_LOCAL_MAX_TOKENS
    assert not set(LLAMACPP_SAMPLING) & set(body)


# --- sampling fields in the request body -------------------------------------------------


def test_sampling_fields_reach_every_request_body(llamacpp: FaultServer) -> None:
    model = load_model(f"llamacpp:{root(llamacpp)}", max_tokens=48)
    assert isinstance(model, ChatOpenAI)
    model.invoke("hi")
    llamacpp.queue.append(Reply(content='{"answer": "hello"}'))
    structured = model.with_structured_output(Answer, method="json_schema")
    assert structured.invoke("hi") == Answer(answer="hello")
    plain_body, schema_body = llamacpp.requests
    assert "response_format" not in plain_body
    assert schema_body["response_format"]["type"] == "json_schema"
    for body in (plain_body, schema_body):
        assert {key: body[key] for key in LLAMACPP_SAMPLING} == LLAMACPP_SAMPLING
        assert body["max_completion_tokens"] == 48
        assert body["temperature"] == 0.0


def test_sampling_can_be_changed_per_model(llamacpp: FaultServer) -> None:
    model = load_model(
        f"llamacpp:{root(llamacpp)}", sampling={"dry_multiplier": 0.0, "repeat_penalty": 1.1}
    )
    model.invoke("hi")
    body = llamacpp.requests[-1]
    assert body["dry_multiplier"] == 0.0
    assert body["repeat_penalty"] == 1.1
    assert body["dry_allowed_length"] == LLAMACPP_SAMPLING["dry_allowed_length"]


def test_url_that_turns_out_to_be_llamacpp_gets_its_sampling(llamacpp: FaultServer) -> None:
    model = load_model(llamacpp.base_url)
    model.invoke("hi")
    assert llamacpp.requests[-1]["dry_multiplier"] == LLAMACPP_SAMPLING["dry_multiplier"]


# --- profile detection -------------------------------------------------------------------


def test_llamacpp_without_tool_template_means_constrained_json(llamacpp: FaultServer) -> None:
    info = detect_server(llamacpp.base_url, "qwen")
    assert info.kind == "llama.cpp"
    assert info.profile == {
        "tool_calling": False,
        "structured_output": True,
        "max_input_tokens": 8192,
    }
    assert info.model_bytes == 2_000_000_000
    model = load_model(llamacpp.base_url)
    assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
    assert model.profile is not None and model.profile["max_input_tokens"] == 8192


def test_llamacpp_with_tool_template_means_native_tool_calls() -> None:
    with FaultServer(props=TOOL_TEMPLATE_PROPS) as server:
        for spec in (server.base_url, f"llamacpp:{root(server)}"):
            model = load_model(spec)
            assert capabilities(model) == Capabilities(tool_calling=True, structured_output=True)
            assert model.profile is not None and model.profile["max_input_tokens"] == 32768


@pytest.mark.parametrize(
    ("reported", "tool_calling"),
    [(["completion", "tools"], True), (["completion", "vision"], False)],
)
def test_ollama_capabilities_decide_tool_calling(reported: list[str], tool_calling: bool) -> None:
    with FaultServer(show={"capabilities": reported, "details": {"format": "gguf"}}) as server:
        model = load_model(f"{server.base_url}#qwen2.5:7b")
        assert capabilities(model) == Capabilities(
            tool_calling=tool_calling, structured_output=True
        )
        assert detect_server(server.base_url, "qwen2.5:7b").kind == "ollama"
        assert server.probes == ["/props", "/api/show", "/props", "/api/show"]
        # Ollama's OpenAI endpoint ignores llama.cpp's sampling fields: none are sent.
        assert model.extra_body is None  # type: ignore[attr-defined]


def test_server_that_says_nothing_leaves_the_profile_unknown(plain: FaultServer) -> None:
    info = detect_server(plain.base_url, "meta-llama/Llama-3.1-8B-Instruct")
    assert info.kind == "unknown"
    assert info.profile == {}
    model = load_model(f"{plain.base_url}#meta-llama/Llama-3.1-8B-Instruct")
    assert capabilities(model) == Capabilities(tool_calling=None, structured_output=None)
    assert plain.probes[:2] == ["/props", "/api/show"]


def test_unreachable_server_is_unknown_at_once() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert detect_server(f"http://127.0.0.1:{port}/v1", "m") == detect_server(
        f"http://127.0.0.1:{port}", None
    )
    assert detect_server(f"http://127.0.0.1:{port}/v1", "m").kind == "unknown"


def test_server_that_cannot_be_asked_is_unknown(
    llamacpp: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Blocked(Exception):
        """Like the error langgraph dev raises for blocking I/O inside its event loop."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise Blocked("blocking call to socket.socket.connect")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    assert detect_server(llamacpp.base_url, "qwen").kind == "unknown"
    # A llamacpp: spec still gets what it declares: constrained JSON and the sampling.
    model = load_model(f"llamacpp:{root(llamacpp)}")
    assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
    assert model.extra_body == LLAMACPP_SAMPLING  # type: ignore[attr-defined]
    assert llamacpp.probes == []


def test_profile_argument_overrides_and_skips_detection() -> None:
    with FaultServer(props=TOOL_TEMPLATE_PROPS) as server:
        model = load_model(f"llamacpp:{root(server)}", profile={"tool_calling": False})
        assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
        forced = load_model(server.base_url, profile={"tool_calling": True})
        assert capabilities(forced) == Capabilities(tool_calling=True, structured_output=None)
        assert server.probes == []


@pytest.mark.parametrize(
    ("props", "mode", "request_key"),
    [
        (SMOLLM2_PROPS, "json", "response_format"),
        (TOOL_TEMPLATE_PROPS, "native", "tools"),
    ],
)
def test_auto_tool_mode_follows_the_detected_profile(
    props: dict[str, Any], mode: str, request_key: str
) -> None:
    reply = Reply(content="5") if mode == "native" else Reply(content=ANSWER_JSON)
    with FaultServer(default=reply, props=props) as server:
        graph = create_react_graph(load_model(server.base_url), [calculator])
        out = graph.invoke({"messages": [("user", "What is 2 + 3?")]})
    assert out["status"] == "completed", out.get("error")
    assert out["tool_mode"] == mode
    assert out["answer"] == "5"
    assert request_key in server.requests[0]


# --- the embedded server ----------------------------------------------------------------


@pytest.mark.integration
def test_embedded_server_reports_what_the_stand_in_assumes(local_server: LocalServer) -> None:
    info = detect_server(f"{local_server.url}/v1", local_server.model_name)
    assert info.kind == "llama.cpp"
    # SmolLM2's chat template has no tool calls: the loops use constrained JSON.
    assert info.profile == {
        "tool_calling": False,
        "structured_output": True,
        "max_input_tokens": local_server.n_ctx,
    }
    assert info.model_bytes is not None
    assert abs(info.model_bytes - local_server.model_bytes) < local_server.model_bytes // 10


@pytest.mark.integration
def test_llamacpp_spec_on_the_embedded_server(local_server: LocalServer) -> None:
    model = load_model(
        f"llamacpp:{local_server.url}", max_tokens=48, timeout=LOCAL_TEST_TIMEOUT_SECONDS
    )
    assert isinstance(model, ChatOpenAI)
    assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
    assert model.extra_body == LLAMACPP_SAMPLING
    assert model.max_retries == 0
    # The real server accepts the sampling fields, in plain and schema-constrained replies.
    reply = model.invoke("Say hello.")
    assert reply.usage_metadata is not None
    assert 0 < reply.usage_metadata["output_tokens"] <= 48
    structured = model.with_structured_output(Answer, method="json_schema")
    assert isinstance(structured.invoke("What is the capital of France?"), Answer)


@pytest.mark.integration
def test_gguf_spec_reads_its_profile_from_the_server(
    local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's server already serves this file, so the spec reuses it.
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    model = load_model(f"gguf:{local_server.gguf}")
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == local_server.model_name
    assert model.profile == {
        "tool_calling": False,
        "structured_output": True,
        "max_input_tokens": local_server.n_ctx,
    }
    assert model.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    assert model.extra_body == LLAMACPP_SAMPLING
    # An explicit profile is taken as given: here, a template known to call tools.
    forced = load_model(f"gguf:{local_server.gguf}", profile={"tool_calling": True})
    assert capabilities(forced) == Capabilities(tool_calling=True, structured_output=True)
