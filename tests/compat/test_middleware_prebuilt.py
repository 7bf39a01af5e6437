"""LangChain's prebuilt middleware inside the loop.

Ports of langchain ``agents/middleware/implementations/``: ``test_summarization.py``,
``test_human_in_the_loop.py``, ``test_model_call_limit.py``, ``test_tool_call_limit.py``,
``test_model_fallback.py``, ``test_model_retry.py``, ``test_tool_retry.py``,
``test_tool_selection.py``, ``test_pii.py``, ``test_todo.py`` and
``test_context_editing.py``, as far as they are about the agent's behaviour (what the
model sees, which tools run, the output, interrupts, counts) rather than a middleware's
internals.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    HumanInTheLoopMiddleware,
    LLMToolSelectorMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
    PIIDetectionError,
    PIIMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
)
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.compat import middleware_support
from tests.compat.middleware_support import (
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
from tests.compat.support import paused, seen

agent = middleware_support.agent

LIMIT = re.compile(r"limit", re.IGNORECASE)


class Desk:
    """Tools that record their calls: ``search`` and ``calculator``; ``flaky`` fails the
    first ``failures`` times with the given exception."""

    def __init__(self, failures: int = 0, error: type[Exception] = ValueError) -> None:
        self.ran: list[str] = []

        @tool
        def search(query: str) -> str:
            """Search the archive."""
            self.ran.append(f"search {query}")
            return f"found {query}"

        @tool
        def calculator(expression: str) -> str:
            """Evaluate an arithmetic expression."""
            self.ran.append(f"calc {expression}")
            return f"= {expression}"

        @tool
        def flaky(item: str) -> str:
            """Fetch an item from a flaky store."""
            self.ran.append(f"flaky {item}")
            if self.ran.count(f"flaky {item}") <= failures:
                raise error(f"store unavailable for {item}")
            return f"fetched {item}"

        self.search, self.calculator, self.flaky = search, calculator, flaky
        self.tools = [search, calculator, flaky]


THREAD = {"configurable": {"thread_id": "prebuilt"}}


# -- SummarizationMiddleware ----------------------------------------------------------


def long_history() -> list[Any]:
    return [
        HumanMessage("first question about apples"),
        AIMessage("first answer about apples"),
        HumanMessage("second question about pears"),
        AIMessage("second answer about pears"),
        HumanMessage("third question about plums"),
    ]


def test_summarization_replaces_old_messages_with_the_summary(agent):
    summarizer = native(["APPLES-AND-PEARS-SUMMARY"])
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 4), keep=("messages", 1))
    model = native(["plums are fine"])
    out = agent(model, [], middleware=[mw]).invoke({"messages": long_history()})
    assert summarizer.call_count == 1
    assert "first question about apples" in seen(summarizer.prompts[0])
    prompt = seen(model.prompts[0])
    assert "APPLES-AND-PEARS-SUMMARY" in prompt
    assert "first question about apples" not in prompt
    assert humans_seen(model.prompts[0])[-1] == "third question about plums"
    texts = [message_text(m) for m in out["messages"]]
    assert "APPLES-AND-PEARS-SUMMARY" in texts[0]
    assert texts[-2:] == ["third question about plums", "plums are fine"]
    assert not any("apples" in text for text in texts[1:])


def test_summarization_waits_for_the_trigger(agent):
    summarizer = native(["never"])
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 50), keep=("messages", 1))
    model = native(["ok"])
    out = agent(model, [], middleware=[mw]).invoke({"messages": long_history()})
    assert summarizer.call_count == 0
    assert "first question about apples" in seen(model.prompts[0])
    assert len(out["messages"]) == 6


def test_summarization_keeps_tool_calls_with_their_results(agent):
    """The kept tail never starts with a ToolMessage cut off from its AIMessage."""
    desk = Desk()
    summarizer = native(["SEARCH-SUMMARY"])
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 5), keep=("messages", 2))
    history = [
        HumanMessage("look up apples"),
        AIMessage("", tool_calls=[call("search", {"query": "apples"}, id="s1")]),
        ToolMessage("found apples", tool_call_id="s1", name="search"),
        AIMessage("apples found"),
        HumanMessage("now pears"),
    ]
    model = native(["pears next"])
    agent(model, desk.tools, middleware=[mw]).invoke({"messages": history})
    prompt = [m for m in model.prompts[0] if m.type != "system"]
    first_after_summary = prompt[1] if len(prompt) > 1 else None
    assert "SEARCH-SUMMARY" in message_text(prompt[0])
    assert not isinstance(first_after_summary, ToolMessage)
    ids = {c["id"] for m in prompt if isinstance(m, AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in ids for m in prompt if isinstance(m, ToolMessage))


# -- HumanInTheLoopMiddleware ---------------------------------------------------------


def approval_agent(agent, desk: Desk, interrupt_on: dict[str, Any], turns: list[Any]):
    model = native(turns)
    graph = agent(
        model,
        desk.tools,
        middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on)],
        checkpointer=InMemorySaver(),
    )
    return model, graph


def test_hitl_pauses_before_a_flagged_tool_and_approve_runs_it(agent):
    desk = Desk()
    turns = [calls(call("search", {"query": "apples"}, id="s1")), "done"]
    _, graph = approval_agent(agent, desk, {"search": True}, turns)
    graph.invoke({"messages": [HumanMessage("find apples")]}, THREAD)
    [request] = paused(graph, THREAD)
    [action] = request["action_requests"]
    assert (action["name"], action["args"]) == ("search", {"query": "apples"})
    assert set(request["review_configs"][0]["allowed_decisions"]) >= {"approve", "edit", "reject"}
    assert desk.ran == []
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
    assert desk.ran == ["search apples"]
    assert tool_results(out) == [("search", "found apples")]
    assert ai_texts(out)[-1] == "done"


def test_hitl_edit_runs_the_edited_call(agent):
    desk = Desk()
    turns = [calls(call("search", {"query": "apples"}, id="s1")), "done"]
    _, graph = approval_agent(agent, desk, {"search": True}, turns)
    graph.invoke({"messages": [HumanMessage("find apples")]}, THREAD)
    edit = {"type": "edit", "edited_action": {"name": "search", "args": {"query": "pears"}}}
    out = graph.invoke(Command(resume={"decisions": [edit]}), THREAD)
    assert desk.ran == ["search pears"]
    [(name, text)] = tool_results(out)
    assert name == "search"
    assert "found pears" in text and "found apples" not in text
    [message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.tool_call_id == "s1"


def test_hitl_reject_answers_the_call_without_running_it(agent):
    desk = Desk()
    turns = [calls(call("search", {"query": "apples"}, id="s1")), "understood"]
    model, graph = approval_agent(agent, desk, {"search": True}, turns)
    graph.invoke({"messages": [HumanMessage("find apples")]}, THREAD)
    reject = {"type": "reject", "message": "not allowed to search apples"}
    out = graph.invoke(Command(resume={"decisions": [reject]}), THREAD)
    assert desk.ran == []
    [message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.tool_call_id == "s1"
    assert "not allowed to search apples" in message_text(message)
    assert "not allowed to search apples" in seen(model.prompts[-1])
    assert ai_texts(out)[-1] == "understood"


def test_hitl_respond_answers_for_the_tool(agent):
    """A human's answer stands in for the tool: it reaches the model as a successful
    result and the tool does not run."""
    desk = Desk()
    turns = [calls(call("search", {"query": "plans"}, id="s1")), "thanks"]
    model, graph = approval_agent(
        agent, desk, {"search": {"allowed_decisions": ["respond"]}}, turns
    )
    graph.invoke({"messages": [HumanMessage("what are the plans?")]}, THREAD)
    respond = {"type": "respond", "message": "the plans are secret"}
    out = graph.invoke(Command(resume={"decisions": [respond]}), THREAD)
    assert desk.ran == []
    [message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.tool_call_id == "s1"
    assert message.status != "error"
    assert "the plans are secret" in message_text(message)
    assert "the plans are secret" in seen(model.prompts[-1])


def test_hitl_thread_is_paused_until_resumed(agent):
    """While paused, the flagged call has not run and the model was called once."""
    desk = Desk()
    turns = [calls(call("search", {"query": "a"}, id="s1")), "done"]
    model, graph = approval_agent(agent, desk, {"search": True}, turns)
    graph.invoke({"messages": [HumanMessage("go")]}, THREAD)
    assert graph.get_state(THREAD).next
    assert model.call_count == 1
    assert desk.ran == []
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
    assert not graph.get_state(THREAD).next
    assert model.call_count == 2


def test_hitl_unflagged_tools_run_without_a_pause(agent):
    desk = Desk()
    turns = [
        calls(call("search", {"query": "a"}, id="s1"), call("calculator", {"expression": "1+1"})),
        "done",
    ]
    _, graph = approval_agent(agent, desk, {"search": True, "calculator": False}, turns)
    graph.invoke({"messages": [HumanMessage("go")]}, THREAD)
    [request] = paused(graph, THREAD)
    assert [a["name"] for a in request["action_requests"]] == ["search"]
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
    assert sorted(desk.ran) == ["calc 1+1", "search a"]
    assert sorted(name for name, _ in tool_results(out)) == ["calculator", "search"]


def test_hitl_one_pause_for_several_flagged_calls_decided_in_order(agent):
    desk = Desk()
    turns = [
        calls(call("search", {"query": "a"}, id="s1"), call("search", {"query": "b"}, id="s2")),
        "done",
    ]
    _, graph = approval_agent(agent, desk, {"search": True}, turns)
    graph.invoke({"messages": [HumanMessage("go")]}, THREAD)
    [request] = paused(graph, THREAD)
    assert [a["args"] for a in request["action_requests"]] == [{"query": "a"}, {"query": "b"}]
    decisions = [{"type": "approve"}, {"type": "reject", "message": "skip b"}]
    out = graph.invoke(Command(resume={"decisions": decisions}), THREAD)
    assert desk.ran == ["search a"]
    by_id = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert "found a" in middleware_support.tool_text(by_id["s1"])
    assert "skip b" in message_text(by_id["s2"])


def test_hitl_allowed_decisions_and_description_reach_the_request(agent):
    desk = Desk()
    config = {"allowed_decisions": ["approve", "reject"], "description": "Check the query"}
    turns = [calls(call("search", {"query": "a"})), "done"]
    _, graph = approval_agent(agent, desk, {"search": config}, turns)
    graph.invoke({"messages": [HumanMessage("go")]}, THREAD)
    [request] = paused(graph, THREAD)
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    assert "Check the query" in request["action_requests"][0]["description"]


# -- ModelCallLimitMiddleware ---------------------------------------------------------


def test_model_call_run_limit_ends_the_run(agent):
    desk = Desk()
    model = native([calls(call("search", {"query": "a"})), "never reached"])
    mw = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    out = agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    assert model.call_count == 1
    assert LIMIT.search(ai_texts(out)[-1])
    assert "never reached" not in ai_texts(out)


def test_model_call_thread_limit_counts_across_runs(agent):
    model = native(["one", "two", "three"])
    mw = ModelCallLimitMiddleware(thread_limit=2, exit_behavior="end")
    graph = agent(model, [], middleware=[mw], checkpointer=InMemorySaver())
    graph.invoke({"messages": [HumanMessage("1")]}, THREAD)
    graph.invoke({"messages": [HumanMessage("2")]}, THREAD)
    out = graph.invoke({"messages": [HumanMessage("3")]}, THREAD)
    assert model.call_count == 2
    assert LIMIT.search(ai_texts(out)[-1])


def test_model_call_run_limit_resets_per_run(agent):
    """Each run of a thread gets its own budget: the second run makes its one call and
    is stopped at its second."""
    desk = Desk()
    model = native(["one", calls(call("search", {"query": "a"})), "never"])
    mw = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    graph = agent(model, desk.tools, middleware=[mw], checkpointer=InMemorySaver())
    first = graph.invoke({"messages": [HumanMessage("1")]}, THREAD)
    assert ai_texts(first)[-1] == "one"
    out = graph.invoke({"messages": [HumanMessage("2")]}, THREAD)
    assert model.call_count == 2
    assert "never" not in ai_texts(out)
    assert LIMIT.search(ai_texts(out)[-1])


def test_model_call_limit_error_behaviour(agent):
    desk = Desk()
    model = native([calls(call("search", {"query": "a"})), "never"])
    mw = ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")
    graph = agent(model, desk.tools, middleware=[mw])
    assert raised_or_failed(graph, {"messages": [HumanMessage("go")]}, ModelCallLimitExceededError)
    assert model.call_count == 1


# -- ToolCallLimitMiddleware ----------------------------------------------------------


def test_tool_call_limit_continue_blocks_the_excess_calls(agent):
    desk = Desk()
    model = native(
        [
            calls(*(call("search", {"query": q}, id=q) for q in ("q1", "q2", "q3"))),
            "stopped",
        ]
    )
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="continue")
    out = agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    assert desk.ran == ["search q1"]
    messages = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert set(messages) == {"q1", "q2", "q3"}
    assert messages["q2"].status == "error" and LIMIT.search(message_text(messages["q2"]))
    assert messages["q3"].status == "error"
    assert model.call_count == 2
    assert ai_texts(out)[-1] == "stopped"


def test_tool_call_limit_per_tool(agent):
    desk = Desk()
    model = native(
        [
            calls(call("search", {"query": "a"}), call("calculator", {"expression": "1"})),
            calls(call("search", {"query": "b"}), call("calculator", {"expression": "2"})),
            "done",
        ]
    )
    mw = ToolCallLimitMiddleware(tool_name="search", run_limit=1)
    agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    assert sorted(desk.ran) == ["calc 1", "calc 2", "search a"]


def test_tool_call_limit_error_behaviour(agent):
    desk = Desk()
    model = native([calls(call("search", {"query": "a"})), calls(call("search", {"query": "b"}))])
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")
    graph = agent(model, desk.tools, middleware=[mw])
    request = {"messages": [HumanMessage("go")]}
    assert raised_or_failed(graph, request, ToolCallLimitExceededError)
    assert desk.ran == ["search a"]


def test_tool_call_limit_end_stops_before_the_next_model_call(agent):
    desk = Desk()
    model = native(
        [
            calls(call("search", {"query": "a"})),
            calls(call("search", {"query": "b"})),
            "never",
        ]
    )
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")
    out = agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    assert desk.ran == ["search a"]
    assert model.call_count == 2
    assert "never" not in ai_texts(out)
    assert LIMIT.search(seen(out["messages"]))


def test_tool_call_thread_limit_counts_across_runs(agent):
    desk = Desk()
    model = native(
        [
            calls(call("search", {"query": "a"})),
            "first done",
            calls(call("search", {"query": "b"})),
            "second done",
        ]
    )
    mw = ToolCallLimitMiddleware(thread_limit=1)
    graph = agent(model, desk.tools, middleware=[mw], checkpointer=InMemorySaver())
    graph.invoke({"messages": [HumanMessage("1")]}, THREAD)
    out = graph.invoke({"messages": [HumanMessage("2")]}, THREAD)
    assert desk.ran == ["search a"]
    last = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert last.status == "error"


# -- ModelFallbackMiddleware ----------------------------------------------------------


def test_fallback_model_answers_when_the_primary_fails(agent):
    primary = native([RuntimeError("primary down")])
    backup = native(["backup answer"])
    graph = agent(primary, [], middleware=[ModelFallbackMiddleware(backup)])
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert primary.call_count == 1
    assert backup.call_count == 1
    assert humans_seen(backup.prompts[0]) == ["hi"]
    assert ai_texts(out) == ["backup answer"]


def test_fallback_chain_in_order(agent):
    primary = native([RuntimeError("down")])
    second = native([RuntimeError("also down")])
    third = native(["third answer"])
    graph = agent(primary, [], middleware=[ModelFallbackMiddleware(second, third)])
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert (primary.call_count, second.call_count, third.call_count) == (1, 1, 1)
    assert ai_texts(out) == ["third answer"]


def test_fallback_not_used_when_the_primary_works(agent):
    primary = native(["primary answer"])
    backup = native(["never"])
    out = agent(primary, [], middleware=[ModelFallbackMiddleware(backup)]).invoke(
        {"messages": [HumanMessage("hi")]}
    )
    assert backup.call_count == 0
    assert ai_texts(out) == ["primary answer"]


def test_fallback_model_gets_the_tools(agent):
    desk = Desk()
    primary = native([RuntimeError("down"), RuntimeError("down")])
    backup = native([calls(call("search", {"query": "x"})), "done"])
    graph = agent(primary, desk.tools, middleware=[ModelFallbackMiddleware(backup)])
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert set(backup.tool_sets[0]) == {"search", "calculator", "flaky"}
    assert desk.ran == ["search x"]
    assert ai_texts(out)[-1] == "done"


def test_all_fallbacks_failing_fails_the_run(agent):
    backup = native([RuntimeError("backup down")])
    graph = agent(native([RuntimeError("down")]), [], middleware=[ModelFallbackMiddleware(backup)])
    assert raised_or_failed(graph, {"messages": [HumanMessage("hi")]}, RuntimeError)
    assert backup.call_count == 1


# -- ModelRetryMiddleware -------------------------------------------------------------


def fast_model_retry(**kw: Any) -> ModelRetryMiddleware:
    return ModelRetryMiddleware(initial_delay=0, jitter=False, **kw)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_model_retry_recovers(agent, how):
    model = native([RuntimeError("blip"), RuntimeError("blip"), "third time"])
    graph = agent(model, [], middleware=[fast_model_retry(max_retries=2)])
    request = {"messages": [HumanMessage("hi")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert model.call_count == 3
    assert ai_texts(out) == ["third time"]


def test_model_retry_continue_answers_with_the_error(agent):
    model = native([RuntimeError("still broken")] * 3)
    graph = agent(model, [], middleware=[fast_model_retry(max_retries=2, on_failure="continue")])
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert model.call_count == 3
    assert "still broken" in seen(out["messages"])


def test_model_retry_error_raises_after_the_retries(agent):
    model = native([RuntimeError("broken")] * 2)
    graph = agent(model, [], middleware=[fast_model_retry(max_retries=1, on_failure="error")])
    assert raised_or_failed(graph, {"messages": [HumanMessage("hi")]}, RuntimeError)
    assert model.call_count == 2


def test_model_retry_only_retries_the_listed_errors(agent):
    model = native([KeyError("not transient"), "never"])
    mw = fast_model_retry(max_retries=2, retry_on=(TimeoutError,), on_failure="error")
    graph = agent(model, [], middleware=[mw])
    assert raised_or_failed(graph, {"messages": [HumanMessage("hi")]}, KeyError)
    assert model.call_count == 1


# -- ToolRetryMiddleware --------------------------------------------------------------


def fast_tool_retry(**kw: Any) -> ToolRetryMiddleware:
    return ToolRetryMiddleware(initial_delay=0, jitter=False, **kw)


def flaky_script(item: str = "box") -> list[Any]:
    return [calls(call("flaky", {"item": item}, id="f1")), "done"]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_tool_retry_recovers(agent, how):
    desk = Desk(failures=2)
    graph = agent(native(flaky_script()), desk.tools, middleware=[fast_tool_retry(max_retries=2)])
    request = {"messages": [HumanMessage("fetch")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert desk.ran == ["flaky box"] * 3
    assert tool_results(out) == [("flaky", "fetched box")]


def test_tool_retry_gives_up_with_an_error_message(agent):
    desk = Desk(failures=10)
    model = native(flaky_script())
    graph = agent(model, desk.tools, middleware=[fast_tool_retry(max_retries=1)])
    out = graph.invoke({"messages": [HumanMessage("fetch")]})
    assert desk.ran == ["flaky box"] * 2
    [message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "error"
    assert "store unavailable for box" in message_text(message)
    assert "store unavailable for box" in seen(model.prompts[1])


def failed_once(graph: Any, request: Any) -> bool:
    """The tool's error ended the run (create_agent re-raises it) or reached the model as
    an error ToolMessage (loopgraphs)."""
    try:
        out = graph.invoke(request)
    except ValueError as exc:
        return "store unavailable for box" in str(exc)
    messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return [m.status for m in messages] == ["error"] and "store unavailable" in seen(messages)


def test_tool_retry_only_for_the_named_tools(agent):
    desk = Desk(failures=1)
    graph = agent(
        native(flaky_script()), desk.tools, middleware=[fast_tool_retry(tools=["search"])]
    )
    assert failed_once(graph, {"messages": [HumanMessage("fetch")]})
    assert desk.ran == ["flaky box"]


def test_tool_retry_only_for_the_listed_errors(agent):
    desk = Desk(failures=1, error=ValueError)
    mw = fast_tool_retry(max_retries=2, retry_on=(ConnectionError,))
    graph = agent(native(flaky_script()), desk.tools, middleware=[mw])
    assert failed_once(graph, {"messages": [HumanMessage("fetch")]})
    assert desk.ran == ["flaky box"]


def test_tool_retry_leaves_working_tools_alone(agent):
    desk = Desk()
    model = native([calls(call("search", {"query": "q"})), "done"])
    out = agent(model, desk.tools, middleware=[fast_tool_retry(max_retries=3)]).invoke(
        {"messages": [HumanMessage("go")]}
    )
    assert desk.ran == ["search q"]
    assert tool_results(out) == [("search", "found q")]


# -- LLMToolSelectorMiddleware --------------------------------------------------------


def test_tool_selector_narrows_the_offered_tools(agent):
    desk = Desk()
    selector = native(['{"tools": ["calculator"]}'], repeat_last=True)
    model = native([calls(call("calculator", {"expression": "6*7"})), "42"])
    mw = LLMToolSelectorMiddleware(model=selector)
    graph = agent(model, desk.tools, middleware=[mw])
    out = graph.invoke({"messages": [HumanMessage("what is six times seven?")]})
    assert selector.call_count >= 1
    assert "six times seven" in seen(selector.prompts[0])
    assert model.tool_sets == [["calculator"]] * model.call_count
    assert desk.ran == ["calc 6*7"]
    assert ai_texts(out)[-1] == "42"


def test_tool_selector_always_include_and_max_tools(agent):
    desk = Desk()
    selector = native(['{"tools": ["calculator", "flaky"]}'])
    model = native(["ok"])
    mw = LLMToolSelectorMiddleware(model=selector, max_tools=1, always_include=["search"])
    agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("hi")]})
    assert set(model.tool_sets[0]) == {"search", "calculator"}
    [schema] = selector.schemas
    choices = json.dumps(schema.json_schema() if hasattr(schema, "json_schema") else schema)
    assert "calculator" in choices and "flaky" in choices
    assert "search" not in choices


def test_tool_selector_defaults_to_the_agent_model(agent):
    desk = Desk()
    model = native(['{"tools": ["search"]}', "answer"])
    agent(model, desk.tools, middleware=[LLMToolSelectorMiddleware()]).invoke(
        {"messages": [HumanMessage("find it")]}
    )
    assert model.call_count == 2
    assert model.tool_sets[-1] == ["search"]


# -- PIIMiddleware --------------------------------------------------------------------


def test_pii_redacts_the_user_input(agent):
    model = native(["noted"])
    mw = PIIMiddleware("email", strategy="redact")
    out = agent(model, [], middleware=[mw]).invoke(
        {"messages": [HumanMessage("mail me at ada@example.com please")]}
    )
    prompt = seen(model.prompts[0])
    assert "ada@example.com" not in prompt
    assert "[REDACTED_EMAIL]" in prompt
    assert "ada@example.com" not in seen(out["messages"])


def test_pii_masks_a_credit_card(agent):
    model = native(["noted"])
    mw = PIIMiddleware("credit_card", strategy="mask")
    agent(model, [], middleware=[mw]).invoke(
        {"messages": [HumanMessage("card 4532015112830366 thanks")]}
    )
    prompt = seen(model.prompts[0])
    assert "4532015112830366" not in prompt
    assert "0366" in prompt


def test_pii_block_stops_the_run(agent):
    model = native(["never"])
    graph = agent(model, [], middleware=[PIIMiddleware("email", strategy="block")])
    request = {"messages": [HumanMessage("I am ada@example.com")]}
    assert raised_or_failed(graph, request, PIIDetectionError)
    assert model.call_count == 0


def test_pii_in_tool_results(agent):
    @tool
    def directory(name: str) -> str:
        """Look a person up."""
        return f"{name}: grace@example.org"

    model = native([calls(call("directory", {"name": "Grace"})), "found her"])
    mw = PIIMiddleware("email", strategy="redact", apply_to_tool_results=True)
    agent(model, [directory], middleware=[mw]).invoke({"messages": [HumanMessage("find Grace")]})
    prompt = seen(model.prompts[1])
    assert "grace@example.org" not in prompt
    assert "[REDACTED_EMAIL]" in prompt


def test_pii_in_the_model_output(agent):
    model = native(["write to bob@example.net"])
    mw = PIIMiddleware("email", strategy="redact", apply_to_input=False, apply_to_output=True)
    out = agent(model, [], middleware=[mw]).invoke({"messages": [HumanMessage("who?")]})
    assert "bob@example.net" not in ai_texts(out)[-1]
    assert "[REDACTED_EMAIL]" in ai_texts(out)[-1]


def test_pii_custom_detector(agent):
    model = native(["ok"])
    mw = PIIMiddleware("api_key", detector=r"sk-[a-z0-9]{8}", strategy="redact")
    agent(model, [], middleware=[mw]).invoke({"messages": [HumanMessage("key sk-abcd1234 here")]})
    prompt = seen(model.prompts[0])
    assert "sk-abcd1234" not in prompt
    assert "[REDACTED_API_KEY]" in prompt


# -- TodoListMiddleware ---------------------------------------------------------------


def test_todo_tool_is_offered_and_updates_the_state(agent):
    todos = [
        {"content": "read the brief", "status": "completed"},
        {"content": "write the report", "status": "in_progress"},
    ]
    model = native([calls(call("write_todos", {"todos": todos})), "report written"])
    out = agent(model, [], middleware=[TodoListMiddleware()]).invoke(
        {"messages": [HumanMessage("plan and do it")]}
    )
    assert "write_todos" in model.tool_sets[0]
    assert "write_todos" in system_text(model.prompts[0])
    assert out["todos"] == todos
    assert ai_texts(out)[-1] == "report written"
    assert "write the report" in seen(model.prompts[1])


def test_todo_custom_system_prompt(agent):
    model = native(["ok"])
    mw = TodoListMiddleware(system_prompt="Track work with write_todos, ALWAYS.")
    agent(model, [], middleware=[mw], system_prompt="You are careful.").invoke(
        {"messages": [HumanMessage("hi")]}
    )
    system = system_text(model.prompts[0])
    assert system.startswith("You are careful.")
    assert "Track work with write_todos, ALWAYS." in system


# -- ContextEditingMiddleware ---------------------------------------------------------


def test_context_editing_clears_old_tool_results(agent):
    desk = Desk()
    model = native(
        [
            calls(call("search", {"query": "alpha"})),
            calls(call("search", {"query": "beta"})),
            calls(call("search", {"query": "gamma"})),
            "done",
        ]
    )
    edit = ClearToolUsesEdit(trigger=1, keep=1, placeholder="[cleared]")
    mw = ContextEditingMiddleware(edits=[edit])
    out = agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    last = seen(model.prompts[-1])
    assert "found gamma" in last
    assert "found alpha" not in last
    assert "[cleared]" in last
    assert desk.ran == ["search alpha", "search beta", "search gamma"]
    assert ai_texts(out)[-1] == "done"


def test_context_editing_below_the_trigger_changes_nothing(agent):
    desk = Desk()
    model = native([calls(call("search", {"query": "alpha"})), "done"])
    mw = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=100_000, keep=0)])
    agent(model, desk.tools, middleware=[mw]).invoke({"messages": [HumanMessage("go")]})
    assert "found alpha" in seen(model.prompts[1])
    assert "[cleared]" not in seen(model.prompts[1])


def test_context_editing_excluded_tools_keep_their_results(agent):
    desk = Desk()
    model = native(
        [
            calls(call("calculator", {"expression": "1+1"})),
            calls(call("search", {"query": "alpha"})),
            calls(call("search", {"query": "beta"})),
            "done",
        ]
    )
    edit = ClearToolUsesEdit(trigger=1, keep=1, exclude_tools=["calculator"])
    agent(model, desk.tools, middleware=[ContextEditingMiddleware(edits=[edit])]).invoke(
        {"messages": [HumanMessage("go")]}
    )
    last = seen(model.prompts[-1])
    assert "= 1+1" in last
    assert "found alpha" not in last
    assert "found beta" in last
