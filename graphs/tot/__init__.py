"""Tree-of-Thoughts: beam search over lines of reasoning."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.tot.graph import LOOP
from loopgraphs.graphs.tot.state import ToTGraph, ToTOptions, ToTOutput, ToTState
from loopgraphs.nodes import ResponseT


@LOOP.factory
def create_tot_graph(
    model: BaseChatModel | str | None, **options: Unpack[ToTOptions[ResponseT, ContextT]]
) -> ToTGraph[ContextT, ResponseT]:
    """Build the Tree-of-Thoughts loop: a beam search over lines of reasoning.

    Level by level, every branch of the beam (the root alone at level 0) is expanded
    concurrently into ``n_branches`` candidate next thoughts, the candidates are scored
    0..10, and the ``beam_width`` best are kept (ties go to the earlier candidate). A
    thought holding ``ANSWER:`` ends the search at once with ``status="completed"``.
    After ``max_depth`` levels without one, one ``final_answer`` call asks the best
    branch for the answer: ``status="completed"`` when it gives text (the search ended
    by design), else ``"max_iterations"`` with the best branch's last thought as the
    answer. A reply cut at the token cap (``finish_reason="length"``, or text repeating
    itself until the cap) gives no answer: its thoughts are scored, not taken as the
    answer, and a cut ``final_answer`` reply counts as no text. A level with no
    candidates at all also goes to ``final_answer``. When the run's ``recursion_limit``
    is too low for another level, the search stops early and ends with
    ``status="max_iterations"``.

    Call budget, with b = ``n_branches``, w = ``beam_width``, d = ``max_depth`` and
    E = 1 + w·(d−1) branch expansions at most (level 0 expands the root only; the beam
    holds at most w branches), e = calls per expansion (1 for ``"propose"``, b for
    ``"sample"``):

    * ``scoring="batched"``: at most E·e + d + 1 calls (one scoring call per level,
      one ``final_answer``). propose: 1 + w·(d−1) + d + 1; defaults (b=3, w=2, d=3): 9.
      sample: b·(1 + w·(d−1)) + d + 1; defaults: 19.
    * ``scoring="per_branch"`` (the seed's one scoring call per candidate): at most
      E·(e + b) + 1. sample: 2·b·(1 + w·(d−1)) + 1; defaults: 31; with w = 1 this is the
      seed's d·b·2 + 1 (19 for b=3, d=3). propose: (1 + b)·(1 + w·(d−1)) + 1; defaults: 21.

    ``loopgraphs.graphs.tot.state.call_budget(options)`` computes the bound from the
    resolved keywords (``LOOP.resolve(...)``). It holds whatever the model replies:
    "propose" makes one call per branch and keeps at most b thoughts, "sample" makes b,
    each scoring request is capped at one call, the beam holds at most w branches.
    An ``ANSWER:`` stops before scoring its level, so runs that find one spend less.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        **options: ``n_branches`` (candidate thoughts generated per branch and level, b;
            3), ``beam_width`` (branches kept per level, w, 1..n_branches; 2),
            ``max_depth`` (levels of thoughts before an answer is forced, d; 3),
            ``scoring`` (``"batched"``: one call scores all candidates of a level;
            ``"per_branch"``: one call per candidate, concurrently), ``generation``
            (``"propose"``: one call lists b thoughts; ``"sample"``: b concurrent calls,
            one thought each) and the shared options of ``LoopOptions``
            (``checkpointer``, ``store``, ``name``, ``state_schema``, ``context_schema``,
            ``response_format``, ``system_prompt``, ``retry_policy``,
            ``max_history_tokens``). Every proposal, scoring and final-answer call reads
            the user's earlier turns and the answers they got before its prompt;
            ``max_history_tokens`` bounds them (None: all).

    Returns:
        The compiled graph. Input ``{"messages": [...]}`` (the last user message is the
        problem); output adds ``answer``, ``status``, ``llm_calls``, ``usage``,
        ``branches`` (the beam: ``{"thoughts", "score"}``, best first), ``depth``,
        ``candidates`` (of the last level), ``best_path`` and ``stop_reason``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    return LOOP.create(model, None, **options)


__all__ = ["LOOP", "ToTGraph", "ToTOutput", "ToTState", "create_tot_graph"]
