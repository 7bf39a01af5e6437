"""LATS's judgement of new nodes: an action's value (the kit's ``evaluate`` with
``Value``, lowered by a tool error: external feedback), a final answer's verdict
(``evaluate`` with ``Verdict``) and, for a failed answer, a reflection (``reflect``)
that later expansions and values read."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopgraphs import prompts
from loopgraphs.graphs.lats.state import LATSOptions, TreeNode
from loopgraphs.graphs.lats.tree import tool_error_share, trajectory_media, trajectory_text
from loopgraphs.nodes import (
    LoopState,
    Step,
    Value,
    Verdict,
    evaluate,
    reflect,
    spent_together,
)

LATSStep = Step[LATSOptions[Any, Any]]

MAX_LESSONS = 3
"""Most reflections a prompt carries (the latest)."""
TOOL_ERROR_PENALTY = 0.5
"""What a step whose every tool call failed loses of its value (0 to 1); a step with
some failed calls loses its share of it."""
NO_VALUE = "no value could be read"
NO_VERDICT = "no verdict could be read"


@dataclass(frozen=True)
class Judged:
    """A new node as judged: its record with its score and feedback, what judging it
    cost, and the lesson of a failed answer ("" otherwise)."""

    node: TreeNode
    spent: LoopState
    lesson: str = ""


def judged(
    state: Mapping[str, Any], step: LATSStep, tree: Sequence[TreeNode], index: int
) -> Generator[Any, Any, Judged]:
    """Judge node ``index`` on its trajectory: a final answer's verdict (and reflection
    when it fails), or an action's value."""
    text, media = trajectory_text(tree, index), trajectory_media(tree, index)
    if tree[index]["terminal"]:
        return (yield from judged_answer(state, step, tree[index], text, media))
    lessons = list(state.get("reflections") or [])[-MAX_LESSONS:]
    return (yield from valued_step(state, step, tree[index], text, lessons, media))


def valued_step(
    state: Mapping[str, Any],
    step: LATSStep,
    node: TreeNode,
    text: str,
    lessons: list[str],
    media: Sequence[dict[str, Any]] = (),
) -> Generator[Any, Any, Judged]:
    """An action's score: the model's value (0 to 10, read as 0 to 1; 0 when none could
    be read), less ``TOOL_ERROR_PENALTY`` times the share of its calls that failed. The
    judge sees the trajectory's images and files (``media``) after its text."""
    prompt = value_prompt(lessons)
    result = yield from evaluate(step, state, text, schema=Value, prompt=prompt, media=media)
    value = result.value
    rated = min(max(value.score, 0), 10) / 10 if value is not None else 0.0
    score = max(0.0, rated - TOOL_ERROR_PENALTY * tool_error_share(node))
    feedback = value.reason if value is not None else NO_VALUE
    return Judged({**node, "score": score, "feedback": feedback}, {**result.spent})


def judged_answer(
    state: Mapping[str, Any],
    step: LATSStep,
    node: TreeNode,
    text: str,
    media: Sequence[dict[str, Any]] = (),
) -> Generator[Any, Any, Judged]:
    """A final answer's score: 1 when the verdict (on the whole trajectory, which ends
    with the answer, and its images and files) finds it satisfactory; else 0, and a
    reflection on the trajectory."""
    verdict = yield from evaluate(step, state, text, schema=Verdict, media=media)
    said = verdict.value
    if said is not None and said.satisfactory:
        done: TreeNode = {**node, "satisfactory": True, "score": 1.0, "feedback": said.feedback}
        return Judged(done, {**verdict.spent})
    feedback = (said.feedback or "judged unsatisfactory") if said is not None else NO_VERDICT
    lesson = yield from reflect(step, state, text, feedback, media=media)
    failed: TreeNode = {**node, "score": 0.0, "feedback": feedback}
    return Judged(failed, {**spent_together(verdict.spent, lesson.spent)}, lesson.text)


def value_prompt(lessons: list[str]) -> str:
    """The value request's template (``{question}`` and ``{answer}`` left to ``evaluate``),
    with the lessons of failed attempts when there are some."""
    if not lessons:
        return prompts.LATS_VALUE_USER.format(lessons="")
    listed = "\n".join(f"- {text}" for text in lessons)
    escaped = listed.replace("{", "{{").replace("}", "}}")
    return prompts.LATS_VALUE_USER.format(
        lessons=prompts.LATS_VALUE_LESSONS.format(lessons=escaped)
    )


__all__ = [
    "MAX_LESSONS",
    "NO_VALUE",
    "NO_VERDICT",
    "TOOL_ERROR_PENALTY",
    "Judged",
    "judged",
    "judged_answer",
    "value_prompt",
    "valued_step",
]
