"""The registry of loops by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from loopgraphs.graphs.cot import create_cot_graph
from loopgraphs.graphs.critic import create_critic_graph
from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from loopgraphs.graphs.react import create_react_graph
from loopgraphs.graphs.reflexion import create_reflexion_graph
from loopgraphs.graphs.self_ask import create_self_ask_graph
from loopgraphs.graphs.tot import create_tot_graph

LOOPS: dict[str, Callable[..., CompiledStateGraph[Any, Any, Any, Any]]] = {
    "cot": create_cot_graph,
    "react": create_react_graph,
    "plan_execute": create_plan_execute_graph,
    "reflexion": create_reflexion_graph,
    "self_ask": create_self_ask_graph,
    "critic": create_critic_graph,
    "tot": create_tot_graph,
}

LOOP_SUMMARIES: dict[str, str] = {
    "cot": "no tools needed: arithmetic, logic, step-by-step reasoning; the cheapest (1 call)",
    "react": "general assistant that uses tools, one decision at a time",
    "plan_execute": "multi-step tasks with distinct sub-goals; an auditable plan first",
    "reflexion": "correctness matters and a first attempt may fail: retry with self-critique",
    "self_ask": "multi-hop questions answered by chaining simple look-ups",
    "critic": "answers with checkable facts: draft, verify claims with tools, revise",
    "tot": "several competing strategies: explore branches, keep the best (beam search)",
}


def build_loop(
    name: str, model: Any, tools: Any = (), **options: Any
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build a loop by name, e.g. ``build_loop("react", model, [calculator])``.

    Args:
        name: One of ``LOOPS``.
        model: A chat model or a model spec string.
        tools: Tools for the loops that use them (ignored by ``cot``).
        **options: The loop's keyword options.

    Raises:
        ValueError: ``name`` is not a known loop.
    """
    if name not in LOOPS:
        raise ValueError(f"unknown loop {name!r}; choose one of {', '.join(LOOPS)}")
    if name == "cot":
        return LOOPS[name](model, **options)
    return LOOPS[name](model, list(tools or ()), **options)
