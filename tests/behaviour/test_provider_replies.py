"""What providers say about a reply, read the same way in every loop.

Each provider says in its own metadata that a reply was cut at the token cap, that the
model refused, or that a request was refused: OpenAI's Chat Completions
(``finish_reason``, a ``refusal`` field), its Responses API (``status: "incomplete"``,
``refusal`` content parts), Anthropic (``stop_reason``), Ollama (``done_reason``), Gemini
(``finish_reason="MAX_TOKENS"``) and Bedrock (``stopReason``). Here the scripted model
replies with each provider's metadata as its LangChain client writes it; the same cases
on the wire, through the real clients, are in ``tests/services/test_provider_loops.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from loopgraphs import LOOPS, build_loop
from loopgraphs.nodes.errors import is_form_rejection
from loopgraphs.nodes.parsing.text import content_text, refusal_of, stopped_at_cap
from tests.behaviour.test_custom_state import TOOL_LOOPS, add_fruit, build, start
from tests.support.fakes import ProviderError, ScriptedChatModel
from tests.support.scripts import FAST_RETRY, FIRST_REQUESTS

LOOP_NAMES = sorted(LOOPS)

# How each provider's LangChain client marks a reply cut at the token cap.
CUT: dict[str, dict[str, Any]] = {
    "openai": {"finish_reason": "length"},
    "responses": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    "anthropic": {"stop_reason": "max_tokens"},
    "anthropic_window": {"stop_reason": "model_context_window_exceeded"},
    "ollama": {"done": True, "done_reason": "length"},
    "gemini": {"finish_reason": "MAX_TOKENS"},
    "bedrock_converse": {"stopReason": "max_tokens"},
    "bedrock": {"stop_reason": "max_tokens"},
}
NOT_CUT: dict[str, dict[str, Any]] = {
    "openai": {"finish_reason": "stop"},
    "responses": {"status": "completed", "incomplete_details": None},
    "anthropic": {"stop_reason": "end_turn"},
    "ollama": {"done": True, "done_reason": "stop"},
    "gemini": {"finish_reason": "STOP"},
    "bedrock_converse": {"stopReason": "end_turn"},
    "responses_filtered": {"status": "incomplete", "incomplete_details": {"reason": "other"}},
}

WORDS = "I can't help with that request."
# How each provider's client hands over a refusal.
REFUSALS: dict[str, AIMessage] = {
    "openai": AIMessage("", additional_kwargs={"refusal": WORDS}),
    "responses": AIMessage([{"type": "refusal", "refusal": WORDS}]),
    "anthropic": AIMessage(WORDS, response_metadata={"stop_reason": "refusal"}),
}
FILTERED: dict[str, AIMessage] = {
    "openai_filter": AIMessage("", response_metadata={"finish_reason": "content_filter"}),
    "gemini_safety": AIMessage("", response_metadata={"finish_reason": "SAFETY"}),
}


class Enum:
    """A provider enum member, as Gemini's client may leave it (``FinishReason.X``)."""

    def __init__(self, name: str) -> None:
        self.name = name


@pytest.mark.parametrize("provider", sorted(CUT))
def test_each_providers_way_of_saying_cut_counts(provider):
    assert stopped_at_cap(
        AIMessage("The capital of France is Par", response_metadata=CUT[provider])
    )


@pytest.mark.parametrize("provider", sorted(NOT_CUT))
def test_a_finished_reply_is_not_cut(provider):
    assert not stopped_at_cap(AIMessage("Paris.", response_metadata=NOT_CUT[provider]))


def test_an_enum_stop_reason_is_read_by_its_name():
    cut = AIMessage("Par", response_metadata={"finish_reason": Enum("MAX_TOKENS")})
    assert stopped_at_cap(cut)
    assert not stopped_at_cap(AIMessage("Paris", response_metadata={"finish_reason": Enum("STOP")}))


@pytest.mark.parametrize("provider", sorted(REFUSALS))
def test_each_providers_refusal_is_read_with_its_words(provider):
    assert refusal_of(REFUSALS[provider]) == WORDS


@pytest.mark.parametrize("provider", sorted(FILTERED))
def test_a_content_filter_is_a_refusal_that_names_the_filter(provider):
    assert "content filter" in (refusal_of(FILTERED[provider]) or "")


def test_an_answer_is_no_refusal():
    assert refusal_of(AIMessage("Paris.", response_metadata={"finish_reason": "stop"})) is None
    assert refusal_of(AIMessage("I can't say.")) is None  # plain text reads as an answer


def every_reply(loop: str, reply: object) -> tuple[Any, ScriptedChatModel]:
    """``loop`` (with the tool loops' one tool) on a model that answers every request
    with ``reply``, in auto mode; the profile says nothing, so runs start at native
    function calling."""
    model = ScriptedChatModel(replies=[reply], repeat_last=True, profile={})
    tools = [add_fruit] if loop in TOOL_LOOPS else []
    return build_loop(loop, model, tools, retry_policy=FAST_RETRY), model


@pytest.mark.parametrize("provider", sorted(CUT))
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_no_loop_counts_a_cut_reply_as_an_answer(loop, provider):
    cut = AIMessage("The capital of France is Par", response_metadata=CUT[provider])
    graph, _ = every_reply(loop, cut)
    out = graph.invoke(start())
    assert out["status"] != "completed", (out["answer"], out.get("error"))


@pytest.mark.parametrize("provider", sorted(REFUSALS))
@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_a_refusal_ends_every_loop_saying_so_with_the_models_words(loop, provider):
    graph, model = every_reply(loop, REFUSALS[provider])
    out = graph.invoke(start())
    assert (out["status"], out["answer"]) == ("error", "")
    assert out["error"] == f"the model refused: {WORDS}"
    sent = FIRST_REQUESTS.get(loop, 1)
    assert model.call_count == sent == out["llm_calls"]  # a refusal is not asked again
    shown = out["messages"][-1]
    assert isinstance(shown, AIMessage) and content_text(shown.content) == WORDS


# What providers answer when the request is too long for the model: not the form's fault.
TOO_LONG = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted "
    "in 9100 tokens (including 120 in the functions). Please reduce the length."
)


@pytest.mark.parametrize("loop", LOOP_NAMES)
def test_a_permanent_client_error_is_sent_once_and_ends_the_run_with_its_message(loop):
    graph, model = every_reply(loop, ProviderError(400, TOO_LONG))
    out = graph.invoke(start())
    assert out["status"] == "error"
    assert "maximum context length" in out["error"] and "400" in out["error"]
    assert model.call_count == FIRST_REQUESTS.get(loop, 1) == out["llm_calls"]


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ("tools are not supported by this model", True),
        ("registry.ollama.ai/library/gemma3:1b does not support tools", True),
        ('"auto" tool choice requires --enable-auto-tool-choice to be set', True),
        ("Invalid parameter: 'response_format' of type 'json_schema' is not supported", True),
        (TOO_LONG, False),
        ("prompt is too long: 210000 tokens > 200000 maximum", False),
        ("The model `gpt-9` does not exist", False),
        ("Invalid value for 'temperature': must be at most 2", False),
    ],
)
def test_only_a_refusal_of_tools_or_a_schema_is_a_rejection_of_the_form(message, refused):
    assert is_form_rejection(ProviderError(400, message)) is refused
    assert is_form_rejection(NotImplementedError("bind_tools"))
    assert not is_form_rejection(ProviderError(401, "tools: invalid api key"))


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_every_tool_loop_steps_down_when_the_provider_refuses_tools(loop):
    """auto mode on a model whose profile says nothing, behind a provider that refuses
    any request with tools (a 400 "tools are not supported"): every loop steps down to
    JSON and finishes its work, the refused requests counted."""
    graph = build(
        loop, "json", model_kwargs={"profile": {}, "rejects_tools": True}, tool_mode="auto"
    )
    out = graph.invoke(start(fruits=[]))
    assert out["status"] == "completed", out.get("error")
    assert out["fruits"] == ["plums"]
    assert out["tool_mode"] in ("json", "text")


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_every_tool_loop_in_json_mode_reads_text_from_a_model_without_schemas(loop):
    """json mode on a model whose profile has neither tool calling nor structured output
    (``bind_tools`` and ``with_structured_output`` raise ``NotImplementedError``): the
    loop reads its JSON from free text instead of ending in error."""
    graph = build(
        loop,
        "json",
        model_kwargs={"profile": {"tool_calling": False, "structured_output": False}},
    )
    out = graph.invoke(start(fruits=[]))
    assert out["status"] == "completed", out.get("error")
    assert out["fruits"] == ["plums"]
