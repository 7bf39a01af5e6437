"""The evaluation harness: scoring, suites, the runner and the ``eval`` command."""

from __future__ import annotations

import io
import json
import re
import sys
from argparse import Namespace
from types import SimpleNamespace
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage
from rich.console import Console

from loopgraphs.cli import run_cli_eval
from loopgraphs.eval import (
    MULTIHOP_TEMPLATES,
    PHRASINGS,
    SUITE_NAMES,
    SUITES,
    EvalReport,
    Task,
    evaluate,
    make_suite,
    normalise,
    runner,
    score,
)
from loopgraphs.eval.data import load_tasks
from loopgraphs.eval.observe import ModelClock
from loopgraphs.eval.report import CHART_NEEDS, RunResult
from loopgraphs.eval.runner import DEFAULT_CONCURRENCY, runs_at_once
from loopgraphs.eval.scoring import contains_phrase
from loopgraphs.graphs.registry import LOOPS, LoopSpec
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.toolkits import calculator, triples
from loopgraphs.toolkits.knowledge import RELATION_SENTENCES
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call

QUIET = Console(file=io.StringIO())
SIMPLE_LOOPS = ("cot", "react")  # one call that ends the run with the reply as the answer


def task(answer: str, suite: str = "multihop", aliases: tuple[str, ...] = ()) -> Task:
    return Task("t-1", suite, "question?", answer, aliases)


def facts() -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for subject, relation, value in triples():
        table.setdefault(subject, {})[relation] = value
    return table


def prompt_text(messages) -> str:
    return "\n".join(content_text(m.content) for m in messages)


def answering(answers: dict[str, str], default: str = "I do not know."):
    """A reply that finds a known question in the prompt and gives its answer."""

    def reply(messages):
        text = prompt_text(messages)
        for question, answer in answers.items():
            if question in text:
                return answer
        return default

    return reply


def all_answers() -> dict[str, str]:
    return {t.question: t.answer for suite in SUITES for t in make_suite(suite)}


# --- scoring ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234.0", "1234"),
        ("The answer is: 1,234,567!", "answer is 1234567"),
        ("  A   Café  in  Ümberg. ", "cafe in umberg"),
        ("-0.50 and 3.140", "-0.5 and 3.14"),
        ("10-5", "10 5"),
        ("007", "7"),
        ("Kolmarsk-Union", "kolmarsk union"),
    ],
)
def test_normalise(text, expected):
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("prediction", "expected", "ok"),
    [
        ("11297", "11297", True),
        ("11,297.0", "11297", True),
        ("The answer is 11297.", "11297", True),
        ("112970", "11297", False),
        ("1129", "11297", False),
        ("the Kolmarsk Union.", "Kolmarsk Union", True),
        ("He was born in Varnholtia.", "Varnholt", False),
        ("Varnholt", "Marrowick", False),
        ("", "Varnholt", False),
        ("word " * 31 + "Varnholt", "Varnholt", False),  # long: containment not accepted
        ("word " * 29 + "Varnholt", "Varnholt", True),
    ],
)
def test_score_exact_normalised_and_contained(prediction, expected, ok):
    assert score(prediction, task(expected)) is ok


def test_score_accepts_aliases():
    item = task("Bartholomew Ixley", aliases=("Ixley",))
    assert score("Mr Ixley.", item) and not score("Bartholomew", item)


@pytest.mark.parametrize(
    ("prediction", "ok"),
    [
        ("True", True),
        ("yes", True),
        ("That is correct.", True),
        ("Yes, the claim is accurate.", True),
        ("False", False),
        ("Not true.", False),
        ("No, it is incorrect.", False),
        ("I cannot tell.", False),
        ("Is this true?", False),  # a question, copied from the task
        ("The correct answer is: 3.", False),  # "correct" qualifies a noun: no verdict
        ("Claim: Varnholt has a population of 9. True.", True),
    ],
)
def test_score_true_claims(prediction, ok):
    item = Task("v", "verify", "Claim: Varnholt has a population of 9. Is this true?", "true")
    assert score(prediction, item) is ok


@pytest.mark.parametrize(
    ("prediction", "ok"),
    [
        ("1954", True),
        ("False. The correct year is 1954.", True),
        ("No: it was founded in 1954", True),
        ("True", False),
        ("Yes, 1954.", False),  # a true verdict on a false claim
        ("False.", False),  # the correct value is missing
        ("False, it is 1921.", False),
    ],
)
def test_score_false_claims(prediction, ok):
    assert score(prediction, task("1954", suite="verify")) is ok
    assert score(prediction, task("1954", suite="verify-classic")) is ok


# --- suites -------------------------------------------------------------------------------


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_suites_are_deterministic_unique_and_large_enough(suite):
    first, again = make_suite(suite, seed=7), make_suite(suite, seed=7)
    assert first == again
    assert make_suite(suite, seed=8) != first
    assert len(first) >= 30
    assert len({t.id for t in first}) == len(first) == len({t.question for t in first})
    assert all(t.suite == suite and t.answer for t in first)


def test_unknown_suite_is_refused():
    with pytest.raises(ValueError, match=r"unknown suite 'poetry'.*multihop-classic"):
        make_suite("poetry")


@pytest.mark.parametrize("suite", ["multihop", "verify"])
def test_a_suite_asks_each_item_in_turn_in_every_phrasing(suite):
    """The items, their order and their answers are those of the ``-classic`` variant;
    only the questions' phrasing differs, taken in turn, so the first ten items (``--limit
    10``) hold every phrasing twice."""
    varied, classic = make_suite(suite), make_suite(f"{suite}-classic")
    assert [t.answer for t in varied] == [t.answer for t in classic]
    assert [t.metadata["phrasing"] for t in varied[:10]] == [*PHRASINGS, *PHRASINGS]
    assert {t.metadata["phrasing"] for t in classic} == {"classic"}
    for item, same in zip(varied, classic, strict=True):
        assert item.suite == suite and same.suite == f"{suite}-classic"
        assert (item.question == same.question) is (item.metadata["phrasing"] == "classic")
        if item.answer != "true":
            assert not contains_phrase(normalise(item.question), normalise(item.answer))


def test_each_phrasing_reads_as_asked():
    kinds = {t.metadata["phrasing"]: t.question for t in make_suite("multihop")[:5]}
    assert kinds["possessive"].count("'") == 1
    assert kinds["imperative"].split()[0] in ("Name", "Give")
    assert kinds["two_sentences"].count(". ") == 1 and kinds["two_sentences"].endswith("?")
    assert re.search(r"\b(who|that|where)\b", kinds["clause"])
    claims = {t.metadata["phrasing"]: t.question for t in make_suite("verify")[:5]}
    assert "'" in claims["possessive"] and claims["imperative"].startswith("Tell me")
    assert claims["clause"].startswith("Is it true that ")
    assert claims["two_sentences"].startswith("Consider ")


def test_all_is_the_three_suites_and_a_variant_is_asked_by_name():
    assert list(load_tasks("all", limit=1)) == list(SUITES)
    chosen = load_tasks("multihop-classic,verify", limit=2)
    assert list(chosen) == ["multihop-classic", "verify"]
    assert chosen["multihop-classic"] == make_suite("multihop-classic")[:2]


WORD_PROBLEMS = [
    (
        re.compile(r"A warehouse holds (\d+) crates of (\d+) bottles each\. (\d+) bottles"),
        lambda a, b, c: a * b - c,
    ),
    (
        re.compile(r"A train has (\d+) carriages with (\d+) seats each, and (\d+) seats are"),
        lambda d, seats, taken: d * (seats - taken),
    ),
    (
        re.compile(r"A printer prints (\d+) pages an hour for (\d+) hours, then (\d+) more"),
        lambda c, d, a: c * d + a,
    ),
]


def test_arithmetic_answers_are_exact():
    for item in make_suite("arithmetic"):
        expression = re.fullmatch(r"What is (.+)\?", item.question)
        if expression:
            expected = calculator.invoke({"expression": expression.group(1)})
            assert expression.group(1).count(" ") >= 4  # at least two operations
        else:
            found = [(p.search(item.question), f) for p, f in WORD_PROBLEMS]
            match, formula = next((m, f) for m, f in found if m)
            expected = str(formula(*map(int, match.groups())))
        assert normalise(item.answer) == normalise(expected), item.question
        assert re.fullmatch(r"-?\d+", item.answer)
        assert item.answer not in re.findall(r"\d+", item.question)


def test_multihop_answers_follow_two_facts():
    table = facts()
    patterns = [
        (first, second, re.compile(re.escape(template).replace(r"\{name\}", "(.+)") + "$"))
        for first, second, template in MULTIHOP_TEMPLATES
    ]
    shapes = set()
    for item in make_suite("multihop-classic"):
        found = [(f, s, p.match(item.question)) for f, s, p in patterns]
        first, second, match = next((f, s, m) for f, s, m in found if m)
        name = match.group(1)
        assert item.answer == table[table[name][first]][second], item.question
        assert item.answer not in item.question
        shapes.add((first, second))
    assert len(shapes) >= 5  # the suite mixes many kinds of two-hop questions


def test_verify_answers_match_the_knowledge_base():
    table = facts()
    values: dict[str, set[str]] = {}
    for _, relation, value in triples():
        values.setdefault(relation, set()).add(value)
    patterns = {
        relation: re.compile(
            re.escape(sentence)
            .replace(r"\{subject\}", "(?P<subject>.+)")
            .replace(r"\{object\}", "(?P<object>.+)")
            + "$"
        )
        for relation, sentence in RELATION_SENTENCES.items()
    }
    true_claims = false_claims = 0
    for item in make_suite("verify-classic"):
        claim = re.fullmatch(
            r"Claim: (.+?) Is this true\? If false, give the correct value\.", item.question
        )
        readings = [
            (relation, m["subject"], m["object"])
            for relation, pattern in patterns.items()
            if (m := pattern.match(claim.group(1)))
            and m["subject"] in table
            and relation in table[m["subject"]]
            and m["object"] in values[relation]
        ]
        assert len(readings) == 1, item.question
        relation, subject, claimed = readings[0]
        truth = table[subject][relation]
        if claimed == truth:
            true_claims += 1
            assert item.answer == "true"
        else:
            false_claims += 1
            assert item.answer == truth
            assert normalise(truth) not in normalise(item.question)
    assert true_claims == false_claims  # always answering "true" scores 50%


# --- the runner ---------------------------------------------------------------------------


def test_perfect_model_scores_everything_and_wrong_model_nothing():
    perfect = ScriptedChatModel(replies=[answering(all_answers())], repeat_last=True)
    report = evaluate(perfect, "all", "all", limit=3, concurrency=8, show_progress=False)
    assert report.loops == list(LOOPS)
    rows = report.summary()
    assert [(r.loop, r.suite) for r in rows] == [(lp, s) for lp in LOOPS for s in SUITES]
    for row in rows:
        assert row.n == 3 and row.correct == 3 and row.accuracy == 1.0, row
        assert sum(row.statuses.values()) == 3 and row.statuses["error"] == 0
        assert row.mean_llm_calls >= 1 and row.mean_tokens > 0
    for row in rows:
        if row.loop in SIMPLE_LOOPS:
            assert row.statuses["completed"] == 3

    wrong = ScriptedChatModel(replies=["I do not know."], repeat_last=True)
    report = evaluate(wrong, "all", "all", limit=3, concurrency=8, show_progress=False)
    assert all(r.accuracy == 0.0 and r.correct == 0 for r in report.summary())
    assert len(report.results) == 3 * 3 * len(LOOPS)


def test_means_and_status_counts():
    answers = {t.question: t.answer for t in make_suite("arithmetic")[:3]}
    failing = next(iter(answers))

    def reply(messages):
        text = prompt_text(messages)
        if failing in text:
            raise ProviderError(400, "bad request")
        if messages[-1].type == "tool":
            return AIMessage(content=answering(answers)(messages))
        return calls(tool_call("calculator", {"expression": "1 + 1"}))

    model = ScriptedChatModel(replies=[reply], repeat_last=True)
    report = evaluate(model, ["react"], "arithmetic", limit=3, show_progress=False)
    (row,) = report.summary()
    runs = report.runs("react", "arithmetic")
    assert row.statuses == {"completed": 2, "max_iterations": 0, "error": 1}
    assert row.correct == 2 and row.accuracy == pytest.approx(2 / 3)
    assert [r.llm_calls for r in runs if r.status == "completed"] == [2, 2]
    # The failing run sent one request: a 400 that is not about tools is not sent again.
    assert [r.llm_calls for r in runs if r.status == "error"] == [1]
    assert row.mean_llm_calls == pytest.approx(5 / 3)
    tokens = [r.input_tokens + r.output_tokens for r in runs]
    assert row.mean_tokens == pytest.approx(sum(tokens) / 3) and min(tokens[1:]) > 0
    assert row.mean_latency == pytest.approx(sum(r.latency for r in runs) / 3)
    assert "bad request" in next(r.error for r in runs if r.status == "error")


def test_a_run_that_raises_is_an_error_and_the_eval_goes_on(monkeypatch):
    class Exploding:
        async def ainvoke(self, inputs, config=None):
            if "Drennick" in inputs["messages"][0][1]:
                raise RuntimeError("graph broke")
            return {"answer": "true", "status": "completed", "llm_calls": 1}

    monkeypatch.setattr(LoopSpec, "build", lambda *a, **k: Exploding())
    report = evaluate(None, ["react"], "verify", show_progress=False)
    runs = report.runs("react")
    broken = [r for r in runs if "Drennick" in r.question]
    assert broken and all(r.status == "error" and "graph broke" in r.error for r in broken)
    assert len(runs) == len(make_suite("verify"))
    assert report.summary()[0].statuses["completed"] == len(runs) - len(broken)


def test_concurrency_is_bounded():
    model = ScriptedChatModel(replies=["42"], repeat_last=True, delay=0.02)
    evaluate(model, ["react"], "arithmetic", limit=12, concurrency=3, show_progress=False)
    assert model.call_count == 12 and 2 <= model.max_concurrency <= 3


def test_default_concurrency_follows_the_server(monkeypatch):
    model = ScriptedChatModel(replies=["42"], repeat_last=True, delay=0.02)
    report = evaluate(model, ["react"], "arithmetic", limit=8, show_progress=False)
    assert report.meta["concurrency"] == DEFAULT_CONCURRENCY == 4
    assert 2 <= model.max_concurrency <= DEFAULT_CONCURRENCY
    # On the embedded server: one run per slot (one by default), so runs keep its cache.
    model = ScriptedChatModel(replies=["42"], repeat_last=True, delay=0.02)
    one_slot = SimpleNamespace(n_parallel=1)
    monkeypatch.setattr(runner, "embedded_server", lambda m: one_slot if m is model else None)
    report = evaluate(model, ["react"], "arithmetic", limit=8, show_progress=False)
    assert report.meta["concurrency"] == 1 and model.max_concurrency == 1
    assert runs_at_once(model, 3) == 3


def test_bad_arguments_are_refused():
    model = ScriptedChatModel(replies=["42"], repeat_last=True)
    with pytest.raises(ValueError, match="unknown loop nope"):
        evaluate(model, "react,nope", "all", show_progress=False)
    with pytest.raises(ValueError, match="concurrency"):
        evaluate(model, "react", "all", concurrency=0, show_progress=False)


# --- reports and the command --------------------------------------------------------------


def test_cli_eval_writes_json_markdown_and_chart(tmp_path):
    model = ScriptedChatModel(replies=[answering(all_answers())], repeat_last=True)
    console = Console(file=io.StringIO(), width=120)
    args = Namespace(
        loops="react",
        suite="arithmetic,verify",
        limit=3,
        concurrency=2,
        max_iterations=None,
        out=tmp_path,
    )
    assert run_cli_eval(args, model, console) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert [(r["suite"], r["accuracy"]) for r in data["summary"]] == [
        ("arithmetic", 1.0),
        ("verify", 1.0),
        ("all", 1.0),
    ]
    assert len(data["results"]) == 6 and data["meta"]["limit"] == 3
    markdown = (tmp_path / "results.md").read_text()
    assert "| react | arithmetic | 3 | 100% |" in markdown
    assert (tmp_path / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = EvalReport.from_json(tmp_path / "results.json")
    assert again.markdown() == markdown and again.results[0].loop == "react"
    assert "react" in console.file.getvalue()


def test_cli_eval_max_iterations_sets_each_loops_budget(tmp_path):
    looping = ScriptedChatModel(
        replies=[calls(tool_call("calculator", {"expression": "1 + 1"}))], repeat_last=True
    )
    args = Namespace(
        loops="react,cot",
        suite="arithmetic",
        limit=2,
        concurrency=2,
        max_iterations=1,
        out=tmp_path,
    )
    assert run_cli_eval(args, looping, QUIET) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    react = [r for r in data["results"] if r["loop"] == "react"]
    assert [(r["status"], r["llm_calls"]) for r in react] == [("max_iterations", 2)] * 2
    assert data["meta"]["loop_options"] == {
        "react": {"max_iterations": 1},
        "cot": {"self_consistency": 1},
    }


def test_cli_eval_names_an_unknown_suite(tmp_path):
    from loopgraphs.cli import CliError

    args = Namespace(
        loops="react", suite="poems", limit=1, concurrency=1, max_iterations=None, out=tmp_path
    )
    with pytest.raises(CliError, match="unknown suite poems"):
        run_cli_eval(args, ScriptedChatModel(replies=["x"]), QUIET)


def test_cli_eval_without_matplotlib_writes_the_rest_and_exits_0(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    model = ScriptedChatModel(replies=[answering(all_answers())], repeat_last=True)
    console = Console(file=io.StringIO(), width=80)
    args = Namespace(
        loops="react", suite="arithmetic", limit=2, concurrency=2, max_iterations=None, out=tmp_path
    )
    assert run_cli_eval(args, model, console) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "results.md"]
    printed = console.file.getvalue().splitlines()
    assert [line for line in printed if "matplotlib" in line] == [CHART_NEEDS]


def test_the_terminal_table_fits_80_columns_without_cutting_a_name():
    suites = ["arithmetic", "multihop", "verify"]
    results = [
        RunResult(
            loop=loop,
            suite=suite,
            task_id=f"{suite}-{i}",
            question="q",
            expected="a",
            answer="a",
            correct=bool(i),
            status=("completed", "max_iterations", "error")[i],
            llm_calls=12,
            input_tokens=12000,
            output_tokens=3456,
            cached_tokens=0,
            latency=123.45,
            model_seconds=120.5,
        )
        for loop in LOOPS
        for suite in suites
        for i in range(3)
    ]
    report = EvalReport(results=results, loops=list(LOOPS), suites=suites)
    console = Console(file=io.StringIO(), width=80)
    console.print(report.table())
    lines = console.file.getvalue().splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert "…" not in text
    for name in (*LOOPS, "arith", "multihop", "verify", "acc", "lat s", "model s", "err 1"):
        assert name in text
    assert "| plan_execute | arithmetic | 3 | 67% |" in report.markdown()


def test_chart_without_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = EvalReport(results=[], loops=["react"], suites=["verify"])
    with pytest.raises(RuntimeError, match=r"loopgraphs\[eval\]"):
        report.chart(tmp_path / "chart.png")


def test_model_time_is_measured_apart_from_the_rest_of_the_latency():
    answers = {t.question: t.answer for t in make_suite("arithmetic")[:2]}
    model = ScriptedChatModel(replies=[answering(answers)], repeat_last=True, delay=0.05)
    report = evaluate(model, ["cot", "react"], "arithmetic", limit=2, show_progress=False)
    for run in report.results:
        assert run.llm_calls * 0.05 <= run.model_seconds + 0.01
        assert run.model_seconds <= run.latency
    assert "| model s |" in report.markdown()


def test_model_clock_counts_overlapping_calls_once(monkeypatch):
    now = iter([0.0, 1.0, 2.0, 3.0, 10.0, 11.0])
    monkeypatch.setattr("loopgraphs.eval.runner.time.perf_counter", lambda: next(now))
    clock = ModelClock()
    a, b, c = uuid4(), uuid4(), uuid4()
    clock.on_chat_model_start({}, [], run_id=a)  # 0
    clock.on_chat_model_start({}, [], run_id=b)  # 1
    clock.on_llm_end(None, run_id=a)  # 2
    clock.on_llm_error(RuntimeError(), run_id=b)  # 3: a and b overlap, 0..3
    clock.on_chat_model_start({}, [], run_id=c)  # 10
    clock.on_llm_end(None, run_id=c)  # 11
    assert clock.seconds == 4.0
