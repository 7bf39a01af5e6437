"""Plan-and-Execute: write a plan, carry out each step with a small ReAct loop, synthesise.

Graph: ``prepare → plan → [review_plan] → execute → [replan] → execute … → synthesize``.
The planner writes as few numbered steps as the request needs (a plan of one step is the
request itself); each visit of ``execute`` runs one step through the compiled ReAct
subgraph (with the request, the plan and the earlier results as context), on its share of
the model calls the run has left; ``synthesize`` writes the answer, with the synthesis
prompt ReAct uses (the step results as the work log, the latest result as the draft), and
asks once more for a short answer when its reply was cut. Earlier results are cut to fit
the model's context window. Optionally the remaining steps are revised after a step that
failed (``replan``) and the plan is shown to a human for approval or editing before
execution (``approve_plan``).

This module wires the graph and holds the factory; the steps and routers are in
``loopgraphs.graphs.plan_execute_steps``, the state, the plan schemas and the step
results as prompts show them in ``loopgraphs.graphs.plan_execute_state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TypeAlias

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.graphs.plan_execute_state import (
    CHARS_PER_TOKEN,
    STEP_CHARS,
    Plan,
    PlanExecuteOutput,
    PlanExecuteState,
    PlanUpdate,
    results_room,
    results_text,
)
from loopgraphs.graphs.plan_execute_steps import (
    PlanExecuteOptions,
    call_budget,
    execute,
    opening,
    plan,
    review_plan,
    revise,
    route_executed,
    route_planned,
    route_replanned,
    route_reviewed,
    synthesize,
)
from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import add_step, node_callable
from loopgraphs.nodes.inner import InnerLoop
from loopgraphs.nodes.routing import route
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    check_flag,
    check_positive,
)
from loopgraphs.state import LoopBuilder, LoopInput, ResponseT

PlanExecuteGraph: TypeAlias = CompiledStateGraph[
    PlanExecuteState, ContextT, LoopInput, PlanExecuteOutput[ResponseT]
]
"""The compiled graph ``create_plan_execute_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def build_plan_execute(
    settings: LoopSettings,
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    approve_plan: bool = False,
    options: Mapping[str, object] | None = None,
) -> LoopBuilder:
    """The uncompiled Plan-and-Execute graph for ``settings``: the steps of
    ``loopgraphs.graphs.plan_execute_steps``, bound to the factory's options, and their
    routes."""
    loop = PlanExecuteOptions(
        settings=settings,
        react=InnerLoop(REACT, settings, options or {}, max_iterations=max_step_iterations),
        max_steps=max_steps,
        replan=replan,
        approve_plan=approve_plan,
    )
    builder = new_graph(
        PlanExecuteState, PlanExecuteOutput, options or {}, loop="plan_execute", settings=settings
    )
    add_step(builder, "plan", partial(plan, loop), settings, model_step=True)
    add_step(builder, "execute", partial(execute, loop), settings, subgraph=loop.react.graph)
    add_step(builder, "synthesize", synthesize, settings, model_step=True)
    add_start(builder, settings, opening, lambda state: "plan", ["plan"])
    review = ["review_plan"] if approve_plan else []
    route(builder, "plan", partial(route_planned, loop), [*review, "execute", "synthesize"])
    if approve_plan:
        reviewing = node_callable(partial(review_plan, loop), None, name="review_plan")
        builder.add_node("review_plan", reviewing)
        route(builder, "review_plan", route_reviewed, ["execute", "synthesize"])
    revise_node = ["replan"] if replan else []
    after_step = ["execute", *revise_node, "synthesize"]
    route(builder, "execute", partial(route_executed, loop), after_step)
    if replan:
        add_step(builder, "replan", partial(revise, loop), settings, model_step=True)
        route(builder, "replan", partial(route_replanned, loop), ["execute", "synthesize"])
    builder.add_edge("synthesize", END)
    return builder


def create_plan_execute_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    approve_plan: bool = False,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> PlanExecuteGraph[ContextT, ResponseT]:
    """Build Plan-and-Execute: plan numbered steps, run each as a ReAct loop, synthesise.

    Call budget (model replies, whatever the model says), ``call_budget``::

        2                                     planner (one reformat retry)
        + max_step_iterations + 1             the steps' calls: one step's full ReAct run
        + 2 × (max_steps − 1)                 and one iteration and its forced answer for
                                              each other step
        + 2 × (max_steps − 1)                 with replan=True (a revision after each
                                              failed step that has steps after it)
        + 2                                   synthesis (once more if its reply was cut)

    plus 2 × max_steps when more than 12 tools are given (ReAct's tool selection). The plan
    has as few steps as the request needs; a plan of one step is the request itself, which
    its ReAct run gets as it is. Each step's ReAct loop gets an even share of the calls the
    run has left for its remaining steps (after the synthesis and the revisions that may
    still come), at most ``max_step_iterations`` iterations and its forced final answer, so
    a one-step plan gets them all. A run's ``context`` ``max_iterations`` replaces
    ``max_step_iterations`` in the formula; a context of a type without a
    ``max_iterations`` field cannot pass a smaller share on, so such a step runs only when
    its full budget fits. A step that ends with ``max_iterations`` is recorded and the plan
    goes on; if the graph runs low on steps (``recursion_limit``) or calls, the remaining
    steps are skipped, the answer is synthesised from the results so far and the status
    is ``max_iterations``. A synthesis reply cut at the token cap is never the answer: it
    is asked for once more, and when that is cut too, the run ends ``max_iterations`` with
    the latest result of a completed step. Earlier results in a prompt are cut (the oldest
    left out first) to fit the model's context window, read from its profile's
    ``max_input_tokens``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables for the steps. None or empty: reasoning only.
        max_steps: Most plan steps executed; a longer plan is cut.
        max_step_iterations: Most model calls in each step's ReAct loop (fewer when the
            run's calls run short, see the budget above).
        replan: After a step that failed (it did not complete, or gave no result), revise
            the remaining steps (may end the plan early). A completed step goes straight on.
        approve_plan: Pause after planning with ``interrupt({"plan": [...], "question":
            ...})``; resume with ``Command(resume={"type": "approve"})``, ``{"type":
            "edit", "steps": [...]}`` or ``{"type": "reject", "message": "..."}`` (the run
            then ends with ``status="error"``). Needs a checkpointer.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            the tool options apply to every step's ReAct loop. The planner, every
            step's ReAct run, the revisions and the synthesis read the user's earlier
            turns and the answers they got; ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``plan`` (list of steps),
        ``step_results`` (``{"step", "result", "status"}`` per executed step),
        ``current_step`` (steps executed) and, in ``messages``, one message per step
        result and the final answer.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_steps", max_steps)
    check_positive("max_step_iterations", max_step_iterations)

    def build(settings: LoopSettings) -> LoopBuilder:
        return build_plan_execute(
            settings,
            max_steps=max_steps,
            max_step_iterations=max_step_iterations,
            replan=check_flag("replan", replan),
            approve_plan=check_flag("approve_plan", approve_plan),
            options=options,
        )

    return compiled_loop("plan_execute", build, model, tools, options)


__all__ = [
    "CHARS_PER_TOKEN",
    "STEP_CHARS",
    "Plan",
    "PlanExecuteGraph",
    "PlanExecuteOutput",
    "PlanExecuteState",
    "PlanUpdate",
    "build_plan_execute",
    "call_budget",
    "create_plan_execute_graph",
    "results_room",
    "results_text",
]
