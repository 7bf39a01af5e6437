"""The evaluate node's building blocks: judge an answer as satisfactory or not.

``evaluate_answer`` asks for an ``Evaluation`` through ``structured_call`` (native tool
call, provider JSON, text) and falls back to reading ``SATISFACTORY`` /
``UNSATISFACTORY`` from plain text. An evaluator that produces nothing usable yields
``None``, which ``evaluation_record`` turns into "not satisfactory, evaluation failed":
a broken evaluator costs a retry, never a crash and never a false success.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from loopgraphs import prompts
from loopgraphs.nodes.parsing.answers import parse_verdict
from loopgraphs.nodes.runner import ModelCall
from loopgraphs.nodes.settings import check_positive
from loopgraphs.nodes.structured import StructuredResult, structured_call

T = TypeVar("T", bound=BaseModel)

EVALUATION_FAILED = "evaluation failed"
MAX_ANSWER_CHARS = 8000
AUTH_FAILURES = frozenset({401, 403})
PARSE_FAILURES = (ValidationError, OutputParserException)


class Evaluation(BaseModel):
    """Verdict on an answer: is it satisfactory, and if not, what is wrong."""

    satisfactory: bool = Field(
        description="true when the answer fully and correctly answers the question"
    )
    feedback: str = Field(
        default="", description="what is wrong or missing; empty when satisfactory"
    )


def evaluation_record(evaluation: Evaluation | None) -> dict[str, Any]:
    """The state record of a verdict; no verdict counts as not satisfactory."""
    if evaluation is None:
        return {"satisfactory": False, "feedback": EVALUATION_FAILED}
    return {"satisfactory": bool(evaluation.satisfactory), "feedback": evaluation.feedback.strip()}


def evaluate_answer(
    model: BaseChatModel, question: str, answer: str, *, max_calls: int = 2
) -> Generator[ModelCall, Any, tuple[Evaluation | None, StructuredResult]]:
    """Judge ``answer`` to ``question``.

    Args:
        model: The evaluating chat model.
        question: The user's question.
        answer: The answer to judge (cut to 8,000 characters).
        max_calls: Most model replies spent (a reformat retry needs 2).

    Yields:
        Model calls.

    Returns:
        The verdict (None when the evaluator produced nothing usable; see
        ``evaluation_record``) and the ``StructuredResult`` holding the call counts.
    """
    check_positive("max_calls", max_calls)
    prompt: list[BaseMessage] = [
        SystemMessage(prompts.EVALUATE_SYSTEM),
        HumanMessage(
            prompts.EVALUATE_USER.format(question=question, answer=answer[:MAX_ANSWER_CHARS])
        ),
    ]
    result = yield from structured_call(
        model, prompt, Evaluation, regex_fallback=parse_verdict, max_calls=max_calls
    )
    return result.value, result
