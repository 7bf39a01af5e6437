"""Every loop starts a run the same way: its start (a ``prepare`` node, or the loop's first
step) checks the input before any model call, resets what the last run on the thread
left, and hands each step the run's settings with the run's context applied."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import before_model
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import LOOPS, build_loop
from loopgraphs.nodes.settings import LoopSettings
from tests.compat.middleware_support import native

ANSWER = "FINAL ANSWER: 4"
ONE_DEEP = {"tot": {"max_depth": 1}}


def loop(name: str, model, **options):
    return build_loop(name, model, [], **{**ONE_DEEP.get(name, {}), **options})


@pytest.mark.parametrize("name", list(LOOPS))
def test_every_loop_starts_a_run_first(name):
    """A run starts in ``prepare``, or, in a loop whose first step starts its runs itself
    (no hook before it, running totals: ReAct, LATS), in that step; with a model hook
    before it, in ``prepare`` again."""
    first = {"react": "generate", "lats": "expand"}.get(name, "prepare")
    edges = [(e.source, e.target) for e in loop(name, None).get_graph().edges]
    assert [target for source, target in edges if source == "__start__"] == [first]
    hooked = loop(name, None, middleware=[before_model(lambda state, runtime: None)])
    edges = [(e.source, e.target) for e in hooked.get_graph().edges]
    assert [target for source, target in edges if source == "__start__"] == ["prepare"]


@pytest.mark.parametrize("name", list(LOOPS))
def test_a_run_without_messages_ends_in_error_before_any_model_call(name):
    model = native([ANSWER], repeat_last=True)
    out = loop(name, model).invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


@pytest.mark.parametrize("name", list(LOOPS))
def test_a_history_with_an_unanswered_call_is_refused_before_any_model_call(name):
    model = native([ANSWER], repeat_last=True)
    open_call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    with pytest.raises(ValueError, match="without a ToolMessage"):
        loop(name, model).invoke({"messages": [HumanMessage("hi"), open_call]})
    assert model.call_count == 0


@pytest.mark.parametrize("name", list(LOOPS))
def test_a_second_run_on_a_thread_counts_only_its_own_calls(name):
    model = native([ANSWER, '{"scores": [9]}', ANSWER], repeat_last=True)
    graph = loop(name, model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"again-{name}"}}
    first = graph.invoke({"messages": [HumanMessage("2 + 2?")]}, config)
    calls_before = model.call_count
    second = graph.invoke({"messages": [HumanMessage("And 2 + 2 again?")]}, config)
    assert first["llm_calls"] == calls_before >= 1
    assert second["llm_calls"] == model.call_count - calls_before >= 1
    assert second["status"] != "error"


@pytest.mark.parametrize("name", list(LOOPS))
def test_every_step_and_router_reads_the_runs_context(name, monkeypatch):
    seen: list[int] = []
    resolve = LoopSettings.for_run

    def counted(self, runtime):
        run = resolve(self, runtime)
        seen.append(run.max_iterations)
        return run

    monkeypatch.setattr(LoopSettings, "for_run", counted)
    model = native([ANSWER, '{"scores": [9]}', ANSWER], repeat_last=True)
    out = loop(name, model).invoke(
        {"messages": [HumanMessage("2 + 2?")]}, context={"max_iterations": 3}
    )
    assert out["status"] != "error"
    assert seen and set(seen) == {3}
