"""Tree-of-Thoughts' scoring of candidate reasoning steps, and ``in_parallel``.

Three ways to score, all returning integer scores 0..10 and the ``llm_calls``/``usage``
update that accounts for them:

* ``score_one``: one structured call rating one step (``Score``).
* ``score_all``: one structured call rating every candidate of a level (``Scores``).
* ``score_each``: ``score_one`` for every candidate, the calls running concurrently.

Every scoring request has the system text of the proposals (``prompts.TOT_SYSTEM``) and
starts its prompt the same way, so a server's prompt cache reuses what the level's
proposals already read. Scoring never crashes on a bad reply: a reply that cannot be
read gives a score of 0. Only a provider failure (every scoring request rejected, or an
exception) propagates, so the caller's ``guard`` can retry it or end the run with
``status="error"``.
``in_parallel`` drives several model-calling logics at once (concurrent scoring, and the
"sample" generation of thoughts).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from functools import cache
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, Field
from pydantic.json_schema import JsonDict

from loopgraphs import prompts
from loopgraphs.nodes.driver import ModelBatch
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.model_call import ModelCall, ModelCaller
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.parsing.thoughts import (
    MAX_SCORE,
    MIN_SCORE,
    clamp,
    fit,
    parse_score,
    parse_scores,
)
from loopgraphs.nodes.structured import StructuredResult, structured_call, with_bounds
from loopgraphs.state import ModelSpend, add_usage, empty_usage

REASON_CHARS = 200  # a one-sentence reason; a longer one is not read anyway
ResultT = TypeVar("ResultT")


class Score(BaseModel):
    """How promising one reasoning step is."""

    score: int = Field(ge=MIN_SCORE, le=MAX_SCORE, description="0 (useless) to 10 (solves it)")
    reason: str = Field(
        default="",
        description="one sentence explaining the score",
        json_schema_extra={"maxLength": REASON_CHARS},
    )


class Scores(BaseModel):
    """Scores of several candidate lines of reasoning, in candidate order."""

    scores: list[int] = Field(description="one integer from 0 to 10 per candidate, in order")


@cache
def scores_for(count: int) -> type[Scores]:
    """``Scores`` whose JSON schema holds exactly ``count`` integers from 0 to 10.

    A schema-constrained decoder (llama.cpp's grammar) then stops after the last score; an
    open list let a small model count on to its token cap. Validation stays as lenient as
    ``Scores``': a reply of another length or out of range is fitted and clamped.
    """
    bounds: JsonDict = {
        "items": {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE},
        "minItems": count,
        "maxItems": count,
    }
    return with_bounds(Scores, "scores", bounds)


def render_path(thoughts: Sequence[str], indent: str = "") -> str:
    """Number the steps of a line of reasoning, one per line."""
    if not thoughts:
        return f"{indent}{prompts.NOTHING_YET}"
    return "\n".join(f"{indent}Step {i}: {thought}" for i, thought in enumerate(thoughts, 1))


def _raw_text(result: StructuredResult) -> str:
    if not result.replies:
        return ""
    reply = result.replies[-1]
    args = [call.get("args") for call in reply.tool_calls]
    extra = json.dumps(args, ensure_ascii=False, default=str) if args else ""
    return f"{content_text(reply.content)}\n{extra}"


def _check_answered(result: StructuredResult) -> None:
    if result.calls == 0:
        raise RuntimeError("the provider rejected every scoring request")


def score_one(
    model: ModelCaller | BaseChatModel,
    problem: str,
    path: Sequence[str],
    thought: str,
    *,
    max_calls: int = 1,
    history: Sequence[BaseMessage] = (),
) -> Generator[ModelCall, Any, tuple[int, ModelSpend]]:
    """Rate one proposed step (``thought``) after the steps in ``path``.

    Args:
        model: The node's ``ModelCaller`` (the caller's system prompt goes first), or a chat
            model.
        problem: The task being solved.
        path: The steps before ``thought``.
        thought: The step to rate.
        max_calls: Model calls allowed (default one).
        history: The conversation's earlier turns, read before the problem.

    Returns:
        The score (0 when the reply cannot be read) and the ``llm_calls``/``usage`` update.

    Raises:
        RuntimeError: the provider rejected every request (no reply at all).
    """
    text = prompts.TOT_SCORE_ONE.format(problem=problem, path=render_path(path), thought=thought)
    result = yield from structured_call(
        model,
        [*history, HumanMessage(text)],
        Score,
        instructions=prompts.TOT_SYSTEM,
        with_system=True,
        regex_fallback=parse_score,
        max_calls=max_calls,
        purpose="score",
    )
    _check_answered(result)
    value = result.value
    if value is None:
        data = parse_score(_raw_text(result))
        return (data["score"] if data else 0), result.state_update()
    return clamp(value.score), result.state_update()


def score_all(
    model: ModelCaller | BaseChatModel,
    problem: str,
    candidates: Sequence[Sequence[str]],
    *,
    max_calls: int = 1,
    history: Sequence[BaseMessage] = (),
) -> Generator[ModelCall, Any, tuple[list[int], ModelSpend]]:
    """Rate every candidate of a level in one call.

    Args:
        model: The node's ``ModelCaller`` (the caller's system prompt goes first), or a chat
            model.
        problem: The task being solved.
        candidates: Each candidate's whole line of reasoning (its last step is the new one).
        max_calls: Model calls allowed (default one).
        history: The conversation's earlier turns, read before the problem.

    Returns:
        One score per candidate (unreadable or missing scores are 0) and the update.

    Raises:
        RuntimeError: the provider rejected every request (no reply at all).
    """
    count = len(candidates)
    if count == 0:
        return [], {"llm_calls": 0, "usage": empty_usage()}
    listing = "\n".join(
        f"Candidate {i}:\n{render_path(path, indent='  ')}" for i, path in enumerate(candidates, 1)
    )
    text = prompts.TOT_SCORE_ALL.format(problem=problem, candidates=listing, count=count)
    result = yield from structured_call(
        model,
        [*history, HumanMessage(text)],
        scores_for(count),
        instructions=prompts.TOT_SYSTEM,
        with_system=True,
        regex_fallback=lambda reply: parse_scores(reply, count),
        max_calls=max_calls,
        purpose="score",
    )
    _check_answered(result)
    if result.value is not None:
        return fit(result.value.scores, count), result.state_update()
    data = parse_scores(_raw_text(result), count)
    return (data["scores"] if data else [0] * count), result.state_update()


def score_each(
    model: ModelCaller | BaseChatModel,
    problem: str,
    candidates: Sequence[Sequence[str]],
    *,
    history: Sequence[BaseMessage] = (),
) -> Generator[ModelBatch, Any, tuple[list[int], ModelSpend]]:
    """Rate every candidate with its own ``score_one`` call, all calls running concurrently.

    A candidate whose scoring failed gets 0; when every one failed, the first failure is
    raised. ``history``: the conversation's earlier turns, read before the problem.

    Returns:
        One score per candidate and the update summing every call.
    """
    if not candidates:
        return [], {"llm_calls": 0, "usage": empty_usage()}
    outcomes = yield from in_parallel(
        [score_one(model, problem, path[:-1], path[-1], history=history) for path in candidates]
    )
    if all(isinstance(outcome, BaseException) for outcome in outcomes):
        raise all_failed(outcomes)
    scores: list[int] = []
    update: ModelSpend = {"llm_calls": failed_requests(outcomes), "usage": empty_usage()}
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            scores.append(0)
            continue
        score, part = outcome
        scores.append(score)
        update = {
            "llm_calls": update["llm_calls"] + part["llm_calls"],
            "usage": add_usage(update["usage"], part["usage"]),
        }
    return scores, update


def in_parallel(
    logics: Sequence[Generator[ModelCall, Any, ResultT]],
) -> Generator[ModelBatch, list[object], list[ResultT | BaseException]]:
    """Drive several model-calling logics side by side.

    Each round sends the pending call of every unfinished logic as one ``ModelBatch``
    (so the calls run concurrently) and hands each its reply, or throws its exception
    into it.

    Args:
        logics: Generators that yield only ``ModelCall`` requests.

    Returns:
        Per logic, in order: its return value, or the exception it raised.
    """
    results: dict[int, ResultT | BaseException] = {}
    pending: dict[int, ModelCall] = {}

    def advance(index: int, value: object, error: BaseException | None) -> None:
        logic = logics[index]
        try:
            request = logic.throw(error) if error is not None else logic.send(value)
        except StopIteration as stop:
            results[index] = stop.value
            return
        except Exception as exc:
            results[index] = exc
            return
        if not isinstance(request, ModelCall):
            logic.close()
            results[index] = TypeError(f"in_parallel drives model calls only; got {request!r}")
            return
        pending[index] = request

    for index in range(len(logics)):
        advance(index, None, None)
    while pending:
        order = sorted(pending)
        batch = ModelBatch([pending.pop(index) for index in order])
        replies = yield batch
        for index, reply in zip(order, replies, strict=True):
            if isinstance(reply, BaseException):
                advance(index, None, reply)
            else:
                advance(index, reply, None)
    return [results[index] for index in range(len(logics))]
