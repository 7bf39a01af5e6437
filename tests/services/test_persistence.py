"""Persistence: SQLite threads through the CLI, PostgreSQL across processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from loopgraphs.cli import main
from loopgraphs.graphs.react import create_react_graph
from loopgraphs.nodes.parsing.text import content_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_cli_run_continued_with_thread(local_server, tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    common = ["--base-url", local_server.url, "--tools", "", "--db", str(db), "--thread", "t1"]
    common += ["--max-tokens", "128", "--json"]
    assert main(["run", "react", "My name is Ada.", *common]) == 0
    assert main(["run", "react", "What is my name?", *common]) == 0
    printed = capsys.readouterr().out
    assert printed.count('"status": "completed"') == 2
    with sqlite3.connect(db) as connection:
        graph = create_react_graph(None, checkpointer=SqliteSaver(connection))
        messages = graph.get_state({"configurable": {"thread_id": "t1"}}).values["messages"]
    users = [content_text(m.content) for m in messages if m.type == "human"]
    assert users == ["My name is Ada.", "What is my name?"]
    assert len(messages) == 4


def test_cli_resume_needs_a_pending_run(tmp_path, capsys):
    db = str(tmp_path / "x.sqlite")
    code = main(
        ["run", "react", "--base-url", "http://127.0.0.1:9", "--db", db, "--thread", "none"]
    )
    assert code == 2
    assert "nothing to resume on thread 'none'" in capsys.readouterr().out


def run_worker(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.hitl_worker", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.integration
def test_postgres_approval_from_a_second_process(postgres_uri, tmp_path):
    log = tmp_path / "transfers.log"
    started = run_worker("start", postgres_uri, "pg-thread", str(log))
    (interrupt,) = started["interrupts"]
    assert interrupt["action_requests"][0]["name"] == "transfer"
    assert interrupt["action_requests"][0]["args"] == {"amount": 25}
    assert not log.exists()
    finished = run_worker("resume", postgres_uri, "pg-thread", str(log))
    assert log.read_text() == "25\n"
    assert finished["status"] == "completed"
    assert finished["answer"] == "The transfer is done: receipt 25"
