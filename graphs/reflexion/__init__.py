"""Reflexion: answer with ReAct, judge the answer, reflect on a failure, try again."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.reflexion.graph import LOOP
from loopgraphs.graphs.reflexion.state import (
    ReflexionGraph,
    ReflexionOptions,
    ReflexionOutput,
    ReflexionState,
)
from loopgraphs.nodes import ResponseT, ToolsArg


@LOOP.factory
def create_reflexion_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    **options: Unpack[ReflexionOptions[ResponseT, ContextT]],
) -> ReflexionGraph[ContextT, ResponseT]:
    """Build Reflexion: ReAct episodes, each judged; failures are reflected on and retried.

    Each episode is a whole ReAct run on the conversation, with the lessons written so
    far placed in the user's turn. The kit's ``evaluate`` then asks for a verdict on the
    episode's answer (structured output with a SATISFACTORY/UNSATISFACTORY text
    fallback), and on an unsatisfactory one the kit's ``reflect`` turns the feedback into
    a lesson for the next episode.

    Call budget (model replies, whatever the model says), ``call_budget``::

        max_reflections × (max_iterations + 1)   one ReAct run per episode
        + max_reflections × 2                    evaluator (one reformat retry)
        + (max_reflections − 1)                  reflections (none after the last episode)

    plus 2 per episode when more than 12 tools are given (ReAct's tool selection); a run's
    ``context`` ``max_iterations`` replaces ``max_iterations``. The run ends
    ``completed`` at the first satisfactory answer; after ``max_reflections`` episodes
    without one (or when the graph runs low on ``recursion_limit`` steps) it ends with
    ``status="max_iterations"`` and the last episode's answer. An evaluator that produces
    no usable verdict counts as "not satisfactory"; an episode with no answer is not
    satisfactory and is not sent to the evaluator.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat episodes.
        **options: ``max_reflections`` (most episodes, i.e. attempts, in a run; 3),
            ``max_iterations`` (model calls allowed in each episode's ReAct loop; 10) and
            the shared options of ``ToolLoopOptions`` (see ``create_react_graph``); the
            tool options apply to every episode's ReAct loop. Each episode reads the
            thread as ReAct does; the evaluator and the reflection read the user's
            earlier turns and the answers they got; ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``episode`` (episodes run),
        ``reflections``, ``evaluations`` (``{"satisfactory", "feedback"}`` per episode),
        ``episode_answers`` and, in ``messages``, every episode's transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, tools, **options)


__all__ = [
    "LOOP",
    "ReflexionGraph",
    "ReflexionOutput",
    "ReflexionState",
    "create_reflexion_graph",
]
