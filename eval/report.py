"""Reports: the rows of an evaluation, summarised as a table, Markdown, JSON, pandas
DataFrames and a chart; in a notebook a report shows its table and chart itself."""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AnyMessage
from rich import box
from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

SHORT = {
    "arithmetic": "arith",
    "completed": "ok",
    "max_iterations": "max",
    "interrupted": "intr",
    "error": "err",
}
"""Abbreviations in the terminal table: suites and statuses."""

CHART_NEEDS = 'no chart: it needs matplotlib (pip install "loopgraphs[eval]")'
"""The note printed when the chart is left out."""

COLUMNS: tuple[str, ...] = (
    "loop",
    "suite",
    "task_id",
    "question",
    "answer",
    "expected",
    "score",
    "correct",
    "status",
    "llm_calls",
    "tokens",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "latency",
    "model_seconds",
    "thread_id",
    "error",
    "rejected_replies",
    "rejected_expected",
    "metadata",
)
"""The columns of ``EvalReport.to_dataframe``, one row per run."""

STATUSES: tuple[str, ...] = ("completed", "max_iterations", "error")


@dataclass
class RunResult:
    """The outcome of one loop on one task.

    Attributes:
        loop: The loop's registry name.
        suite: The task's suite.
        task_id: The task's id.
        question: The question sent to the loop.
        expected: The expected answer, or the list of acceptable answers.
        answer: The loop's answer (empty when the run failed).
        correct: Whether the scorer accepted the answer (a score of 1 or more).
        status: ``completed``, ``max_iterations`` or ``error``.
        llm_calls: Model calls the run made.
        input_tokens: Prompt tokens over every model call.
        output_tokens: Generated tokens over every model call.
        cached_tokens: Prompt tokens read from the provider's cache.
        latency: Seconds from submitting the run to its result.
        model_seconds: Seconds during which a model call of the run was in flight (NaN
            when not measured, e.g. for runs on a LangGraph server).
        error: What failed, for status ``error``; or that the scorer failed on the
            answer (then ``score`` is NaN).
        score: The scorer's score (1.0 or 0.0 for a pass/fail scorer); when not given,
            1.0 for a correct answer and 0.0 for another.
        thread_id: The run's thread id (in its config, so its traces carry it).
        metadata: The other keys of the task's row (own data).
        rejected_replies: The replies the answer-integrity check turned down as no answer
            (the loop then asked once more), as the model wrote them; None when not
            observed (runs on a LangGraph server).
        rejected_expected: How many of those the scorer takes for a correct answer:
            possible false positives of the check.
        messages: The run's messages, its transcript (not written to JSON); from a
            LangGraph server, the dicts of its JSON.
    """

    loop: str
    suite: str
    task_id: str
    question: str
    expected: str | list[str]
    answer: str
    correct: bool
    status: str
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency: float
    model_seconds: float = math.nan
    error: str = ""
    score: float = math.nan
    thread_id: str = ""
    metadata: dict[str, object] = field(default_factory=dict)
    rejected_replies: list[str] | None = None
    rejected_expected: int = 0
    messages: list[AnyMessage | dict[str, object]] = field(
        default_factory=list, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if math.isnan(self.score):
            self.score = float(self.correct)

    def to_dict(self) -> dict[str, object]:
        """The row as plain data, without its messages."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "messages"}


@dataclass
class Summary:
    """Aggregates of one loop on one suite (``suite == "all"`` for every suite together);
    ``accuracy`` is the mean score (the share of correct answers for a pass/fail scorer).
    ``rejected`` counts the replies the answer-integrity check turned down as no answer,
    ``rejected_runs`` the runs that had one, ``rejected_expected`` those replies the
    scorer takes for a correct answer (possible false positives); all three are None
    when no run was observed (runs on a LangGraph server)."""

    loop: str
    suite: str
    n: int
    correct: int
    accuracy: float
    mean_llm_calls: float
    mean_tokens: float
    mean_latency: float
    mean_model_seconds: float
    statuses: dict[str, int]
    rejected: int | None = None
    rejected_runs: int | None = None
    rejected_expected: int | None = None


def summarise(loop: str, suite: str, runs: Sequence[RunResult]) -> Summary:
    """Accuracy, means and status counts of some runs.

    Args:
        loop: The loop named in the summary.
        suite: The suite named in the summary (``"all"`` for every suite).
        runs: The runs to summarise.

    Returns:
        The summary; means and accuracy are NaN when there is no run.
    """
    n = len(runs)

    def mean(values: Iterable[float]) -> float:
        items = list(values)
        return statistics.fmean(items) if items else math.nan

    counts = Counter(run.status for run in runs)
    statuses = {status: counts.get(status, 0) for status in STATUSES}
    statuses.update({k: v for k, v in counts.items() if k not in statuses})
    correct = sum(run.correct for run in runs)
    observed = [run for run in runs if run.rejected_replies is not None]
    rejected = [run for run in observed if run.rejected_replies]
    return Summary(
        loop=loop,
        suite=suite,
        n=n,
        correct=correct,
        accuracy=mean(run.score for run in runs),
        mean_llm_calls=mean(run.llm_calls for run in runs),
        mean_tokens=mean(run.input_tokens + run.output_tokens for run in runs),
        mean_latency=mean(run.latency for run in runs),
        mean_model_seconds=mean(run.model_seconds for run in runs),
        statuses=statuses,
        rejected=sum(len(run.rejected_replies or ()) for run in observed) if observed else None,
        rejected_runs=len(rejected) if observed else None,
        rejected_expected=sum(run.rejected_expected for run in observed) if observed else None,
    )


@dataclass
class EvalReport:
    """Every run of an evaluation, with summaries, a table, JSON and a chart."""

    results: list[RunResult]
    loops: list[str]
    suites: list[str]
    # The evaluation's settings: JSON values of any kind (the table's title among them).
    meta: dict[str, Any] = field(default_factory=dict)

    def runs(self, loop: str, suite: str | None = None) -> list[RunResult]:
        """The runs of one loop, on one suite or (``None``) on every suite.

        Args:
            loop: The loop's name.
            suite: A suite's name, or None for every suite.

        Returns:
            The runs, in the order they were listed.
        """
        return [r for r in self.results if r.loop == loop and suite in (None, r.suite)]

    def summary(self, *, overall: bool = False) -> list[Summary]:
        """One summary per loop and suite, in the order the evaluation listed them.

        Args:
            overall: Also one summary per loop over every suite (``suite="all"``).

        Returns:
            The summaries, grouped by loop.
        """
        rows: list[Summary] = []
        for loop in self.loops:
            rows.extend(summarise(loop, suite, self.runs(loop, suite)) for suite in self.suites)
            if overall:
                rows.append(summarise(loop, "all", self.runs(loop)))
        return rows

    def to_dict(self) -> dict[str, object]:
        """The report as plain data (what ``to_json`` writes)."""
        return {
            "meta": self.meta,
            "summary": [asdict(row) for row in self.summary(overall=True)],
            "results": [result.to_dict() for result in self.results],
        }

    @classmethod
    def from_json(cls, path: str | Path) -> EvalReport:
        """Read a report written by ``to_json`` (to redraw its table or chart).

        Args:
            path: The JSON file.

        Returns:
            The report, with the loops and suites listed in its settings.
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        meta = data.get("meta", {})
        results = [RunResult(**item) for item in data.get("results", [])]
        return cls(results=results, loops=meta["loops"], suites=meta["suites"], meta=meta)

    def to_json(self, path: str | Path) -> Path:
        """Write the report as JSON.

        Args:
            path: The file to write; its folder is created when missing.

        Returns:
            The path written.
        """
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str)
        target.write_text(text + "\n", encoding="utf-8")
        return target

    def _rows(self, *, short: bool = False) -> list[list[str]]:
        """One row per loop and suite; ``short`` abbreviates suites and statuses (see
        ``SHORT``) so that the terminal table fits 80 columns."""
        rows = []
        for row in self.summary():
            statuses = ", ".join(
                f"{SHORT.get(k, k) if short else k} {v}" for k, v in row.statuses.items() if v
            )
            rows.append(
                [
                    row.loop,
                    SHORT.get(row.suite, row.suite) if short else row.suite,
                    str(row.n),
                    f"{100 * row.accuracy:.0f}%" if row.n else "-",
                    f"{row.mean_llm_calls:.1f}",
                    f"{row.mean_tokens:,.0f}",
                    f"{row.mean_latency:.2f}",
                    "-" if math.isnan(row.mean_model_seconds) else f"{row.mean_model_seconds:.2f}",
                    statuses,
                ]
            )
        return rows

    HEADERS = (
        "loop",
        "suite",
        "n",
        "accuracy",
        "calls",
        "tokens",
        "latency s",
        "model s",
        "status",
    )
    SHORT_HEADERS = ("loop", "suite", "n", "acc", "calls", "tokens", "lat s", "model s", "status")

    def table(self) -> Table:
        """A rich table: per loop and suite, accuracy and means per run, in 80 columns
        (abbreviated as ``SHORT`` says; the Markdown has the full names)."""
        table = Table(
            title=self.meta.get("title", "evaluation"),
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for header in self.SHORT_HEADERS:
            table.add_column(
                header,
                justify="left" if header in ("loop", "suite", "status") else "right",
                no_wrap=header != "status",
            )
        for row in self._rows(short=True):
            table.add_row(*row)
        return table

    def markdown(self) -> str:
        """The same table in Markdown, preceded by the run's settings."""
        meta = self.meta
        lines = [
            f"Evaluation of {', '.join(self.loops)} on {describe_meta(meta)}.",
            "",
            "Calls, tokens (input + output), latency and model time are means per run; model "
            "time counts the seconds a model call of the run was in flight, the rest of the "
            "latency is tools, the graph and waiting for a free server slot.",
            "",
            "| " + " | ".join(self.HEADERS) + " |",
            "|" + "|".join(":--" if h in ("loop", "suite") else "--:" for h in self.HEADERS) + "|",
        ]
        lines.extend("| " + " | ".join(row) + " |" for row in self._rows())
        lines += [
            "",
            "The answer-integrity check: replies it turned down as no answer (the loop then "
            "asked once more), the runs that had one, and how many of those replies held the "
            "expected answer by this evaluation's scorer (possible false positives); `-` when "
            "not observed (runs on a LangGraph server).",
            "",
            "| " + " | ".join(self.INTEGRITY_HEADERS) + " |",
            "|:--|:--|--:|--:|--:|--:|",
        ]
        lines.extend("| " + " | ".join(row) + " |" for row in self._integrity_rows())
        return "\n".join(lines) + "\n"

    INTEGRITY_HEADERS = ("loop", "suite", "n", "rejected", "runs affected", "held expected")

    def _integrity_rows(self) -> list[list[str]]:
        """One row per loop and suite: the answer-integrity check's figures."""

        def shown(value: int | None) -> str:
            return "-" if value is None else str(value)

        return [
            [
                row.loop,
                row.suite,
                str(row.n),
                shown(row.rejected),
                shown(row.rejected_runs),
                shown(row.rejected_expected),
            ]
            for row in self.summary()
        ]

    def integrity_line(self) -> str:
        """One line on the answer-integrity check over every run: the replies it turned
        down as no answer, the runs that had one, and those replies that held the
        expected answer (possible false positives)."""
        overall = [summarise(loop, "all", self.runs(loop)) for loop in self.loops]
        observed = [row for row in overall if row.rejected is not None]
        if not observed:
            return "answer-integrity check: not observed (runs on a LangGraph server)"
        rejected = sum(row.rejected or 0 for row in observed)
        runs = sum(row.rejected_runs or 0 for row in observed)
        held = sum(row.rejected_expected or 0 for row in observed)
        return (
            f"answer-integrity check: {rejected} replies turned down as no answer in {runs} "
            f"runs; {held} held the expected answer (possible false positives)"
        )

    def figure(self) -> Figure:
        """A bar chart: accuracy per loop and suite, and mean model calls per loop.

        Drawn without pyplot, so it changes no matplotlib backend; a notebook displays it
        when it is a cell's last value.

        Returns:
            The matplotlib figure.

        Raises:
            RuntimeError: matplotlib is not installed.
        """
        try:
            import matplotlib  # noqa: F401  (a missing or blocked matplotlib fails here)
            from matplotlib.figure import Figure
        except ImportError as error:
            raise RuntimeError(
                'The chart needs matplotlib: pip install "loopgraphs[eval]" '
                "(or pip install matplotlib)."
            ) from error
        loops = self.loops
        width = 0.8 / max(len(self.suites), 1)
        figure = Figure(figsize=(max(8.0, 1.6 * len(loops) + 4), 4.2))
        left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
        for index, suite in enumerate(self.suites):
            values = [
                100 * summarise(loop, suite, self.runs(loop, suite)).accuracy for loop in loops
            ]
            positions = [
                i + (index - (len(self.suites) - 1) / 2) * width for i in range(len(loops))
            ]
            bars = left.bar(
                positions, [0 if math.isnan(v) else v for v in values], width, label=suite
            )
            left.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
        left.set_xticks(range(len(loops)), loops, rotation=30, ha="right")
        left.set_ylabel("accuracy (%)")
        left.set_ylim(0, 105)
        left.set_title("accuracy per suite")
        left.legend(fontsize="small")
        calls = [summarise(loop, "all", self.runs(loop)).mean_llm_calls for loop in loops]
        bars = right.bar(
            range(len(loops)), [0 if math.isnan(v) else v for v in calls], color="tab:gray"
        )
        right.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
        right.set_xticks(range(len(loops)), loops, rotation=30, ha="right")
        right.set_ylabel("model calls per run (mean)")
        right.set_title("cost")
        figure.suptitle(describe_meta(self.meta), fontsize="small")
        figure.tight_layout()
        return figure

    def chart(self, path: str | Path) -> Path:
        """Save the chart of ``figure`` as a PNG.

        Args:
            path: The PNG file to write; its folder is created when missing.

        Returns:
            The path written.

        Raises:
            RuntimeError: matplotlib is not installed.
        """
        figure = self.figure()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, dpi=120)
        return target

    def to_dataframe(self) -> pd.DataFrame:
        """One row per run, with the columns of ``COLUMNS`` (``tokens`` is input plus
        output tokens; ``metadata`` holds the other keys of the task's row).

        Returns:
            The pandas DataFrame.

        Raises:
            RuntimeError: pandas is not installed.
        """
        pd = _pandas()
        rows = [
            {**run.to_dict(), "tokens": run.input_tokens + run.output_tokens}
            for run in self.results
        ]
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def summary_dataframe(self, *, overall: bool = False) -> pd.DataFrame:
        """The summaries as a DataFrame: one row per loop and suite (per loop for own
        data, which is one suite), with a column per status.

        Args:
            overall: Also one row per loop over every suite (``suite="all"``).

        Returns:
            The pandas DataFrame.

        Raises:
            RuntimeError: pandas is not installed.
        """
        pd = _pandas()
        rows = []
        for row in self.summary(overall=overall):
            values = asdict(row)
            rows.append({**values, **values.pop("statuses")})
        return pd.DataFrame(rows)

    def transcript(self, loop: str, item: int | str) -> list[AnyMessage | dict[str, object]]:
        """The messages of one run: its transcript.

        Args:
            loop: The loop's name.
            item: The run's position among that loop's runs, or its task id, or its
                question.

        Returns:
            The run's messages (empty for a report read back from JSON).

        Raises:
            LookupError: No run of ``loop`` matches ``item``.
        """
        runs = self.runs(loop)
        if isinstance(item, int):
            if -len(runs) <= item < len(runs):
                return runs[item].messages
        else:
            for run in runs:
                if item in (run.task_id, run.question):
                    return run.messages
        raise LookupError(f"no run of {loop!r} for {item!r}; it has {len(runs)} runs")

    def _repr_html_(self) -> str:
        """The summary table and, with matplotlib, the chart: how a notebook shows it."""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.HEADERS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self._rows()
        )
        parts = [
            f"<p>{html.escape(describe_meta(self.meta))}</p>",
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
        ]
        with contextlib.suppress(RuntimeError):
            buffer = io.BytesIO()
            self.figure().savefig(buffer, format="png", dpi=100)
            data = base64.b64encode(buffer.getvalue()).decode("ascii")
            parts.append(
                f'<img alt="accuracy and calls per loop" src="data:image/png;base64,{data}">'
            )
        return "\n".join(parts)


def _pandas() -> ModuleType:
    """The pandas module, imported on first use."""
    try:
        import pandas
    except ImportError as error:
        raise RuntimeError(
            'DataFrames need pandas: pip install "loopgraphs[eval]" (or pip install pandas).'
        ) from error
    return pandas


def describe_meta(meta: Mapping[str, object]) -> str:
    """One line naming the model, server, date and limits of an evaluation.

    Args:
        meta: The report's settings (``EvalReport.meta``).

    Returns:
        The line, e.g. ``"ChatOpenAI(smollm2), 2026-11-22, 6 items per suite, seed 7"``.
    """
    parts = [str(meta.get("model", "a model"))]
    if meta.get("server"):
        parts.append(f"server {meta['server']}")
    if meta.get("date"):
        parts.append(str(meta["date"])[:10])
    if meta.get("limit"):
        parts.append(f"{meta['limit']} items per suite")
    if meta.get("max_tokens"):
        parts.append(f"max_tokens {meta['max_tokens']}")
    if meta.get("seed") is not None:
        parts.append(f"seed {meta['seed']}")
    return ", ".join(parts)


def write_report(report: EvalReport, out: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and, with matplotlib, ``accuracy.png``
    into ``out``.

    Args:
        report: The report to write.
        out: The folder; created when missing.

    Returns:
        The paths written, under the keys ``json``, ``markdown`` and ``chart`` (no
        ``chart`` when matplotlib is not installed: see ``CHART_NEEDS``).
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    markdown = folder / "results.md"
    markdown.write_text(report.markdown(), encoding="utf-8")
    paths = {"json": report.to_json(folder / "results.json"), "markdown": markdown}
    with contextlib.suppress(RuntimeError):
        paths["chart"] = report.chart(folder / "accuracy.png")
    return paths
