"""LangChain's prebuilt middleware in ReAct's json and text tool modes, and in
Plan-and-Execute and Reflexion.

``test_middleware_prebuilt.py`` runs each prebuilt middleware against create_agent and
ReAct in native mode. Here the same middleware runs:

* in ReAct with ``tool_mode="json"`` and ``"text"``, where the tool calls are parsed from
  the reply text (replies written with ``act``/``final`` for the mode);
* in Plan-and-Execute and Reflexion (native mode), where the hooks run around every
  model-calling step of the outer loop and of each inner ReAct run, the wrappers wrap
  every request and the middleware's state keys travel into and out of the inner runs.

Each case states the effect a user of the middleware expects: what the model received,
which tools ran, the pause and resume of an approval, the limit reached, the fallback
model's answer, the retries, the redaction, the todo list, the cleared tool results and
the summary in place of the old messages.
"""

from __future__ import annotations

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
    PIIMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.compat import middleware_support
from tests.compat import test_middleware_prebuilt as prebuilt
from tests.compat.middleware_support import (
    call,
    calls,
    factory,
    message_text,
    native,
    system_text,
    tool_results,
)
from tests.compat.support import paused, seen
from tests.support.scripts import act, final, model_for

mode_agent = middleware_support.mode_agent

LIMIT = re.compile(r"limit", re.IGNORECASE)
EMAIL = "ada@example.com"
TODOS = [
    {"content": "read the brief", "status": "completed"},
    {"content": "write the report", "status": "in_progress"},
]


class Desk(prebuilt.Desk):
    """The prebuilt suite's recording tools, with ``flaky`` failing by a connection
    error."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__(failures, ConnectionError)


def long_history() -> list[BaseMessage]:
    return [
        HumanMessage("first question about apples"),
        AIMessage("first answer about apples"),
        HumanMessage("second question about pears"),
        AIMessage("second answer about pears"),
        HumanMessage("third question about plums"),
    ]


def go(text: str = "go") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def all_prompts(model: Any) -> str:
    """Everything a scripted model was shown, over all its calls."""
    return "\n\n".join(seen(prompt) for prompt in model.prompts)


def fast_model_retry(**kw: Any) -> ModelRetryMiddleware:
    return ModelRetryMiddleware(initial_delay=0.001, jitter=False, **kw)


def fast_tool_retry(**kw: Any) -> ToolRetryMiddleware:
    return ToolRetryMiddleware(initial_delay=0.001, jitter=False, **kw)


# =====================================================================================
# (a) ReAct in the json and text tool modes
# =====================================================================================


def scripted(mode_agent: Any, replies: list[Any], **kwargs: Any) -> Any:
    return model_for(mode_agent.tool_mode, replies, **kwargs)


def test_modes_summarization_replaces_old_messages(mode_agent):
    mode = mode_agent.tool_mode
    summarizer = native(["APPLES-AND-PEARS-SUMMARY"])
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 4), keep=("messages", 1))
    model = scripted(mode_agent, [final(mode, "plums are fine")])
    out = mode_agent(model, Desk().tools, middleware=[mw]).invoke({"messages": long_history()})
    assert summarizer.call_count == 1
    assert "first question about apples" in seen(summarizer.prompts[0])
    prompt = seen(model.prompts[0])
    assert "APPLES-AND-PEARS-SUMMARY" in prompt
    assert "apples" not in prompt.replace("APPLES-AND-PEARS", "")
    assert "third question about plums" in prompt
    texts = [message_text(m) for m in out["messages"]]
    assert "APPLES-AND-PEARS-SUMMARY" in texts[0]
    assert not any("apples" in text for text in texts[1:])
    assert out["answer"] == "plums are fine"


def test_modes_hitl_approve_runs_the_parsed_call(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    model = scripted(mode_agent, [act(mode, "search", {"query": "apples"}), final(mode, "done")])
    mw = HumanInTheLoopMiddleware(interrupt_on={"search": True})
    graph = mode_agent(model, desk.tools, middleware=[mw], checkpointer=InMemorySaver())
    config = thread(f"hitl-approve-{mode}")
    graph.invoke(go("find apples"), config)
    [request] = paused(graph, config)
    [action] = request["action_requests"]
    assert (action["name"], action["args"]) == ("search", {"query": "apples"})
    assert desk.ran == []
    assert model.call_count == 1
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert desk.ran == ["search apples"]
    assert tool_results(out) == [("search", "found apples")]
    assert "found apples" in seen(model.prompts[-1])
    assert out["answer"] == "done"


def test_modes_hitl_edit_and_reject(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    replies = [
        act(mode, "search", {"query": "apples"}),
        act(mode, "calculator", {"expression": "6*7"}),
        final(mode, "understood"),
    ]
    model = scripted(mode_agent, replies)
    mw = HumanInTheLoopMiddleware(interrupt_on={"search": True, "calculator": True})
    graph = mode_agent(model, desk.tools, middleware=[mw], checkpointer=InMemorySaver())
    config = thread(f"hitl-edit-{mode}")
    graph.invoke(go("find apples"), config)
    edit = {"type": "edit", "edited_action": {"name": "search", "args": {"query": "pears"}}}
    graph.invoke(Command(resume={"decisions": [edit]}), config)
    assert desk.ran == ["search pears"]
    [request] = paused(graph, config)
    assert request["action_requests"][0]["name"] == "calculator"
    reject = {"type": "reject", "message": "no arithmetic today"}
    out = graph.invoke(Command(resume={"decisions": [reject]}), config)
    assert desk.ran == ["search pears"]
    assert "no arithmetic today" in seen(model.prompts[-1])
    assert out["answer"] == "understood"


def test_modes_model_call_limit_ends_the_run(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    model = scripted(mode_agent, [act(mode, "search", {"query": "a"}), final(mode, "never")])
    mw = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    out = mode_agent(model, desk.tools, middleware=[mw]).invoke(go())
    assert model.call_count == 1
    assert desk.ran == ["search a"]
    assert "never" not in out["answer"]
    assert LIMIT.search(message_text(out["messages"][-1]))


def test_modes_tool_call_limit_blocks_the_excess_call(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    replies = [
        act(mode, "search", {"query": "a"}),
        act(mode, "search", {"query": "b"}),
        final(mode, "stopped"),
    ]
    model = scripted(mode_agent, replies)
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="continue")
    out = mode_agent(model, desk.tools, middleware=[mw]).invoke(go())
    assert desk.ran == ["search a"]
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "error"]
    assert LIMIT.search(message_text(results[1]))
    assert LIMIT.search(seen(model.prompts[2]))
    assert out["answer"] == "stopped"


def test_modes_fallback_model_takes_over(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    primary = scripted(mode_agent, [RuntimeError("primary down")], repeat_last=True)
    backup = scripted(mode_agent, [act(mode, "search", {"query": "x"}), final(mode, "backup")])
    graph = mode_agent(primary, desk.tools, middleware=[ModelFallbackMiddleware(backup)])
    out = graph.invoke(go("find x"))
    assert primary.call_count == backup.call_count == 2
    assert "Search the archive." in seen(backup.prompts[0])
    assert desk.ran == ["search x"]
    assert out["answer"] == "backup"


def test_modes_model_retry_recovers(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    replies = [
        RuntimeError("blip"),
        act(mode, "search", {"query": "x"}),
        RuntimeError("blip"),
        final(mode, "recovered"),
    ]
    model = scripted(mode_agent, replies)
    graph = mode_agent(model, desk.tools, middleware=[fast_model_retry(max_retries=1)])
    out = graph.invoke(go())
    assert model.call_count == 4
    assert desk.ran == ["search x"]
    assert out["answer"] == "recovered"
    assert out["status"] == "completed"


def test_modes_tool_retry_recovers(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk(failures=2)
    model = scripted(mode_agent, [act(mode, "flaky", {"item": "box"}), final(mode, "got it")])
    graph = mode_agent(model, desk.tools, middleware=[fast_tool_retry(max_retries=2)])
    out = graph.invoke(go())
    assert desk.ran == ["flaky box"] * 3
    assert tool_results(out) == [("flaky", "fetched box")]
    assert "store unavailable" not in seen(model.prompts[1])
    assert out["answer"] == "got it"


def test_modes_tool_selector_narrows_the_described_tools(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    selector = native(['{"tools": ["calculator"]}'], repeat_last=True)
    replies = [act(mode, "calculator", {"expression": "6*7"}), final(mode, "42")]
    model = scripted(mode_agent, replies)
    graph = mode_agent(model, desk.tools, middleware=[LLMToolSelectorMiddleware(model=selector)])
    out = graph.invoke(go("what is six times seven?"))
    assert "six times seven" in seen(selector.prompts[0])
    for prompt in model.prompts:
        assert "Evaluate an arithmetic expression." in seen(prompt)
        assert "Search the archive." not in seen(prompt)
        assert "Fetch an item from a flaky store." not in seen(prompt)
    assert desk.ran == ["calc 6*7"]
    assert out["answer"] == "42"


def test_modes_pii_redacts_input_and_tool_results(mode_agent):
    mode = mode_agent.tool_mode

    @tool
    def directory(name: str) -> str:
        """Look a person up."""
        return f"{name}: grace@example.org"

    model = scripted(mode_agent, [act(mode, "directory", {"name": "Grace"}), final(mode, "ok")])
    mw = PIIMiddleware("email", strategy="redact", apply_to_tool_results=True)
    out = mode_agent(model, [directory], middleware=[mw]).invoke(go(f"I am {EMAIL}, find Grace"))
    assert EMAIL not in all_prompts(model)
    assert "grace@example.org" not in seen(model.prompts[1])
    assert "[REDACTED_EMAIL]" in seen(model.prompts[1])
    assert EMAIL not in seen(out["messages"])


def test_modes_pii_redacts_the_answer(mode_agent):
    mode = mode_agent.tool_mode
    model = scripted(mode_agent, [final(mode, "write to bob@example.net")])
    mw = PIIMiddleware("email", strategy="redact", apply_to_input=False, apply_to_output=True)
    out = mode_agent(model, Desk().tools, middleware=[mw]).invoke(go("who?"))
    assert "bob@example.net" not in seen(out["messages"])
    assert "bob@example.net" not in out["answer"]
    assert "[REDACTED_EMAIL]" in out["answer"]


def test_modes_todo_list_updates_the_state(mode_agent):
    mode = mode_agent.tool_mode
    replies = [act(mode, "write_todos", {"todos": TODOS}), final(mode, "report written")]
    model = scripted(mode_agent, replies)
    out = mode_agent(model, [], middleware=[TodoListMiddleware()]).invoke(go("plan and do it"))
    assert "write_todos" in system_text(model.prompts[0])
    assert out["todos"] == TODOS
    assert "write the report" in seen(model.prompts[1])
    assert out["answer"] == "report written"


def test_modes_context_editing_clears_old_tool_results(mode_agent):
    mode = mode_agent.tool_mode
    desk = Desk()
    replies = [
        act(mode, "search", {"query": "alpha"}),
        act(mode, "search", {"query": "beta"}),
        act(mode, "search", {"query": "gamma"}),
        final(mode, "done"),
    ]
    model = scripted(mode_agent, replies)
    edit = ClearToolUsesEdit(trigger=1, keep=1, placeholder="[cleared]")
    mw = ContextEditingMiddleware(edits=[edit])
    out = mode_agent(model, desk.tools, middleware=[mw]).invoke(go())
    last = seen(model.prompts[-1])
    assert "found gamma" in last
    assert "found alpha" not in last
    assert "[cleared]" in last
    assert desk.ran == ["search alpha", "search beta", "search gamma"]
    assert out["answer"] == "done"


# =====================================================================================
# (b) Plan-and-Execute and Reflexion (native mode)
# =====================================================================================

LOOPS = ["plan_execute", "reflexion"]


def plan(*steps: str) -> AIMessage:
    return calls(call("Plan", {"steps": list(steps)}))


def verdict(satisfactory: bool = True, feedback: str = "") -> AIMessage:
    return calls(call("Evaluation", {"satisfactory": satisfactory, "feedback": feedback}))


def around(loop: str, episode: list[Any]) -> list[Any]:
    """A whole run of ``loop`` around one ReAct run (``episode``): Plan-and-Execute plans
    one step, runs it and writes the answer; Reflexion runs the episode and judges its
    answer satisfactory."""
    if loop == "plan_execute":
        return [plan("look it up"), *episode, "The answer is 42."]
    return [*episode, verdict()]


def two_runs(loop: str, first: list[Any], second: list[Any]) -> list[Any]:
    """Two ReAct runs: two plan steps, or an episode judged unsatisfactory, a reflection
    and a second episode."""
    if loop == "plan_execute":
        return [plan("first step", "second step"), *first, *second, "The answer is 42."]
    return [*first, verdict(False, "check again"), "Check it again.", *second, verdict()]


def loops(**broken: str) -> pytest.MarkDecorator:
    """Parametrise ``loop`` over both loops; ``broken`` names the loops where the case is
    a known failure, with the reason."""
    return pytest.mark.parametrize(
        "loop",
        [
            pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=broken[name]))
            if name in broken
            else name
            for name in LOOPS
        ],
    )


def build(loop: str, model: Any, tools: list[Any], middleware: list[Any], **kw: Any) -> Any:
    return factory(loop)(model, tools, middleware=middleware, **kw)


def react_calls(model: Any, loop: str) -> list[int]:
    """Indexes of the inner ReAct calls of a run of ``around``: all but the planner and
    the synthesis (Plan-and-Execute) or the evaluator (Reflexion)."""
    if loop == "plan_execute":
        return list(range(1, model.call_count - 1))
    return list(range(model.call_count - 1))


@loops()
def test_loops_summarization_replaces_old_messages(loop):
    """The history (7 messages) is summarised once, before the first model call; the
    summary, the kept question and the run's own messages (5 in all after Reflexion's
    episode) stay under the trigger of 6 for every later model call, and the episode's
    transcript is kept after the summary."""
    summarizer = native(["APPLES-AND-PEARS-SUMMARY"], repeat_last=True)
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 6), keep=("messages", 1))
    desk = Desk()
    model = native(around(loop, [calls(call("search", {"query": "plums"})), "The answer is 42."]))
    history = [HumanMessage("hello about apples"), AIMessage("hi"), *long_history()]
    out = build(loop, model, desk.tools, [mw]).invoke({"messages": history})
    assert summarizer.call_count == 1
    assert "first question about apples" in seen(summarizer.prompts[0])
    assert "APPLES-AND-PEARS-SUMMARY" in seen(model.prompts[0])
    for prompt in model.prompts:
        assert "apples" not in seen(prompt).replace("APPLES-AND-PEARS", "")
    texts = [message_text(m) for m in out["messages"]]
    assert "APPLES-AND-PEARS-SUMMARY" in texts[0]
    assert not any("apples" in text for text in texts[1:])
    assert "42" in texts[-1]
    assert texts[1] == "third question about plums"
    if loop == "reflexion":
        assert [type(m).__name__ for m in out["messages"][2:]] == [
            "AIMessage",
            "ToolMessage",
            "AIMessage",
        ]
    assert desk.ran == ["search plums"]
    assert "42" in out["answer"]


@loops()
def test_loops_hitl_approve_and_reject(loop):
    desk = Desk()
    first = [calls(call("search", {"query": "a"})), "The answer is 41."]
    second = [calls(call("search", {"query": "b"})), "The answer is 42."]
    model = native(two_runs(loop, first, second))
    mw = HumanInTheLoopMiddleware(interrupt_on={"search": True})
    graph = build(loop, model, desk.tools, [mw], checkpointer=InMemorySaver())
    config = thread(f"hitl-{loop}")
    graph.invoke(go("what is the answer?"), config)
    [request] = paused(graph, config)
    assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
        ("search", {"query": "a"})
    ]
    assert desk.ran == []
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert desk.ran == ["search a"]
    [request] = paused(graph, config)
    assert request["action_requests"][0]["args"] == {"query": "b"}
    reject = {"type": "reject", "message": "searching b is not allowed"}
    out = graph.invoke(Command(resume={"decisions": [reject]}), config)
    assert desk.ran == ["search a"]
    assert "found a" in all_prompts(model)
    assert "searching b is not allowed" in all_prompts(model)
    assert out["status"] == "completed"
    assert "42" in out["answer"]
    assert model.call_count == len(model.replies)


@loops()
def test_loops_model_call_limit_counts_the_whole_run(loop):
    """The run's budget covers the outer steps and every inner ReAct call: with a limit
    of 2, no third call reaches the model and the run ends with the limit message."""
    desk = Desk()
    episode = [calls(call("search", {"query": "a"})), "The answer is 42."]
    model = native(around(loop, episode), repeat_last=True)
    mw = ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")
    out = build(loop, model, desk.tools, [mw]).invoke(go())
    assert model.call_count == 2
    assert LIMIT.search(seen(out["messages"]))
    assert out["status"] != "error"


@loops()
def test_loops_tool_call_limit_counts_across_inner_runs(loop):
    """The run limit holds for the whole run: the second ReAct run's call is blocked and
    the model is told so."""
    desk = Desk()
    first = [calls(call("search", {"query": "a"})), "The answer is 41."]
    second = [calls(call("search", {"query": "b"})), "The answer is 42."]
    model = native(two_runs(loop, first, second))
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="continue")
    out = build(loop, model, desk.tools, [mw]).invoke(go())
    assert desk.ran == ["search a"]
    assert LIMIT.search(all_prompts(model))
    assert "42" in out["answer"]


@loops()
def test_loops_tool_call_limit_blocks_the_excess_call_of_one_run(loop):
    """Within one ReAct run the limit blocks the second call and the model is told so."""
    desk = Desk()
    episode = [
        calls(call("search", {"query": "a"})),
        calls(call("search", {"query": "b"})),
        "The answer is 42.",
    ]
    model = native(around(loop, episode))
    mw = ToolCallLimitMiddleware(run_limit=1, exit_behavior="continue")
    out = build(loop, model, desk.tools, [mw]).invoke(go())
    assert desk.ran == ["search a"]
    last = seen(model.prompts[react_calls(model, loop)[-1]])
    assert "found a" in last
    assert LIMIT.search(last)
    assert "42" in out["answer"]


@loops()
def test_loops_fallback_model_answers_every_step(loop):
    desk = Desk()
    primary = native([RuntimeError("primary down")], repeat_last=True)
    backup = native(around(loop, [calls(call("search", {"query": "x"})), "The answer is 42."]))
    out = build(loop, primary, desk.tools, [ModelFallbackMiddleware(backup)]).invoke(go())
    assert backup.call_count == len(backup.replies)
    assert primary.call_count == backup.call_count
    assert desk.ran == ["search x"]
    assert out["status"] == "completed"
    assert "42" in out["answer"]


@loops()
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_loops_model_retry_recovers_every_step(loop, how):
    desk = Desk()
    replies = around(loop, [calls(call("search", {"query": "x"})), "The answer is 42."])
    flaky: list[Any] = []
    for reply in replies:
        flaky += [RuntimeError("blip"), reply]
    model = native(flaky)
    graph = build(loop, model, desk.tools, [fast_model_retry(max_retries=1)])
    out = graph.invoke(go()) if how == "invoke" else await graph.ainvoke(go())
    assert model.call_count == len(flaky)
    assert desk.ran == ["search x"]
    assert out["status"] == "completed"
    assert "42" in out["answer"]
    assert out["llm_calls"] == model.call_count


@loops()
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_loops_tool_retry_recovers(loop, how):
    desk = Desk(failures=2)
    model = native(around(loop, [calls(call("flaky", {"item": "box"})), "The answer is 42."]))
    graph = build(loop, model, desk.tools, [fast_tool_retry(max_retries=2)])
    out = graph.invoke(go()) if how == "invoke" else await graph.ainvoke(go())
    assert desk.ran == ["flaky box"] * 3
    assert "fetched box" in all_prompts(model)
    assert "store unavailable" not in all_prompts(model)
    assert out["status"] == "completed"


@loops()
def test_loops_tool_selector_narrows_the_step_tools(loop):
    desk = Desk()
    selector = native(['{"tools": ["calculator"]}'], repeat_last=True)
    episode = [calls(call("calculator", {"expression": "6*7"})), "The answer is 42."]
    model = native(around(loop, episode))
    mw = LLMToolSelectorMiddleware(model=selector)
    out = build(loop, model, desk.tools, [mw]).invoke(go("what is six times seven?"))
    assert selector.call_count >= 1
    inner = react_calls(model, loop)
    assert len(inner) == 2
    assert [model.tool_sets[i] for i in inner] == [["calculator"], ["calculator"]]
    assert desk.ran == ["calc 6*7"]
    assert out["status"] == "completed"
    assert "42" in out["answer"]


@loops()
def test_loops_pii_keeps_the_email_from_every_model_call(loop):
    desk = Desk()
    model = native(around(loop, [calls(call("search", {"query": "x"})), "The answer is 42."]))
    mw = PIIMiddleware("email", strategy="redact")
    out = build(loop, model, desk.tools, [mw]).invoke(go(f"I am {EMAIL}; what is the answer?"))
    assert "[REDACTED_EMAIL]" in seen(model.prompts[0])
    for index, prompt in enumerate(model.prompts):
        assert EMAIL not in seen(prompt), f"model call {index} saw the address"
    assert EMAIL not in seen(out["messages"])
    assert "42" in out["answer"]


@loops()
def test_loops_pii_redacts_tool_results(loop):
    @tool
    def directory(name: str) -> str:
        """Look a person up."""
        return f"{name}: grace@example.org"

    episode = [calls(call("directory", {"name": "Grace"})), "The answer is 42."]
    model = native(around(loop, episode))
    mw = PIIMiddleware("email", strategy="redact", apply_to_tool_results=True)
    build(loop, model, [directory], [mw]).invoke(go("find Grace"))
    assert "grace@example.org" not in all_prompts(model)
    assert "[REDACTED_EMAIL]" in all_prompts(model)


@loops()
def test_loops_todo_list_carried_out_of_the_inner_run(loop):
    episode = [calls(call("write_todos", {"todos": TODOS})), "The answer is 42."]
    model = native(around(loop, episode))
    out = build(loop, model, [], [TodoListMiddleware()]).invoke(go("plan and do it"))
    first = react_calls(model, loop)[0]
    assert "write_todos" in system_text(model.prompts[first])
    assert "write_todos" in model.tool_sets[first]
    assert out["todos"] == TODOS
    assert "write the report" in all_prompts(model)
    assert "42" in out["answer"]


@loops()
def test_loops_context_editing_clears_old_tool_results(loop):
    desk = Desk()
    episode = [
        calls(call("search", {"query": "alpha"})),
        calls(call("search", {"query": "beta"})),
        calls(call("search", {"query": "gamma"})),
        "The answer is 42.",
    ]
    model = native(around(loop, episode))
    edit = ClearToolUsesEdit(trigger=1, keep=1, placeholder="[cleared]")
    out = build(loop, model, desk.tools, [ContextEditingMiddleware(edits=[edit])]).invoke(go())
    last = seen(model.prompts[react_calls(model, loop)[-1]])
    assert "found gamma" in last
    assert "found alpha" not in last
    assert "[cleared]" in last
    assert desk.ran == ["search alpha", "search beta", "search gamma"]
    assert "42" in out["answer"]
