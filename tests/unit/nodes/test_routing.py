"""Routers of every shape reach the step they name: plain functions with or without the
runtime, bound methods, ``functools.partial``; and a run that is over ends whatever the
router says."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from loopgraphs.nodes.driver import takes_runtime
from loopgraphs.nodes.routing import route, run_over, while_running


class Trail(TypedDict, total=False):
    visited: list[str]
    status: str
    scratch: dict[str, Any]


class Chooser:
    def pick(self, state: Trail) -> str:
        return "b"


def to(target: str, state: Trail) -> str:
    return target


def with_runtime(state: Trail, runtime: Any) -> str:
    assert runtime is not None
    return "b"


def graph_with(router: Any) -> Any:
    builder = StateGraph(Trail)
    builder.add_node("a", lambda state: {"visited": [*state.get("visited", []), "a"]})
    builder.add_node("b", lambda state: {"visited": [*state["visited"], "b"]})
    builder.add_edge(START, "a")
    route(builder, "a", router, ["b"])
    builder.add_edge("b", END)
    return builder.compile()


@pytest.mark.parametrize(
    "router",
    [Chooser().pick, functools.partial(to, "b"), with_runtime, lambda state: "b"],
    ids=["bound method", "partial", "with runtime", "plain"],
)
def test_every_kind_of_router_reaches_its_step(router):
    assert graph_with(router).invoke({"status": "running"})["visited"] == ["a", "b"]


def test_takes_runtime_counts_the_parameters_left_to_fill():
    assert not takes_runtime(Chooser().pick)
    assert not takes_runtime(functools.partial(to, "b"))
    assert takes_runtime(with_runtime)
    assert takes_runtime(functools.partial(lambda x, state, runtime: "b", 1))


def routes_with_options(state: Trail, *, options: str) -> str:
    return options


def routes_with_runtime_and_options(state: Trail, runtime: object, *, options: str) -> str:
    return options


def test_a_partials_bound_options_are_not_taken_for_the_runtime():
    assert not takes_runtime(functools.partial(routes_with_options, options="b"))
    assert takes_runtime(functools.partial(routes_with_runtime_and_options, options="b"))
    router = functools.partial(routes_with_options, options="b")
    assert graph_with(router).invoke({"status": "running"})["visited"] == ["a", "b"]


@pytest.mark.parametrize(
    "state",
    [{"status": "error"}, {"status": "running", "scratch": {"hook_ended": True}}],
    ids=["error", "ended by a hook"],
)
def test_a_run_that_is_over_ends_whatever_the_router_says(state):
    assert run_over(state)
    assert graph_with(lambda state: "b").invoke(state)["visited"] == ["a"]


def test_a_running_run_is_not_over():
    assert not run_over({"status": "running", "scratch": {"hook_ended": False}})
    assert not run_over({})


def test_while_running_leads_on_only_while_the_run_is_running():
    router = while_running("b")
    assert router({"status": "running"}) == "b"
    assert router({"status": "completed"}) == END
    assert router({}) == END


def test_a_partial_router_keeps_its_functions_name_on_the_edge():
    graph = graph_with(functools.partial(routes_with_options, options="b"))
    assert list(graph.builder.branches["a"]) == ["routes_with_options"]
    assert list(graph_with(lambda state: "b").builder.branches["a"]) == ["<lambda>"]
