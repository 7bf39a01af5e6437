"""Every loop is a good citizen inside a host graph: its replies carry the graph's
``name=``, its result keys can be renamed so a host keeps its own, a middleware limit that
ends a run is not reported as completed, and a step may route to a model step added
after it whatever hooks stand before that step."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain.agents.middleware import ModelCallLimitMiddleware, before_model
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph, add_messages
from typing_extensions import TypedDict

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs.react import create_react_graph
from tests.compat.middleware_support import call, calls, native
from tests.compat.test_middleware_every_loop import OPTIONS, SCRIPTS, TOOL_LOOPS, search

QUESTION = {"messages": [HumanMessage("What is six times seven?")]}


def run(loop: str, **options: Any) -> dict[str, Any]:
    tools = [search] if loop in TOOL_LOOPS else []
    graph = build_loop(loop, native(SCRIPTS[loop]), tools, **OPTIONS.get(loop, {}), **options)
    return graph.invoke(QUESTION)


@before_model
def looks(state: Any, runtime: Any) -> None:
    """A before_model hook that changes nothing."""


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_step_routes_to_a_model_step_added_after_it(loop):
    out = run(loop, middleware=[looks])
    assert out["status"] == "completed" and "42" in out["answer"]


def test_react_synthesis_runs_behind_before_model_hooks():
    model = native([calls(call("search", {"query": "x"})), "It is 42.", "The answer is 42."])
    graph = create_react_graph(model, [search], synthesize_answer=True, middleware=[looks])
    out = graph.invoke(QUESTION)
    assert out["status"] == "completed" and out["answer"] == "The answer is 42."
    assert "looks.before_model.synthesize" in graph.get_graph().nodes


@pytest.mark.parametrize("loop", list(LOOPS))
def test_every_reply_carries_the_graph_name(loop):
    out = run(loop, name="math_expert")
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert replies and all(m.name == "math_expert" for m in replies)
    if loop in TOOL_LOOPS:
        assert any(m.tool_calls for m in replies)


@pytest.mark.parametrize("loop", list(LOOPS))
def test_replies_keep_no_name_without_one(loop):
    out = run(loop)
    assert all(m.name is None for m in out["messages"] if isinstance(m, AIMessage))


class Host(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    status: str
    math_status: str
    math_answer: str


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_host_keeps_its_own_status_next_to_the_renamed_result(loop):
    tools = [search] if loop in TOOL_LOOPS else []
    node = build_loop(
        loop,
        native(SCRIPTS[loop]),
        tools,
        result_keys={"status": "math_status", "answer": "math_answer"},
        **OPTIONS.get(loop, {}),
    )
    host = StateGraph(Host)
    host.add_node("math", node)
    host.add_edge(START, "math")
    host.add_edge("math", END)
    out = host.compile().invoke({**QUESTION, "status": "triaged"})
    assert out["status"] == "triaged"
    assert out["math_status"] == "completed" and "42" in out["math_answer"]
    returned = set(node.get_output_jsonschema()["properties"])
    assert {"math_status", "math_answer"} <= returned
    assert not {"status", "answer"} & returned


@pytest.mark.parametrize(
    ("renames", "named"),
    [({"stat": "x"}, "'stat'"), ({"status": "answer"}, "'status'"), ({"status": ""}, "'status'")],
)
def test_bad_result_keys_are_named(renames, named):
    with pytest.raises(ValueError, match=named):
        build_loop("cot", native(["FINAL ANSWER: 1"]), result_keys=renames)


def test_result_keys_must_be_a_mapping():
    with pytest.raises(TypeError, match="result_keys"):
        build_loop("cot", native(["FINAL ANSWER: 1"]), result_keys=["status"])


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_model_call_limit_ending_the_run_is_not_completed(loop):
    # CoT answers in one call: its limit stops the first one.
    allowed = 0 if loop == "cot" else 1
    limit = ModelCallLimitMiddleware(run_limit=allowed, exit_behavior="end")
    out = run(loop, middleware=[limit])
    assert out["status"] == "max_iterations"
    assert "limit" not in out["answer"].lower()
    assert out["llm_calls"] == allowed
