"""The evaluation counts the replies the answer-integrity check turns down as no answer.

A loop that turns a reply down asks once more with ``prompts.NO_ANSWER``; the runner
reads that re-ask in the requests (``RejectedReplies``), keeps each run's turned-down
replies, and the report gives per loop and suite how many there were, in how many runs,
and how many held the expected answer by the evaluation's scorer (possible false
positives).
"""

from __future__ import annotations

import json
from typing import Any

from loopgraphs import prompts
from loopgraphs.eval import EvalReport, evaluate
from loopgraphs.eval.observe import rejected_answer
from loopgraphs.eval.report import RunResult, summarise
from loopgraphs.eval.runner import result_of
from loopgraphs.eval.suites import Task
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ProviderError, ScriptedChatModel
from tests.support.scripts import FAST_RETRY

ROWS = [
    # Turned down (it reads a prompt back), though it holds the answer: a false positive.
    {"question": "What is 17 * 19?", "expected": "323"},
    # Turned down, and rightly: it holds no answer.
    {"question": "What is 6 * 7?", "expected": "42"},
    # Answered at once.
    {"question": "What is 2 + 2?", "expected": "4"},
]
FIRST_REPLIES = {
    "What is 17 * 19?": "Reply again with only the final answer, in one short sentence: 323",
    "What is 6 * 7?": prompts.CHAT_SYSTEM,
    "What is 2 + 2?": "4",
}
ANSWERS = {"What is 17 * 19?": "323", "What is 6 * 7?": "42", "What is 2 + 2?": "4"}


def scripted() -> ScriptedChatModel:
    """Each question's first reply, then its answer after the re-ask; the first re-ask
    request of 6 * 7 fails once with a transient error (the request is sent again)."""
    failed: list[str] = []

    def reply(messages: list[Any]) -> str:
        question = next(q for q in ANSWERS if q in content_text(messages[1].content))
        if content_text(messages[-1].content) != prompts.NO_ANSWER:
            return FIRST_REPLIES[question]
        if question == "What is 6 * 7?" and not failed:
            failed.append(question)
            raise ProviderError(503, "try again")
        return ANSWERS[question]

    return ScriptedChatModel(replies=[reply], repeat_last=True)


def test_the_report_counts_the_replies_turned_down_as_no_answer(tmp_path):
    report = evaluate(
        scripted(),
        ["react"],
        ROWS,
        concurrency=1,
        loop_options={"react": {"retry_policy": FAST_RETRY}},
        show_progress=False,
    )
    runs = report.runs("react")
    assert [run.answer for run in runs] == ["323", "42", "4"]
    assert [run.rejected_replies for run in runs] == [
        [FIRST_REPLIES["What is 17 * 19?"]],
        [prompts.CHAT_SYSTEM],  # sent twice (a retry), counted once
        [],
    ]
    assert [run.rejected_expected for run in runs] == [1, 0, 0]
    (row,) = report.summary()
    assert (row.rejected, row.rejected_runs, row.rejected_expected) == (2, 2, 1)
    assert "| react | data | 3 | 2 | 2 | 1 |" in report.markdown()
    assert report.integrity_line() == (
        "answer-integrity check: 2 replies turned down as no answer in 2 runs; "
        "1 held the expected answer (possible false positives)"
    )
    saved = EvalReport.from_json(report.to_json(tmp_path / "results.json"))
    assert [run.rejected_replies for run in saved.results] == [run.rejected_replies for run in runs]
    summary = json.loads((tmp_path / "results.json").read_text())["summary"][0]
    assert (summary["rejected"], summary["rejected_runs"], summary["rejected_expected"]) == (
        2,
        2,
        1,
    )


def test_runs_not_observed_show_no_figure():
    """Runs on a LangGraph server return no observation: their figures are "-"."""
    task = Task("t-1", "data", "What is 2 + 2?", "4")
    run = result_of("react", task, {"answer": "4", "status": "completed"}, 0.1)
    assert run.rejected_replies is None and run.rejected_expected == 0
    row = summarise("react", "data", [run])
    assert (row.rejected, row.rejected_runs, row.rejected_expected) == (None, None, None)
    report = EvalReport(results=[run], loops=["react"], suites=["data"])
    assert "| react | data | 1 | - | - | - |" in report.markdown()
    assert "not observed" in report.integrity_line()


def test_a_turned_down_reply_is_read_as_the_loops_read_an_answer():
    action = {"thought": "Done.", "action": "final_answer", "action_input": "323"}
    assert rejected_answer(json.dumps(action)) == "323"
    assert rejected_answer("Thought: I can answer now.\nFINAL_ANSWER: 323") == "323"
    assert rejected_answer("It is 323.") == "It is 323."


def test_a_scorer_failing_on_a_turned_down_reply_costs_only_that_reply():
    task = Task("t-1", "data", "What is 2 + 2?", "4")

    def scorer(answer: str, task: Task, run: RunResult) -> float:
        if answer == "boom":
            raise ValueError("cannot score")
        return float(answer == "4")

    out = {"answer": "4", "status": "completed", "rejected_replies": ["boom", "4", "no"]}
    run = result_of("react", task, out, 0.1, scorer)
    assert (run.score, run.rejected_expected, run.error) == (1.0, 1, "")
