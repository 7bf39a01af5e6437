"""Tree-of-Thoughts' graph: ``prepare → expand (one task per branch of the beam, side by
side) → score_branches → expand ... → final_answer``; an answer found in a thought ends
the search at ``score_branches``."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.tot.state import ToTOptions, ToTOutput, ToTState, call_budget
from loopgraphs.graphs.tot.steps import (
    close_level,
    expand,
    expansions,
    final_answer,
    opening,
    route_level,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[ToTOptions[Any, Any]]) -> None:
    """Wire Tree-of-Thoughts' steps."""
    loop.step("expand", expand, model=True, fan_out=expansions, then="score_branches")
    loop.step(
        "score_branches",
        close_level,
        model=True,
        then=route_level,
        targets=["expand", "final_answer", END],
    )
    loop.step("final_answer", final_answer, model=True, then=END)
    # ``prepare`` reads the whole state, so the first level's tasks get the caller's keys.
    loop.start(route_level, opening=opening, targets=["expand", "final_answer"])


LOOP: LoopSpec[ToTOptions[Any, Any]] = LoopSpec(
    "tot",
    wire,
    state=ToTState,
    output=ToTOutput,
    options=ToTOptions,
    summary="several competing strategies: explore branches, keep the best (beam search)",
    takes_tools=False,
    budget_option="max_depth",
    call_budget=call_budget,
    studio_options={"n_branches": 2, "beam_width": 1, "max_depth": 2},
)
