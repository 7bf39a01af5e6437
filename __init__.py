"""loopgraphs: proven agent loops as compiled LangGraph graphs, for any chat model."""

from loopgraphs.graphs.plan_execute import create_plan_execute_graph
from loopgraphs.graphs.react import create_react_graph
from loopgraphs.graphs.reflexion import create_reflexion_graph
from loopgraphs.graphs.registry import LOOPS, build_loop
from loopgraphs.graphs.tot import create_tot_graph
from loopgraphs.models import load_model
from loopgraphs.state import Usage

__all__ = [
    "LOOPS",
    "Usage",
    "build_loop",
    "create_plan_execute_graph",
    "create_react_graph",
    "create_reflexion_graph",
    "create_tot_graph",
    "load_model",
]
