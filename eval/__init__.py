"""Evaluate the loops on one's own questions or on the bundled task suites.

* ``data``: one's own rows (a list of dicts, a JSONL or CSV file, a pandas DataFrame) or
  suite names, as tasks (``load_tasks``).
* ``suites``: the ``arithmetic``, ``multihop`` and ``verify`` suites, and ``multihop`` and
  ``verify`` in their classic phrasing alone (``multihop-classic``, ``verify-classic``)
  (``make_suite``).
* ``scoring``: whether an answer is correct (``score``, ``normalise``, the scorers of
  ``SCORERS``, ``from_evaluator`` for openevals and agentevals evaluators).
* ``runner``: every loop on every task with bounded concurrency (``evaluate``, in a
  script or a notebook; ``aevaluate`` to await).
* ``report``: the rows and their summaries as a table, Markdown, JSON, DataFrames and a
  chart, and each run's transcript (``EvalReport``, ``write_report``).
* ``server``: the same items as runs on a LangGraph server (``evaluate_server``).

>>> from loopgraphs import load_model
>>> from loopgraphs.eval import evaluate, write_report
>>> rows = [{"question": "What is 17 * 19?", "expected": "323"}]
>>> report = evaluate(load_model("local"), "cot,react", rows)  # doctest: +SKIP
>>> report.to_dataframe()  # doctest: +SKIP
>>> report = evaluate(load_model("local"), "cot,react", "arithmetic", limit=5)  # doctest: +SKIP
>>> write_report(report, "eval-results")  # doctest: +SKIP
"""

from loopgraphs.eval.data import OWN_DATA, load_tasks
from loopgraphs.eval.report import EvalReport, RunResult, Summary, describe_meta, write_report
from loopgraphs.eval.runner import EVAL_TOOLS, EvalPlan, aevaluate, eval_tools, evaluate, make_plan
from loopgraphs.eval.scoring import (
    SCORERS,
    Scorer,
    contains,
    exact,
    from_evaluator,
    normalise,
    normalised,
    score,
)
from loopgraphs.eval.server import (
    ServerUnavailableError,
    aevaluate_server,
    evaluate_server,
    run_context,
)
from loopgraphs.eval.suites import (
    DEFAULT_SEED,
    MULTIHOP_TEMPLATES,
    PHRASINGS,
    SUITE_NAMES,
    SUITE_VARIANTS,
    SUITES,
    make_suite,
)
from loopgraphs.eval.task import Task

__all__ = [
    "DEFAULT_SEED",
    "EVAL_TOOLS",
    "MULTIHOP_TEMPLATES",
    "OWN_DATA",
    "PHRASINGS",
    "SCORERS",
    "SUITES",
    "SUITE_NAMES",
    "SUITE_VARIANTS",
    "EvalPlan",
    "EvalReport",
    "RunResult",
    "Scorer",
    "ServerUnavailableError",
    "Summary",
    "Task",
    "aevaluate",
    "aevaluate_server",
    "contains",
    "describe_meta",
    "eval_tools",
    "evaluate",
    "evaluate_server",
    "exact",
    "from_evaluator",
    "load_tasks",
    "make_plan",
    "make_suite",
    "normalise",
    "normalised",
    "run_context",
    "score",
    "write_report",
]
