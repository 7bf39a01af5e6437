"""Reflexion's graph: ``prepare → generate → evaluate → (END | reflect → generate …)``.

Each visit of ``generate`` is one episode: a whole run of ReAct, compiled here once and
wired in as the ``Episodes`` whose bound ``generate`` runs it (see
``loopgraphs.graphs.reflexion.steps``)."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.graphs.reflexion.state import (
    ReflexionOptions,
    ReflexionOutput,
    ReflexionState,
    call_budget,
)
from loopgraphs.graphs.reflexion.steps import Episodes, judge, learn, opening, route_judged
from loopgraphs.nodes import END, InnerLoop, LoopBuild, LoopSpec


def wire(loop: LoopBuild[ReflexionOptions[Any, Any]]) -> None:
    """Wire Reflexion's steps."""
    react = InnerLoop(
        REACT, loop.settings, loop.caller_options, max_iterations=loop.options["max_iterations"]
    )
    episodes = Episodes(react)
    loop.start("generate", opening=opening)
    loop.step("generate", episodes.generate, subgraph=react.graph, then="evaluate")
    loop.step("evaluate", judge, model=True, then=route_judged, targets=["reflect", END])
    loop.step("reflect", learn, model=True, then="generate")


LOOP: LoopSpec[ReflexionOptions[Any, Any]] = LoopSpec(
    "reflexion",
    wire,
    state=ReflexionState,
    output=ReflexionOutput,
    options=ReflexionOptions,
    summary="correctness matters and a first attempt may fail: retry with self-critique",
    takes_tools=True,
    budget_option="max_iterations",
    iterations_option="max_iterations",
    call_budget=call_budget,
    selects_tools_above=REACT.selects_tools_above,
)
