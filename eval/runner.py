"""The runner: every (loop, task) pair of an evaluation, with bounded concurrency.

``make_plan`` validates what to run; ``run_plan`` awaits one run per item with at most
``concurrency`` in flight, times each and scores what it returned. A run that raises is
recorded with status ``"error"`` and the error's message, and never stops the others.
``aevaluate`` and ``evaluate`` run the loops in this process with ``graph.ainvoke``;
``loopgraphs.eval.server`` submits the same items to a LangGraph server instead. The data
is the bundled suites or one's own questions (``loopgraphs.eval.data``), and the scorer
one of ``loopgraphs.eval.scoring``'s or one's own.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import math
import time
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from rich import get_console
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from typing_extensions import TypedDict

from loopgraphs.eval.data import OWN_DATA, choose_names, load_tasks
from loopgraphs.eval.observe import ModelClock, RejectedReplies, held_expected
from loopgraphs.eval.report import EvalReport, RunResult
from loopgraphs.eval.scoring import (
    Scorer,
    TaskScorer,
    default_scorer,
    expected_of,
    resolve_scorer,
)
from loopgraphs.eval.suites import DEFAULT_SEED, Task
from loopgraphs.graphs.registry import LOOPS, get_spec
from loopgraphs.models import describe_model, embedded_server
from loopgraphs.nodes.errors import describe_error
from loopgraphs.state import Usage
from loopgraphs.toolkits import get_tools

if TYPE_CHECKING:
    from loopgraphs.eval.data import DataSource

T = TypeVar("T")

# How a run's error starts when the scorer failed on its answer.
SCORER_FAILED = "the scorer failed:"

EVAL_TOOLS: tuple[str, ...] = ("calculator", "search")
"""Built-in tools given to the loops that take tools."""


class RunValues(TypedDict, total=False):
    """One run's output values, as ``result_of`` scores them: a loop's output (its
    ``OutputState``; from a LangGraph server, its JSON) and what the runner measured.

    Attributes:
        answer: The loop's answer.
        status: How the run ended (``"error"`` when it raised or the server failed it).
        error: What failed.
        llm_calls: Model calls the run made.
        usage: Token usage over every model call.
        messages: The run's messages (from a server, the dicts of its JSON).
        model_seconds: Seconds a model call was in flight, when measured.
        thread_id: The run's thread id, when it had one.
        rejected_replies: The replies the answer-integrity check turned down as no answer
            (see ``RejectedReplies``), as the model wrote them; missing when not observed
            (runs on a LangGraph server).
    """

    answer: str
    status: str
    error: str
    llm_calls: int
    usage: Usage
    messages: list[AnyMessage | dict[str, object]]
    model_seconds: float
    thread_id: str
    rejected_replies: list[str]


Invoke = Callable[[str, Task], Awaitable[RunValues]]
"""Runs one loop on one task and returns the run's output values (with ``model_seconds``
when it measured them)."""


def eval_tools() -> list[BaseTool]:
    """The tools given to tool-using loops: the calculator and the knowledge-base search.

    Returns:
        The tools named by ``EVAL_TOOLS``.
    """
    return get_tools(EVAL_TOOLS)


@dataclass(frozen=True)
class EvalPlan:
    """What an evaluation runs: its loops, suites, tasks, concurrency and scorer.

    Attributes:
        loops: Loop names, in report order.
        suites: Suite names, in report order (``"data"`` for one's own data).
        tasks: The tasks of each suite (already cut to ``limit``).
        limit: Items per suite, or None for every item.
        seed: Seed of the suites.
        concurrency: Runs in flight at once.
        scorer: Scores each run's answer (see ``resolve_scorer``).
        scorer_name: The scorer's name, for the report's settings.
    """

    loops: list[str]
    suites: list[str]
    tasks: dict[str, list[Task]]
    limit: int | None
    seed: int
    concurrency: int
    scorer: TaskScorer = field(default=default_scorer, repr=False)
    scorer_name: str = "default"

    @property
    def jobs(self) -> list[tuple[str, Task]]:
        """Every (loop, task) pair, loop by loop and suite by suite."""
        return [(loop, task) for loop in self.loops for s in self.suites for task in self.tasks[s]]

    def report(
        self, results: Sequence[RunResult], started: datetime, **settings: object
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
            "seed": None if self.suites == [OWN_DATA] else self.seed,
            "concurrency": self.concurrency,
            "scorer": self.scorer_name,
            **settings,
        }
        return EvalReport(results=list(results), loops=self.loops, suites=self.suites, meta=meta)


DEFAULT_CONCURRENCY = 4


def runs_at_once(model: object, concurrency: int | None) -> int:
    """The runs an evaluation keeps in flight: ``concurrency`` when given; otherwise the
    slots of the embedded server the model talks to (one by default: it answers one
    request at a time, and runs taking turns would each find another run's prompt in its
    cache), or ``DEFAULT_CONCURRENCY`` for any other model."""
    if concurrency is not None:
        return concurrency
    server = embedded_server(model)
    return server.n_parallel if server is not None else DEFAULT_CONCURRENCY


def _scorer_name(scorer: str | Scorer | None) -> str:
    if scorer is None or isinstance(scorer, str):
        return scorer or "default"
    return str(getattr(scorer, "__name__", type(scorer).__name__))


def make_plan(
    loops: str | Sequence[str] = "all",
    data: DataSource = "all",
    *,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = DEFAULT_SEED,
    scorer: str | Scorer | None = None,
) -> EvalPlan:
    """Validate the selection of an evaluation and read or generate its tasks.

    Args:
        loops: Loop names (a list, a comma-separated string, or ``"all"``).
        data: Bundled suite names (a list, a comma-separated string, or ``"all"``), or
            one's own rows: a list of dicts, a JSONL or CSV path, or a pandas DataFrame
            (see ``loopgraphs.eval.data``).
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight at once.
        seed: Seed of the suites.
        scorer: None or ``"default"``, ``"exact"``, ``"normalised"``, ``"contains"``, or
            a callable ``(answer, expected, run) -> bool | float``.

    Returns:
        The plan.

    Raises:
        ValueError: An unknown loop, suite, scorer or file type, a bad row, or a bad
            ``limit``/``concurrency``.
        TypeError: Data of an unknown kind, or a scorer that is not callable.
    """
    loop_names = choose_names(loops, list(LOOPS), "loop")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1; got {concurrency!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be an int >= 1 or None; got {limit!r}")
    tasks = load_tasks(data, limit=limit, seed=seed)
    return EvalPlan(
        loop_names,
        list(tasks),
        tasks,
        limit,
        seed,
        concurrency,
        resolve_scorer(scorer),
        _scorer_name(scorer),
    )


def result_of(
    loop: str,
    task: Task,
    out: RunValues,
    latency: float,
    scorer: TaskScorer = default_scorer,
) -> RunResult:
    """Score one run's output values into a row.

    Args:
        loop: The loop that ran.
        task: The task it ran on.
        out: The run's output values (``answer``, ``status``, ``llm_calls``, ``usage``,
            ``error``, ``messages``, and ``model_seconds``, ``thread_id`` and
            ``rejected_replies`` when known); missing values count as empty.
        latency: Seconds the run took.
        scorer: Scores the answer, and each reply the answer-integrity check turned down
            (``held_expected``); it sees the row being made (without its score).

    Returns:
        The row; a run without a status is an error. When the scorer raises, the row
        is kept with a NaN score and ``error`` saying so (``SCORER_FAILED``).
    """
    answer = str(out.get("answer") or "")
    usage: Usage | dict[str, int] = out.get("usage") or {}
    rejected = out.get("rejected_replies")
    run = RunResult(
        loop=loop,
        suite=task.suite,
        task_id=task.id,
        question=task.question,
        expected=expected_of(task),
        answer=answer,
        correct=False,
        status=str(out.get("status") or "error"),
        llm_calls=int(out.get("llm_calls") or 0),
        input_tokens=int(usage.get("input_tokens", 0) or 0),
        output_tokens=int(usage.get("output_tokens", 0) or 0),
        cached_tokens=int(usage.get("cached_tokens", 0) or 0),
        latency=latency,
        model_seconds=float(out.get("model_seconds") or math.nan),
        error=str(out.get("error") or ""),
        thread_id=str(out.get("thread_id") or ""),
        metadata=dict(task.metadata),
        rejected_replies=None if rejected is None else list(rejected),
        messages=list(out.get("messages") or []),
    )
    run.rejected_expected = held_expected(run.rejected_replies or [], task, run, scorer)
    try:
        run.score = scorer(answer, task, run)
    except Exception as exc:  # the run is kept: a scorer's failure costs only its score
        run.score = math.nan
        own = f"; the run's error: {run.error}" if run.error else ""
        run.error = f"{SCORER_FAILED} {describe_error(exc)}{own}"
    run.correct = run.score >= 1.0
    return run


def warn_unscored(results: Sequence[RunResult]) -> None:
    """Warn once when the scorer failed on some runs (their score is NaN, their
    ``error`` says why), naming how many and the first failure."""
    failed = [run for run in results if run.error.startswith(SCORER_FAILED)]
    if failed:
        warnings.warn(
            f"the scorer failed on {len(failed)} of {len(results)} runs; their score is NaN "
            f"and their error says why (first, {failed[0].loop}/{failed[0].task_id}: "
            f"{failed[0].error})",
            stacklevel=2,
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
            every 10% of the runs; in Jupyter without ipywidgets, the lines alone).

    Returns:
        One row per job, in the order of ``plan.jobs``; a run that raised is a row with
        status ``"error"``.
    """
    jobs = plan.jobs
    semaphore = asyncio.Semaphore(plan.concurrency)
    console = console or get_console()
    progress = Progress(
        TextColumn("[bold]eval[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        disable=not (show_progress and live_bar(console)),
        transient=False,
    )
    begun = time.perf_counter()
    done = 0
    log_lines = show_progress and not progress.console.is_terminal

    async def run(loop: str, task: Task, bar: TaskID) -> RunResult:
        nonlocal done
        async with semaphore:
            start = time.perf_counter()
            try:
                out = await invoke(loop, task)
            except Exception as exc:
                out = {"status": "error", "error": describe_error(exc)}
            latency = time.perf_counter() - start
        result = result_of(loop, task, out, latency, plan.scorer)
        progress.update(bar, advance=1, description=f"{loop}/{task.id}")
        done += 1
        if log_lines and done * 10 // len(jobs) > (done - 1) * 10 // len(jobs):
            elapsed = time.perf_counter() - begun
            progress.console.print(f"eval: {done}/{len(jobs)} runs done ({elapsed:.0f} s)")
        return result

    with progress:
        bar = progress.add_task("", total=len(jobs))
        results = list(await asyncio.gather(*(run(loop, task, bar) for loop, task in jobs)))
    warn_unscored(results)
    return results


def live_bar(console: Console) -> bool:
    """Whether rich can draw a live progress bar on ``console``: anywhere but in Jupyter
    without ipywidgets (where rich only warns; the progress lines are printed instead)."""
    return not console.is_jupyter or importlib.util.find_spec("ipywidgets") is not None


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code, wherever it is called.

    With no event loop running in this thread (a script), ``asyncio.run``; with one
    running (a notebook cell, an async application), a worker thread runs it on an event
    loop of its own, with a copy of this thread's context variables, while this thread
    waits for the result.

    Args:
        coroutine: The coroutine, not yet started.

    Returns:
        Its result; its exception is raised here.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopgraphs-eval") as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()


def _data(data: DataSource | None, suites: str | Sequence[str] | None) -> DataSource:
    if data is not None and suites is not None:
        raise TypeError("give the data or suites=, not both")
    return data if data is not None else suites if suites is not None else "all"


async def aevaluate(
    model: BaseChatModel,
    loops: str | Sequence[str] = "all",
    data: DataSource | None = None,
    *,
    suites: str | Sequence[str] | None = None,
    scorer: str | Scorer | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    loop_options: Mapping[str, Mapping[str, object]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Async form of :func:`evaluate` (same arguments, same result): in a notebook or any
    coroutine, ``report = await aevaluate(model, "cot,react", rows)``."""
    at_once = runs_at_once(model, concurrency)
    plan = make_plan(
        loops, _data(data, suites), limit=limit, concurrency=at_once, seed=seed, scorer=scorer
    )
    options = {name: dict((loop_options or {}).get(name, {})) for name in plan.loops}
    tools = eval_tools()
    graphs = {name: get_spec(name).build(model, tools, **options[name]) for name in plan.loops}

    async def invoke(loop: str, task: Task) -> RunValues:
        clock, rejected = ModelClock(), RejectedReplies()
        thread_id = str(uuid4())
        config: RunnableConfig = {
            "callbacks": [clock, rejected],
            "configurable": {"thread_id": thread_id},
        }
        out = await graphs[loop].ainvoke({"messages": [("user", task.question)]}, config)
        return {
            **cast(RunValues, out),
            "model_seconds": clock.seconds,
            "thread_id": thread_id,
            "rejected_replies": rejected.texts,
        }

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
    model: BaseChatModel,
    loops: str | Sequence[str] = "all",
    data: DataSource | None = None,
    *,
    suites: str | Sequence[str] | None = None,
    scorer: str | Scorer | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    loop_options: Mapping[str, Mapping[str, object]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Run every loop on every question in this process and score the answers.

    Works in a script and inside a running event loop (a notebook cell): there the runs
    go on in a worker thread with an event loop of its own (``run_coroutine``). In async
    code, ``await aevaluate(...)`` with the same arguments runs them on the caller's loop.

    >>> rows = [{"question": "What is 6 * 7?", "expected": "42", "topic": "maths"}]
    >>> report = evaluate(model, "cot,react", rows, scorer="contains")  # doctest: +SKIP
    >>> report.to_dataframe()  # doctest: +SKIP

    Args:
        model: The chat model every loop uses.
        loops: Loop names (a list, a comma-separated string, or ``"all"``).
        data: What to ask: bundled suite names (``"arithmetic"``, ``"multihop,verify"``,
            a list of names, or ``"all"``), or one's own rows: a list of
            ``{"question": ..., "expected": ...}`` dicts (``expected`` one answer or a
            list of acceptable ones; other keys are kept as the row's ``metadata``), a
            JSONL or CSV file with those columns, or a pandas DataFrame. None: every
            bundled suite.
        suites: The bundled suite names, as ``data`` takes them (the older keyword).
        scorer: ``"default"`` (None; ``loopgraphs.eval.scoring.score``: normalised
            match, or the expected answer within a short answer), ``"exact"``,
            ``"normalised"``, ``"contains"``, or a callable ``(answer, expected, run)``
            returning a bool or a float (``from_evaluator`` wraps an openevals or
            agentevals evaluator); a score of 1 counts as correct.
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight at once (an ``asyncio.Semaphore`` around ``ainvoke``);
            None: one per slot of the embedded server the model talks to (one, unless
            the server was made with more), otherwise 4 (see ``runs_at_once``).
        loop_options: Keyword options per loop name, e.g. ``{"react": {"max_iterations": 5}}``.
        seed: Seed of the suites.
        console: Where the progress bar is drawn.
        show_progress: Draw a progress bar.

    Returns:
        The report; runs that raised are recorded with status ``"error"``. Each run has a
        thread id and keeps its messages (``report.transcript(loop, item)``).

    Raises:
        ValueError: An unknown loop, suite, scorer or data file type, a row without a
            question or an expected answer, or a bad ``limit``/``concurrency``.
        TypeError: Data of an unknown kind, both ``data`` and ``suites``, or a scorer
            that is not callable.
        FileNotFoundError: A data file that does not exist.
    """
    return run_coroutine(
        aevaluate(
            model,
            loops,
            data,
            suites=suites,
            scorer=scorer,
            limit=limit,
            concurrency=concurrency,
            loop_options=loop_options,
            seed=seed,
            console=console,
            show_progress=show_progress,
        )
    )
