"""CRITIC's graph: ``prepare → generate → critique → [review] → call_tool → revise →
critique …``, each step ending the run when it accepts, finishes or runs out."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.critic.state import CriticOptions, CriticOutput, CriticState, call_budget
from loopgraphs.graphs.critic.steps import (
    critique,
    opening,
    revise,
    route_critique,
    route_draft,
    write_draft,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[CriticOptions[Any, Any]]) -> None:
    """Wire CRITIC's steps."""
    loop.step("generate", write_draft, model=True, then=route_draft, targets=["critique", END])
    loop.step(
        "critique",
        critique,
        model=True,
        calls_tools=True,
        then=route_critique,
        targets=["revise", END],
    )
    loop.tool_step("revise", after_review="revise")
    loop.step("revise", revise, model=True, then=route_draft, targets=["critique", END])
    loop.start("generate", opening=opening)


LOOP: LoopSpec[CriticOptions[Any, Any]] = LoopSpec(
    "critic",
    wire,
    state=CriticState,
    output=CriticOutput,
    options=CriticOptions,
    summary="answers with checkable facts: draft, verify claims with tools, revise",
    takes_tools=True,
    budget_option="max_critique_rounds",
    iterations_option="max_critique_rounds",
    main_step="generate",
    call_budget=call_budget,
)
