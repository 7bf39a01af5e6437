"""Chain-of-Thought's steps: reason (one turn, or samples voted on), read the answers, vote."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage

from loopgraphs import prompts
from loopgraphs.graphs.cot.state import CoTOptions, CoTState
from loopgraphs.nodes import (
    LogicOf,
    Step,
    answer_key,
    answer_message,
    content_text,
    conversation,
    cut_short,
    final_answer_of,
    generate,
    samples,
    scratch_of,
    unusable,
)


def reason(state: CoTState, step: Step[CoTOptions]) -> LogicOf[CoTState]:
    """Ask the model to reason step by step: one chat turn (asked once more when it is
    cut at the token cap or empty), or, with ``self_consistency``, that many internal
    samples at once (the chat shows the answer they vote for, see ``vote``)."""
    history = conversation(state, step.run)
    count = step.options["self_consistency"]
    if count == 1:
        turn = yield from generate(step, state, history, instructions=prompts.COT_SYSTEM)
        return {**turn.spent, "samples": [turn.text], "messages": turn.messages}
    replies, spent = yield from samples(
        step, state, history, count, instructions=prompts.COT_SYSTEM
    )
    return {**spent, "samples": [_sample_text(reply) for reply in replies]}


def _sample_text(reply: AIMessage) -> str:
    return "" if cut_short(reply) else content_text(reply.content)


def read_answers(state: CoTState, step: Step[CoTOptions]) -> CoTState:
    """Read each sample's answer (after ``FINAL ANSWER:``, or the whole reply); a single
    sample's answer ends the run (``max_iterations`` when it was cut or empty)."""
    answers = [final_answer_of(sample) for sample in state.get("samples", [])]
    if step.options["self_consistency"] > 1:
        return {"answers": answers}
    answer = answers[0] if answers else ""
    completed = any(state.get("samples", []))
    update: CoTState = {
        "answers": answers,
        "answer": answer,
        "status": "completed" if completed else "max_iterations",
    }
    last = state["messages"][-1] if state.get("messages") else None
    if isinstance(last, AIMessage):
        update["messages"] = [answer_message(last, answer)]
    return update


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


def vote(state: CoTState, step: Step[CoTOptions]) -> CoTState:
    """The majority answer of the samples; its sample is the chat's reply."""
    answers = state.get("answers", [])
    messages, start = state["messages"], scratch_of(state).get("transcript_start", 0)
    # A sample that only repeats a prompt or the question gets no vote.
    index, votes = majority(["" if unusable(a, messages, start) else a for a in answers])
    if not any(state.get("samples", [])):
        return {"votes": votes, "answer": "", "status": "max_iterations"}
    if index < 0 or not votes:
        said = next((a for a in answers if a.strip()), "")
        return {"votes": votes, "answer": said, "status": "completed"}
    chosen = AIMessage(state["samples"][index], name=step.run.agent_name)
    return {
        "votes": votes,
        "answer": answers[index],
        "status": "completed",
        "messages": [answer_message(chosen, answers[index])],
    }
