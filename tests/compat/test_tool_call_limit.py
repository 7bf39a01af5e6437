"""``max_tool_calls``: a per-run budget of tool calls; excess calls are refused, not run.

Ports of langchain ``agents/middleware/implementations/test_tool_call_limit.py`` for the
behaviour loopgraphs has: one run-scoped limit over all tools that answers the excess
calls with an error ToolMessage and lets the model continue (the middleware's
``run_limit`` with ``exit_behavior="continue"``). Thread limits, per-tool limits and the
"end"/"error" exit behaviours are listed in DIFFERENCES.md.
"""

import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call
from tests.compat.support import MODES, act, final, model_for, seen, tool_messages, tool_text

LIMIT_WORDS = re.compile(r"limit|max_tool_calls|budget", re.IGNORECASE)


class Search:
    def __init__(self) -> None:
        self.queries: list[str] = []

        def search(query: str) -> str:
            """Search for information."""
            self.queries.append(query)
            return f"Results: {query}"

        def calculator(expression: str) -> str:
            """Calculate an expression."""
            self.queries.append(f"calc {expression}")
            return f"Calc: {expression}"

        self.search, self.calculator = search, calculator


def build(turns: list, limit: int | None, **kwargs):
    tools = Search()
    model = FakeToolModel(turns=turns)
    graph = create_react_graph(
        model, [tools.search, tools.calculator], tool_mode="native", max_tool_calls=limit, **kwargs
    )
    return tools, model, graph


def test_parallel_calls_over_the_limit_continue():
    """Ports test_parallel_tool_calls_with_limit_continue_mode: with a limit of 1, the
    first of three parallel calls runs, the other two get error messages, and the model
    is called again."""
    tools, model, graph = build(
        [
            [
                call("search", {"query": "q1"}, id="1"),
                call("search", {"query": "q2"}, id="2"),
                call("search", {"query": "q3"}, id="3"),
            ],
            "stopped",
        ],
        limit=1,
    )
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert tools.queries == ["q1"]
    messages = tool_messages(out)
    assert [m.tool_call_id for m in messages] == ["1", "2", "3"]
    ok = [m for m in messages if m.status != "error"]
    refused = [m for m in messages if m.status == "error"]
    assert len(ok) == 1 and "q1" in tool_text(ok[0])
    assert len(refused) == 2
    for message in refused:
        assert LIMIT_WORDS.search(tool_text(message))
        assert "Results:" not in tool_text(message)
    assert model.call_count == 2
    assert LIMIT_WORDS.search(seen(model.prompts[1]))
    assert out["answer"] == "stopped"


def test_limit_across_turns():
    """Ports test_end_behavior_creates_artificial_messages (a run-wide limit over
    several turns): the calls within the budget run, a later call never runs (it is
    refused with an error message, or the model is not offered another tool turn)."""
    tools, _model, graph = build(
        [
            [call("search", {"query": "q1"}, id="1")],
            [call("search", {"query": "q2"}, id="2")],
            [call("search", {"query": "q3"}, id="3")],
            "done",
            "done",
        ],
        limit=2,
    )
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert tools.queries == ["q1", "q2"]
    answers = {m.tool_call_id: m for m in tool_messages(out)}
    assert answers["1"].status == "success" and answers["2"].status == "success"
    if "3" in answers:
        assert answers["3"].status == "error"
        assert LIMIT_WORDS.search(tool_text(answers["3"]))
    assert isinstance(out["answer"], str)


def test_limit_reached_but_not_exceeded():
    """Ports test_limit_reached_but_not_exceeded: exactly ``max_tool_calls`` calls all run."""
    tools, _model, graph = build(
        [
            [call("search", {"query": "q1"}), call("calculator", {"expression": "1+1"})],
            "done",
        ],
        limit=2,
    )
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert sorted(tools.queries) == ["calc 1+1", "q1"]  # side by side: order not defined
    assert [m.status for m in tool_messages(out)] == ["success", "success"]


def test_limit_counts_every_tool():
    """Ports test_parallel_mixed_tool_calls_with_specific_tool_limit for loopgraphs' single
    all-tools budget: calls beyond the budget are refused whatever the tool."""
    tools, _model, graph = build(
        [
            [
                call("search", {"query": "q1"}, id="1"),
                call("calculator", {"expression": "1+1"}, id="2"),
                call("search", {"query": "q2"}, id="3"),
                call("calculator", {"expression": "2+2"}, id="4"),
            ],
            "done",
        ],
        limit=2,
    )
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    # The calls run side by side (their order is not defined); the budget goes to the
    # first two in the reply's order.
    assert sorted(tools.queries) == ["calc 1+1", "q1"]
    assert [m.status for m in tool_messages(out)] == ["success", "success", "error", "error"]


def test_limit_resets_for_each_run_on_a_thread():
    """Ports test_run_limit_with_multiple_human_messages: the budget is per run, so a
    new message on the same thread may call tools again."""
    tools, _model, graph = build(
        [
            [
                call("search", {"query": "test1"}, id="1"),
                call("search", {"query": "test2"}, id="2"),
            ],
            "first done",
            [call("search", {"query": "test3"}, id="3")],
            "second done",
        ],
        limit=1,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "test_thread"}}
    first = graph.invoke({"messages": [HumanMessage("Question 1")]}, config)
    assert [m.status for m in tool_messages(first)] == ["success", "error"]
    assert first["answer"] == "first done"
    second = graph.invoke({"messages": [HumanMessage("Question 2")]}, config)
    assert tools.queries == ["test1", "test3"]
    assert len(second["messages"]) > len(first["messages"])
    assert tool_messages(second)[-1].status == "success"
    assert second["answer"] == "second done"


def test_no_limit_by_default():
    """Without max_tool_calls every call runs."""
    turns = [[call("search", {"query": f"q{i}"}) for i in range(6)], "done"]
    tools, _model, graph = build(turns, limit=None)
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert len(tools.queries) == 6
    assert all(m.status == "success" for m in tool_messages(out))


@pytest.mark.parametrize("mode", MODES)
def test_limit_in_every_tool_mode(mode):
    """Ports test_end_behavior_creates_artificial_messages to the json and text modes
    (one call per turn): a call past the budget never runs, and the run still ends with
    an answer."""
    tools = Search()
    model = model_for(
        mode,
        [
            act(mode, "search", {"query": "q1"}),
            act(mode, "search", {"query": "q2"}),
            final(mode, "done"),
        ],
        repeat_last=True,
    )
    graph = create_react_graph(model, [tools.search], tool_mode=mode, max_tool_calls=1)
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert tools.queries == ["q1"]
    statuses = [m.status for m in tool_messages(out)]
    assert statuses[0] == "success" and all(s == "error" for s in statuses[1:])
    assert isinstance(out["answer"], str) and out["status"] != "error"


async def test_limit_under_ainvoke():
    """Ports test_thread_count_excludes_blocked_run_calls's parallel case, async."""
    tools, _model, graph = build(
        [
            [
                call("search", {"query": "a"}, id="1"),
                call("search", {"query": "b"}, id="2"),
                call("search", {"query": "c"}, id="3"),
            ],
            "done",
        ],
        limit=1,
    )
    out = await graph.ainvoke({"messages": [HumanMessage("Test")]})
    assert tools.queries == ["a"]
    assert [m.status for m in tool_messages(out)] == ["success", "error", "error"]
    assert isinstance(out["messages"][-1], AIMessage)
