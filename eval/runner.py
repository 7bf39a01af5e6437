"""The runner: every (loop, task) pair of an evaluation, with bounded concurrency.

``make_plan`` validates what to run; ``run_plan`` awaits one run per item with at most
``concurrency`` in flight, times each and scores what it returned. A run that raises is
recorded with status ``"error"`` and the error's message, and never stops the others.
``aevaluate`` and ``evaluate`` run the loops in this process with ``graph.ainvoke``;
``loopgraphs.eval.server`` submits the same items to a LangGraph server instead.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from loopgraphs.eval.report import EvalReport, RunResult
from loopgraphs.eval.scoring import score
from loopgraphs.eval.suites import DEFAULT_SEED, SUITES, Task, make_suite
from loopgraphs.graphs.registry import LOOPS, build_loop
from loopgraphs.models import describe_model, embedded_server
from loopgraphs.nodes.errors import describe_error
from loopgraphs.toolkits import get_tools

EVAL_TOOLS: tuple[str, ...] = ("calculator", "search")
"""Built-in tools given to the loops that take tools."""

Invoke = Callable[[str, Task], Awaitable[Mapping[str, Any]]]
"""Runs one loop on one task and returns the run's output values (with ``model_seconds``
when it measured them)."""


class ModelClock(BaseCallbackHandler):
    """Seconds during which at least one model call of a run was in flight.

    Overlapping calls (parallel branches) count once, so the figure is comparable with the
    run's latency; the rest of the latency is tools, the graph and waiting for a turn.
    """

    def __init__(self) -> None:
        self._started: dict[UUID, float] = {}
        self._spans: list[tuple[float, float]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **_: Any
    ) -> None:
        self._started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **_: Any) -> None:
        self._stop(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        self._stop(run_id)

    def _stop(self, run_id: UUID) -> None:
        start = self._started.pop(run_id, None)
        if start is not None:
            self._spans.append((start, time.perf_counter()))

    @property
    def seconds(self) -> float:
        """The union of the finished calls' spans, in seconds."""
        total, reached = 0.0, -math.inf
        for start, end in sorted(self._spans):
            if end > reached:
                total += end - max(start, reached)
                reached = end
        return total


def eval_tools() -> list[BaseTool]:
    """The tools given to tool-using loops: the calculator and the knowledge-base search.

    Returns:
        The tools named by ``EVAL_TOOLS``.
    """
    return get_tools(EVAL_TOOLS)


def _names(value: str | Sequence[str] | None, known: Sequence[str], kind: str) -> list[str]:
    if value is None or value == "all" or (not isinstance(value, str) and list(value) == ["all"]):
        return list(known)
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown {kind} {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class EvalPlan:
    """What an evaluation runs: its loops, suites, tasks and concurrency.

    Attributes:
        loops: Loop names, in report order.
        suites: Suite names, in report order.
        tasks: The tasks of each suite (already cut to ``limit``).
        limit: Items per suite, or None for every item.
        seed: Seed of the suites.
        concurrency: Runs in flight at once.
    """

    loops: list[str]
    suites: list[str]
    tasks: dict[str, list[Task]]
    limit: int | None
    seed: int
    concurrency: int

    @property
    def jobs(self) -> list[tuple[str, Task]]:
        """Every (loop, task) pair, loop by loop and suite by suite."""
        return [(loop, task) for loop in self.loops for s in self.suites for task in self.tasks[s]]

    def report(
        self, results: Sequence[RunResult], started: datetime, **settings: Any
    ) -> EvalReport:
        """Gather the rows into a report whose settings describe this plan.

        Args:
            results: The rows, one per job.
            started: When the evaluation started (UTC).
            **settings: More settings for ``EvalReport.meta`` (model, server, tools, ...).

        Returns:
            The report.
        """
        meta = {
            "title": "loopgraphs evaluation",
            "model": settings.pop("model", "a model"),
            "date": started.isoformat(timespec="seconds"),
            "seconds": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
            "loops": self.loops,
            "suites": self.suites,
            "limit": self.limit,
            "items": {suite: len(items) for suite, items in self.tasks.items()},
            "seed": self.seed,
            "concurrency": self.concurrency,
            **settings,
        }
        return EvalReport(results=list(results), loops=self.loops, suites=self.suites, meta=meta)


DEFAULT_CONCURRENCY = 4


def runs_at_once(model: Any, concurrency: int | None) -> int:
    """The runs an evaluation keeps in flight: ``concurrency`` when given; otherwise the
    slots of the embedded server the model talks to (one by default: it answers one
    request at a time, and runs taking turns would each find another run's prompt in its
    cache), or ``DEFAULT_CONCURRENCY`` for any other model."""
    if concurrency is not None:
        return concurrency
    server = embedded_server(model)
    return server.n_parallel if server is not None else DEFAULT_CONCURRENCY


def make_plan(
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = DEFAULT_SEED,
) -> EvalPlan:
    """Validate the selection of an evaluation and generate its tasks.

    Args:
        loops: Loop names (a list, a comma-separated string, or ``"all"``).
        suites: Suite names (a list, a comma-separated string, or ``"all"``).
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight at once.
        seed: Seed of the suites.

    Returns:
        The plan.

    Raises:
        ValueError: An unknown loop or suite name, or a bad ``limit``/``concurrency``.
    """
    loop_names = _names(loops, list(LOOPS), "loop")
    suite_names = _names(suites, SUITES, "suite")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1; got {concurrency!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be an int >= 1 or None; got {limit!r}")
    tasks = {suite: make_suite(suite, seed)[:limit] for suite in suite_names}
    return EvalPlan(loop_names, suite_names, tasks, limit, seed, concurrency)


def result_of(loop: str, task: Task, out: Mapping[str, Any], latency: float) -> RunResult:
    """Score one run's output values into a row.

    Args:
        loop: The loop that ran.
        task: The task it ran on.
        out: The run's output values (``answer``, ``status``, ``llm_calls``, ``usage``,
            ``error``, and ``model_seconds`` when measured); missing values count as empty.
        latency: Seconds the run took.

    Returns:
        The row; a run without a status is an error.
    """
    answer = str(out.get("answer") or "")
    usage = out.get("usage") or {}
    return RunResult(
        loop=loop,
        suite=task.suite,
        task_id=task.id,
        question=task.question,
        expected=task.answer,
        answer=answer,
        correct=score(answer, task),
        status=str(out.get("status") or "error"),
        llm_calls=int(out.get("llm_calls") or 0),
        input_tokens=int(usage.get("input_tokens", 0) or 0),
        output_tokens=int(usage.get("output_tokens", 0) or 0),
        cached_tokens=int(usage.get("cached_tokens", 0) or 0),
        latency=latency,
        model_seconds=float(out.get("model_seconds") or math.nan),
        error=str(out.get("error") or ""),
    )


async def run_plan(
    plan: EvalPlan,
    invoke: Invoke,
    *,
    console: Console | None = None,
    show_progress: bool = True,
) -> list[RunResult]:
    """Run every job of the plan, at most ``plan.concurrency`` at once.

    Args:
        plan: What to run.
        invoke: Runs one loop on one task and returns the output values.
        console: Where the progress is drawn.
        show_progress: Draw a progress bar (on a console that is not a terminal, a line
            every 10% of the runs).

    Returns:
        One row per job, in the order of ``plan.jobs``; a run that raised is a row with
        status ``"error"``.
    """
    jobs = plan.jobs
    semaphore = asyncio.Semaphore(plan.concurrency)
    progress = Progress(
        TextColumn("[bold]eval[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        disable=not show_progress,
        transient=False,
    )
    begun = time.perf_counter()
    done = 0
    log_lines = show_progress and not progress.console.is_terminal

    async def run(loop: str, task: Task, bar: Any) -> RunResult:
        nonlocal done
        async with semaphore:
            start = time.perf_counter()
            try:
                out = await invoke(loop, task)
            except Exception as exc:
                out = {"status": "error", "error": describe_error(exc)}
            latency = time.perf_counter() - start
        result = result_of(loop, task, out, latency)
        progress.update(bar, advance=1, description=f"{loop}/{task.id}")
        done += 1
        if log_lines and done * 10 // len(jobs) > (done - 1) * 10 // len(jobs):
            elapsed = time.perf_counter() - begun
            progress.console.print(f"eval: {done}/{len(jobs)} runs done ({elapsed:.0f} s)")
        return result

    with progress:
        bar = progress.add_task("", total=len(jobs))
        return list(await asyncio.gather(*(run(loop, task, bar) for loop, task in jobs)))


async def aevaluate(
    model: Any,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    limit: int | None = None,
    concurrency: int | None = None,
    loop_options: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Async form of :func:`evaluate` (same arguments, same result)."""
    at_once = runs_at_once(model, concurrency)
    plan = make_plan(loops, suites, limit=limit, concurrency=at_once, seed=seed)
    options = {name: dict((loop_options or {}).get(name, {})) for name in plan.loops}
    tools = eval_tools()
    graphs = {name: build_loop(name, model, tools, **options[name]) for name in plan.loops}

    async def invoke(loop: str, task: Task) -> Mapping[str, Any]:
        clock = ModelClock()
        config: RunnableConfig = {"callbacks": [clock]}
        out = await graphs[loop].ainvoke({"messages": [("user", task.question)]}, config)
        return {**out, "model_seconds": clock.seconds}

    started = datetime.now(timezone.utc)
    results = await run_plan(plan, invoke, console=console, show_progress=show_progress)
    return plan.report(
        results,
        started,
        model=describe_model(model),
        loop_options={k: v for k, v in options.items() if v},
        tools=[tool.name for tool in tools],
    )


def evaluate(
    model: Any,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    limit: int | None = None,
    concurrency: int | None = None,
    loop_options: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Run every loop on every task of the suites in this process and score the answers.

    Args:
        model: The chat model every loop uses.
        loops: Loop names (a list, a comma-separated string, or ``"all"``).
        suites: Suite names (a list, a comma-separated string, or ``"all"``).
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight at once (an ``asyncio.Semaphore`` around ``ainvoke``);
            None: one per slot of the embedded server the model talks to (one, unless
            the server was made with more), otherwise 4 (see ``runs_at_once``).
        loop_options: Keyword options per loop name, e.g. ``{"react": {"max_iterations": 5}}``.
        seed: Seed of the suites.
        console: Where the progress bar is drawn.
        show_progress: Draw a progress bar.

    Returns:
        The report; runs that raised are recorded with status ``"error"``.

    Raises:
        ValueError: An unknown loop or suite name, or a bad ``limit``/``concurrency``.
    """
    return asyncio.run(
        aevaluate(
            model,
            loops,
            suites,
            limit=limit,
            concurrency=concurrency,
            loop_options=loop_options,
            seed=seed,
            console=console,
            show_progress=show_progress,
        )
    )
