"""Section 6: the full evaluation on the embedded model, timed, its accuracy set against
the published table (``tests/benchmarks/eval/results.json``).

What ``loopgraphs eval --limit 10`` runs: every loop on every bundled suite, one run at a
time on the embedded llama.cpp server. The server's start (loading the model) is timed on
its own and not counted in the evaluation's time, as the CLI's table does not count it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

EVAL_MINUTES_TARGET = 12.0
"""The full evaluation at ``--limit 10`` on the 2-core benchmark machine."""

REFERENCE = Path(__file__).parent / "eval" / "results.json"
"""The published accuracy table the evaluation's accuracy is held against."""


def reference_rows(path: Path, limit: int) -> tuple[dict[tuple[str, str], dict[str, Any]], str]:
    """The published summary rows by (loop, suite), and the date they were measured; none
    when the file is missing or was made with another ``limit``."""
    if not path.exists():
        return {}, ""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data["meta"].get("limit") != limit:
        return {}, ""
    rows = {(row["loop"], row["suite"]): row for row in data["summary"]}
    return rows, str(data["meta"].get("date", ""))


def evaluation(
    model: BaseChatModel | None = None,
    *,
    limit: int = 10,
    loops: str = "all",
    reference: Path = REFERENCE,
) -> dict[str, Any]:
    """Time the evaluation of ``loops`` on every suite at ``limit`` items per suite.

    Args:
        model: The chat model; None starts the embedded one as ``loopgraphs eval`` does
            (``load_model("local")``), its start timed on its own.
        limit: Items per suite.
        loops: The loops, as ``evaluate`` takes them.
        reference: The published report whose accuracy each row is held against.

    Returns:
        The times, the target and whether it was met, one row per loop and suite with its
        accuracy, calls, tokens and mean latency next to the reference's, and the rows
        whose accuracy fell below the reference's.
    """
    from loopgraphs.eval import evaluate
    from loopgraphs.models import load_model

    began = time.perf_counter()
    if model is None:
        model = load_model("local")
    ready = time.perf_counter()
    report = evaluate(model, loops, limit=limit, show_progress=False)
    seconds = time.perf_counter() - ready
    published, published_date = reference_rows(reference, limit)
    rows = []
    for row in report.summary():
        before = published.get((row.loop, row.suite))
        rows.append(
            {
                "loop": row.loop,
                "suite": row.suite,
                "n": row.n,
                "accuracy": row.accuracy,
                "reference_accuracy": before["accuracy"] if before else None,
                "calls": row.mean_llm_calls,
                "reference_calls": before["mean_llm_calls"] if before else None,
                "tokens": row.mean_tokens,
                "reference_tokens": before["mean_tokens"] if before else None,
                "latency_s": row.mean_latency,
                "reference_latency_s": before["mean_latency"] if before else None,
            }
        )
    worse = [
        f"{row['loop']}/{row['suite']}"
        for row in rows
        if row["reference_accuracy"] is not None and row["accuracy"] < row["reference_accuracy"]
    ]
    minutes = seconds / 60
    return {
        "limit": limit,
        "loops": report.loops,
        "runs": len(report.results),
        "server_start_s": round(ready - began, 1),
        "seconds": round(seconds, 1),
        "minutes": round(minutes, 2),
        "target_minutes": EVAL_MINUTES_TARGET,
        "met": minutes <= EVAL_MINUTES_TARGET and not worse,
        "reference_date": published_date,
        "rows": rows,
        "worse_than_reference": worse,
    }
