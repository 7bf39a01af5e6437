"""A runaway reply on the embedded server ends at the token cap, never at a timeout.

SmolLM2-135M repeats itself inside a JSON schema when the conversation shows it a
repeated phrase: at temperature 0 it copies the pattern until something stops it. These
tests run on the session's embedded llama.cpp server (``tests/support/local_server.py``), with a
small cap to keep them fast.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from openai import LengthFinishReasonError
from pydantic import BaseModel

from loopgraphs import create_react_graph
from loopgraphs.models import (
    DEFAULT_LOCAL_MAX_TOKENS,
    LLAMACPP_SAMPLING,
    Capabilities,
    LocalServer,
    capabilities,
    is_local_model,
    load_model,
    local_chat_model,
    local_request_timeout,
)
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.nodes.errors import default_retry_policy, is_transient_on_local_server
from loopgraphs.toolkits import calculator
from tests.support.local_server import LOCAL_TEST_TIMEOUT_SECONDS

CAP = 64
LOOP_CHARS = 40  # a verbatim loop: a stretch this long found three times in one reply
NO_REPETITION_CONTROL = {"dry_multiplier": 0.0}
ISSUE_QUESTION = "Use the calculator to compute 6*7, then 42*2, then 84+1. Report each result."
# A conversation that shows the model a phrase repeated thirty times.
REPEATING: list[tuple[str, str]] = [
    ("system", "You repeat the user's phrase as many times as you can."),
    ("user", "Repeat: one more time"),
    ("assistant", json.dumps({"answer": "one more time, " * 30})),
    ("user", "Repeat: again and again"),
]


class Answer(BaseModel):
    answer: str


def longest_repeat(text: str, times: int = 3) -> int:
    """Length of the longest substring found at least `times` times in `text`."""
    best = 0
    for length in range(1, len(text) // times + 1):
        counts: dict[str, int] = {}
        for start in range(len(text) - length + 1):
            piece = text[start : start + length]
            counts[piece] = counts.get(piece, 0) + 1
            if counts[piece] >= times:
                best = length
                break
        else:
            return best
    return best


def structured_reply(model: ChatOpenAI) -> tuple[str, Any]:
    """The raw JSON text of a schema-constrained reply and how it ended."""
    structured = model.with_structured_output(Answer, method="json_schema")
    try:
        answer = structured.invoke(REPEATING)
    except LengthFinishReasonError as cut:
        message = cut.completion.choices[0].message
        return message.content or "", cut.completion.usage
    assert isinstance(answer, Answer)
    return json.dumps({"answer": answer.answer}), None


def without_repetition_control(server: LocalServer) -> ChatOpenAI:
    """A capped model on ``server`` with DRY off, and the generous test timeout so that a
    busy machine cannot fail the call."""
    return local_chat_model(
        server, max_tokens=CAP, sampling=NO_REPETITION_CONTROL, timeout=LOCAL_TEST_TIMEOUT_SECONDS
    )


@pytest.mark.integration
def test_runaway_reply_ends_at_the_cap(local_server: LocalServer) -> None:
    bounded = local_chat_model(local_server, max_tokens=CAP, sampling=NO_REPETITION_CONTROL)
    # The per-call bound: 30 s plus half a second per capped token, and no client retry.
    assert bounded.request_timeout == local_request_timeout(CAP, local_server.model_bytes)
    assert bounded.max_retries == 0
    text, usage = structured_reply(without_repetition_control(local_server))
    # Without repetition control the model copies the phrase until the cap cuts it off:
    # the request ends with a clear "length" outcome, not a timeout.
    assert usage is not None, f"the reply ended by itself: {text!r}"
    assert usage.completion_tokens == CAP
    assert longest_repeat(text) >= LOOP_CHARS, text


@pytest.mark.integration
def test_default_sampling_breaks_the_repetition(local_server: LocalServer) -> None:
    model = local_chat_model(local_server, max_tokens=CAP, timeout=LOCAL_TEST_TIMEOUT_SECONDS)
    assert model.extra_body == LLAMACPP_SAMPLING
    text, usage = structured_reply(model)
    assert usage is None or usage.completion_tokens == CAP
    # DRY allows a verbatim repeat of up to 16 tokens (so the model can copy a question's
    # numbers), then pushes the model off it: the same prompt without it loops verbatim.
    looped, _ = structured_reply(without_repetition_control(local_server))
    assert longest_repeat(text) < longest_repeat(looped), (text, looped)


@pytest.mark.integration
def test_reported_react_run_ends_without_an_error(local_model: ChatOpenAI) -> None:
    graph = create_react_graph(local_model, [calculator], max_iterations=6)
    out = graph.invoke({"messages": [("user", ISSUE_QUESTION)]})
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert not out.get("error")
    assert 1 <= out["llm_calls"] <= 7
    assert out["usage"]["output_tokens"] <= out["llm_calls"] * local_model.max_tokens


@pytest.mark.integration
def test_local_spec_defaults(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGRAPHS_MAX_TOKENS", raising=False)
    # "local" resolves to the session's server instead of starting another one.
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    model = load_model("local", max_retries=3)
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == f"{local_server.url}/v1"
    assert model.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    assert model.request_timeout == local_request_timeout(
        DEFAULT_LOCAL_MAX_TOKENS, local_server.model_bytes
    )
    assert model.request_timeout == 30 + DEFAULT_LOCAL_MAX_TOKENS * 0.5
    assert model.max_retries == 0
    assert model.extra_body == LLAMACPP_SAMPLING
    assert capabilities(model) == Capabilities(tool_calling=False, structured_output=True)
    assert is_local_model(model)
    assert default_retry_policy(model).retry_on is is_transient_on_local_server
    monkeypatch.setenv("LOOPGRAPHS_MAX_TOKENS", "100")
    assert load_model("local").max_tokens == 100  # type: ignore[attr-defined]
    assert load_model("local", max_tokens=20).max_tokens == 20  # type: ignore[attr-defined]
