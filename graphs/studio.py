"""Compiled graphs for LangGraph Studio and ``langgraph dev`` (listed in langgraph.json).

Each graph is built without a model: the model, tool mode, tools and budget come from the
run's context (``LoopContext``), defaulting to the embedded local model and the
calculator and search tools, so every loop can be picked and configured in Studio. The
budgets are sized for a small local model; build your own graph for larger ones.
"""

from __future__ import annotations

from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.toolkits import get_tools

STUDIO_TOOLS = ("calculator", "search")

_graphs = {
    name: spec.build(None, get_tools(STUDIO_TOOLS), name=name, **spec.studio_options)
    for name, spec in LOOP_SPECS.items()
}

cot = _graphs["cot"]
react = _graphs["react"]
plan_execute = _graphs["plan_execute"]
reflexion = _graphs["reflexion"]
self_ask = _graphs["self_ask"]
critic = _graphs["critic"]
tot = _graphs["tot"]
