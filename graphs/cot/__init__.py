"""Chain-of-Thought: reason step by step in one call, or vote over several samples."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.cot.graph import LOOP
from loopgraphs.graphs.cot.state import CoTGraph, CoTOptions, CoTOutput, CoTState
from loopgraphs.nodes import ResponseT


@LOOP.factory
def create_cot_graph(
    model: BaseChatModel | str | None, **options: Unpack[CoTOptions[ResponseT, ContextT]]
) -> CoTGraph[ContextT, ResponseT]:
    """Build the Chain-of-Thought loop: step-by-step reasoning, no tools.

    The model is asked to reason step by step and end with ``FINAL ANSWER:``; the text
    after that marker (``FINAL_ANSWER:`` and any letter case accepted) is the answer, or
    the whole reply when the marker is missing. With ``self_consistency=n`` the same
    prompt is sampled n times concurrently and the most frequent answer wins (see
    ``majority``); samples that fail are ignored unless all of them fail. Sampling only
    helps when the model samples with a temperature above zero.

    Call budget: ``self_consistency`` model calls (1 by default), plus one when a single
    sample is cut at the token cap (``finish_reason="length"``, or text that repeats
    itself until the cap): the model is asked once more for a short answer. A cut reply
    is never the answer; a sample cut again (or, voting, every sample cut) ends with
    ``status="max_iterations"`` and no answer. Otherwise the status is ``"completed"``,
    or ``"error"`` when the model fails permanently.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        **options: ``self_consistency`` (samples voted on; 1 is plain Chain-of-Thought)
            and the shared options of ``LoopOptions`` (``checkpointer``, ``store``,
            ``name``, ``state_schema``, ``context_schema``, ``response_format``,
            ``system_prompt``, ``retry_policy``, ``max_history_tokens``). Every sample
            reads the user's earlier turns and the answers they got, then the request;
            ``max_history_tokens`` bounds the earlier turns (None: all of them).

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``samples``, ``answers`` and ``votes``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, None, **options)


__all__ = ["LOOP", "CoTGraph", "CoTOutput", "CoTState", "create_cot_graph"]
