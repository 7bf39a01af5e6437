"""Middleware wrappers: ``wrap_model_call`` and ``wrap_tool_call``.

Ports of langchain ``agents/middleware/core/test_wrap_model_call.py``,
``test_wrap_model_call_state_update.py``, ``test_wrap_tool_call.py``, ``test_tools.py``,
``test_composition.py`` and ``test_overrides.py``: what a wrapper can change in the model
request (messages, system prompt, tools, tool choice, model, response format), retrying,
short-circuiting and rewriting the reply, extra state updates; and for tool calls:
changing the call, retrying, short-circuiting, seeing the tool's exception, nesting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command
from pydantic import BaseModel

from tests.compat import middleware_support
from tests.compat.middleware_support import (
    LOOP_SCRIPTS,
    ai_texts,
    call,
    calls,
    humans_seen,
    message_text,
    native,
    raised_or_failed,
    system_text,
    tool_results,
)
from tests.compat.support import seen
from tests.support.scripts import act, final, model_for

agent = middleware_support.agent
loop_agent = middleware_support.loop_agent
mode_agent = middleware_support.mode_agent


@tool
def tool_a(value: str) -> str:
    """Tool A: files the value under A."""
    return f"A:{value}"


@tool
def tool_b(value: str) -> str:
    """Tool B: files the value under B."""
    return f"B:{value}"


@tool
def tool_c(value: str) -> str:
    """Tool C: files the value under C."""
    return f"C:{value}"


ABC = [tool_a, tool_b, tool_c]


def names(tools: list[Any]) -> set[str]:
    return {t.name if hasattr(t, "name") else t["name"] for t in tools}


# -- wrap_model_call: the request -----------------------------------------------------


def test_wrapper_adds_a_message_for_this_call_only(agent):
    """ports test_on_model_call: the model sees the extra message; the state keeps the
    caller's history (the change goes through ``override``)."""

    @wrap_model_call
    def nice(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]):
        extra = HumanMessage("remember to be nice!")
        return handler(request.override(messages=[*request.messages, extra]))

    model = native(["ok"])
    out = agent(model, [], middleware=[nice]).invoke({"messages": [HumanMessage("Hello")]})
    assert humans_seen(model.prompts[0]) == ["Hello", "remember to be nice!"]
    assert [message_text(m) for m in out["messages"]] == ["Hello", "ok"]


def test_wrapper_replaces_the_system_prompt(agent):
    @wrap_model_call
    def persona(request, handler):
        return handler(request.override(system_message=SystemMessage("You are a pirate.")))

    model = native(["arr"])
    graph = agent(model, [], middleware=[persona], system_prompt="You are a clerk.")
    graph.invoke({"messages": [HumanMessage("Hello")]})
    assert system_text(model.prompts[0]).startswith("You are a pirate.")
    assert "clerk" not in seen(model.prompts[0])


def test_wrapper_extends_the_system_prompt(agent):
    """ports the system-prompt override cases of test_overrides.py."""
    got: list[str | None] = []

    @wrap_model_call
    def add_rule(request, handler):
        got.append(request.system_prompt)
        text = f"{request.system_prompt}\nAlways cite sources."
        return handler(request.override(system_message=SystemMessage(text)))

    model = native(["ok"])
    graph = agent(model, [], middleware=[add_rule], system_prompt="You are a clerk.")
    graph.invoke({"messages": [HumanMessage("Hello")]})
    assert got[0] is not None and got[0].startswith("You are a clerk.")
    system = system_text(model.prompts[0])
    assert system.startswith("You are a clerk.")
    assert "Always cite sources." in system


def test_wrapper_adds_a_system_prompt_when_there_is_none(agent):
    @wrap_model_call
    def add(request, handler):
        return handler(request.override(system_message=SystemMessage("Answer in French.")))

    model = native(["bonjour"])
    agent(model, [], middleware=[add]).invoke({"messages": [HumanMessage("Hello")]})
    assert system_text(model.prompts[0]).startswith("Answer in French.")


def test_wrapper_filters_the_tools(agent):
    """ports test_middleware_can_modify_tools: only the kept tools are bound."""

    @wrap_model_call
    def only_ab(request, handler):
        kept = [t for t in request.tools if t.name in {"tool_a", "tool_b"}]
        return handler(request.override(tools=kept))

    model = native([calls(call("tool_a", {"value": "x"})), "done"])
    out = agent(model, ABC, middleware=[only_ab]).invoke({"messages": [HumanMessage("file x")]})
    assert [set(s) for s in model.tool_sets] == [{"tool_a", "tool_b"}] * 2
    assert tool_results(out) == [("tool_a", "A:x")]


def test_wrapper_removes_every_tool(agent):
    """ports test_empty_tools_list_is_valid: the model is offered no tools."""

    @wrap_model_call
    def none(request, handler):
        return handler(request.override(tools=[]))

    model = native(["plain answer"])
    out = agent(model, ABC, middleware=[none]).invoke({"messages": [HumanMessage("hi")]})
    assert not any(model.tool_sets)
    assert ai_texts(out) == ["plain answer"]


def test_tool_changes_are_seen_by_the_next_wrapper(agent):
    """ports test_tools_preserved_across_multiple_middleware."""
    order: list[set[str]] = []

    class Drop(AgentMiddleware):
        def __init__(self, victim: str) -> None:
            super().__init__()
            self.victim = victim

        @property
        def name(self) -> str:
            return f"Drop_{self.victim}"

        def wrap_model_call(self, request, handler):
            order.append(names(request.tools))
            kept = [t for t in request.tools if t.name != self.victim]
            return handler(request.override(tools=kept))

    model = native(["ok"])
    graph = agent(model, ABC, middleware=[Drop("tool_c"), Drop("tool_b")])
    graph.invoke({"messages": [HumanMessage("hi")]})
    assert order == [{"tool_a", "tool_b", "tool_c"}, {"tool_a", "tool_b"}]
    assert model.tool_sets == [["tool_a"]]


def test_wrapper_cannot_add_an_unknown_tool(agent):
    """ports test_unknown_tool_raises_error: a tool the agent cannot run is refused."""

    @tool
    def stranger(value: str) -> str:
        """Not given to the agent."""
        return value

    @wrap_model_call
    def add(request, handler):
        return handler(request.override(tools=[*request.tools, stranger]))

    model = native(["ok"])
    graph = agent(model, [tool_a], middleware=[add])
    assert raised_or_failed(graph, {"messages": [HumanMessage("hi")]}, ValueError, "stranger")
    assert model.call_count == 0


def test_wrapper_can_offer_a_provider_tool_dict(agent):
    """A dict tool (provider-side) may be added; it is bound but not run locally."""

    @wrap_model_call
    def add(request, handler):
        web = {"type": "web_search", "name": "web_search"}
        return handler(request.override(tools=[*request.tools, web]))

    model = native(["searched"])
    out = agent(model, [tool_a], middleware=[add]).invoke({"messages": [HumanMessage("hi")]})
    assert len(model.tool_sets[0]) == 2
    assert "tool_a" in model.tool_sets[0]
    assert ai_texts(out) == ["searched"]


def test_wrapper_sets_the_tool_choice(agent):
    @wrap_model_call
    def force(request, handler):
        if len(request.messages) == 1:
            return handler(request.override(tool_choice="tool_b"))
        return handler(request)

    model = native([calls(call("tool_b", {"value": "v"})), "done"])
    out = agent(model, ABC, middleware=[force]).invoke({"messages": [HumanMessage("hi")]})
    assert model.tool_choices[0] == "tool_b"
    assert model.tool_choices[1] in (None, "auto")
    assert tool_results(out) == [("tool_b", "B:v")]


def test_wrapper_swaps_the_model(agent):
    """ports the model override case: the other model answers, the agent's does not."""
    other = native(["from the other model"])

    @wrap_model_call
    def swap(request, handler):
        return handler(request.override(model=other))

    model = native(["from the agent's model"])
    out = agent(model, [tool_a], middleware=[swap]).invoke({"messages": [HumanMessage("hi")]})
    assert model.call_count == 0
    assert other.call_count == 1
    assert other.tool_sets == [["tool_a"]]
    assert ai_texts(out) == ["from the other model"]


class Weather(BaseModel):
    """The weather now."""

    temperature: float
    condition: str


class Forecast(BaseModel):
    """The weather to come."""

    days: int
    outlook: str


@pytest.mark.parametrize("narrow", [False, True])
def test_wrapper_narrows_the_response_format(narrow):
    """The wrapper sees the agent's response format and may narrow it for a call: the
    model is offered only the kept schema. create_agent only: loopgraphs takes no
    strategy objects and asks for the structured response in its own call after the
    answer (DIFFERENCES.md); its wrappers see that call's response format, tested in
    test_wrapper_sees_the_structured_call."""
    agent = middleware_support.factory("create_agent")
    got: list[Any] = []

    @wrap_model_call
    def choose(request, handler):
        got.append(request.response_format)
        if narrow:
            request = request.override(response_format=ToolStrategy(Forecast))
        return handler(request)

    model = native([calls(call("Forecast", {"days": 3, "outlook": "dry"}))])
    graph = agent(model, [], middleware=[choose], response_format=ToolStrategy(Weather | Forecast))
    out = graph.invoke({"messages": [HumanMessage("weather?")]})
    assert len(got) == 1 and got[0] is not None
    offered = " ".join(
        [name for tools in model.tool_sets for name in tools]
        + [getattr(schema, "__name__", str(schema)) for schema in model.schemas]
    )
    assert "Forecast" in offered
    assert ("Weather" in offered) is not narrow
    assert out["structured_response"] == Forecast(days=3, outlook="dry")


def test_wrapper_sees_state_and_runtime(agent):
    """ports test_runtime_injected_into_middleware."""
    got: list[Any] = []

    @wrap_model_call
    def peek(request, handler):
        got.append(([message_text(m) for m in request.state["messages"]], request.runtime))
        return handler(request)

    agent(native(["ok"]), [], middleware=[peek]).invoke({"messages": [HumanMessage("hi")]})
    assert len(got) == 1
    assert got[0][0] == ["hi"]
    assert got[0][1] is not None


# -- wrap_model_call: the response ----------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_wrapper_retries_a_failed_model_call(agent, how):
    attempts: list[str] = []

    class RetryOnce(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            try:
                attempts.append("try")
                return handler(request)
            except RuntimeError:
                attempts.append("retry")
                return handler(request)

        async def awrap_model_call(self, request, handler):
            try:
                attempts.append("try")
                return await handler(request)
            except RuntimeError:
                attempts.append("retry")
                return await handler(request)

    model = native([RuntimeError("flaky"), "second time lucky"])
    graph = agent(model, [], middleware=[RetryOnce()])
    request = {"messages": [HumanMessage("hi")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert attempts == ["try", "retry"]
    assert model.call_count == 2
    assert ai_texts(out) == ["second time lucky"]


def test_wrapper_error_propagates_without_retry(agent):
    """A model error no wrapper handles ends the run with that error."""

    errors: list[str] = []

    @wrap_model_call
    def passthrough(request, handler):
        try:
            return handler(request)
        except RuntimeError as exc:
            errors.append(str(exc))
            raise

    graph = agent(native([RuntimeError("provider down")]), [], middleware=[passthrough])
    request = {"messages": [HumanMessage("hi")]}
    assert raised_or_failed(graph, request, RuntimeError, "provider down")
    assert errors == ["provider down"]


def test_wrapper_answers_without_the_model(agent):
    @wrap_model_call
    def cached(request, handler):
        return AIMessage("cached answer")

    model = native(["never"])
    out = agent(model, [tool_a], middleware=[cached]).invoke({"messages": [HumanMessage("hi")]})
    assert model.call_count == 0
    assert ai_texts(out) == ["cached answer"]


def test_wrapper_short_circuits_with_a_model_response(agent):
    @wrap_model_call
    def cached(request, handler):
        return ModelResponse(result=[AIMessage("from the cache")])

    model = native(["never"])
    out = agent(model, [], middleware=[cached]).invoke({"messages": [HumanMessage("hi")]})
    assert model.call_count == 0
    assert ai_texts(out) == ["from the cache"]


def test_short_circuit_can_call_a_tool(agent):
    """A reply made by the wrapper may call tools; they run and the loop goes on."""
    turns = iter([AIMessage("", tool_calls=[call("tool_a", {"value": "w"})])])

    @wrap_model_call
    def scripted(request, handler):
        return next(turns, None) or handler(request)

    model = native(["after the tool"])
    out = agent(model, [tool_a], middleware=[scripted]).invoke({"messages": [HumanMessage("x")]})
    assert tool_results(out) == [("tool_a", "A:w")]
    assert model.call_count == 1
    assert ai_texts(out)[-1] == "after the tool"


def test_wrapper_rewrites_the_reply(agent):
    @wrap_model_call
    def upper(request, handler):
        response = handler(request)
        reply = response.result[0]
        return ModelResponse(result=[reply.model_copy(update={"content": reply.text.upper()})])

    out = agent(native(["quiet"]), [], middleware=[upper]).invoke({"messages": [HumanMessage("x")]})
    assert ai_texts(out) == ["QUIET"]


def test_wrapper_returns_a_bare_ai_message_after_the_model(agent):
    @wrap_model_call
    def bare(request, handler):
        response = handler(request)
        return AIMessage(f"checked: {response.result[0].text}")

    model = native(["draft"])
    out = agent(model, [], middleware=[bare]).invoke({"messages": [HumanMessage("x")]})
    assert model.call_count == 1
    assert ai_texts(out) == ["checked: draft"]


def test_extended_response_adds_messages(agent):
    """ports TestBasicStateUpdate: the command's messages are added next to the reply."""

    @wrap_model_call
    def note(request, handler):
        response = handler(request)
        update = {"messages": [HumanMessage("Summary of prior conversation", id="summary")]}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    model = native(["Hello!"])
    out = agent(model, [], middleware=[note]).invoke({"messages": [HumanMessage("Hi")]})
    texts = [message_text(m) for m in out["messages"]]
    assert texts[0] == "Hi"
    assert sorted(texts[1:]) == ["Hello!", "Summary of prior conversation"]


class Summary(AgentState):
    summary: str


def test_extended_response_updates_a_state_key(agent):
    """ports TestCustomStateField."""

    class Summarize(AgentMiddleware):
        state_schema = Summary

        def wrap_model_call(self, request, handler):
            response = handler(request)
            update = {"summary": f"{len(request.messages)} message(s) so far"}
            return ExtendedModelResponse(model_response=response, command=Command(update=update))

    out = agent(native(["ok"]), [], middleware=[Summarize()]).invoke(
        {"messages": [HumanMessage("Hi")]}
    )
    assert out["summary"] == "1 message(s) so far"
    assert ai_texts(out) == ["ok"]


async def test_async_extended_response(agent):
    class AsyncNote(AgentMiddleware):
        async def awrap_model_call(self, request, handler):
            response = await handler(request)
            update = {"messages": [HumanMessage("async note", id="n")]}
            return ExtendedModelResponse(model_response=response, command=Command(update=update))

    out = await agent(native(["ok"]), [], middleware=[AsyncNote()]).ainvoke(
        {"messages": [HumanMessage("Hi")]}
    )
    assert sorted(message_text(m) for m in out["messages"][1:]) == ["async note", "ok"]


# -- wrap_model_call: composition -----------------------------------------------------


class Around(AgentMiddleware):
    def __init__(self, label: str, log: list[str]) -> None:
        super().__init__()
        self.label, self.log = label, log

    @property
    def name(self) -> str:
        return f"Around{self.label}"

    def wrap_model_call(self, request, handler):
        self.log.append(f"{self.label}>")
        note = HumanMessage(f"via {self.label}")
        response = handler(request.override(messages=[*request.messages, note]))
        self.log.append(f"<{self.label}")
        return response


def test_first_model_wrapper_is_outermost(agent):
    """ports test_composition.py: the first middleware wraps the others; the inner one
    sees the outer one's changes."""
    log: list[str] = []
    model = native(["ok"])
    graph = agent(model, [], middleware=[Around("A", log), Around("B", log), Around("C", log)])
    graph.invoke({"messages": [HumanMessage("hi")]})
    assert log == ["A>", "B>", "C>", "<C", "<B", "<A"]
    assert humans_seen(model.prompts[0]) == ["hi", "via A", "via B", "via C"]


def test_inner_retry_stays_inside_the_outer_wrapper(agent):
    log: list[str] = []

    class Retry(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            log.append("retry")
            try:
                return handler(request)
            except RuntimeError:
                return handler(request)

    model = native([RuntimeError("once"), "ok"])
    graph = agent(model, [], middleware=[Around("outer", log), Retry()])
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert log == ["outer>", "retry", "<outer"]
    assert model.call_count == 2
    assert ai_texts(out) == ["ok"]


def test_outer_wrapper_sees_the_inner_short_circuit(agent):
    seen_by_outer: list[str] = []

    @wrap_model_call(name="Outer")
    def outer(request, handler):
        response = handler(request)
        seen_by_outer.append(response.result[0].text)
        return response

    @wrap_model_call(name="Inner")
    def inner(request, handler):
        return AIMessage("inner answer")

    model = native(["never"])
    out = agent(model, [], middleware=[outer, inner]).invoke({"messages": [HumanMessage("x")]})
    assert seen_by_outer == ["inner answer"]
    assert model.call_count == 0
    assert ai_texts(out) == ["inner answer"]


async def test_async_wrapper_changes_the_request(agent):
    """ports test_create_agent_async_invoke (awrap_model_call adds a message)."""

    @wrap_model_call
    async def extra(request, handler):
        note = HumanMessage("async middleware message")
        return await handler(request.override(messages=[*request.messages, note]))

    model = native(["ok"])
    await agent(model, [], middleware=[extra]).ainvoke({"messages": [HumanMessage("hello")]})
    assert humans_seen(model.prompts[0]) == ["hello", "async middleware message"]


# -- wrap_tool_call -------------------------------------------------------------------


class Clock:
    """A tool that records its arguments and can fail a given number of times."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[str] = []
        self.failures = failures

        @tool
        def when(city: str) -> str:
            """Tell the local time in a city."""
            self.calls.append(city)
            if len(self.calls) <= self.failures:
                raise ValueError(f"clock for {city} is offline")
            return f"noon in {city}"

        self.tool = when


def ask_time(city: str = "Oslo") -> list[Any]:
    return [calls(call("when", {"city": city}, id="t1")), "done"]


def test_tool_wrapper_changes_the_arguments(agent):
    clock = Clock()

    @wrap_tool_call
    def to_paris(request, handler):
        changed = {**request.tool_call, "args": {"city": "Paris"}}
        return handler(request.override(tool_call=changed))

    out = agent(native(ask_time()), [clock.tool], middleware=[to_paris]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == ["Paris"]
    assert tool_results(out) == [("when", "noon in Paris")]


def test_tool_wrapper_sees_the_call_the_tool_and_the_state(agent):
    got: list[Any] = []

    @wrap_tool_call
    def peek(request, handler):
        got.append(
            (
                request.tool_call["name"],
                request.tool_call["args"],
                request.tool_call["id"],
                request.tool.name if request.tool else None,
                message_text(request.state["messages"][0]),
            )
        )
        return handler(request)

    clock = Clock()
    agent(native(ask_time()), [clock.tool], middleware=[peek]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert got == [("when", {"city": "Oslo"}, "t1", "when", "time?")]


def test_tool_wrapper_retries_after_the_tool_raises(agent):
    """A ToolRetryMiddleware-like wrapper: the tool's ValueError reaches the wrapper,
    which runs the tool again."""
    clock = Clock(failures=1)
    errors: list[str] = []

    @wrap_tool_call
    def retry(request, handler):
        for _ in range(3):
            try:
                return handler(request)
            except ValueError as exc:
                errors.append(str(exc))
        raise AssertionError("unreachable")

    out = agent(native(ask_time()), [clock.tool], middleware=[retry]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == ["Oslo", "Oslo"]
    assert errors == ["clock for Oslo is offline"]
    assert tool_results(out) == [("when", "noon in Oslo")]


def test_tool_wrapper_turns_the_exception_into_a_message(agent):
    clock = Clock(failures=5)

    @wrap_tool_call
    def catch(request, handler):
        try:
            return handler(request)
        except ValueError as exc:
            return ToolMessage(
                content=f"caught: {exc}",
                tool_call_id=request.tool_call["id"],
                name=request.tool_call["name"],
                status="error",
            )

    model = native(ask_time())
    out = agent(model, [clock.tool], middleware=[catch]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    [message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "error"
    assert "caught: clock for Oslo is offline" in message_text(message)
    assert "caught: clock for Oslo is offline" in seen(model.prompts[1])


def test_tool_wrapper_short_circuits(agent):
    clock = Clock()

    @wrap_tool_call
    def deny(request, handler):
        return ToolMessage(
            content="not allowed today", tool_call_id=request.tool_call["id"], name="when"
        )

    model = native(ask_time())
    out = agent(model, [clock.tool], middleware=[deny]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == []
    assert tool_results(out) == [("when", "not allowed today")]
    assert "not allowed today" in seen(model.prompts[1])


def test_tool_wrapper_rewrites_the_result(agent):
    clock = Clock()

    @wrap_tool_call
    def shout(request, handler):
        result = handler(request)
        return result.model_copy(update={"content": message_text(result).upper()})

    out = agent(native(ask_time()), [clock.tool], middleware=[shout]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == ["Oslo"]
    assert [text.upper() == text for _, text in tool_results(out)] == [True]
    assert "NOON IN OSLO" in tool_results(out)[0][1]


class Visits(AgentState):
    visits: Annotated[list[str], lambda a, b: a + b]


def test_tool_wrapper_returns_a_command(agent):
    clock = Clock()

    class Count(AgentMiddleware):
        state_schema = Visits

        def wrap_tool_call(self, request, handler):
            result = handler(request)
            return Command(update={"messages": [result], "visits": [request.tool_call["name"]]})

    out = agent(native(ask_time()), [clock.tool], middleware=[Count()]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert out["visits"] == ["when"]
    assert tool_results(out) == [("when", "noon in Oslo")]


def test_first_tool_wrapper_is_outermost(agent):
    log: list[str] = []

    def layer(label: str):
        @wrap_tool_call(name=f"Layer{label}")
        def wrapped(request, handler):
            log.append(f"{label}>")
            result = handler(request)
            log.append(f"<{label}")
            return result

        return wrapped

    clock = Clock()
    graph = agent(native(ask_time()), [clock.tool], middleware=[layer("A"), layer("B")])
    graph.invoke({"messages": [HumanMessage("time?")]})
    assert log == ["A>", "B>", "<B", "<A"]


def test_tool_wrapper_runs_once_per_call(agent):
    clock = Clock()
    seen_ids: list[str] = []

    @wrap_tool_call
    def count(request, handler):
        seen_ids.append(request.tool_call["id"])
        return handler(request)

    model = native(
        [
            calls(call("when", {"city": "Oslo"}, id="c1"), call("when", {"city": "Lima"}, id="c2")),
            "done",
        ]
    )
    out = agent(model, [clock.tool], middleware=[count]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert sorted(seen_ids) == ["c1", "c2"]
    assert sorted(clock.calls) == ["Lima", "Oslo"]
    assert [m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)] == ["c1", "c2"]


async def test_async_tool_wrapper_under_ainvoke(agent):
    clock = Clock()

    @wrap_tool_call
    async def to_rome(request, handler):
        changed = {**request.tool_call, "args": {"city": "Rome"}}
        return await handler(request.override(tool_call=changed))

    out = await agent(native(ask_time()), [clock.tool], middleware=[to_rome]).ainvoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == ["Rome"]
    assert tool_results(out) == [("when", "noon in Rome")]


# -- sync and async paths ------------------------------------------------------------


def one_sided(kind: str, side: str, log: list[str]) -> AgentMiddleware:
    """A middleware wrapping only model calls or only tool calls, only sync or only async."""

    class SyncModel(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            log.append("model")
            return handler(request)

    class AsyncModel(AgentMiddleware):
        async def awrap_model_call(self, request, handler):
            log.append("model")
            return await handler(request)

    class SyncTool(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            log.append("tool")
            return handler(request)

    class AsyncTool(AgentMiddleware):
        async def awrap_tool_call(self, request, handler):
            log.append("tool")
            return await handler(request)

    classes = {
        ("model", "sync"): SyncModel,
        ("model", "async"): AsyncModel,
        ("tool", "sync"): SyncTool,
        ("tool", "async"): AsyncTool,
    }
    return classes[kind, side]()


@pytest.mark.parametrize("kind", ["model", "tool"])
@pytest.mark.parametrize("side", ["sync", "async"])
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_one_sided_wrapper_runs_only_on_its_path(agent, kind, side, how):
    """ports test_sync_async_wrappers.py: a sync-only wrapper serves invoke, an async-only
    one ainvoke; on the other path the run fails with NotImplementedError (loopgraphs:
    raised, or the run ends with status "error") and the tool never runs."""
    log: list[str] = []
    ran: list[str] = []

    @tool
    def stamp(value: str) -> str:
        """Stamp a value."""
        ran.append(value)
        return f"stamped {value}"

    model = native([calls(call("stamp", {"value": "v"})), "done"])
    graph = agent(model, [stamp], middleware=[one_sided(kind, side, log)])
    request = {"messages": [HumanMessage("stamp v")]}
    matching = (side == "sync") == (how == "invoke")
    try:
        out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    except NotImplementedError:
        out = None
    if matching:
        assert out is not None
        assert ran == ["v"]
        assert log.count(kind) == (2 if kind == "model" else 1)
        assert tool_results(out) == [("stamp", "stamped v")]
    else:
        assert out is None or out.get("status") == "error"
        assert log == []
        assert ran == []
        assert ai_texts(out or {"messages": []})[-1:] != ["done"]


# -- json and text tool modes (ReAct only) --------------------------------------------


def test_json_text_request_tools_are_the_agent_tools(mode_agent):
    mode = mode_agent.tool_mode
    got: list[set[str]] = []

    @wrap_model_call
    def peek(request, handler):
        got.append(names(request.tools))
        return handler(request)

    model = model_for(mode, [final(mode, "ok")])
    mode_agent(model, ABC, middleware=[peek]).invoke({"messages": [HumanMessage("hi")]})
    assert got == [{"tool_a", "tool_b", "tool_c"}]


def test_json_text_narrowed_tools_change_what_the_model_is_offered(mode_agent):
    mode = mode_agent.tool_mode

    @wrap_model_call
    def only_b(request, handler):
        return handler(request.override(tools=[t for t in request.tools if t.name == "tool_b"]))

    model = model_for(mode, [act(mode, "tool_b", {"value": "v"}), final(mode, "done")])
    out = mode_agent(model, ABC, middleware=[only_b]).invoke({"messages": [HumanMessage("hi")]})
    prompt = seen(model.prompts[0])
    assert "files the value under B" in prompt
    assert "files the value under A" not in prompt
    assert "files the value under C" not in prompt
    assert tool_results(out) == [("tool_b", "B:v")]


def test_json_text_tool_wrapper_runs(mode_agent):
    mode = mode_agent.tool_mode
    clock = Clock()

    @wrap_tool_call
    def to_paris(request, handler):
        changed = {**request.tool_call, "args": {"city": "Paris"}}
        return handler(request.override(tool_call=changed))

    model = model_for(mode, [act(mode, "when", {"city": "Oslo"}), final(mode, "done")])
    out = mode_agent(model, [clock.tool], middleware=[to_paris]).invoke(
        {"messages": [HumanMessage("time?")]}
    )
    assert clock.calls == ["Paris"]
    assert tool_results(out) == [("when", "noon in Paris")]


# -- the other tool loops -------------------------------------------------------------


def test_other_loops_send_every_model_call_through_the_wrapper(loop_agent):
    @tool
    def search(query: str) -> str:
        """Search for an answer."""
        return "42"

    wrapped: list[int] = []

    @wrap_model_call
    def mark(request, handler):
        wrapped.append(1)
        text = f"{request.system_prompt or ''}\nHOUSE RULE 7."
        return handler(request.override(system_message=SystemMessage(text)))

    model = native(LOOP_SCRIPTS[loop_agent.kind]("search", {"query": "x"}))
    out = loop_agent(model, [search], middleware=[mark]).invoke(
        {"messages": [HumanMessage("What is the answer?")]}
    )
    assert len(wrapped) == model.call_count > 0
    assert all("HOUSE RULE 7." in system_text(p) for p in model.prompts)
    assert "42" in out["answer"]


def test_wrapper_sees_the_structured_call():
    """loopgraphs' structured response is its own request: the wrapper sees it with the
    response format of its level (native: ``ToolStrategy``) and may answer it."""
    seen: list[Any] = []

    @wrap_model_call
    def watch(request, handler):
        seen.append(request.response_format)
        return handler(request)

    model = native(
        ["It is 3 days of dry weather.", calls(call("Forecast", {"days": 3, "outlook": "dry"}))]
    )
    graph = middleware_support.factory("react")(
        model, [], middleware=[watch], response_format=Forecast
    )
    out = graph.invoke({"messages": [HumanMessage("weather?")]})
    assert seen[0] is None
    assert isinstance(seen[1], ToolStrategy) and seen[1].schema is Forecast
    assert out["structured_response"] == Forecast(days=3, outlook="dry")
