"""CRITIC: draft an answer, find its checkable claims, verify them with tools, revise."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.critic.graph import LOOP
from loopgraphs.graphs.critic.state import CriticGraph, CriticOptions, CriticOutput, CriticState
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_critic_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[CriticOptions[ResponseT, ContextT]],
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
    ``tool_choice``); exactly 1 without tools. A draft or a revision cut at the token cap
    is asked once more for a short answer (one more call each time). The status is
    ``"completed"`` when a critique accepts the draft, and also when the rounds run out
    after a revision: the last revision is then the answer, unchecked.
    ``"max_iterations"`` when the recursion limit stops the loop before the draft could
    be checked, when the draft is cut again (no answer), or when a revision cut again was
    the last round (the checked draft stands). ``context={"max_iterations": n}``
    replaces ``max_critique_rounds`` for one run.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables used to verify claims. None: draft only.
        **options: ``max_critique_rounds`` (critique-verify-revise rounds allowed, 2) and
            the shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
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
    return LOOP.create(model, tools, **options)


__all__ = ["LOOP", "CriticGraph", "CriticOutput", "CriticState", "create_critic_graph"]
