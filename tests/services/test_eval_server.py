"""``loopgraphs eval --server``: the items as runs on a LangGraph server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from loopgraphs.cli import main
from loopgraphs.eval import (
    EVAL_TOOLS,
    ServerUnavailableError,
    evaluate_server,
    make_suite,
    run_context,
)
from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS

SERVED = "http://127.0.0.1:9"  # never dialled: get_client is replaced by a fake


class FakeRuns:
    """``client.runs`` of a server whose runs answer from a script keyed by question."""

    def __init__(self, outcomes: dict[str, Any]) -> None:
        self.outcomes = outcomes
        self.submitted: list[tuple[str, str, dict[str, Any]]] = []
        self.active = self.most_active = 0

    async def wait(self, thread_id, assistant_id, *, input, context, raise_error):
        assert thread_id is None and raise_error is False
        question = input["messages"][0]["content"]
        self.submitted.append((assistant_id, question, context))
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            await asyncio.sleep(0.01)
            outcome = self.outcomes.get(question, {"answer": "no idea", "status": "completed"})
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        finally:
            self.active -= 1


class FakeAssistants:
    def __init__(self, served: set[str] | None) -> None:
        self.served = served

    async def search(self, *, graph_id, limit):
        if self.served is None:  # nothing listens: what httpx raises once its retries are spent
            raise httpx.ConnectError("All connection attempts failed")
        return [{"graph_id": graph_id}] if graph_id in self.served else []


class FakeClient:
    def __init__(self, runs: FakeRuns, served: set[str] | None) -> None:
        self.runs = runs
        self.assistants = FakeAssistants(served)
        self.closed = False

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        self.closed = True


@pytest.fixture
def fake_server(monkeypatch):
    """Route ``get_client`` to a fake server; returns a function that scripts it."""

    def script(outcomes: dict[str, Any], served=frozenset(LOOPS)) -> FakeClient:
        client = FakeClient(FakeRuns(outcomes), None if served is None else set(served))
        monkeypatch.setattr(
            "loopgraphs.eval.server.get_client", lambda url: client if url == SERVED else None
        )
        return client

    return script


def test_context_holds_tools_only_for_the_loops_that_take_them():
    for loop, spec in LOOP_SPECS.items():
        context = run_context(loop, model="openai:gpt-4o-mini", max_iterations=2)
        assert context["model"] == "openai:gpt-4o-mini" and context["max_iterations"] == 2
        assert ("tools" in context) is spec.takes_tools, loop
        if spec.takes_tools:
            assert context["tools"] == list(EVAL_TOOLS)
    assert run_context("cot") == {}
    assert run_context("react") == {"tools": ["calculator", "search"]}


def test_rows_come_from_the_run_values_and_failures_are_errors(fake_server):
    first, second, third, fourth = make_suite("arithmetic")[:4]
    client = fake_server(
        {
            first.question: {
                "answer": f"It is {first.answer}.",
                "status": "completed",
                "llm_calls": 3,
                "usage": {"input_tokens": 120, "output_tokens": 30, "cached_tokens": 100},
                "messages": [],
            },
            second.question: ConnectionResetError("connection reset by peer"),
            third.question: {"__error__": {"error": "ValueError", "message": "bad model spec"}},
            fourth.question: {"answer": "", "status": "max_iterations", "llm_calls": 5},
        }
    )
    report = evaluate_server(
        SERVED, "react", "arithmetic", limit=4, model="openai:x", concurrency=2, show_progress=False
    )
    rows = report.runs("react")
    assert [r.task_id for r in rows] == [t.id for t in (first, second, third, fourth)]
    assert (rows[0].status, rows[0].correct, rows[0].llm_calls) == ("completed", True, 3)
    assert (rows[0].input_tokens, rows[0].output_tokens, rows[0].cached_tokens) == (120, 30, 100)
    assert rows[1].status == "error" and "connection reset by peer" in rows[1].error
    assert (rows[2].status, rows[2].error) == ("error", "ValueError: bad model spec")
    assert (rows[3].status, rows[3].correct, rows[3].llm_calls) == ("max_iterations", False, 5)
    assert all(r.latency > 0.005 for r in rows)
    assert report.summary()[0].statuses == {"completed": 1, "max_iterations": 1, "error": 2}
    assert client.runs.most_active == 2 and client.closed
    assert {(loop, tuple(ctx["tools"])) for loop, _, ctx in client.runs.submitted} == {
        ("react", EVAL_TOOLS)
    }
    assert report.meta["server"] == SERVED and report.meta["model"] == "openai:x"


def test_every_submission_uses_its_loop_as_graph_id_and_stays_bounded(fake_server):
    client = fake_server({})
    report = evaluate_server(SERVED, "all", "verify", limit=2, concurrency=3, show_progress=False)
    assert len(report.results) == 2 * len(LOOPS)
    assert sorted({loop for loop, _, _ in client.runs.submitted}) == sorted(LOOPS)
    assert all(
        ("tools" in ctx) is LOOP_SPECS[loop].takes_tools for loop, _, ctx in client.runs.submitted
    )
    assert client.runs.most_active == 3
    assert report.meta["model"] == "the server's default model"


def test_a_server_without_a_loop_is_refused_before_any_run(fake_server):
    client = fake_server({}, served={"cot"})
    with pytest.raises(ServerUnavailableError, match="serves no graph for react"):
        evaluate_server(SERVED, "cot,react", "verify", limit=1, show_progress=False)
    assert client.runs.submitted == []


def test_bad_budget_is_refused():
    with pytest.raises(ValueError, match="max_iterations"):
        evaluate_server(SERVED, "react", "verify", max_iterations=0, show_progress=False)


def test_cli_names_an_unreachable_server(fake_server, tmp_path, capsys):
    client = fake_server({}, served=None)
    argv = ["eval", "--server", SERVED, "--loops", "cot", "--limit", "1", "--out", str(tmp_path)]
    assert main(argv) == 2
    said = " ".join(capsys.readouterr().out.split())
    assert f"no LangGraph server answers at {SERVED}: ConnectError: All connection" in said
    assert client.runs.submitted == [] and not (tmp_path / "results.json").exists()


def test_cli_refuses_a_local_gguf_with_a_server(tmp_path, capsys):
    argv = ["eval", "--server", SERVED, "--gguf", "model.gguf", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "--gguf" in capsys.readouterr().out


@pytest.mark.integration
def test_cli_eval_on_langgraph_dev_writes_the_same_files(
    langgraph_dev_url, local_server, tmp_path, capsys
):
    argv = [
        "eval",
        "--server",
        langgraph_dev_url,
        "--model",
        f"{local_server.url}/v1",
        "--loops",
        "cot,react",
        "--suite",
        "arithmetic",
        "--limit",
        "1",
        "--max-iterations",
        "1",
        "--concurrency",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert [(r["loop"], r["task_id"]) for r in data["results"]] == [
        ("cot", "arithmetic-000"),
        ("react", "arithmetic-000"),
    ]
    for row in data["results"]:
        assert row["status"] in ("completed", "max_iterations"), row.get("error")
        assert row["answer"] or row["status"] == "max_iterations"
        assert 1 <= row["llm_calls"] <= 2
        assert row["input_tokens"] > 0 and 0 < row["output_tokens"] <= 2 * 48
    assert data["meta"]["server"] == langgraph_dev_url
    assert data["meta"]["context"]["react"]["tools"] == list(EVAL_TOOLS)
    assert "tools" not in data["meta"]["context"]["cot"]
    assert "| react | arithmetic | 1 |" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    assert "react" in capsys.readouterr().out


@pytest.mark.integration
def test_runs_the_server_fails_are_error_rows(langgraph_dev_url):
    report = evaluate_server(
        langgraph_dev_url,
        "cot,react",
        "verify",
        limit=1,
        model="nonsense:model",
        show_progress=False,
    )
    assert [r.status for r in report.results] == ["error", "error"]
    assert all("Unknown model spec 'nonsense:model'" in r.error for r in report.results)
    assert all(r.llm_calls == 0 and not r.correct for r in report.results)
