"""Plan-and-Execute: write a plan, carry out each step with a small ReAct loop, synthesise."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.plan_execute.graph import LOOP
from loopgraphs.graphs.plan_execute.state import (
    PlanExecuteGraph,
    PlanExecuteOptions,
    PlanExecuteOutput,
    PlanExecuteState,
)
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_plan_execute_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[PlanExecuteOptions[ResponseT, ContextT]],
) -> PlanExecuteGraph[ContextT, ResponseT]:
    """Build Plan-and-Execute: plan numbered steps, run each as a ReAct loop, synthesise.

    The planner writes as few numbered steps as the request needs (a plan of one step is
    the request itself); each step runs ReAct (with the request, the plan and the
    earlier results as context), on its share of the model calls the run has left;
    ``synthesize`` writes the answer, with the synthesis prompt ReAct uses (the step
    results as the work log, the latest result as the draft), and asks once more for a
    short answer when its reply was cut. Optionally the remaining steps are revised after
    a step that failed (``replan``) and the plan is shown to a human for approval or
    editing before execution (``approve_plan``).

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
        **options: ``max_steps`` (most plan steps executed; a longer plan is cut; 7),
            ``max_step_iterations`` (most model calls in each step's ReAct loop, fewer
            when the run's calls run short, see the budget above; 5), ``replan`` (after
            a step that failed, i.e. did not complete or gave no result, revise the
            remaining steps, which may end the plan early; a completed step goes straight
            on; False), ``approve_plan`` (pause after planning with ``interrupt({"plan":
            [...], "question": ...})``; resume with ``Command(resume={"type":
            "approve"})``, ``{"type": "edit", "steps": [...]}`` or ``{"type": "reject",
            "message": "..."}``, which ends the run with ``status="error"``; needs a
            checkpointer; False) and the shared options of ``ToolLoopOptions`` (see
            ``create_react_graph``); the tool options apply to every step's ReAct loop.
            The planner, every step's ReAct run, the revisions and the synthesis read the
            user's earlier turns and the answers they got; ``max_history_tokens`` bounds
            them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``plan`` (list of steps),
        ``step_results`` (``{"step", "result", "status"}`` per executed step),
        ``current_step`` (steps executed) and, in ``messages``, one message per step
        result and the final answer.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = [
    "LOOP",
    "PlanExecuteGraph",
    "PlanExecuteOutput",
    "PlanExecuteState",
    "create_plan_execute_graph",
]
