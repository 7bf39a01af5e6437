"""Evaluation on one's own data: rows, files and DataFrames, scorers, the report's
DataFrames and transcripts, and ``evaluate`` called inside a running event loop."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import sys
import threading

import pandas as pd
import pytest
from agentevals.trajectory.match import create_trajectory_match_evaluator
from langchain_core.messages import AIMessage, HumanMessage
from openevals.exact import exact_match
from rich.console import Console

from loopgraphs.eval import (
    OWN_DATA,
    SCORERS,
    aevaluate,
    evaluate,
    evaluate_server,
    from_evaluator,
    load_tasks,
    make_suite,
    runner,
)
from loopgraphs.eval.report import COLUMNS
from loopgraphs.nodes.parsing.text import content_text
from tests.services.test_eval_server import FakeClient, FakeRuns
from tests.support.fakes import ScriptedChatModel, calls, tool_call

ROWS = [
    {"question": "What is 6 * 7?", "expected": "42", "topic": "maths", "level": "easy"},
    {
        "question": "What is the capital of France?",
        "expected": ["Paris", "Paris, France"],
        "topic": "geography",
        "level": "easy",
    },
    {"question": "Who wrote Hamlet?", "expected": "Shakespeare", "topic": "books", "level": "hard"},
]
REPLIES = {
    "6 * 7": "The answer is 42.",
    "capital of France": "Paris, France",
    "Hamlet": "Marlowe",
}
RUN_COLUMNS = ["loop", "suite", "task_id", "question", "answer", "expected", "score", "status"]


def answering(messages) -> str:
    text = "\n".join(content_text(m.content) for m in messages)
    return next((reply for key, reply in REPLIES.items() if key in text), "I do not know.")


def model(**kwargs) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[answering], repeat_last=True, **kwargs)


def run_rows(data, loops="cot", **kwargs):
    report = evaluate(model(), loops, data, show_progress=False, **kwargs)
    return report.to_dataframe()[[*RUN_COLUMNS, "metadata"]]


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def write_csv(path, rows):
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            expected = row["expected"]
            cell = expected if isinstance(expected, str) else json.dumps(expected)
            writer.writerow({**row, "expected": cell})
    return path


# --- evaluate anywhere --------------------------------------------------------------------


def test_evaluate_works_inside_a_running_event_loop():
    threads = []

    def reply(messages):
        threads.append(threading.current_thread().name)
        return answering(messages)

    async def cell():  # what a notebook cell is: code run while an event loop runs
        scripted = ScriptedChatModel(replies=[reply], repeat_last=True)
        return evaluate(scripted, "cot", ROWS, show_progress=False)

    report = asyncio.run(cell())
    assert [(r.question, r.answer, r.correct) for r in report.results] == [
        ("What is 6 * 7?", "The answer is 42.", True),
        ("What is the capital of France?", "Paris, France", True),
        ("Who wrote Hamlet?", "Marlowe", False),
    ]
    assert threads and all(name.startswith("loopgraphs-eval") for name in threads)


def test_evaluate_in_a_script_runs_in_this_thread():
    threads = []

    def reply(messages):
        threads.append(threading.current_thread())
        return answering(messages)

    evaluate(
        ScriptedChatModel(replies=[reply], repeat_last=True), "cot", ROWS[:1], show_progress=False
    )
    assert threads == [threading.main_thread()]


def test_a_failure_inside_a_running_event_loop_is_raised_to_the_caller():
    async def cell():
        return evaluate(model(), "cot", [{"expected": "42"}], show_progress=False)

    with pytest.raises(ValueError, match="row 1 has no 'question'"):
        asyncio.run(cell())


def test_evaluate_server_works_inside_a_running_event_loop(monkeypatch):
    served = {"role": "user", "content": "What is 6 * 7?"}
    outcomes = {"What is 6 * 7?": {"answer": "42", "status": "completed", "messages": [served]}}
    client = FakeClient(FakeRuns(outcomes), {"react"})
    monkeypatch.setattr("loopgraphs.eval.server.get_client", lambda url: client)

    async def cell():
        return evaluate_server("http://127.0.0.1:9", "react", ROWS, show_progress=False)

    report = asyncio.run(cell())
    assert [(r.answer, r.correct) for r in report.results] == [
        ("42", True),
        ("no idea", False),
        ("no idea", False),
    ]
    assert report.transcript("react", 0) == [served] and client.closed


async def test_aevaluate_is_awaited_on_the_callers_loop():
    report = await aevaluate(model(), "cot", ROWS, show_progress=False)
    assert [r.correct for r in report.results] == [True, True, False]


# --- own data -----------------------------------------------------------------------------


def test_a_list_jsonl_csv_and_dataframe_give_the_same_rows(tmp_path):
    from_list = run_rows(ROWS)
    assert list(from_list["question"]) == [row["question"] for row in ROWS]
    assert list(from_list["expected"]) == ["42", ["Paris", "Paris, France"], "Shakespeare"]
    assert list(from_list["suite"]) == [OWN_DATA] * 3
    assert list(from_list["task_id"]) == ["data-001", "data-002", "data-003"]
    assert list(from_list["score"]) == [1.0, 1.0, 0.0]
    for data in (
        write_jsonl(tmp_path / "qa.jsonl", ROWS),
        str(write_csv(tmp_path / "qa.csv", ROWS)),
        pd.DataFrame(ROWS),
    ):
        pd.testing.assert_frame_equal(run_rows(data), from_list)


def test_extra_keys_are_kept_as_metadata(tmp_path):
    report = evaluate(model(), "cot", write_jsonl(tmp_path / "qa.jsonl", ROWS), show_progress=False)
    assert [r.metadata for r in report.results] == [
        {"topic": "maths", "level": "easy"},
        {"topic": "geography", "level": "easy"},
        {"topic": "books", "level": "hard"},
    ]
    frame = report.to_dataframe()
    assert list(frame["metadata"].map(lambda m: m["topic"])) == ["maths", "geography", "books"]
    (task, *_) = load_tasks(ROWS)[OWN_DATA]
    assert task.metadata == {"topic": "maths", "level": "easy"}


def test_a_list_of_answers_accepts_any_of_them():
    rows = [{"question": "What is the capital of France?", "expected": ["Lutetia", "Paris"]}]
    (run,) = evaluate(model(), "cot", rows, scorer="exact", show_progress=False).results
    assert run.answer == "Paris, France" and not run.correct
    (run,) = evaluate(model(), "cot", rows, scorer="contains", show_progress=False).results
    assert run.correct and run.expected == ["Lutetia", "Paris"]


def test_limit_cuts_own_data_and_numbers_stay_answers():
    rows = [{"question": "What is 6 * 7?", "expected": 42}, *ROWS[1:]]
    report = evaluate(model(), "cot", rows, limit=1, show_progress=False)
    assert [(r.expected, r.correct) for r in report.results] == [("42", True)]


def test_the_bundled_suites_still_work_by_name_and_by_keyword():
    perfect = {t.question: t.answer for t in make_suite("arithmetic")[:2]}

    def reply(messages):
        text = "\n".join(content_text(m.content) for m in messages)
        return next(answer for question, answer in perfect.items() if question in text)

    by_name = evaluate(
        ScriptedChatModel(replies=[reply], repeat_last=True), "cot", "arithmetic", limit=2
    )
    by_keyword = evaluate(
        ScriptedChatModel(replies=[reply], repeat_last=True), "cot", suites=["arithmetic"], limit=2
    )
    for report in (by_name, by_keyword):
        assert report.suites == ["arithmetic"] and report.meta["seed"] is not None
        assert [r.task_id for r in report.results] == ["arithmetic-000", "arithmetic-001"]
        assert all(r.correct for r in report.results)
    with pytest.raises(TypeError, match="not both"):
        evaluate(model(), "cot", ROWS, suites="arithmetic")


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        ([ROWS[0], {"expected": "x"}], ValueError, r"data row 2 has no 'question'"),
        ([{"question": "q"}], ValueError, r"data row 1 has no 'expected'"),
        ([{"question": "q", "expected": []}], ValueError, r"'expected' must be a string"),
        ([{"question": "q", "expected": {"a": 1}}], ValueError, r"'expected' must be a string"),
        ([{"question": 7, "expected": "7"}], ValueError, r"'question' must be a string"),
        ([ROWS[0], "What is 1 + 1?"], TypeError, r"data row 2 is str, not a dict"),
        ([], ValueError, r"data has no rows"),
        ("poems", ValueError, r"unknown suite poems; choose from arithmetic"),
        (["verify", "poems"], ValueError, r"unknown suite poems"),
        ("questions.txt", ValueError, r"unknown data file type '\.txt'.*\.jsonl or \.csv"),
        ("missing.jsonl", FileNotFoundError, r"no data file missing\.jsonl"),
        (42, TypeError, r"got int"),
    ],
)
def test_bad_data_is_refused_with_what_is_wrong(data, error, message):
    with pytest.raises(error, match=message):
        evaluate(model(), "cot", data, show_progress=False)


def test_bad_files_and_frames_name_the_row(tmp_path):
    bad_line = tmp_path / "qa.jsonl"
    bad_line.write_text(json.dumps(ROWS[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"qa\.jsonl line 2 is not JSON"):
        load_tasks(bad_line)
    no_question = write_csv(tmp_path / "qa.csv", [{"q": "What?", "expected": "x"}])
    with pytest.raises(ValueError, match=r"qa\.csv row 1 has no 'question'; it has \['expected'"):
        load_tasks(no_question)
    frame = pd.DataFrame([ROWS[0], {"question": "What?", "topic": "x"}])
    with pytest.raises(ValueError, match=r"the DataFrame row 2 has no 'expected'"):
        load_tasks(frame)


# --- scorers ------------------------------------------------------------------------------


def test_the_built_in_scorers_are_named_and_differ():
    assert set(SCORERS) == {"exact", "normalised", "contains"}
    rows = [{"question": "What is 6 * 7?", "expected": "42"}]
    (run,) = evaluate(model(), "cot", rows, scorer="exact", show_progress=False).results
    assert run.answer == "The answer is 42." and run.score == 0.0
    (run,) = evaluate(model(), "cot", rows, scorer="contains", show_progress=False).results
    assert run.score == 1.0
    assert SCORERS["normalised"]("paris, FRANCE!", ["Paris France"])
    assert not SCORERS["normalised"]("Paris is in France", "Paris")
    assert SCORERS["contains"]("word " * 40 + "Paris", "paris")  # any length
    with pytest.raises(ValueError, match="unknown scorer 'fuzzy'; choose from default, exact"):
        evaluate(model(), "cot", rows, scorer="fuzzy", show_progress=False)


def test_a_callable_scorer_gives_floats_and_bools():
    seen = []

    def half_for_france(answer, expected, run):
        seen.append((expected, run.loop, run.metadata["topic"], len(run.messages)))
        return 0.5 if run.metadata["topic"] == "geography" else answer == "Marlowe"

    report = evaluate(model(), "cot", ROWS, scorer=half_for_france, show_progress=False)
    assert [(r.score, r.correct) for r in report.results] == [
        (0.0, False),
        (0.5, False),
        (1.0, True),
    ]
    # runs are scored as they finish, in no set order
    assert (["Paris", "Paris, France"], "cot", "geography", 2) in seen and len(seen) == 3
    (summary,) = report.summary()
    assert summary.accuracy == pytest.approx(0.5) and summary.correct == 1
    assert report.meta["scorer"] == "half_for_france"


def test_a_scorer_that_returns_no_number_is_named_and_the_runs_are_kept():
    def says_yes(answer, expected, run):
        return "yes"

    with pytest.warns(
        UserWarning, match=r"the scorer failed on 1 of 1 runs.*'says_yes' returned str"
    ):
        report = evaluate(model(), "cot", ROWS[:1], scorer=says_yes, show_progress=False)
    (run,) = report.results
    assert run.status == "completed" and run.answer
    assert math.isnan(run.score) and not run.correct
    assert (
        run.error.startswith("the scorer failed: TypeError")
        and "'says_yes' returned str" in run.error
    )


def test_a_scorer_that_raises_on_some_answers_costs_only_their_scores():
    def picky(answer, expected, run):
        if run.metadata["level"] == "easy":
            raise KeyError("no grader for easy questions")
        return answer == "Marlowe"

    with pytest.warns(UserWarning, match=r"the scorer failed on 2 of 3 runs"):
        report = evaluate(model(), "cot", ROWS, scorer=picky, show_progress=False)
    by_topic = {run.metadata["topic"]: run for run in report.results}
    assert by_topic["books"].score == 1.0 and by_topic["books"].error == ""
    for topic in ("maths", "geography"):
        run = by_topic[topic]
        assert math.isnan(run.score) and "no grader for easy questions" in run.error
        assert run.answer and run.status == "completed"
    (summary,) = report.summary()
    assert summary.correct == 1 and math.isnan(summary.accuracy)


def test_an_openevals_evaluator_scores_the_answer():
    rows = [
        {"question": "What is the capital of France?", "expected": "Paris, France"},
        {"question": "Who wrote Hamlet?", "expected": "Shakespeare"},
    ]
    scorer = from_evaluator(exact_match)
    report = evaluate(model(), "cot", rows, scorer=scorer, show_progress=False)
    assert [r.score for r in report.results] == [1.0, 0.0]
    assert report.meta["scorer"] == "exact_match"


def test_an_agentevals_trajectory_evaluator_scores_the_messages():
    def reference(tool):
        call = {"name": tool, "args": {"expression": "6 * 7"}, "id": "1"}
        return [HumanMessage("What is 6 * 7?"), AIMessage("", tool_calls=[call])]

    rows = [
        {"question": "What is 6 * 7?", "expected": "42", "trajectory": reference("calculator")},
        {"question": "What is 6 * 7?", "expected": "42", "trajectory": reference("search")},
    ]

    def reply(messages):
        if messages[-1].type == "tool":
            return AIMessage(content="42")
        return calls(tool_call("calculator", {"expression": "6 * 7"}))

    scripted = ScriptedChatModel(replies=[reply], repeat_last=True)
    evaluator = create_trajectory_match_evaluator(
        trajectory_match_mode="superset", tool_args_match_mode="ignore"
    )
    scorer = from_evaluator(evaluator, outputs="messages", reference="trajectory")
    report = evaluate(scripted, "react", rows, scorer=scorer, show_progress=False)
    assert [r.answer for r in report.results] == ["42", "42"]
    # The run called the calculator: it matches the first reference, not the second.
    assert [r.score for r in report.results] == [1.0, 0.0]


# --- the report ---------------------------------------------------------------------------


def test_the_dataframe_has_one_row_per_run_with_the_listed_columns():
    report = evaluate(model(), "cot,react", ROWS, show_progress=False)
    frame = report.to_dataframe()
    assert list(frame.columns) == list(COLUMNS)
    for column in ("loop", "question", "answer", "expected", "score", "status", "llm_calls"):
        assert column in frame.columns
    assert len(frame) == 6 and list(frame["loop"]) == ["cot"] * 3 + ["react"] * 3
    assert list(frame["status"]) == ["completed"] * 6 and (frame["llm_calls"] >= 1).all()
    assert list(frame["tokens"]) == [r.input_tokens + r.output_tokens for r in report.results]
    assert (frame["tokens"] > 0).all() and (frame["latency"] > 0).all()
    assert frame["thread_id"].str.len().gt(0).all() and frame["thread_id"].is_unique
    summary = report.summary_dataframe()
    assert list(summary["loop"]) == ["cot", "react"]
    assert list(summary["accuracy"]) == pytest.approx([2 / 3, 2 / 3])
    assert list(summary["completed"]) == [3, 3] and list(summary["error"]) == [0, 0]


def test_the_json_keeps_the_rows_but_not_the_messages(tmp_path):
    report = evaluate(model(), "cot", ROWS, show_progress=False)
    data = json.loads(report.to_json(tmp_path / "r.json").read_text())
    assert "messages" not in data["results"][0]
    assert data["results"][1]["metadata"] == {"topic": "geography", "level": "easy"}
    assert data["results"][1]["thread_id"] == report.results[1].thread_id
    assert data["meta"]["suites"] == [OWN_DATA] and data["meta"]["seed"] is None


def test_the_transcript_of_a_run_is_one_call_away():
    report = evaluate(model(), "cot,react", ROWS, show_progress=False)
    messages = report.transcript("react", 1)
    assert [m.type for m in messages] == ["human", "ai"]
    assert messages[0].content == "What is the capital of France?"
    assert messages[-1].content == "Paris, France"
    assert report.transcript("react", "What is the capital of France?") == messages
    assert report.transcript("react", "data-002") == messages
    assert report.transcript("cot", -1)[-1].content == "Marlowe"
    with pytest.raises(LookupError, match=r"no run of 'react' for 'Who are you\?'; it has 3 runs"):
        report.transcript("react", "Who are you?")
    with pytest.raises(LookupError, match="no run of 'tot'"):
        report.transcript("tot", 0)


def test_a_notebook_shows_the_table_and_the_chart():
    report = evaluate(model(), "cot,react", ROWS, show_progress=False)
    shown = report._repr_html_()
    assert "<table>" in shown and "<td>react</td><td>data</td><td>3</td><td>67%</td>" in shown
    assert 'src="data:image/png;base64,iVBORw0KGgo' in shown  # a PNG
    figure = report.figure()
    assert [axes.get_title() for axes in figure.axes] == ["accuracy per suite", "cost"]


def test_without_pandas_the_dataframe_says_how_to_install(monkeypatch):
    report = evaluate(model(), "cot", ROWS[:1], show_progress=False)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(RuntimeError, match=r"pip install \"loopgraphs\[eval\]\""):
        report.to_dataframe()
    assert report.results[0].correct  # the rest of the report does not need it


def test_progress_in_jupyter_without_ipywidgets_is_printed_lines(monkeypatch):
    monkeypatch.setattr(runner.importlib.util, "find_spec", lambda name: None)
    assert not runner.live_bar(Console(force_jupyter=True))
    assert runner.live_bar(Console(force_jupyter=False, force_terminal=True))
    monkeypatch.setattr(runner.importlib.util, "find_spec", lambda name: object())
    assert runner.live_bar(Console(force_jupyter=True))
