"""CRITIC: draft an answer, find its checkable claims, verify them with tools, revise.

Graph: ``prepare → generate → critique → [review] → call_tool → revise → critique ...``.
``generate`` writes the draft; ``critique`` asks for the claims to check (or
``VERIFIED``) in an internal call, reads its reply and writes the round's checks as one
assistant message (the claims it checks as its text) with a tool call per distinct
check, which the ``after_model`` hooks see (so approval middleware works unchanged);
``call_tool`` is the shared tool step, each call sent on its own as in ReAct; ``revise``
reads each claim's observation from the ``ToolMessage`` answering its call and rewrites
the draft.

This module wires the graph; the steps are in ``loopgraphs.graphs.critic_steps``, the
critique's forms and the round's checks in ``loopgraphs.graphs.critic_checks``, the state
in ``loopgraphs.graphs.critic_state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TypeAlias

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import add_review, add_tool_turn, compiled_loop
from loopgraphs.graphs.critic_checks import CritiqueReport
from loopgraphs.graphs.critic_state import CriticOutput, CriticState
from loopgraphs.graphs.critic_steps import (
    RoundSteps,
    critique,
    generate,
    opening,
    revise,
    route_critique,
    route_review,
)
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import add_step
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_positive
from loopgraphs.nodes.tool_step import ToolStep
from loopgraphs.state import LoopBuilder, LoopInput, ResponseT

CriticGraph: TypeAlias = CompiledStateGraph[
    CriticState, ContextT, LoopInput, CriticOutput[ResponseT]
]
"""The compiled graph ``create_critic_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def build_critic(
    settings: LoopSettings, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled CRITIC graph for ``settings``: its steps (see
    ``loopgraphs.graphs.critic_steps``) wired together.

    Args:
        settings: The loop's settings.
        options: The factory's options (see ``create_critic_graph``).

    Returns:
        The graph builder, ready to compile.
    """
    steps = RoundSteps.of(settings)
    builder = new_graph(
        CriticState,
        CriticOutput,
        options or {},
        loop="critic",
        settings=settings,
        tools_node="call_tool",
    )
    add_step(builder, "generate", partial(generate, steps), settings, model_step=True)
    add_tool_turn(
        builder,
        settings,
        "critique",
        partial(critique, steps),
        targets=["revise"],
        router=partial(route_critique, settings),
    )
    builder.add_node("call_tool", ToolStep(settings).graph_node())
    add_step(builder, "revise", partial(revise, steps), settings, model_step=True)
    add_start(builder, settings, partial(opening, steps), while_running("generate"), ["generate"])
    route(builder, "generate", while_running("critique"), ["critique"])
    builder.add_edge("call_tool", "revise")
    add_review(builder, settings, route_review, ["revise"])
    route(builder, "revise", while_running("critique"), ["critique"])
    return builder


def create_critic_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_critique_rounds: int = 2,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> CriticGraph[ContextT, ResponseT]:
    """Build the CRITIC loop: draft, critique into checkable claims, verify, revise.

    The critique lists claims as ``CLAIM: / TOOL: / TOOL INPUT:`` blocks (text mode) or
    as a structured ``{"verified", "claims": [{"claim", "tool", "tool_input"}]}`` object
    (native and json modes, falling back to reading the text); a JSON list of claims is
    accepted in any mode. The critique step writes a round's checks as one ``AIMessage``
    (the claims it checks as its text, one a line with its check: never the model's raw
    critique, which ``claims`` and ``pending`` hold as records) with a tool call per
    distinct check (claims naming the same check share it), so ``after_model``
    middleware sees them: approval
    (``HumanInTheLoopMiddleware`` or ``interrupt_before_tools``) works as in ReAct, an
    edited call runs as edited and a rejected one is not run (the rejection is the
    claim's observation). The checks run concurrently through the same tool step as
    ReAct's calls (``wrap_tool_call``, ``Command`` returns including
    ``Command.PARENT``); the loop-break and ``max_tool_calls`` count the whole run's
    calls; an unknown tool or a failing check becomes an observation; a tool that ends
    the run (``return_direct``, ``Command(goto=END)``) ends it with its result as the
    answer. ``VERIFIED``, or a critique with no readable claim, accepts the current draft
    (and writes no message). Without tools the draft is the answer.

    With ``tool_choice`` ("required" or a tool name) the first critique must list at least
    one claim to check: native and json modes ask for a schema with at least one claim,
    text mode asks once more after a reply naming none.

    Call budget: at most ``1 + 2 * max_critique_rounds`` model calls (the draft, then per
    round one critique and one revision; +1 when text mode asks again under
    ``tool_choice``); exactly 1 without tools. The status is
    ``"completed"`` when a critique accepts the draft, and also when the rounds run out
    after a revision: the last revision is then the answer, unchecked. ``"max_iterations"``
    only when the recursion limit stops the loop before the draft could be checked.
    ``context={"max_iterations": n}`` replaces ``max_critique_rounds`` for one run.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables used to verify claims. None: draft only.
        max_critique_rounds: Critique-verify-revise rounds allowed.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            ``tool_mode`` chooses how the critique is asked for (structured output in
            native and json modes, text blocks in text mode). The draft, each critique
            and each revision read the user's earlier turns and the answers they got,
            then the request; ``max_history_tokens`` bounds the earlier turns.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``draft``, ``claims``,
        ``round`` and ``verified``; ``messages`` gains the draft, each round's checks
        (the critique message with its tool calls, then one ``ToolMessage`` per call)
        and each revision. Requests to the model are built from the caller's
        conversation and CRITIC's own prompts, not from this transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_critique_rounds", max_critique_rounds)
    build = partial(build_critic, options=options)
    return compiled_loop("critic", build, model, tools, options, max_iterations=max_critique_rounds)


__all__ = ["CriticGraph", "CriticOutput", "CritiqueReport", "create_critic_graph"]
