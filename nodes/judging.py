"""The kit's judging nodes: ``evaluate`` (a verdict or a value on one candidate),
``reflect`` (a lesson from a failed attempt) and ``score_branches`` (values for many
candidates, in one call or one call each).

Each reads the model's reply through ``parse`` (the structured-output ladder, with a
text fallback), never fails on a bad reply (no verdict, a score of 0, a reflection made
from the feedback) and is an internal call (a chat does not show it). Their prompts are
the kit's (``loopgraphs.prompts.kit``) unless the loop passes its own; each prompt about
the user's request carries the request's images, files and audio (``prompt_message``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field
from pydantic.json_schema import JsonDict

from loopgraphs import prompts
from loopgraphs.nodes.driver import Request, in_parallel
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import spent_together
from loopgraphs.nodes.history import earlier_turns
from loopgraphs.nodes.model_send import Instructions
from loopgraphs.nodes.parsing.answers import normalise_reflection, parse_verdict
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.parsing.thoughts import (
    MAX_SCORE,
    MIN_SCORE,
    clamp,
    fit,
    parse_score,
    parse_scores,
)
from loopgraphs.nodes.reading import Parsed, parse
from loopgraphs.nodes.step import Step, check_step
from loopgraphs.nodes.structured import with_bounds
from loopgraphs.nodes.turns import generate, prompt_message
from loopgraphs.state import ModelSpend, empty_usage, request_of

FEEDBACK_CHARS = 300  # a few sentences; a schema-constrained decoder stops there
REASON_CHARS = 200  # one sentence
MAX_CANDIDATE_CHARS = 8000  # of an answer or attempt shown to a judge
EVALUATION_FAILED = "evaluation failed"

CandidateT = TypeVar("CandidateT")
JudgedT = TypeVar("JudgedT", bound=BaseModel)


class Verdict(BaseModel):
    """A verdict on a candidate: is it satisfactory, and if not, what is wrong."""

    satisfactory: bool = Field(
        description="true when the answer fully and correctly answers the question"
    )
    feedback: str = Field(
        default="",
        description="what is wrong or missing; empty when satisfactory",
        json_schema_extra={"maxLength": FEEDBACK_CHARS},
    )


class Value(BaseModel):
    """A value of a candidate: how close it comes to a correct, complete answer."""

    score: int = Field(ge=MIN_SCORE, le=MAX_SCORE, description="0 (wrong) to 10 (certainly right)")
    reason: str = Field(
        default="",
        description="one sentence explaining the score",
        json_schema_extra={"maxLength": REASON_CHARS},
    )


class Scores(BaseModel):
    """Scores of several candidates, in candidate order."""

    scores: list[int] = Field(description="one integer from 0 to 10 per candidate, in order")


def _kit_judge(
    schema: type[BaseModel], question: str, answer: str
) -> tuple[str, str, Callable[[str], dict[str, Any] | None]] | None:
    """The kit's system text, request and text reader for a ``Verdict`` or a ``Value``
    (None for a schema of a loop's own)."""
    if schema is Verdict:
        text = prompts.EVALUATE_USER.format(question=question, answer=answer)
        return prompts.EVALUATE_SYSTEM, text, parse_verdict
    if schema is Value:
        text = prompts.VALUE_USER.format(question=question, answer=answer)
        return prompts.VALUE_SYSTEM, text, parse_score
    return None


def evaluate(
    step: Step[Any],
    state: Mapping[str, object],
    candidate: str,
    *,
    schema: type[JudgedT] = Verdict,  # type: ignore[assignment]
    question: str | None = None,
    prompt: str | None = None,
    instructions: Instructions | None = None,
    fallback: Callable[[str], dict[str, Any] | None] | None = None,
    history: Sequence[BaseMessage] | None = None,
    max_calls: int = 2,
    media: Sequence[dict[str, object]] = (),
) -> Generator[Request, Any, Parsed[JudgedT]]:
    """Judge one candidate (an answer, an attempt): a ``Verdict``, a ``Value`` or a
    schema of the loop's own.

    Args:
        step: The running step.
        state: The loop's state.
        candidate: What is judged (cut to 8,000 characters).
        schema: The judgement's type (``Verdict`` or ``Value``, or a pydantic model of
            the loop's own with its ``prompt``, ``instructions`` and ``fallback``).
        question: The question the candidate answers (default: the user's request).
        prompt: The request's template, with ``{question}`` and ``{answer}``.
        instructions: The judge's system text.
        fallback: Reads the judgement from a free-text reply when no JSON is found.
        history: Read before the prompt (default: the user's earlier turns).
        max_calls: Most requests (a reformat retry needs 2).
        media: Images and files the candidate holds (its tool results'), sent with the
            prompt after the question's (see ``prompt_message``).

    Returns:
        The ``Parsed`` judgement (its ``value`` None when no reply could be read).

    Raises:
        TypeError: a schema of the loop's own came without its ``prompt``.
        ValueError: ``max_calls`` is below 1.
    """
    check_step(step, "evaluate")
    asked_about = request_of(state) if question is None else question
    answer = candidate[:MAX_CANDIDATE_CHARS]
    system, reader = "", None
    kit = _kit_judge(schema, asked_about, answer)
    if kit is not None:
        system, text, reader = kit
    if prompt is not None:
        text = prompt.format(question=asked_about, answer=answer)
    elif kit is None:
        raise TypeError(
            f"evaluate: no prompt for {schema.__name__}; pass prompt= (a template with "
            "{question} and {answer})"
        )
    asked = [*_history(step, state, history), prompt_message(state, text, media)]
    result: Parsed[JudgedT] = yield from parse(
        step,
        state,
        asked,
        schema=schema,
        instructions=system if instructions is None else instructions,
        fallback=fallback or reader,
        max_calls=max_calls,
        purpose="evaluation",
    )
    return result


@dataclass(frozen=True)
class Reflection:
    """What ``reflect`` wrote: the lesson (never empty) and what it cost."""

    text: str
    spent: ModelSpend


def reflect(
    step: Step[Any],
    state: Mapping[str, object],
    attempt: str,
    feedback: str,
    *,
    question: str | None = None,
    prompt: str | None = None,
    instructions: Instructions = prompts.REFLECT_SYSTEM,
    history: Sequence[BaseMessage] | None = None,
    media: Sequence[dict[str, object]] = (),
) -> Generator[Request, Any, Reflection]:
    """Write a lesson from a failed attempt, for the next attempt to apply (one call).

    Args:
        step: The running step.
        state: The loop's state.
        attempt: The failed attempt (cut to 8,000 characters).
        feedback: Why it failed (an evaluator's feedback, a tool's error).
        question: The question (default: the user's request).
        prompt: The request's template, with ``{question}``, ``{answer}`` and
            ``{feedback}`` (default: the kit's).
        instructions: The system text.
        history: Read before the prompt (default: the user's earlier turns).
        media: Images and files the attempt holds (its tool results'), sent with the
            prompt after the question's (see ``prompt_message``).

    Returns:
        The ``Reflection``: the model's lesson, or, when it wrote none, one made from the
        feedback.
    """
    check_step(step, "reflect")
    template = prompts.REFLECT_USER
    if prompt is not None:
        template = prompt
    text = template.format(
        question=request_of(state) if question is None else question,
        answer=attempt[:MAX_CANDIDATE_CHARS],
        feedback=feedback.strip() or "none given",
    )
    asked = [*_history(step, state, history), prompt_message(state, text, media)]
    turn = yield from generate(
        step,
        state,
        asked,
        instructions=instructions,
        with_system=False,
        purpose="reflection",
        again=False,
    )
    lesson = normalise_reflection(turn.text)
    if not lesson:
        reason = normalise_reflection(feedback) or "no reason given"
        lesson = (
            f"The previous attempt was judged unsatisfactory ({reason}); try a different approach."
        )
    return Reflection(lesson, turn.spent)


@dataclass(frozen=True)
class Scored:
    """What ``score_branches`` gave: one score from 0 to 10 per candidate, in order
    (0 for one whose score could not be read), and what it cost."""

    scores: list[int]
    spent: ModelSpend


def score_branches(
    step: Step[Any],
    state: Mapping[str, object],
    candidates: Sequence[CandidateT],
    *,
    ask_all: Callable[[Sequence[CandidateT]], str],
    ask_one: Callable[[CandidateT], str],
    batched: bool = True,
    instructions: Instructions = "",
    history: Sequence[BaseMessage] | None = None,
    with_system: bool = True,
) -> Generator[Request, Any, Scored]:
    """Score many candidates (branches, trajectories) from 0 to 10.

    Args:
        step: The running step.
        state: The loop's state.
        candidates: The candidates, in order.
        ask_all: The prompt listing every candidate (one call scores them all).
        ask_one: The prompt about one candidate (one call each, all at once).
        batched: One call for all candidates (``ask_all``), or one each (``ask_one``).
        instructions: The system text of every scoring request.
        history: Read before each prompt (default: the user's earlier turns).
        with_system: Whether the caller's ``system_prompt`` goes first.

    Returns:
        The ``Scored`` candidates.

    Raises:
        RuntimeError: the provider rejected every scoring request (no reply at all);
            any other failure of every request is raised as it came.
    """
    check_step(step, "score_branches")
    count = len(candidates)
    if count == 0:
        return Scored([], {"llm_calls": 0, "usage": empty_usage()})
    before = _history(step, state, history)
    if batched:
        asked = [*before, prompt_message(state, ask_all(candidates))]
        result = yield from parse(
            step,
            state,
            asked,
            schema=scores_for(count),
            instructions=instructions,
            fallback=lambda text: parse_scores(text, count),
            max_calls=1,
            purpose="score",
            with_system=with_system,
        )
        _check_answered(result)
        if result.value is not None:
            return Scored(fit(result.value.scores, count), result.spent)
        data = parse_scores(_raw_text(result), count)
        return Scored(data["scores"] if data else [0] * count, result.spent)
    logics = [
        _score_one(
            step, state, [*before, prompt_message(state, ask_one(c))], instructions, with_system
        )
        for c in candidates
    ]
    outcomes = yield from in_parallel(logics)
    if all(isinstance(outcome, BaseException) for outcome in outcomes):
        raise all_failed(outcomes)
    scores: list[int] = []
    spent: ModelSpend = {"llm_calls": failed_requests(outcomes), "usage": empty_usage()}
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            scores.append(0)
            continue
        score, part = outcome
        scores.append(score)
        spent = spent_together(spent, part)
    return Scored(scores, spent)


def _score_one(
    step: Step[Any],
    state: Mapping[str, object],
    asked: list[BaseMessage],
    instructions: Instructions,
    with_system: bool,
) -> Generator[Request, Any, tuple[int, ModelSpend]]:
    result = yield from parse(
        step,
        state,
        asked,
        schema=Value,
        instructions=instructions,
        fallback=parse_score,
        max_calls=1,
        purpose="score",
        with_system=with_system,
    )
    _check_answered(result)
    if result.value is None:
        data = parse_score(_raw_text(result))
        return (data["score"] if data else 0), result.spent
    return clamp(result.value.score), result.spent


@cache
def scores_for(count: int) -> type[Scores]:
    """``Scores`` whose JSON schema holds exactly ``count`` integers from 0 to 10: a
    schema-constrained decoder then stops after the last score (an open list let a small
    model count on to its token cap). Validation stays as lenient as ``Scores``'."""
    bounds: JsonDict = {
        "items": {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE},
        "minItems": count,
        "maxItems": count,
    }
    return with_bounds(Scores, "scores", bounds)


def _history(
    step: Step[Any], state: Mapping[str, object], history: Sequence[BaseMessage] | None
) -> list[BaseMessage]:
    return list(earlier_turns(state, step.run) if history is None else history)


def _raw_text(result: Parsed[Any]) -> str:
    if not result.replies:
        return ""
    reply = result.replies[-1]
    args = [call.get("args") for call in reply.tool_calls]
    extra = json.dumps(args, ensure_ascii=False, default=str) if args else ""
    return f"{content_text(reply.content)}\n{extra}"


def _check_answered(result: Parsed[Any]) -> None:
    if result.spent["llm_calls"] == 0:
        raise RuntimeError("the provider rejected every scoring request")


__all__ = [
    "EVALUATION_FAILED",
    "Reflection",
    "Scored",
    "Scores",
    "Value",
    "Verdict",
    "evaluate",
    "reflect",
    "score_branches",
    "scores_for",
]
