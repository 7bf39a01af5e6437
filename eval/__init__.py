"""Evaluate the loops on task suites generated from the bundled knowledge base.

* ``suites``: the ``arithmetic``, ``multihop`` and ``verify`` suites (``make_suite``).
* ``scoring``: whether an answer is correct (``score``, ``normalise``).
* ``runner``: every loop on every task with bounded concurrency (``evaluate``).
* ``report``: the rows and their summaries as a table, Markdown, JSON and a chart
  (``EvalReport``, ``write_report``).
* ``server``: the same items as runs on a LangGraph server (``evaluate_server``).

>>> from loopgraphs import load_model
>>> from loopgraphs.eval import evaluate, write_report
>>> report = evaluate(load_model("local"), "cot,react", "arithmetic", limit=5)  # doctest: +SKIP
>>> write_report(report, "eval-results")  # doctest: +SKIP
"""

from loopgraphs.eval.report import EvalReport, RunResult, Summary, describe_meta, write_report
from loopgraphs.eval.runner import EVAL_TOOLS, EvalPlan, aevaluate, eval_tools, evaluate, make_plan
from loopgraphs.eval.scoring import normalise, score
from loopgraphs.eval.server import (
    ServerUnavailableError,
    aevaluate_server,
    evaluate_server,
    run_context,
)
from loopgraphs.eval.suites import DEFAULT_SEED, MULTIHOP_TEMPLATES, SUITES, Task, make_suite

__all__ = [
    "DEFAULT_SEED",
    "EVAL_TOOLS",
    "MULTIHOP_TEMPLATES",
    "SUITES",
    "EvalPlan",
    "EvalReport",
    "RunResult",
    "ServerUnavailableError",
    "Summary",
    "Task",
    "aevaluate",
    "aevaluate_server",
    "describe_meta",
    "eval_tools",
    "evaluate",
    "evaluate_server",
    "make_plan",
    "make_suite",
    "normalise",
    "run_context",
    "score",
    "write_report",
]
