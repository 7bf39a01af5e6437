"""Run every benchmark and write ``results.json`` and ``results.md``.

``python -m tests.benchmarks.run`` (what ``make bench`` runs) measures:

1. framework overhead per model call against ``langchain.agents.create_agent`` and a plain
   Python loop, and every loop's overhead per call, on a scripted zero-latency model;
2. wall time of concurrent work (Tree-of-Thoughts, CRITIC, parallel tool calls) against
   the sum of its latencies, with latency-injecting model and tools;
3. model calls and tokens per loop against the loops' budgets and the seeds' formulas;
4. prompt-cache reuse and time outside the model on the embedded llama.cpp server;
5. ReAct's instructions per model call against ``create_agent``'s, counted by callgrind
   (when valgrind is installed): a measure that a busy machine does not move;
6. the full evaluation (``loopgraphs eval --limit 10``) on the embedded model: its time
   against the 12-minute target and its accuracy against the published table;
7. a chat turn in a long checkpointed thread: CPU per turn against ``create_agent``'s,
   early and late in the thread, on ``InMemorySaver`` and ``SqliteSaver``, sync and
   async, and how each chat loop's turn grows with its thread.

Every timing is repeated and reported as the median with its spread (min–max); every
ratio pairs two figures measured side by side in the same repeat. ``--quick`` runs a
tiny configuration (used by the smoke test), ``--no-local`` skips sections 4 and 6.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tiny configuration")
    parser.add_argument("--no-local", action="store_true", help="skip the local model")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the results")
    parser.add_argument("--repeats", type=int, help="repeats per measurement (default 5)")
    parser.add_argument("--local-runs", type=int, default=3, help="ReAct runs on the local model")
    parser.add_argument("--local-max-tokens", type=int, default=256)
    parser.add_argument("--local-threads", type=int, help="llama.cpp threads (default: all cores)")
    parser.add_argument(
        "--eval-limit", type=int, help="items per suite in section 6 (default 10; quick: 1)"
    )
    parser.add_argument(
        "--only",
        help="comma-separated sections to re-run (overhead, concurrency, economy, local, "
        "instructions, evaluation, chat_turns); "
        "the others are kept from the existing results.json in --out",
    )
    return parser


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "load_average_at_start": [round(x, 2) for x in load] if load else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {name: version(name) for name in ("langgraph", "langchain-core", "langchain")},
    }


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


SECTIONS = (
    "overhead",
    "concurrency",
    "economy",
    "local",
    "instructions",
    "evaluation",
    "chat_turns",
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tests.benchmarks.concurrency import concurrency
    from tests.benchmarks.economy import economy
    from tests.benchmarks.overhead import framework_overhead, loops_overhead

    quick = args.quick
    repeats = args.repeats or (2 if quick else 5)
    config = {
        "quick": quick,
        "repeats": repeats,
        "tool_calls": [1, 5] if quick else [1, 5, 20],
        "timing_target_s": 0.02 if quick else 0.25,
        "modes": ["invoke"] if quick else ["invoke", "ainvoke"],
        "delay_s": 0.02 if quick else 0.1,
    }
    only = [s.strip() for s in args.only.split(",")] if args.only else list(SECTIONS)
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"unknown sections {unknown}; choose from {', '.join(SECTIONS)}")
    target = args.out / "results.json"
    results: dict[str, Any] = {}
    if args.only and target.exists():
        results = json.loads(target.read_text(encoding="utf-8"))
    began = time.perf_counter()
    meta = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "config": config,
        "scripted_model": "tests.support.fakes.ScriptedChatModel (sections 1-3, 5, 7)",
    }
    if results:
        results["meta"].setdefault("reruns", []).append({"sections": only, **meta})
    else:
        results["meta"] = meta
    if "overhead" in only:
        log("1. framework overhead")
        results["overhead"] = {
            "react_vs_alternatives": framework_overhead(
                config["tool_calls"],
                repeats=repeats,
                target=config["timing_target_s"],
                modes=tuple(config["modes"]),
            ),
            "loops": loops_overhead(repeats=repeats, target=config["timing_target_s"]),
        }
    if "concurrency" in only:
        log("2. concurrency")
        results["concurrency"] = concurrency(
            delay=config["delay_s"], repeats=repeats, modes=("invoke", "ainvoke")
        )
    if "economy" in only:
        log("3. call and token economy")
        results["economy"] = economy()
    if "local" in only and args.no_local:
        results["local"] = {"skipped": "--no-local"}
    elif "local" in only:
        log("4. local model")
        try:
            from tests.benchmarks.local_model import local_model

            results["local"] = local_model(
                runs=1 if quick else args.local_runs,
                max_tokens=args.local_max_tokens,
                max_iterations=8,
                threads=args.local_threads,
            )
        except (ImportError, FileNotFoundError, RuntimeError) as error:
            results["local"] = {"skipped": f"{type(error).__name__}: {error}"}
    if "instructions" in only:
        log("5. instructions per model call (callgrind)")
        from tests.benchmarks.instructions import instructions

        results["instructions"] = (
            instructions(tool_calls=1, batches=2, runs=2, modes=("invoke",), middleware=(0,))
            if quick
            else instructions()
        )
    if "evaluation" in only and args.no_local:
        results["evaluation"] = {"skipped": "--no-local"}
    elif "evaluation" in only:
        log("6. the full evaluation on the embedded model")
        from tests.benchmarks.evaluation import evaluation

        try:
            results["evaluation"] = evaluation(limit=args.eval_limit or (1 if quick else 10))
        except (ImportError, FileNotFoundError, RuntimeError) as error:
            results["evaluation"] = {"skipped": f"{type(error).__name__}: {error}"}
    if "chat_turns" in only:
        log("7. chat turns in a long checkpointed thread")
        from tests.benchmarks.chat_turns import chat_turns

        results["chat_turns"] = (
            chat_turns(repeats=1, turns=6, growth_turns=6, modes=("invoke",))
            if quick
            else chat_turns(repeats=repeats)
        )
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    stamp = results["meta"]["reruns"][-1] if "reruns" in results["meta"] else results["meta"]
    stamp["load_average_at_end"] = [round(x, 2) for x in load] if load else None
    stamp["seconds"] = round(time.perf_counter() - began, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    from tests.benchmarks.report import render

    (args.out / "results.md").write_text(render(results), encoding="utf-8")
    log(f"wrote {target} and {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
