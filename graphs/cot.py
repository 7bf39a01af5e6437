"""Chain-of-Thought: reason step by step in one call, or vote over several samples.

Graph: ``prepare → generate → parse → END``, with ``vote`` after ``parse`` when
``self_consistency`` asks for more than one sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.nodes.answer_check import settle_answer, unusable
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, ModelBatch, add_step
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import answer_message, call_model, short_again
from loopgraphs.nodes.history import conversation
from loopgraphs.nodes.model_call import as_outcome, spent_on
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.answers import answer_key
from loopgraphs.nodes.parsing.text import content_text, cut_short, final_answer_of
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopOptions, LoopSettings, check_positive
from loopgraphs.nodes.step import Step
from loopgraphs.state import (
    LoopBuilder,
    LoopInput,
    LoopState,
    ResponseT,
    RunResult,
    Status,
    scratch_of,
)

# Graph steps that must still follow prepare (see ``RunBudget.allows``).
SAMPLE_STEPS = 2  # generate, parse
VOTE_STEPS = 3  # generate, parse, vote


class CoTFields(TypedDict, total=False):
    """The keys of its own that Chain-of-Thought's state and output hold (see ``CoTOutput``)."""

    samples: list[str]
    answers: list[str]
    votes: dict[str, int]


class CoTOutput(CoTFields, RunResult[ResponseT]):
    """Output of the Chain-of-Thought loop.

    ``samples`` holds the raw replies, ``answers`` the answer read from each, and
    ``votes`` the number of samples per distinct answer (self-consistency only).
    """


class CoTState(CoTFields, LoopState, total=False):
    """State of the Chain-of-Thought loop."""


CoTGraph: TypeAlias = CompiledStateGraph[CoTState, ContextT, LoopInput, CoTOutput[ResponseT]]
"""The compiled graph ``create_cot_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def majority(answers: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Pick the majority answer.

    Answers are compared after ``answer_key`` normalisation (case, surrounding spaces,
    trailing punctuation, numbers by value); empty answers do not vote. A tie goes to
    the answer that appeared first.

    Args:
        answers: One answer per sample, in sample order.

    Returns:
        The index of the first sample giving the winning answer (0 when no answer has
        text, -1 when there are no answers) and the votes per answer, keyed by the
        answer's first spelling.
    """
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, answer in enumerate(answers):
        if not answer.strip():
            continue
        key = answer_key(answer)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, index)
    if not counts:
        return (0 if answers else -1), {}
    best = max(counts, key=lambda key: (counts[key], -first[key]))
    votes = {answers[first[key]].strip(): count for key, count in counts.items()}
    return first[best], votes


def build_cot(
    settings: LoopSettings, self_consistency: int, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled Chain-of-Thought graph."""
    voting = self_consistency > 1
    needed = VOTE_STEPS if voting else SAMPLE_STEPS

    def opening(state: CoTState, run: LoopSettings) -> CoTState:
        update: CoTState = {"samples": [], "answers": [], "votes": {}}
        if not run.budget.allows(state, steps=needed):
            update.update({"status": "max_iterations", "answer": ""})
        return update

    def generate(state: CoTState, step: Step) -> LogicOf[CoTState]:
        ask, form = step.ask(state), RequestForm(prompts.COT_SYSTEM)
        history = conversation(state, step.run)
        if not voting:
            reply, update = yield from call_model(ask.call(history, form))
            reply, added, update = yield from short_again(ask, history, form, reply, update)
            sample = "" if cut_short(reply) else content_text(reply.content)
            return {**update, "samples": [sample], "messages": added}
        # The samples are internal: the chat shows the answer they vote for (see ``vote``).
        call = ask.call(history, form, purpose="sample")
        results = yield ModelBatch([call] * self_consistency)
        outcomes = [as_outcome(r) for r in results if not isinstance(r, BaseException)]
        if not outcomes:
            raise all_failed(results)
        update = spent_on(outcomes)
        update["llm_calls"] += failed_requests(results)
        samples = ["" if cut_short(o.reply) else content_text(o.reply.content) for o in outcomes]
        return {**update, "samples": samples}

    def parse(state: CoTState) -> CoTState:
        answers = [final_answer_of(sample) for sample in state.get("samples", [])]
        if voting:
            return {"answers": answers}
        answer = answers[0] if answers else ""
        status: Status = "completed" if any(state.get("samples", [])) else "max_iterations"
        update: CoTState = {"answers": answers, "answer": answer, "status": status}
        last = state["messages"][-1] if state.get("messages") else None
        if isinstance(last, AIMessage):
            update["messages"] = [answer_message(last, answer)]
        return settle_answer(state, update)

    def vote(state: CoTState) -> CoTState:
        answers = state.get("answers", [])
        messages, start = state["messages"], scratch_of(state).get("transcript_start", 0)
        # A sample that only repeats a prompt or the question gets no vote.
        index, votes = majority(["" if unusable(a, messages, start) else a for a in answers])
        if not any(state.get("samples", [])):
            return {"votes": votes, "answer": "", "status": "max_iterations"}
        if index < 0 or not votes:
            said = next((a for a in answers if a.strip()), "")
            update: CoTState = {"votes": votes, "answer": said, "status": "completed"}
            return settle_answer(state, update)
        chosen = AIMessage(state["samples"][index], name=settings.agent_name)
        return {
            "votes": votes,
            "answer": answers[index],
            "status": "completed",
            "messages": [answer_message(chosen, answers[index])],
        }

    builder = new_graph(CoTState, CoTOutput, options or {}, loop="cot", settings=settings)
    add_step(builder, "generate", generate, settings, model_step=True)
    builder.add_node("parse", parse)
    builder.add_node("vote", vote)
    add_start(builder, settings, opening, while_running("generate"), ["generate"])
    route(builder, "generate", lambda state: "parse", ["parse"])
    route(builder, "parse", lambda state: "vote" if voting else END, ["vote"])
    builder.add_edge("vote", END)
    return builder


def create_cot_graph(
    model: BaseChatModel | str | None,
    *,
    self_consistency: int = 1,
    **options: Unpack[LoopOptions[ResponseT, ContextT]],
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
        self_consistency: Number of samples voted on; 1 is plain Chain-of-Thought.
        **options: The shared options of ``LoopOptions`` (``checkpointer``, ``store``,
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
    check_positive("self_consistency", self_consistency)
    build = partial(build_cot, self_consistency=self_consistency, options=options)
    return compiled_loop("cot", build, model, None, options, takes_tools=False)
