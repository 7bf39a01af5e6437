"""Self-Ask: decompose a question into follow-up questions answered one at a time.

The graph is wired in ``loopgraphs.graphs.self_ask.graph``, its steps and routers are in
``loopgraphs.graphs.self_ask.steps``, the run's state and phase in
``loopgraphs.graphs.self_ask.state``. A model that cannot be trusted to write the grammar
(json and text modes on the embedded small model) is guided instead: see
``loopgraphs.graphs.self_ask.guided`` for its grounded schemas and
``loopgraphs.graphs.self_ask.guided_turns`` for its turns.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.self_ask.graph import LOOP
from loopgraphs.graphs.self_ask.state import (
    SelfAskGraph,
    SelfAskOptions,
    SelfAskOutput,
    SelfAskState,
)
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_self_ask_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[SelfAskOptions[ResponseT, ContextT]],
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
        **options: ``max_follow_ups`` (follow-up turns allowed before the answer is
            forced, 5) and the shared options of ``ToolLoopOptions`` (see
            ``create_react_graph``). ``tool_mode``: ``auto`` (native when the model's
            profile allows, falling back to text when tools are refused), ``native``,
            ``json`` (the text grammar with JSON tool inputs) or ``text``. Each turn and
            the final-answer request read the thread as it is; a guided turn reads the
            user's earlier turns and the answers they got after its worked example (the
            read of a tool result reads none); ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and ``follow_ups`` (each
        ``{"question", "answer", "tool"}``).

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = ["LOOP", "SelfAskGraph", "SelfAskOutput", "SelfAskState", "create_self_ask_graph"]
