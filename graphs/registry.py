"""The registry of loops by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from loopgraphs.graphs.react import create_react_graph

LOOPS: dict[str, Callable[..., CompiledStateGraph[Any, Any, Any, Any]]] = {
    "react": create_react_graph,
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
