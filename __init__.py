"""loopgraphs: proven agent loops as compiled LangGraph graphs, for any chat model."""

from loopgraphs.context import LoopContext
from loopgraphs.graphs.cot import create_cot_graph
from loopgraphs.graphs.critic import create_critic_graph
from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from loopgraphs.graphs.react import create_react_graph
from loopgraphs.graphs.reflexion import create_reflexion_graph
from loopgraphs.graphs.registry import LOOPS, build_loop
from loopgraphs.graphs.self_ask import create_self_ask_graph
from loopgraphs.graphs.tot import create_tot_graph
from loopgraphs.models import load_model
from loopgraphs.nodes.parsing.text import strip_fence
from loopgraphs.state import Usage

__all__ = [
    "LOOPS",
    "LoopContext",
    "Usage",
    "build_loop",
    "create_cot_graph",
    "create_critic_graph",
    "create_plan_execute_graph",
    "create_react_graph",
    "create_reflexion_graph",
    "create_self_ask_graph",
    "create_tot_graph",
    "load_model",
    "strip_fence",
]
