"""LATS (Language Agent Tree Search): Monte Carlo tree search over ReAct trajectories."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.lats.graph import LOOP
from loopgraphs.graphs.lats.state import LATSGraph, LATSOptions, LATSOutput, LATSState
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_lats_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[LATSOptions[ResponseT, ContextT]],
) -> LATSGraph[ContextT, ResponseT]:
    """Build LATS (Zhou et al., 2023): Monte Carlo tree search over ReAct trajectories.

    Each rollout selects a node by UCT from the root, expands it with ``n_candidates``
    candidate next actions sampled at once (internal turns at ``temperature`` where the
    model takes one), runs the candidates' tool calls through the tool step (one
    assistant message holding them all, so approvals and every tool guarantee apply),
    values each new step (the kit's ``evaluate`` with ``Value``; a tool error lowers it),
    judges each final answer (``evaluate`` with ``Verdict``), reflects on a failed one
    (``reflect``; later expansions read the lessons) and back-propagates the scores. The
    search stops on a satisfactory answer (``status="completed"``) or when the rollouts,
    the tree or the run's budget run out; the answer then comes from the best node (its
    final answer, or one answer turn from its trajectory), ``status="max_iterations"``.

    Call budget: at most ``4 * n_candidates * max_rollouts`` model calls: per rollout
    the candidates, and per candidate a verdict (2 requests at most) and a reflection; the
    one answer turn is asked only when the best node is an unfinished step, whose value
    cost a request less. Plus up to 3 with ``response_format``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: the candidates are
            answers, judged and reflected on.
        **options: ``n_candidates`` (candidates per expansion, 3), ``max_rollouts``
            (expansions, 5; a run's ``context={"max_iterations": n}`` replaces it),
            ``exploration_weight`` (UCT's, 1.0), ``max_depth`` (steps of a trajectory,
            5), ``temperature`` (of the candidates, 1.0) and the shared options of
            ``ToolLoopOptions`` (``tool_mode``, ``checkpointer``, ``store``, ``name``,
            ``state_schema``, ``context_schema``, ``response_format``, ``system_prompt``,
            ``interrupt_before_tools``, ``max_tool_calls``, ``loop_break``,
            ``tool_choice``, ``tool_timeout``, ``max_tool_output_chars``,
            ``retry_policy``, ``max_history_tokens``). Every prompt reads the user's
            earlier turns and the answers they got.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, the transcript, and the
        search: ``tree``, ``reflections``, ``rollouts``, ``best_node``, ``stop_reason``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = ["LOOP", "LATSGraph", "LATSOutput", "LATSState", "create_lats_graph"]
