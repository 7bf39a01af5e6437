"""Self-Ask's graph: ``prepare → generate → [review] → call_tool → generate …``, and
``final_answer`` when the follow-up budget is spent (or a reply was cut).

``generate`` calls the model and reads its own reply: a follow-up question answered by a
tool (the first tool, or the one named with ``Tool:``/``Tool Input:``, or the tools the
model calls natively) is written as an assistant message with the tool calls, so the
``after_model`` hooks see them (approval middleware works unchanged). ``call_tool`` is the
kit's tool step, each call sent on its own as in ReAct; the next turn reads each
intermediate answer from the ``ToolMessage`` answering its call. Without tools the model
answers its own follow-ups on its next turn. ``final_answer`` asks once for the answer.
"""

from __future__ import annotations

from typing import Any

from loopgraphs.graphs.self_ask.state import (
    SelfAskOptions,
    SelfAskOutput,
    SelfAskState,
    call_budget,
)
from loopgraphs.graphs.self_ask.steps import (
    final_answer,
    opening,
    route_tools,
    route_turn,
    take_turn,
)
from loopgraphs.nodes import END, LoopBuild, LoopSpec


def wire(loop: LoopBuild[SelfAskOptions[Any, Any]]) -> None:
    """Wire Self-Ask's steps."""
    # final_answer is the first model step, so its hook nodes have create_agent's names.
    loop.step("final_answer", final_answer, model=True, then=END)
    loop.step(
        "generate",
        take_turn,
        model=True,
        calls_tools=True,
        then=route_turn,
        targets=["generate", "final_answer", END],
    )
    loop.tool_step(route_tools, targets=["generate", "final_answer"])
    loop.start("generate", opening=opening, scratch={"iterations": 0})


LOOP: LoopSpec[SelfAskOptions[Any, Any]] = LoopSpec(
    "self_ask",
    wire,
    state=SelfAskState,
    output=SelfAskOutput,
    options=SelfAskOptions,
    summary="multi-hop questions answered by chaining simple look-ups",
    takes_tools=True,
    budget_option="max_follow_ups",
    iterations_option="max_follow_ups",
    call_budget=call_budget,
)
