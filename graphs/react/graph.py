"""ReAct's graph: ``prepare → [select_tools] → generate → [review] → call_tool → generate
…``, ``final_answer`` when the turns run out, and ``synthesize`` with
``synthesize_answer``."""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.react.state import (
    TOOL_SELECTION_THRESHOLD,
    ReActOptions,
    ReActOutput,
    ReActState,
    call_budget,
)
from loopgraphs.graphs.react.steps import (
    final_answer,
    route_turn,
    select_tools,
    synthesize,
    take_turn,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[ReActOptions[Any, Any]]) -> None:
    """Wire ReAct's steps."""
    synthesizes = loop.options["synthesize_answer"]
    finish = ["synthesize"] if synthesizes else []
    loop.step("select_tools", select_tools, model=True, then="generate")
    loop.step(
        "generate",
        take_turn,
        model=True,
        calls_tools=True,
        settles_answer=True,
        then=route_turn,
        targets=["select_tools", "generate", "final_answer", *finish, END],
    )
    loop.tool_step("generate")
    loop.start("generate", scratch={"iterations": 0})
    loop.step(
        "final_answer",
        final_answer,
        model=True,
        settles_answer=True,
        then="synthesize" if synthesizes else END,
    )
    if synthesizes:
        loop.step("synthesize", synthesize, model=True, settles_answer=True, then=END)


LOOP: LoopSpec[ReActOptions[Any, Any]] = LoopSpec(
    "react",
    wire,
    state=ReActState,
    output=ReActOutput,
    options=ReActOptions,
    summary="general assistant that uses tools, one decision at a time",
    takes_tools=True,
    budget_option="max_iterations",
    iterations_option="max_iterations",
    main_step="generate",
    call_budget=call_budget,
    selects_tools_above=TOOL_SELECTION_THRESHOLD,
)
