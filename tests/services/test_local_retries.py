"""The loops' default retry policy depends on where the model is served.

A timeout of a request to a server on this machine means the model was still generating,
so it is not resent; rate limits and server errors are still retried, wherever the model
runs, and a rejected request (400) never is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI

from loopgraphs import create_react_graph
from loopgraphs.models import load_model
from loopgraphs.nodes.errors import (
    default_retry_policy,
    is_timeout,
    is_transient,
    is_transient_on_local_server,
    is_transient_unless_local_timeout,
)
from loopgraphs.nodes.settings import make_settings
from loopgraphs.toolkits import calculator
from tests.support.fault_server import Delay, FaultServer, Reply, Status

LOCAL_URL = "http://127.0.0.1:8080/v1/chat/completions"
REMOTE_URL = "https://models.example.test/v1/chat/completions"
QUESTION = {"messages": [("user", "What is 2 + 3?")]}
ANSWER = Reply(content='{"thought": "done", "action": "final_answer", "action_input": "5"}')


def timeout_error(url: str) -> openai.APITimeoutError:
    return openai.APITimeoutError(request=httpx.Request("POST", url))


def status_error(code: int, url: str) -> openai.APIStatusError:
    request = httpx.Request("POST", url)
    response = httpx.Response(code, request=request)
    classes: dict[int, type[openai.APIStatusError]] = {
        400: openai.BadRequestError,
        429: openai.RateLimitError,
        500: openai.InternalServerError,
        503: openai.InternalServerError,
    }
    return classes[code](f"HTTP {code}", response=response, body=None)


def connection_error(url: str) -> openai.APIConnectionError:
    return openai.APIConnectionError(request=httpx.Request("POST", url))


def local_chat() -> ChatOpenAI:
    return ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:8080/v1")


def remote_chat() -> ChatOpenAI:
    return ChatOpenAI(model="m", api_key="k", base_url="https://models.example.test/v1")


def retry_on(model: object) -> Callable[[BaseException], bool]:
    predicate = default_retry_policy(model).retry_on
    assert callable(predicate) and not isinstance(predicate, type)
    return predicate  # type: ignore[return-value]


@pytest.mark.parametrize(
    "exc",
    [
        timeout_error(LOCAL_URL),
        httpx.ReadTimeout("read timed out"),
        TimeoutError("timed out"),
    ],
    ids=["openai", "httpx", "builtin"],
)
def test_timeouts_are_recognised(exc: BaseException) -> None:
    assert is_timeout(exc)
    assert is_transient(exc)


def test_other_failures_are_not_timeouts() -> None:
    for exc in (status_error(503, LOCAL_URL), connection_error(LOCAL_URL), ValueError("x")):
        assert not is_timeout(exc)


@pytest.mark.parametrize("model", [local_chat(), "local", "gguf:/models/m.gguf"])
def test_local_model_timeout_is_not_retried(model: object) -> None:
    should_retry = retry_on(model)
    assert should_retry is is_transient_on_local_server
    assert not should_retry(timeout_error(LOCAL_URL))
    assert not should_retry(TimeoutError("timed out"))
    # A busy or restarting local server is still worth another try.
    assert should_retry(status_error(503, LOCAL_URL))
    assert should_retry(status_error(429, LOCAL_URL))
    assert should_retry(connection_error(LOCAL_URL))
    assert not should_retry(status_error(400, LOCAL_URL))


@pytest.mark.parametrize(
    "model", [remote_chat(), "openai:gpt-4o-mini", FakeListChatModel(responses=["x"])]
)
def test_remote_model_retries_timeouts_and_server_errors(model: object) -> None:
    should_retry = retry_on(model)
    assert should_retry is is_transient
    assert should_retry(timeout_error(REMOTE_URL))
    assert should_retry(status_error(429, REMOTE_URL))
    assert should_retry(status_error(500, REMOTE_URL))
    assert should_retry(status_error(503, REMOTE_URL))
    assert should_retry(connection_error(REMOTE_URL))
    assert not should_retry(status_error(400, REMOTE_URL))


def test_model_chosen_per_run_decides_from_the_failed_request() -> None:
    should_retry = retry_on(None)
    assert should_retry is is_transient_unless_local_timeout
    assert not should_retry(timeout_error(LOCAL_URL))
    assert not should_retry(timeout_error("http://localhost:11434/v1/chat/completions"))
    assert should_retry(timeout_error(REMOTE_URL))
    # A timeout that does not say where it went is treated as a network fault.
    assert should_retry(TimeoutError("timed out"))
    assert should_retry(httpx.ReadTimeout("read timed out"))
    assert should_retry(status_error(503, LOCAL_URL))
    assert not should_retry(status_error(400, REMOTE_URL))


def test_explicit_attempts_are_kept() -> None:
    assert default_retry_policy(local_chat(), max_attempts=5).max_attempts == 5
    assert default_retry_policy().max_attempts == 3


def test_loop_settings_pick_the_policy_for_their_model() -> None:
    local = make_settings("react", local_chat(), [calculator], {}).retry_policy
    remote = make_settings("react", remote_chat(), [calculator], {}).retry_policy
    per_run = make_settings("react", None, [calculator], {}).retry_policy
    assert local is not None and local.retry_on is is_transient_on_local_server
    assert remote is not None and remote.retry_on is is_transient
    assert per_run is not None and per_run.retry_on is is_transient_unless_local_timeout


# --- end to end on a loopback server -----------------------------------------------------


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(default=ANSWER) as running:
        yield running


def test_local_timeout_ends_the_run_after_one_request(server: FaultServer) -> None:
    server.script(Delay(2.0, then=ANSWER), ANSWER, ANSWER)
    model = load_model(server.base_url, timeout=0.5, profile={"tool_calling": False})
    out = create_react_graph(model, [calculator]).invoke(QUESTION)
    assert out["status"] == "error"
    assert "TimeoutError" in out["error"]
    # Neither the client nor the loop sent the request again.
    assert len(server.requests) == 1


def test_local_server_error_is_still_retried(server: FaultServer) -> None:
    server.script(Status(503))
    model = load_model(server.base_url, profile={"tool_calling": False})
    graph = create_react_graph(model, [calculator])
    out = graph.invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert out["answer"] == "5"
    assert server.served == ["Status", "Reply"]


def test_local_rejection_is_never_retried(server: FaultServer) -> None:
    server.script(Status(400))
    model = load_model(server.base_url, profile={"tool_calling": False})
    # In text mode there is no other request form to fall back to.
    out = create_react_graph(model, [calculator], tool_mode="text").invoke(QUESTION)
    assert out["status"] == "error"
    assert "400" in out["error"]
    assert server.served == ["Status"]
