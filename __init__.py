"""loopgraphs: proven agent loops as compiled LangGraph graphs, for any chat model."""

from loopgraphs.context import LoopContext
from loopgraphs.graphs.cot import CoTGraph, CoTOutput, create_cot_graph
from loopgraphs.graphs.critic import CriticGraph, CriticOutput, create_critic_graph
from loopgraphs.graphs.lats import LATSGraph, LATSOutput, create_lats_graph
from loopgraphs.graphs.plan_execute import (
    PlanExecuteGraph,
    PlanExecuteOutput,
    create_plan_execute_graph,
)
from loopgraphs.graphs.react import ReActGraph, ReActOutput, create_react_graph
from loopgraphs.graphs.reflexion import ReflexionGraph, ReflexionOutput, create_reflexion_graph
from loopgraphs.graphs.registry import LOOPS, LoopName, build_loop, register_loop
from loopgraphs.graphs.rewoo import ReWOOGraph, ReWOOOutput, create_rewoo_graph
from loopgraphs.graphs.self_ask import SelfAskGraph, SelfAskOutput, create_self_ask_graph
from loopgraphs.graphs.tot import ToTGraph, ToTOutput, create_tot_graph
from loopgraphs.models import load_model
from loopgraphs.nodes.parsing.text import strip_fence
from loopgraphs.state import Usage

__all__ = [
    "LOOPS",
    "CoTGraph",
    "CoTOutput",
    "CriticGraph",
    "CriticOutput",
    "LATSGraph",
    "LATSOutput",
    "LoopContext",
    "LoopName",
    "PlanExecuteGraph",
    "PlanExecuteOutput",
    "ReActGraph",
    "ReActOutput",
    "ReWOOGraph",
    "ReWOOOutput",
    "ReflexionGraph",
    "ReflexionOutput",
    "SelfAskGraph",
    "SelfAskOutput",
    "ToTGraph",
    "ToTOutput",
    "Usage",
    "build_loop",
    "create_cot_graph",
    "create_critic_graph",
    "create_lats_graph",
    "create_plan_execute_graph",
    "create_react_graph",
    "create_reflexion_graph",
    "create_rewoo_graph",
    "create_self_ask_graph",
    "create_tot_graph",
    "load_model",
    "register_loop",
    "strip_fence",
]
