"""One model call, on its sync and its async path alike: what it counts, how it names the
reply, what a cut structured reply becomes, and what an escaping failure carries."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import openai
import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelResponse
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from loopgraphs.nodes.errors import failed_calls, mark_sent
from loopgraphs.nodes.middleware import Middlewares
from loopgraphs.nodes.model_call import (
    ModelCaller,
    Outcome,
    as_outcome,
    caller_for,
    first_accepted,
    spent_on,
)
from tests.support.fakes import ProviderError, ScriptedChatModel

USAGE = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}


def drive(call: Any, path: str) -> Outcome:
    """Run one call on the sync or the async path."""
    if path == "invoke":
        return call.invoke({})
    return asyncio.run(call.ainvoke({}))


PATHS = ["invoke", "ainvoke"]


class LengthFinishReasonError(openai.LengthFinishReasonError):
    """openai's error for a structured reply cut at ``max_tokens``, its completion holding
    only what is read of it."""

    def __init__(self, content: str | None, usage: Any = None) -> None:
        Exception.__init__(self, "length limit reached")
        message = SimpleNamespace(content=content)
        self.completion = SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def raising(exc: BaseException) -> RunnableLambda:
    def fail(_: Any) -> Any:
        raise exc

    return RunnableLambda(fail)


@pytest.mark.parametrize("path", PATHS)
def test_a_cut_structured_reply_is_a_reply_with_its_tokens(path):
    usage = SimpleNamespace(
        prompt_tokens=40,
        completion_tokens=8,
        prompt_tokens_details=SimpleNamespace(cached_tokens=30),
    )
    outcome = drive(
        ModelCaller(raising(LengthFinishReasonError('{"a": "cu', usage))).call([]), path
    )
    reply = outcome.reply
    assert reply.content == '{"a": "cu'
    assert reply.response_metadata == {"finish_reason": "length"}
    assert reply.usage_metadata == {
        "input_tokens": 40,
        "output_tokens": 8,
        "total_tokens": 48,
        "input_token_details": {"cache_read": 30},
    }
    assert outcome.calls == 1
    assert outcome.usage == {"input_tokens": 40, "output_tokens": 8, "cached_tokens": 30}


@pytest.mark.parametrize("path", PATHS)
def test_a_cut_reply_without_text_or_usage_counts_nothing_but_the_request(path):
    outcome = drive(ModelCaller(raising(LengthFinishReasonError(None))).call([]), path)
    assert outcome.reply.content == ""
    assert outcome.reply.usage_metadata == {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "input_token_details": {"cache_read": 0},
    }
    assert outcome.calls == 1


@pytest.mark.parametrize("path", PATHS)
def test_a_failure_escapes_counted_as_a_request_sent(path):
    # That error without a completion is an ordinary failure.
    for exc in (KeyError("x"), LengthFinishReasonError.__new__(LengthFinishReasonError)):
        with pytest.raises(type(exc)) as caught:
            drive(ModelCaller(raising(exc)).call([]), path)
        assert failed_calls(caught.value) == 1


@pytest.mark.parametrize("path", PATHS)
def test_a_request_the_model_class_refuses_was_never_sent(path):
    with pytest.raises(NotImplementedError) as caught:
        drive(ModelCaller(raising(NotImplementedError("no tools"))).call([]), path)
    assert failed_calls(caught.value) == 0


@pytest.mark.parametrize("path", PATHS)
def test_a_reply_is_counted_and_named_after_the_agent(path):
    model = ScriptedChatModel(replies=["hello"])
    outcome = drive(ModelCaller(model, name="helper").call([HumanMessage("hi")]), path)
    assert outcome.reply.content == "hello" and outcome.reply.name == "helper"
    assert outcome.calls == 1 and outcome.usage["output_tokens"] >= 1
    unnamed = drive(ModelCaller(ScriptedChatModel(replies=["x"])).call([HumanMessage("hi")]), path)
    assert unnamed.reply.name is None


def retrying_chain(retries: int) -> Any:
    """The model-call chain of a middleware that sends the request ``retries`` more times
    after a failure, then fails for good."""

    class Retry:
        def wrap_model_call(self, request, handler):
            for _ in range(retries):
                try:
                    return handler(request)
                except ValueError:
                    pass
            return handler(request)

        async def awrap_model_call(self, request, handler):
            for _ in range(retries):
                try:
                    return await handler(request)
                except ValueError:
                    pass
            return await handler(request)

    class RetryMiddleware(Retry, AgentMiddleware):
        pass

    return Middlewares((RetryMiddleware(),)).model_chain


@pytest.mark.parametrize("path", PATHS)
def test_a_failure_through_the_chain_carries_every_request_it_sent(path):
    model = ScriptedChatModel(replies=[ValueError("down")], repeat_last=True)
    call = ModelCaller(model, chain=retrying_chain(2)).call([HumanMessage("hi")])
    with pytest.raises(ValueError) as caught:
        drive(call, path)
    assert failed_calls(caught.value) == 3


@pytest.mark.parametrize("path", PATHS)
def test_a_success_through_the_chain_counts_the_failed_attempts_too(path):
    model = ScriptedChatModel(replies=[ValueError("down"), "up"])
    outcome = drive(ModelCaller(model, chain=retrying_chain(2)).call([HumanMessage("hi")]), path)
    assert outcome.reply.content == "up" and outcome.calls == 2


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def other(x: str) -> str:
    """A tool the loop does not have."""
    return x


@pytest.mark.parametrize("path", PATHS)
def test_a_tool_the_loop_cannot_run_is_refused_before_the_request(path):
    model = ScriptedChatModel(replies=["never"])
    asker = ModelCaller(model, known_tools=frozenset({"add"}))
    with pytest.raises(ValueError, match="cannot run"):
        drive(asker.call([HumanMessage("hi")], tools=[add, other]), path)
    assert model.call_count == 0
    assert drive(asker.call([HumanMessage("hi")], tools=[add]), path).reply.content == "never"


def test_several_outcomes_add_up():
    one = Outcome(
        ModelResponse(result=[AIMessage("a")]),
        1,
        {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 0},
    )
    two = Outcome(
        ModelResponse(result=[AIMessage("b")]),
        2,
        {"input_tokens": 3, "output_tokens": 4, "cached_tokens": 1},
    )
    assert spent_on([one, two]) == {
        "llm_calls": 3,
        "usage": {"input_tokens": 4, "output_tokens": 6, "cached_tokens": 1},
    }
    assert spent_on([]) == {
        "llm_calls": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0},
    }


def test_a_reply_fed_by_hand_counts_as_one_request():
    reply = AIMessage("hi", usage_metadata=USAGE)
    outcome = as_outcome(reply)
    assert outcome.reply is reply and outcome.calls == 1
    assert outcome.usage == {"input_tokens": 5, "output_tokens": 2, "cached_tokens": 0}
    assert as_outcome(outcome) is outcome
    assert as_outcome("text").reply.content == "text"


def test_a_bare_model_is_asked_without_system_message_or_middleware():
    model = ScriptedChatModel(replies=["x"])
    asker = caller_for(model)
    assert asker.model is model and asker.system is None and asker.chain is None
    assert caller_for(asker) is asker


def drive_ladder(forms: list[str], answers: dict[str, BaseException | AIMessage]) -> Any:
    """Run ``first_accepted`` over named forms, answering each request from ``answers``
    (an exception is raised into the ladder as the provider's answer)."""
    sent: list[str] = []
    ladder = first_accepted([lambda name=name: name for name in forms])
    request = next(ladder)
    while True:
        sent.append(request)
        answer = answers[request]
        try:
            request = (
                ladder.throw(answer) if isinstance(answer, BaseException) else ladder.send(answer)
            )
        except StopIteration as done:
            return done.value, sent


def test_a_refused_form_gives_way_to_the_next_and_counts_as_a_call():
    refused = ProviderError(400, "this model does not support tools")
    mark_sent(refused, 1)
    (index, outcome), sent = drive_ladder(
        ["native", "json"], {"native": refused, "json": AIMessage("ok")}
    )
    assert (index, sent, outcome.reply.content, outcome.calls) == (1, ["native", "json"], "ok", 2)


@pytest.mark.parametrize("last", [True, False])
def test_any_other_error_or_the_last_refusal_ends_the_request_with_every_call_counted(last):
    refused = ProviderError(400, "does not support tools")
    mark_sent(refused, 1)
    final = ProviderError(400, "does not support tools" if last else "context_length_exceeded")
    mark_sent(final, 1)
    with pytest.raises(ProviderError) as raised:
        drive_ladder(
            ["native", "json", "text"] if not last else ["native", "json"],
            {"native": refused, "json": final, "text": AIMessage("never")},
        )
    assert raised.value is final and failed_calls(final) == 2
