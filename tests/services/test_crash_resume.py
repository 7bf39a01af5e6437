"""Crash and resume: SIGKILL a process mid-run, finish the thread in a new process.

``tests/support/crash_worker.py`` runs a ReAct graph with a SQLite or PostgreSQL checkpointer and
a scripted model making two tool calls in sequence. The second tool blocks (after writing
a marker file); the test kills the process there, then a new process resumes the thread
with ``invoke(None, config)``. The tools' append-only side-effect log proves that the
first tool call, completed before the crash, did not run again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.support.crash_worker import ANSWER, LOG, MARKER, build_graph, open_saver

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0
RESUME_TIMEOUT = 90.0


def worker(command: str, backend: str, target: str, thread: str, workdir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.support.crash_worker",
        command,
        backend,
        target,
        thread,
        str(workdir),
    ]


def log_lines(workdir: Path) -> list[str]:
    path = workdir / LOG
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def crash_then_resume(backend: str, target: str, workdir: Path) -> dict[str, Any]:
    thread = f"crash-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        worker("run", backend, target, thread, workdir),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (workdir / MARKER).exists():
            if process.poll() is not None:
                _, err = process.communicate()
                pytest.fail(f"worker exited early ({process.returncode}): {err.decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("the second tool call never started")
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    assert process.returncode == -signal.SIGKILL
    assert log_lines(workdir) == ["one:alpha", "two-start:beta"]

    # The checkpoint holds the completed first call and stops at the interrupted tool step.
    with open_saver(backend, target) as saver:
        snapshot = build_graph(saver, workdir).get_state({"configurable": {"thread_id": thread}})
    assert snapshot.next == ("call_tool",)
    results = [m.content for m in snapshot.values["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 1 and "stored alpha" in results[0]

    resumed = subprocess.run(
        worker("resume", backend, target, thread, workdir),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RESUME_TIMEOUT,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    return json.loads(resumed.stdout.strip().splitlines()[-1])


def check_resumed(out: dict[str, Any], workdir: Path) -> None:
    assert out["status"] == "completed", out
    assert out["answer"] == ANSWER
    # Two replies before the crash (restored from the checkpoint) and one after it.
    assert out["llm_calls"] == 3
    lines = log_lines(workdir)
    assert lines.count("one:alpha") == 1, f"the completed tool call ran again: {lines}"
    assert lines == ["one:alpha", "two-start:beta", "two-start:beta", "two-done:beta"]


def test_sqlite_crash_and_resume(tmp_path: Path) -> None:
    out = crash_then_resume("sqlite", str(tmp_path / "checkpoints.sqlite"), tmp_path)
    check_resumed(out, tmp_path)


@pytest.mark.integration
def test_postgres_crash_and_resume(postgres_uri: str, tmp_path: Path) -> None:
    out = crash_then_resume("postgres", postgres_uri, tmp_path)
    check_resumed(out, tmp_path)
