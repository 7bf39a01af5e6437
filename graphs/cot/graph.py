"""Chain-of-Thought's graph: ``prepare → generate → parse → END``, with ``vote`` after
``parse`` when ``self_consistency`` asks for more than one sample."""

from __future__ import annotations

from loopgraphs.graphs.cot.state import CoTOptions, CoTOutput, CoTState, call_budget
from loopgraphs.graphs.cot.steps import read_answers, reason, vote
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[CoTOptions]) -> None:
    """Wire Chain-of-Thought's steps."""
    loop.start("generate")
    loop.step("generate", reason, model=True, then="parse")
    if loop.options["self_consistency"] == 1:
        loop.step("parse", read_answers, then=END)
        return
    loop.step("parse", read_answers, then="vote")
    loop.step("vote", vote, then=END)


LOOP: LoopSpec[CoTOptions] = LoopSpec(
    "cot",
    wire,
    state=CoTState,
    output=CoTOutput,
    options=CoTOptions,
    summary="no tools needed: arithmetic, logic, step-by-step reasoning; the cheapest (1 call)",
    takes_tools=False,
    budget_option="self_consistency",
    call_budget=call_budget,
)
