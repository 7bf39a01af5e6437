"""Evaluate every loop on the local model with budgets sized for a small CPU model.

``python -m tests.benchmarks.eval_local --limit 8`` writes ``results.json``,
``results.md`` and ``accuracy.png`` into ``--out`` and copies the chart to ``--chart``.
The budgets below keep a run of all seven loops on all three suites within about 25
minutes on 2 cores; ``loopgraphs eval`` runs the loops with their default budgets.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from loopgraphs.eval import evaluate, write_report

ROOT = Path(__file__).resolve().parents[2]

SMALL_BUDGETS: dict[str, dict[str, Any]] = {
    "react": {"max_iterations": 4},
    "plan_execute": {"max_steps": 3, "max_step_iterations": 2},
    "reflexion": {"max_reflections": 2, "max_iterations": 3},
    "self_ask": {"max_follow_ups": 3},
    "critic": {"max_critique_rounds": 1},
    "tot": {"n_branches": 2, "beam_width": 1, "max_depth": 2},
}
"""Loop options per loop: at most 5, 12, 13, 4, 3 and 5 model calls per run (cot: 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.eval_local")
    parser.add_argument("--limit", type=int, default=8, help="items per suite")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--concurrency", type=int, help="runs in flight (default: one per server slot)"
    )
    parser.add_argument("--loops", default="all")
    parser.add_argument("--suite", default="all")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "eval")
    parser.add_argument("--chart", type=Path, default=ROOT / "docs" / "eval-accuracy.png")
    parser.add_argument(
        "--threads",
        type=int,
        help="llama.cpp threads (default: all cores; on a busy machine 1 avoids the "
        "slowdown of threads waiting on each other)",
    )
    args = parser.parse_args(argv)

    from loopgraphs.models import LocalServer, find_default_gguf, load_model, local_chat_model

    console = Console()
    concurrency = args.concurrency
    if args.threads:
        server = LocalServer(find_default_gguf(), n_threads=args.threads).start()
        model = local_chat_model(server, max_tokens=args.max_tokens)
        concurrency = concurrency or server.n_parallel
    else:
        model = load_model("local", max_tokens=args.max_tokens)
    report = evaluate(
        model,
        args.loops,
        args.suite,
        limit=args.limit,
        concurrency=concurrency,
        loop_options=SMALL_BUDGETS,
        console=console,
    )
    report.meta["max_tokens"] = args.max_tokens
    report.meta["llama_threads"] = args.threads or "all cores"
    console.print(report.table())
    paths = write_report(report, args.out)
    args.chart.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(paths["chart"], args.chart)
    console.print(f"wrote {', '.join(map(str, paths.values()))} and {args.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
