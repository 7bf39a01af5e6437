"""A script that ran loops ends quietly: its tool-step event loops are closed and no thread
of loopgraphs outlives it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Runs ReAct with a sync tool from the main thread and from worker threads (each thread
# gets its own tool-step loop). An exit handler registered before loopgraphs is imported
# runs after loopgraphs' own ones and reports what is still there.
SCRIPT = textwrap.dedent(
    """
    import atexit, gc, json, sys, threading, weakref

    loops = []

    def report():
        gc.collect()
        alive = [
            {"name": t.name, "daemon": t.daemon}
            for t in threading.enumerate()
            if t is not threading.main_thread()
        ]
        open_loops = [ref() is not None and not ref().is_closed() for ref in loops]
        print(json.dumps({"alive": alive, "open_loops": open_loops}))
        sys.stdout.flush()

    atexit.register(report)

    from concurrent.futures import ThreadPoolExecutor

    from loopgraphs import create_react_graph
    from loopgraphs.nodes import tool_step
    from tests.support.fakes import ScriptedChatModel, calls, tool_call

    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    def run(_=None):
        model = ScriptedChatModel(
            replies=[calls(tool_call("add", {"a": 2, "b": 3})), "5"],
            profile={"tool_calling": True},
        )
        graph = create_react_graph(model, [add], tool_mode="native")
        out = graph.invoke({"messages": [("user", "2 + 3?")]})
        loops.append(weakref.ref(tool_step._thread_loops.held.loop))
        return out["answer"]

    answers = [run() for _ in range(3)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers += list(pool.map(run, range(4)))
    assert answers == ["5"] * 7, answers
    """
)


def test_a_script_running_tool_steps_exits_without_noise_or_threads_left():
    done = subprocess.run(
        [sys.executable, "-W", "default::ResourceWarning", "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["open_loops"]) == 7 and not any(report["open_loops"])
    assert [t for t in report["alive"] if not t["daemon"]] == []
    assert not [t for t in report["alive"] if t["name"].startswith("loopgraphs")]
