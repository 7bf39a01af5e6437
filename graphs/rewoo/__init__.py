"""ReWOO (Reasoning WithOut Observation): plan every tool call at once, run them, answer
from the evidence."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.rewoo.graph import LOOP
from loopgraphs.graphs.rewoo.state import ReWOOGraph, ReWOOOptions, ReWOOOutput, ReWOOState
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_rewoo_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[ReWOOOptions[ResponseT, ContextT]],
) -> ReWOOGraph[ContextT, ResponseT]:
    """Build the ReWOO loop (Xu et al., 2023): a planner writes the whole plan at once,
    a worker runs its steps through the tool step, a solver answers from the evidence.

    The planner (one internal call) writes the plan's steps, each
    ``{"plan", "evidence": "#E<n>", "tool", "tool_input"}``, through the structured-output
    ladder of the run's tool mode; a reply in the classic form (``Plan: ...`` then
    ``#E1 = Tool[input]``), a bare list of steps and a plan in a code fence are read too.
    A step's input may name the evidence of earlier steps (``#E1``); the name refers to
    the latest step before it that writes that name, and one no earlier step writes is
    replaced by a note that the evidence is missing. The worker makes no model call: it
    writes the ready steps as one reply of tool calls (the evidence put in), which run
    through the tool step (approvals, ``max_tool_calls``, loop-break, timeouts, fencing
    and ``wrap_tool_call`` middleware apply), steps that wait on no missing evidence at
    once. A tool that fails gives its error observation as evidence, never retried by
    the loop. The solver (one chat turn) answers from the plan and the evidence after
    the conversation's earlier turns. A plan without steps goes straight to the solver.

    Call budget: 4 model calls whatever the number of steps: the planner's and the
    solver's, each asked once more when its reply is unreadable (the plan) or cut at the
    token cap or empty (the answer); plus up to 3 with ``response_format``. A run ends
    ``completed`` when every planned step ran, ``max_iterations`` when ``max_steps`` cut
    the plan, the run's budget (``max_tool_calls``, ``recursion_limit``) stopped the
    worker, or the answer was cut twice (then without an answer).

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: no plan, the solver
            answers alone.
        **options: ``max_steps`` (steps of the plan run, 5; a longer plan is cut),
            ``parallel_steps`` (run the steps that wait on no missing evidence at once;
            False: one at a time in the plan's order; True) and the shared options of
            ``ToolLoopOptions`` (``tool_mode``, ``checkpointer``, ``store``, ``name``,
            ``state_schema``, ``context_schema``, ``response_format``, ``system_prompt``,
            ``interrupt_before_tools``, ``max_tool_calls``, ``loop_break``,
            ``tool_choice``, ``tool_timeout``, ``max_tool_output_chars``,
            ``handle_tool_errors``, ``retry_policy``, ``max_history_tokens``). With
            ``tool_choice`` ``"required"`` (the embedded model's default) or a tool's
            name the plan has at least one step. The planner reads the user's earlier
            turns, the answers they got and the request; the solver reads the earlier
            turns before its prompt; ``max_history_tokens`` bounds the earlier turns.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``plan`` (the steps as
        planned) and ``evidence`` (what each step gathered, in the plan's order).

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = ["LOOP", "ReWOOGraph", "ReWOOOutput", "ReWOOState", "create_rewoo_graph"]
