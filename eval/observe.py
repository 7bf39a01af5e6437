"""What the evaluation watches in a run besides its output: the seconds its model calls
were in flight (``ModelClock``) and the replies the answer-integrity check turned down
(``RejectedReplies``), with how many of those held the expected answer."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult

from loopgraphs import prompts
from loopgraphs.eval.report import RunResult
from loopgraphs.eval.scoring import TaskScorer
from loopgraphs.eval.suites import Task
from loopgraphs.nodes.parsing.react import final_answer_of, parse_json_text, parse_react_text
from loopgraphs.nodes.parsing.text import content_text


class ModelClock(BaseCallbackHandler):
    """Seconds during which at least one model call of a run was in flight.

    Overlapping calls (parallel branches) count once, so the figure is comparable with the
    run's latency; the rest of the latency is tools, the graph and waiting for a turn.
    """

    def __init__(self) -> None:
        self._started: dict[UUID, float] = {}
        self._spans: list[tuple[float, float]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, object],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **_: object,
    ) -> None:
        self._started[run_id] = time.perf_counter()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **_: object) -> None:
        self._stop(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: object) -> None:
        self._stop(run_id)

    def _stop(self, run_id: UUID) -> None:
        start = self._started.pop(run_id, None)
        if start is not None:
            self._spans.append((start, time.perf_counter()))

    @property
    def seconds(self) -> float:
        """The union of the finished calls' spans, in seconds."""
        total, reached = 0.0, -math.inf
        for start, end in sorted(self._spans):
            if end > reached:
                total += end - max(start, reached)
                reached = end
        return total


class RejectedReplies(BaseCallbackHandler):
    """The replies of one run that the answer-integrity check turned down as no answer.

    A loop that turns a reply down that way (its answer copies a tool result, reads a
    prompt back, repeats the question or says nothing; see
    ``loopgraphs.nodes.answer_check``) asks once more: the next request ends with the
    re-ask ``prompts.NO_ANSWER``, right after the reply. The handler reads every request
    for it; a request sent again (a retry) counts once. A reply turned down when no turn
    is left for the re-ask ends the run without an answer instead, which ``error`` says
    (``no usable answer: ...``); it is not counted here.
    """

    def __init__(self) -> None:
        self._found: dict[tuple[int, str], None] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, object],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **_: object,
    ) -> None:
        for prompt in messages:
            if len(prompt) < 2 or not isinstance(prompt[-2], AIMessage):
                continue
            last = prompt[-1]
            if isinstance(last, HumanMessage) and content_text(last.content) == prompts.NO_ANSWER:
                self._found.setdefault((len(prompt), content_text(prompt[-2].content)), None)

    @property
    def texts(self) -> list[str]:
        """The turned-down replies as the model wrote them, in the order they were met."""
        return [text for _, text in self._found]


def rejected_answer(reply: str) -> str:
    """The answer a turned-down reply gave, read as the loops read a final reply: a JSON
    action's or the text grammar's final answer, else what follows a ``FINAL ANSWER``
    marker, else the whole text."""
    for parse in (parse_json_text, parse_react_text):
        step = parse(reply)
        if step.kind == "final":
            return step.answer
    return final_answer_of(reply)


def held_expected(replies: Sequence[str], task: Task, run: RunResult, scorer: TaskScorer) -> int:
    """How many turned-down replies ``scorer`` takes for a correct answer to ``task``:
    possible false positives of the answer-integrity check (a reply the scorer fails on
    counts as not holding it)."""
    held = 0
    for reply in replies:
        try:
            held += scorer(rejected_answer(reply), task, run) >= 1.0
        except Exception:  # the scorer's failure on one reply costs only that reply
            continue
    return held
