"""Compiled graphs for LangGraph Studio and ``langgraph dev`` (listed in langgraph.json).

Each graph is built without a model: the model, tool mode, tools and budget come from the
run's context (``LoopContext``), defaulting to the embedded local model and the
calculator and search tools, so every loop can be picked and configured in Studio. The
default model is loaded in a worker thread on the first run that needs it, so that
``langgraph dev``, which fails blocking calls on its event loop, serves a run without any
context. The budgets are sized for a small local model; build your own graph for larger
ones.

There is one module-level graph per loop of the registry, named as the loop
(``studio.react``, ...), which is what langgraph.json points at.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.toolkits import get_tools

STUDIO_TOOLS = ("calculator", "search")

GRAPHS: dict[str, CompiledStateGraph[Any, Any, Any, Any]] = {
    name: spec.build(None, get_tools(STUDIO_TOOLS), name=name, **spec.studio_options)
    for name, spec in LOOP_SPECS.items()
}

globals().update(GRAPHS)
__all__ = ["GRAPHS", "STUDIO_TOOLS", *GRAPHS]
