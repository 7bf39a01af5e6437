"""A caller's own state keys round-trip exactly through every loop.

A key with a reducer (``Annotated[list[str], operator.add]``) and one without are written
by the caller and, in the loops that call tools, by a tool returning a ``Command``. Loops
that run ReAct inside (Plan-and-Execute's steps, Reflexion's episodes) must add a tool's
update once, not once per inner run; threads keep the keys over several turns; and a loop
used as a node of a parent graph hands the keys back to it.
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any

import pytest
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelCallLimitMiddleware
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command
from typing_extensions import NotRequired, TypedDict

from loopgraphs import (
    create_cot_graph,
    create_critic_graph,
    create_plan_execute_graph,
    create_react_graph,
    create_reflexion_graph,
    create_self_ask_graph,
    create_tot_graph,
)
from loopgraphs.graphs import registry
from loopgraphs.graphs.lats import create_lats_graph
from loopgraphs.graphs.rewoo import create_rewoo_graph
from loopgraphs.nodes.build import caller_reducers
from tests.support.fakes import calls, tool_call
from tests.support.scripts import (
    FAST_RETRY,
    LATS_SMALL,
    MODES,
    act,
    final,
    lats_search,
    rewoo_plan,
)
from tests.support.scripts import model_for as scripted_model


class FruitState(TypedDict, total=False):
    fruits: Annotated[list[str], operator.add]
    basket: str


@tool
def add_fruit(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Put a fruit into the basket."""
    return Command(
        update={
            "fruits": [name],
            "basket": f"has {name}",
            "messages": [ToolMessage(f"added {name}", tool_call_id=tool_call_id)],
        }
    )


def structured(mode: str, schema: str, data: dict[str, Any]) -> Any:
    if mode == "native":
        return calls(tool_call(schema, data))
    return json.dumps(data)


def verdict(mode: str) -> Any:
    if mode == "native":
        return calls(tool_call("Evaluation", {"satisfactory": False, "feedback": "again"}))
    if mode == "json":
        return json.dumps({"satisfactory": False, "feedback": "again"})
    return "UNSATISFACTORY: again"


def satisfied(mode: str) -> Any:
    if mode == "native":
        return calls(tool_call("Evaluation", {"satisfactory": True, "feedback": ""}))
    if mode == "json":
        return json.dumps({"satisfactory": True, "feedback": ""})
    return "SATISFACTORY"


def build(
    loop: str, mode: str, *, model_kwargs: dict[str, Any] | None = None, **options: Any
) -> Any:
    """The loop with a script in ``mode``'s grammar in which the tool adds "plums" (tool
    loops) once per run; ``model_kwargs`` go to the scripted model, ``options`` to the
    factory (over the tool mode, retry policy and state schema set here)."""
    defaults = {"tool_mode": mode, "retry_policy": FAST_RETRY, "state_schema": FruitState}
    shared = {**defaults, **options}

    def model_for(mode: str, script: list[Any]) -> Any:
        return scripted_model(mode, script, **(model_kwargs or {}))

    if loop == "react":
        model = model_for(mode, [act(mode, "add_fruit", {"name": "plums"}), final(mode, "ok")])
        return create_react_graph(model, [add_fruit], **shared)
    if loop == "plan_execute":
        script = [
            structured(mode, "Plan", {"steps": ["add plums", "say done"]}),
            act(mode, "add_fruit", {"name": "plums"}),
            final(mode, "added"),
            final(mode, "done"),
            "All done.",
        ]
        return create_plan_execute_graph(model_for(mode, script), [add_fruit], **shared)
    if loop == "reflexion":
        script = [
            act(mode, "add_fruit", {"name": "plums"}),
            final(mode, "added"),
            verdict(mode),
            "Reflection: say it better.",
            final(mode, "added, really"),
            satisfied(mode),
        ]
        return create_reflexion_graph(model_for(mode, script), [add_fruit], **shared)
    if loop == "self_ask":
        follow = "Are follow up questions needed here? Yes.\nFollow up: plums"
        if mode == "native":
            first: Any = calls(tool_call("add_fruit", {"name": "plums"}), content=follow)
        elif mode == "json":
            first = f"{follow}\nTool: add_fruit\nTool Input: {json.dumps({'name': 'plums'})}"
        else:
            first = f"{follow}\nTool: add_fruit\nTool Input: plums"
        script = [first, "So the final answer is: plums"]
        return create_self_ask_graph(model_for(mode, script), [add_fruit], **shared)
    if loop == "critic":
        claim = {"claim": "plums are in", "tool": "add_fruit", "tool_input": {"name": "plums"}}
        if mode == "native":
            report: Any = calls(tool_call("CritiqueReport", {"verified": False, "claims": [claim]}))
        elif mode == "json":
            report = json.dumps({"verified": False, "claims": [claim]})
        else:
            report = "CLAIM: plums are in\nTOOL: add_fruit\nTOOL INPUT: plums"
        script = ["Plums are in.", report, "Plums are in, checked."]
        return create_critic_graph(
            model_for(mode, script), [add_fruit], max_critique_rounds=1, **shared
        )
    if loop == "rewoo":
        script = [rewoo_plan(mode, ("add_fruit", {"name": "plums"})), "Plums are in."]
        return create_rewoo_graph(model_for(mode, script), [add_fruit], **shared)
    if loop == "lats":
        script = lats_search(mode, "add_fruit", {"name": "plums"}, "Plums are in.")
        return create_lats_graph(model_for(mode, script), [add_fruit], **LATS_SMALL, **shared)
    shared.pop("tool_mode", None)
    if loop == "cot":
        return create_cot_graph(model_for(mode, ["FINAL ANSWER: 4"]), **shared)
    script = ["1. ANSWER: 4", structured(mode, "Scores", {"scores": [9]})]
    return create_tot_graph(
        model_for(mode, script), n_branches=1, beam_width=1, max_depth=1, **shared
    )


TOOL_LOOPS = registry.TOOL_LOOPS


def start(**state: Any) -> dict[str, Any]:
    return {"messages": [("user", "Put plums in.")], **state}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_tool_update_is_added_once(loop, mode):
    out = build(loop, mode).invoke(start(fruits=["figs"], basket="empty"))
    assert out["status"] == "completed", out.get("error")
    assert out["fruits"] == ["figs", "plums"]
    assert out["basket"] == "has plums"


@pytest.mark.parametrize("loop", ["cot", "tot"])
def test_caller_keys_pass_through_loops_without_tools(loop):
    out = build(loop, "native").invoke(start(fruits=["figs", "kiwis"], basket="woven"))
    assert out["status"] == "completed", out.get("error")
    assert out["fruits"] == ["figs", "kiwis"] and out["basket"] == "woven"


@pytest.mark.parametrize("loop", TOOL_LOOPS)
async def test_a_tool_update_is_added_once_under_ainvoke(loop):
    out = await build(loop, "native").ainvoke(start(fruits=["figs"]))
    assert out["fruits"] == ["figs", "plums"]


@pytest.mark.parametrize("loop", ["react", "plan_execute", "reflexion"])
def test_threads_keep_the_keys_over_several_turns(loop):
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": f"fruit-{loop}"}}
    first = build(loop, "native", checkpointer=saver).invoke(start(fruits=["figs"]), config)
    assert first["fruits"] == ["figs", "plums"]
    # A second graph on the same checkpointer plays the same script on the thread.
    second = build(loop, "native", checkpointer=saver).invoke(start(fruits=["kiwis"]), config)
    assert second["fruits"] == ["figs", "plums", "kiwis", "plums"]
    assert second["basket"] == "has plums"


class Parent(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    basket: str
    answer: str


@pytest.mark.parametrize("loop", ["react", "plan_execute", "reflexion"])
def test_a_loop_as_a_node_hands_the_keys_to_its_parent(loop):
    parent = StateGraph(Parent)
    parent.add_node("loop", build(loop, "native"))
    parent.add_edge(START, "loop")
    out = parent.compile().invoke({"messages": [("user", "Put plums in.")], "basket": "woven"})
    assert out["basket"] == "has plums"
    assert out["answer"]


class Notes(AgentState):
    fruits: NotRequired[Annotated[list[str], operator.add]]


class NoteKeeper(AgentMiddleware):
    state_schema = Notes


def test_middleware_keys_keep_their_reducers_through_inner_runs():
    """A middleware key written ``NotRequired[Annotated[list, add]]`` is written back from
    inner ReAct runs through its reducer; a channel type there (``UntrackedValue``) is
    not a reducer."""
    assert caller_reducers({"middleware": [NoteKeeper()]}) == {"fruits": operator.add}
    limit = ModelCallLimitMiddleware(run_limit=3)
    assert caller_reducers({"middleware": [limit]}) == {}
