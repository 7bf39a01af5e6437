"""Compiled graphs for LangGraph Studio and ``langgraph dev`` (listed in langgraph.json).

Each graph is built without a model: the model, tool mode, tools and budget come from the
run's context (``LoopContext``), defaulting to the embedded local model and the
calculator and search tools, so every loop can be picked and configured in Studio. The
budgets are sized for a small local model; build your own graph for larger ones.
"""

from __future__ import annotations

from loopgraphs.graphs.cot import create_cot_graph
from loopgraphs.graphs.critic import create_critic_graph
from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from loopgraphs.graphs.react import create_react_graph
from loopgraphs.graphs.reflexion import create_reflexion_graph
from loopgraphs.graphs.self_ask import create_self_ask_graph
from loopgraphs.graphs.tot import create_tot_graph
from loopgraphs.toolkits import get_tools

STUDIO_TOOLS = ("calculator", "search")

cot = create_cot_graph(None, name="cot")
react = create_react_graph(None, get_tools(STUDIO_TOOLS), name="react")
plan_execute = create_plan_execute_graph(
    None, get_tools(STUDIO_TOOLS), max_steps=3, name="plan_execute"
)
reflexion = create_reflexion_graph(None, get_tools(STUDIO_TOOLS), name="reflexion")
self_ask = create_self_ask_graph(None, get_tools(STUDIO_TOOLS), name="self_ask")
critic = create_critic_graph(None, get_tools(STUDIO_TOOLS), name="critic")
tot = create_tot_graph(None, n_branches=2, beam_width=1, max_depth=2, name="tot")
