"""Self-Ask: decompose a question into follow-up questions answered one at a time.

Graph: ``prepare → generate → [review] → call_tool → generate ...``. ``generate`` calls
the model and reads its own reply: a follow-up question answered by a tool (the first
tool, or the one named with ``Tool:``/``Tool Input:``, or the tools the model calls
natively) is written as an assistant message with the tool calls, so the ``after_model``
hooks see them (approval middleware works unchanged). ``call_tool`` is the shared tool
step, each call sent on its own as in ReAct; the next turn reads each intermediate answer
from the ``ToolMessage`` answering its call. Without tools the model answers its own
follow-ups on its next turn. ``final_answer`` asks once for the answer when the follow-up
budget is spent.

This module wires the graph; the steps and routers are in
``loopgraphs.graphs.self_ask_steps``, the run's state and phase in
``loopgraphs.graphs.self_ask_state``. A model that cannot be trusted to write the grammar
(json and text modes on the embedded small model) is guided instead: see
``loopgraphs.graphs.self_ask_guided`` for its grounded schemas and
``loopgraphs.graphs.self_ask_guided_turns`` for its turns.
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
from loopgraphs.graphs.assembly import add_review, add_tool_turn, compiled_loop
from loopgraphs.graphs.self_ask_state import SelfAskFields, SelfAskState, TurnSteps
from loopgraphs.graphs.self_ask_steps import SelfAskRoutes, final_answer, generate, opening
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import add_step
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_positive
from loopgraphs.nodes.tool_step import ToolStep
from loopgraphs.state import LoopBuilder, LoopInput, ResponseT, RunResult


class SelfAskOutput(SelfAskFields, RunResult[ResponseT]):
    """Output of the Self-Ask loop: ``follow_ups`` lists every follow-up question with its
    answer and the tool that gave it (None when the model answered itself)."""


SelfAskGraph: TypeAlias = CompiledStateGraph[
    SelfAskState, ContextT, LoopInput, SelfAskOutput[ResponseT]
]
"""The compiled graph ``create_self_ask_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def build_self_ask(
    settings: LoopSettings, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled Self-Ask graph for ``settings``."""
    steps = TurnSteps.of(settings)
    routes = SelfAskRoutes(settings, steps)
    builder = new_graph(
        SelfAskState,
        SelfAskOutput,
        options or {},
        loop="self_ask",
        settings=settings,
        tools_node="call_tool",
    )
    # The steps a router leads to are added first, so that its answers lead through
    # their hook nodes.
    builder.add_node("call_tool", ToolStep(settings).graph_node())
    add_step(builder, "final_answer", final_answer, settings, model_step=True)
    add_review(builder, settings, routes.route_reviewed, ["generate", "final_answer"])
    add_tool_turn(
        builder,
        settings,
        "generate",
        partial(generate, steps),
        targets=["generate", "final_answer"],
        router=routes.route_generated,
    )
    add_start(
        builder,
        settings,
        partial(opening, steps),
        while_running("generate"),
        ["generate"],
        scratch={"iterations": 0},
    )
    route(builder, "call_tool", routes.route_tools, ["generate", "final_answer"])
    builder.add_edge("final_answer", END)
    return builder


def create_self_ask_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_follow_ups: int = 5,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> SelfAskGraph[ContextT, ResponseT]:
    """Build the Self-Ask loop: follow-up questions, intermediate answers, final answer.

    The model writes ``Follow up: <question>``; the question goes to the first tool (its
    single argument), or to the tool named by ``Tool: X`` / ``Tool Input: Q``. In native
    mode the model's own tool calls answer its follow-ups, while the follow-up grammar
    still shapes its text. In every mode the reply is stored with its tool calls, which
    the ``after_model`` hooks see (``HumanInTheLoopMiddleware`` approves, edits or rejects
    them), they run on the shared tool step (``wrap_tool_call``, ``Command`` returns
    including ``Command.PARENT``, ``return_direct``), and each is answered by a
    ``ToolMessage`` in ``messages``; ``max_tool_calls`` and the loop-break count every
    call of the run. A json- or text-mode model reads each result back as
    ``Intermediate answer: <fenced result>``. Without tools the model answers its own follow-ups:
    it is asked to continue with ``Intermediate answer:``. ``So the final answer is:``
    ends the loop (it wins over anything else in the same reply); a reply with no
    marker is itself the answer.

    Call budget: at most ``max_follow_ups + 1`` model calls. Each turn that asks a
    follow-up costs one call; when ``max_follow_ups`` calls have been made and the last
    one still asked a question, one more call asks for the final answer (that call is
    part of the budget) and the run ends with ``status="max_iterations"`` and a
    best-effort answer (the forced reply, else the last intermediate answer).
    ``context={"max_iterations": n}`` replaces ``max_follow_ups`` for one run.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables; the first one answers plain follow-ups
            (a search or lookup tool with one argument fits best). None: the model
            answers its own follow-ups.
        max_follow_ups: Follow-up turns allowed before the answer is forced.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``).
            ``tool_mode``: ``auto`` (native when the model's profile allows, falling back
            to text when tools are refused), ``native``, ``json`` (the text grammar with
            JSON tool inputs) or ``text``. Each turn and the final-answer request read the
            thread as it is; a guided turn reads the user's earlier turns and the answers
            they got after its worked example (the read of a tool result reads none);
            ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and ``follow_ups`` (each
        ``{"question", "answer", "tool"}``).

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_follow_ups", max_follow_ups)
    build = partial(build_self_ask, options=options)
    return compiled_loop("self_ask", build, model, tools, options, max_iterations=max_follow_ups)
