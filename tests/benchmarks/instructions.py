"""Instructions per model call, counted by callgrind: ReAct against ``create_agent``, and
LangGraph's floor (see ``tests.benchmarks.floors``) against both.

CPU timings on a shared 2-core machine spread by several percent from one repeat to the
next; an instruction count does not depend on what else the machine is doing, so it can
show a change of a fraction of a percent. Each contender (ReAct in native mode,
``create_agent``, and without middleware the two floor graphs) runs the overhead
benchmark's conversation (N calls of one zero-latency tool, then an answer, on the
scripted model) in a process of its own under
``valgrind --tool=callgrind``: three runs to warm up, then ``batches`` batches of ``runs``
runs, each batch's count dumped on its own (``callgrind_control --dump``), so that
start-up and imports are not counted. A figure is the median batch, per model call. The
batches still differ by a few tenths of a percent (thread scheduling around tool calls,
the event loop's polling), which is why there are several.

``python -m tests.benchmarks.instructions CONTENDER MODE N MIDDLEWARE BATCHES RUNS`` is the
worker that runs under callgrind.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.benchmarks.common import spread
from tests.benchmarks.floors import FLOORS

CONTENDERS = ("loopgraphs", "create_agent")
WORKERS = 2  # contenders counted at the same time, one per core
ROOT = Path(__file__).resolve().parents[2]


def worker(contender: str, mode: str, n: int, middleware: int, batches: int, runs: int) -> None:
    """Inside callgrind: check the conversation, warm up, then run ``batches`` batches of
    ``runs`` runs, dumping the instruction count after each."""
    from langchain.agents import create_agent

    from loopgraphs import create_react_graph
    from tests.benchmarks.common import lookup_tool, scripted
    from tests.benchmarks.floors import floor_graph
    from tests.benchmarks.overhead import check_calls, graph_runners, pass_through, tool_script

    model = scripted(tool_script(n))
    tool = lookup_tool()
    extra = {"middleware": pass_through()} if middleware else {}
    if contender == "loopgraphs":
        graph: Any = create_react_graph(
            model, [tool], tool_mode="native", max_iterations=n + 2, **extra
        )
    elif contender in FLOORS:
        if middleware:
            raise ValueError(f"the floor graph {contender} has no middleware")
        graph = floor_graph(contender, model, [tool])
    else:
        graph = create_agent(model, [tool], **extra)
    run, arun = graph_runners(graph)
    check_calls(run, n + 1, model)

    async def many(count: int) -> None:
        for _ in range(count):
            await arun()

    def batch(count: int) -> None:
        if mode == "ainvoke":
            asyncio.run(many(count))
            return
        for _ in range(count):
            run()

    batch(3)
    _dump("warm-up")
    for index in range(batches):
        batch(runs)
        _dump(f"batch {index}")


def _dump(label: str) -> None:
    subprocess.run(
        ["callgrind_control", f"--dump={label}", str(os.getpid())],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def per_call(
    contender: str, mode: str, *, n: int, middleware: int, batches: int, runs: int
) -> list[float]:
    """Instructions per model call of each batch, for one contender in one mode."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "tests.benchmarks.instructions",
            *map(str, (contender, mode, n, middleware, batches, runs)),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{contender} {mode} under callgrind failed:\n{done.stderr[-2000:]}")
        counts: dict[int, float] = {}
        for path in Path(folder).glob("callgrind.out*"):
            text = path.read_text(encoding="utf-8", errors="replace")
            label = re.search(r"^desc: Trigger: .*batch (\d+)", text, re.M)
            total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
            if label and total:
                counts[int(label.group(1))] = int(total.group(1)) / (runs * (n + 1))
    if sorted(counts) != list(range(batches)):
        raise RuntimeError(f"{contender} {mode}: callgrind dumped batches {sorted(counts)}")
    return [counts[index] for index in range(batches)]


def instructions(
    *,
    tool_calls: int = 5,
    batches: int = 7,
    runs: int = 10,
    modes: tuple[str, ...] = ("invoke", "ainvoke"),
    middleware: tuple[int, ...] = (0, 3),
) -> dict[str, Any]:
    """ReAct and ``create_agent`` instructions per model call, without middleware and
    with the overhead benchmark's three pass-through middleware on both sides, and, in
    the rows without middleware, LangGraph's floor graphs (``FLOORS``); two contenders
    are counted at a time, one per core."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        return {"skipped": f"{' and '.join(missing)} not found (apt-get install valgrind)"}
    rows = []
    for count in middleware:
        for mode in modes:
            options = {"n": tool_calls, "middleware": count, "batches": batches, "runs": runs}
            names = CONTENDERS if count else (*CONTENDERS, *FLOORS)
            with ThreadPoolExecutor(max_workers=WORKERS) as pool:
                jobs = {name: pool.submit(per_call, name, mode, **options) for name in names}
                counts = {name: job.result() for name, job in jobs.items()}
            medians = {name: statistics.median(values) for name, values in counts.items()}
            theirs = medians["create_agent"]
            row = {
                "tool_calls": tool_calls,
                "middleware": count,
                "mode": mode,
                "batches": batches,
                "runs_per_batch": runs,
                "per_call": {name: spread(values) for name, values in counts.items()},
                "ratio_vs_create_agent": medians["loopgraphs"] / theirs,
            }
            if not count:
                row["floors_vs_create_agent"] = {name: medians[name] / theirs for name in FLOORS}
            rows.append(row)
    return {"rows": rows}


if __name__ == "__main__":
    contender, mode, *numbers = sys.argv[1:]
    n, middleware, batches, runs = map(int, numbers)
    worker(contender, mode, n, middleware, batches, runs)
