"""The graph nodes of middleware hooks, end to end: where a jump leads, how a run that a
hook ended reports (status, answer, error, counters), the answer read again after a hook
rewrote the last reply, and the async hook path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    after_model,
    before_agent,
    before_model,
    hook_config,
)
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import LOOPS, build_loop, prompts
from loopgraphs.nodes.hooks import FINISH, STOPPED
from loopgraphs.nodes.own_reply import NO_REPLY_ID
from tests.compat.middleware_support import call, calls, native
from tests.support.scripts import LATS_SMALL, Refunds, lats_search

SNAPSHOTS = Path(__file__).parents[2] / "snapshots"


def ask(text: str = "Refund my order.") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


@after_model(can_jump_to=["end"])
def end_after_reply(state, runtime):
    return {"jump_to": "end"}


def test_a_jump_to_the_end_after_an_answer_completes_the_run_with_it():
    graph = build_loop("cot", native(["Thinking.\nFINAL ANSWER: 42"]), middleware=[end_after_reply])
    assert FINISH in graph.get_graph().nodes
    out = graph.invoke(ask("Six times seven?"))
    assert (out["status"], out["error"]) == ("completed", "")
    assert out["answer"] == "42"


def test_an_after_model_hook_sees_a_steps_own_reply_only():
    """A step whose model calls were internal (LATS's evaluation, an expansion whose
    candidates only answered) adds no reply: its after_model hooks see an empty one, not
    the earlier step's calls the tools answered, which a review would ask about again and
    a tool-call limit count again; the empty reply never reaches the thread."""
    seen: list[list[str]] = []

    @after_model
    def record(state, runtime):
        last = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        seen.append([c["name"] for c in last.tool_calls])

    refunds = Refunds()
    model = native(lats_search("native", "refund", {"order": "A1"}, "Refunded A1."))
    graph = build_loop("lats", model, [refunds.tool], middleware=[record], **LATS_SMALL)
    out = graph.invoke(ask())
    assert (out["status"], refunds.done) == ("completed", ["A1"])
    # expand (the refund), evaluate (its value), expand (an answer), evaluate (its verdict)
    assert seen == [["refund"], [], [], []]
    assert all(m.id != NO_REPLY_ID for m in out["messages"])


def test_a_jump_to_the_end_after_a_tool_call_ends_unfinished_without_running_it():
    refunds = Refunds()
    model = native([calls(call("refund", {"order": "A1"}), content="I will refund A1.")])
    out = build_loop("react", model, [refunds.tool], middleware=[end_after_reply]).invoke(ask())
    assert refunds.done == []
    assert (out["status"], out["error"], out["answer"]) == ("max_iterations", "", "")


@before_model(can_jump_to=["end"])
def stop_before_model(state, runtime):
    return {"jump_to": "end"}


@pytest.mark.parametrize("loop", ["react", "cot"])
def test_a_jump_to_the_end_before_the_model_stops_the_run_unfinished(loop):
    model = native(["FINAL ANSWER: 1"])
    graph = build_loop(loop, model, [], middleware=[stop_before_model])
    assert STOPPED in graph.get_graph().nodes
    out = graph.invoke(ask("One?"))
    assert (out["status"], out["answer"], out["error"]) == ("max_iterations", "", "")
    assert model.call_count == 0 and out["llm_calls"] == 0


@before_agent(can_jump_to=["end"])
def closed_for_the_day(state, runtime):
    if "stop" in str(state["messages"][-1].content):
        return {"jump_to": "end"}
    return None


@pytest.mark.parametrize("loop", ["react", "cot"])  # counters as totals, and by reducers
def test_a_jump_before_the_run_starts_reports_no_calls_of_the_last_run(loop):
    model = native(["FINAL ANSWER: 1"])
    graph = build_loop(
        loop, model, [], middleware=[closed_for_the_day], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": f"closed-{loop}"}}
    first = graph.invoke(ask("One?"), config)
    assert first["llm_calls"] == 1 and first["status"] == "completed"
    second = graph.invoke(ask("stop now"), config)
    assert second["llm_calls"] == 0 and second["usage"]["output_tokens"] == 0
    assert second["status"] == "max_iterations" and second["error"] == ""


@after_model(can_jump_to=["model"])
def declared_model_only(state, runtime):
    return {"jump_to": "end"}  # not declared: ignored


def test_a_jump_the_hook_did_not_declare_is_ignored():
    model = native(["FINAL ANSWER: 7"])
    out = build_loop("cot", model, middleware=[declared_model_only]).invoke(ask("Seven?"))
    assert (out["status"], out["answer"]) == ("completed", "7")


# ReAct's routers take the runtime, CoT's do not.
@pytest.mark.parametrize(
    ("loop", "replies", "answer"),
    [
        ("react", ["first", "second"], "second"),
        ("cot", ["FINAL ANSWER: 1", "FINAL ANSWER: 2"], "2"),
    ],
)
def test_a_jump_back_to_the_model_asks_it_again(loop, replies, answer):
    asked: list[int] = []

    @after_model(can_jump_to=["model"])
    def once_more(state, runtime):
        asked.append(1)
        return {"jump_to": "model"} if len(asked) == 1 else None

    model = native(replies)
    out = build_loop(loop, model, [], middleware=[once_more]).invoke(ask("Say it."))
    assert model.call_count == 2 and out["answer"] == answer


def test_a_jump_to_the_tools_needs_a_loop_with_a_tool_step():
    @before_model(can_jump_to=["tools"])
    def to_tools(state, runtime):
        return None

    with pytest.raises(ValueError) as raised:
        build_loop("cot", native(["x"]), middleware=[to_tools])
    assert str(raised.value) == (
        "middleware to_tools: its before_model hook may jump to 'tools', but cot has no "
        "tool step; use it with a loop that runs its tool calls itself (one whose graph has "
        "the call_tool step) or drop 'tools' from can_jump_to"
    )


@after_model
def shout(state, runtime):
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and not last.tool_calls:
        return {"messages": [last.model_copy(update={"content": str(last.content).upper()})]}
    return None


def test_the_answer_is_read_again_after_a_hook_rewrote_a_final_reply():
    out = build_loop("react", native(["quiet answer"]), [], middleware=[shout]).invoke(ask("Hi"))
    assert (out["status"], out["answer"]) == ("completed", "QUIET ANSWER")


def test_the_answer_is_read_again_when_the_run_ends_unfinished():
    refunds = Refunds()
    model = native([calls(call("refund", {"order": "A1"})), "best I can do"])
    graph = build_loop("react", model, [refunds.tool], middleware=[shout], max_iterations=1)
    out = graph.invoke(ask())
    assert out["status"] == "max_iterations"
    assert out["answer"] == "BEST I CAN DO"


async def test_async_hooks_get_the_state_and_runtime_and_may_end_the_run():
    seen: list[tuple[int, bool]] = []

    @after_model(can_jump_to=["end"])
    async def limit(state, runtime):
        seen.append((len(state["messages"]), runtime is not None))
        return {"jump_to": "end", "messages": [AIMessage("Limit reached.")]}

    refunds = Refunds()
    model = native([calls(call("refund", {"order": "A1"})), "done"])
    out = await build_loop("react", model, [refunds.tool], middleware=[limit]).ainvoke(ask())
    assert seen == [(2, True)]
    assert refunds.done == [] and out["status"] == "max_iterations"
    assert out["messages"][-1].content == "Limit reached."
    assert not any(isinstance(m, ToolMessage) for m in out["messages"])


def test_a_hook_is_a_node_named_after_its_middleware_and_keeps_its_only_variant():
    @before_model
    async def note(state, runtime):
        return None

    graph = build_loop("cot", native(["FINAL ANSWER: 1"]), middleware=[note])
    assert "note.before_model" in graph.get_graph().nodes
    with pytest.raises(TypeError, match="No synchronous function"):
        graph.invoke(ask("One?"))


def test_a_limit_closing_a_later_run_takes_no_answer_from_an_earlier_one():
    from langchain.agents.middleware import ToolCallLimitMiddleware

    refunds = Refunds()
    model = native(
        [
            calls(call("refund", {"order": "A1"})),
            "first done",
            calls(call("refund", {"order": "B2"})),
        ]
    )
    limit = ToolCallLimitMiddleware(thread_limit=1, exit_behavior="end")
    graph = build_loop(
        "react", model, [refunds.tool], middleware=[limit], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "limited"}}
    first = graph.invoke(ask(), config)
    assert (first["status"], first["answer"]) == ("completed", "first done")
    second = graph.invoke(ask("And B2?"), config)
    assert refunds.done == ["A1"]
    assert (second["status"], second["answer"]) == ("max_iterations", "")
    closing = [m for m in second["messages"] if "limit" in str(m.content).lower()]
    assert second["messages"][-1] is closing[-1]


class Logged(AgentMiddleware):
    """Model and agent hooks that note when they run."""

    def __init__(self, label: str, log: list[str]) -> None:
        super().__init__()
        self.label, self.log = label, log

    @property
    def name(self) -> str:
        return self.label

    def before_model(self, state, runtime):
        self.log.append(f"{self.label} before")

    def after_model(self, state, runtime):
        self.log.append(f"{self.label} after")


def test_three_hooks_run_in_order_around_every_model_step():
    log: list[str] = []
    refunds = Refunds()
    model = native([calls(call("refund", {"order": "A1"})), "done"])
    middleware = [Logged(f"m{n}", log) for n in (1, 2, 3)]
    graph = build_loop("react", model, [refunds.tool], middleware=middleware, max_iterations=1)
    nodes = set(graph.get_graph().nodes)
    assert {"m1.before_model", "m3.after_model", "m2.before_model.final_answer"} <= nodes
    assert FINISH not in nodes and STOPPED not in nodes  # no hook may jump to the end
    out = graph.invoke(ask())
    assert out["status"] == "max_iterations" and refunds.done == ["A1"]
    one_call = ["m1 before", "m2 before", "m3 before", "m3 after", "m2 after", "m1 after"]
    rounds = len(log) // len(one_call)
    assert rounds >= 2 and log == one_call * rounds  # generate, ..., then final_answer


def test_routers_behind_hooks_read_the_runs_context():
    refunds = Refunds()
    model = native([calls(call("refund", {"order": f"A{n}"})) for n in range(5)] + ["done"])
    graph = build_loop("react", model, [refunds.tool], middleware=[Logged("m", [])])
    out = graph.invoke(ask(), context={"max_iterations": 1})
    assert refunds.done == ["A0"] and out["status"] == "max_iterations"


def test_the_agent_hooks_close_a_run_that_failed():
    closed: list[str] = []

    class Agent(AgentMiddleware):
        def before_agent(self, state, runtime):
            return None

        def after_agent(self, state, runtime):
            closed.append(state["status"])

    model = native([ValueError("the provider is down")])
    out = build_loop("react", model, [], middleware=[Agent()], retry_policy=None).invoke(ask())
    assert out["status"] == "error" and closed == ["error"]


class Jumping(AgentMiddleware):
    """Every hook, the model hooks able to jump."""

    def before_agent(self, state, runtime):
        return None

    @hook_config(can_jump_to=["end"])
    def before_model(self, state, runtime):
        return None

    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state, runtime):
        return None

    def after_agent(self, state, runtime):
        return None


@pytest.mark.parametrize("loop", list(LOOPS))
def test_graph_shape_with_hooks_snapshot(loop):
    drawing = build_loop(loop, None, [], middleware=[Jumping()]).get_graph().draw_mermaid()
    assert drawing == (SNAPSHOTS / f"{loop}_hooks.mmd").read_text()


def test_a_jump_before_the_run_starts_clears_the_last_runs_error():
    model = native([ValueError("down")], repeat_last=True)
    graph = build_loop(
        "react",
        model,
        [],
        middleware=[closed_for_the_day],
        checkpointer=InMemorySaver(),
        retry_policy=None,
    )
    config = {"configurable": {"thread_id": "closed-after-error"}}
    assert graph.invoke(ask("One?"), config)["status"] == "error"
    second = graph.invoke(ask("stop now"), config)
    assert (second["status"], second["error"], second["answer"]) == ("max_iterations", "", "")


class ForgetTheFirstExchange(AgentMiddleware):
    """A ``before_model`` hook that removes the conversation's first exchange."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        gone = [m for m in state["messages"] if m.id in ("h1", "a1")]
        return {"messages": [RemoveMessage(id=m.id) for m in gone]} if gone else None


def test_a_hook_that_removes_earlier_turns_keeps_the_runs_own_messages_apart():
    """After the hook removed two messages before the run's own, the run still counts
    its own tool calls: the budget of one is spent and the answer is asked for."""
    refunds = Refunds()
    model = native([calls(call("refund", {"order": "A1"})), "Refunded A1."])
    graph = build_loop(
        "react", model, [refunds.tool], max_tool_calls=1, middleware=[ForgetTheFirstExchange()]
    )
    history = [HumanMessage("Hi.", id="h1"), AIMessage("Hello.", id="a1")]
    out = graph.invoke({"messages": [*history, HumanMessage("Refund A1.", id="h2")]})
    assert refunds.done == ["A1"]
    assert [m.id for m in out["messages"]][:1] == ["h2"]
    assert model.prompts[-1][-1].content == prompts.FORCE_FINAL_ANSWER
    assert (out["status"], out["answer"]) == ("max_iterations", "Refunded A1.")
