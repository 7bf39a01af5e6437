"""The reflect node's building block: turn a failed attempt into a short lesson.

One model call reads the question, the rejected answer and the evaluator's feedback and
writes what to do differently. The reply is normalised (a leading ``Reflection:`` label is
dropped, whitespace collapsed, length capped); an empty reply falls back to the feedback,
so the next attempt always gets something to act on.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from loopgraphs import prompts
from loopgraphs.nodes.generate import call_model
from loopgraphs.nodes.parsing.answers import normalise_reflection
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.runner import ModelCall

MAX_ATTEMPT_CHARS = 8000


def reflect_on(
    model: BaseChatModel, question: str, answer: str, feedback: str
) -> Generator[ModelCall, Any, tuple[str, dict[str, Any]]]:
    """Write a reflection on a rejected answer with one model call.

    Args:
        model: The chat model.
        question: The user's question.
        answer: The rejected answer (cut to 8,000 characters).
        feedback: The evaluator's feedback.

    Yields:
        One model call.

    Returns:
        The reflection text (never empty) and the ``llm_calls``/``usage`` update.
    """
    prompt: list[BaseMessage] = [
        SystemMessage(prompts.REFLECT_SYSTEM),
        HumanMessage(
            prompts.REFLECT_USER.format(
                question=question,
                answer=answer[:MAX_ATTEMPT_CHARS],
                feedback=feedback.strip() or "none given",
            )
        ),
    ]
    reply, update = yield from call_model(model, prompt)
    text = normalise_reflection(content_text(reply.content))
    if not text:
        reason = normalise_reflection(feedback) or "no reason given"
        text = (
            f"The previous answer was judged unsatisfactory ({reason}); try a different approach."
        )
    return text, update
