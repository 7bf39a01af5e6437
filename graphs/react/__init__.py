"""ReAct: reason, act with a tool, observe, repeat until a final answer."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.react.graph import LOOP
from loopgraphs.graphs.react.state import ReActGraph, ReActOptions, ReActOutput, ReActState
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_react_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[ReActOptions[ResponseT, ContextT]],
) -> ReActGraph[ContextT, ResponseT]:
    """Build the ReAct loop: think, call tools, observe, until a final answer.

    Call budget: at most ``max_iterations`` model calls in the loop, plus one call
    asking for a final answer when the loop (or ``max_tool_calls``) runs out, plus up to
    2 tool-selection calls when more than 12 tools are given, plus one synthesis call with
    ``synthesize_answer=True``, plus up to 3 with ``response_format``. Reaching the budget
    ends with ``status="max_iterations"``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat.
        **options: ``max_iterations`` (model calls allowed in the loop, 10),
            ``synthesize_answer`` (write the final answer in a separate, streamable call
            that reads the whole transcript; False) and the shared options of
            ``ToolLoopOptions`` (``tool_mode``, ``checkpointer``, ``store``, ``name``,
            ``state_schema``, ``context_schema``, ``response_format``, ``system_prompt``,
            ``interrupt_before_tools``, ``max_tool_calls``, ``loop_break``,
            ``tool_choice``, ``tool_timeout``, ``max_tool_output_chars``,
            ``retry_policy``, ``max_history_tokens``). Each turn and the final-answer
            request read the thread as it is (earlier tool calls and results too); tool
            selection and synthesis read the user's earlier turns and the answers they
            got. ``max_history_tokens`` bounds what comes before the request (None: all
            of it; the request and the run's own messages are always read).

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and the transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = ["LOOP", "ReActGraph", "ReActOutput", "ReActState", "create_react_graph"]
