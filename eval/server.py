"""Evaluate the loops on a LangGraph server: each item is one run of the served graph.

The server serves the graphs of ``langgraph.json``, whose graph ids are the loop names and
which read the model, tool mode, tools and budget from the run's context (``LoopContext``).
Each (loop, task) pair is submitted as a run without a thread through ``langgraph_sdk``,
at most ``concurrency`` at once, so a large evaluation spreads over the server's workers.
The rows, table and files are the same as for a local evaluation; latency is measured
here, from submitting the run to receiving its output. A run the server fails, or a
request that fails, is that item's row with status ``"error"`` and the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, cast

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from rich.console import Console

from loopgraphs.context import LoopContext
from loopgraphs.eval.report import EvalReport
from loopgraphs.eval.runner import (
    DEFAULT_CONCURRENCY,
    EVAL_TOOLS,
    RunValues,
    make_plan,
    run_coroutine,
    run_plan,
)
from loopgraphs.eval.suites import DEFAULT_SEED, Task
from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.nodes.errors import describe_error

SERVER_DEFAULT_MODEL = "the server's default model"


class ServerUnavailableError(RuntimeError):
    """The server cannot be reached, or does not serve a loop the evaluation asks for."""


def run_context(
    loop: str, *, model: str | None = None, max_iterations: int | None = None
) -> LoopContext:
    """The context of one loop's runs (the fields of ``LoopContext``).

    Args:
        loop: The loop's name; the loops that take tools get ``EVAL_TOOLS``.
        model: Model spec the server loads (``"openai:gpt-4o-mini"``, a URL the server
            can reach, ...); None keeps the server's default.
        max_iterations: Budget of the loop's main cycle; None keeps the graph's own.

    Returns:
        The context, holding only the fields that are set.
    """
    context: LoopContext = {}
    if model:
        context["model"] = model
    if max_iterations is not None:
        context["max_iterations"] = max_iterations
    if LOOP_SPECS[loop].takes_tools:
        context["tools"] = list(EVAL_TOOLS)
    return context


def failed_run(error: object) -> RunValues:
    """The output values of a run the server failed, from the error it reported.

    Args:
        error: The ``__error__`` value of the run's output, e.g.
            ``{"error": "ValueError", "message": "..."}``.

    Returns:
        Values with status ``"error"`` and the error as ``"ValueError: ..."``.
    """
    if isinstance(error, Mapping):
        name, message = error.get("error") or "", error.get("message") or ""
        text = f"{name}: {message}" if name and message else str(name or message)
    else:
        text = str(error)
    return {"status": "error", "error": text or "the run failed on the server"}


async def check_server(client: LangGraphClient, url: str, loops: Sequence[str]) -> None:
    """Make sure the server answers and serves a graph for every loop.

    Args:
        client: A client of the server.
        url: The server's URL, for the message.
        loops: The loops the evaluation runs.

    Raises:
        ServerUnavailableError: The server cannot be reached, or lacks a loop's graph.
    """
    missing: list[str] = []
    for loop in loops:
        try:
            assistants = await client.assistants.search(graph_id=loop, limit=1)
        except Exception as exc:
            raise ServerUnavailableError(
                f"no LangGraph server answers at {url}: {describe_error(exc)}"
            ) from exc
        if not assistants:
            missing.append(loop)
    if missing:
        raise ServerUnavailableError(
            f"the server at {url} serves no graph for {', '.join(missing)}; "
            "serve the graphs of loopgraphs' langgraph.json"
        )


async def aevaluate_server(
    url: str,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    model: str | None = None,
    max_iterations: int | None = None,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Async form of :func:`evaluate_server` (same arguments, same result)."""
    if max_iterations is not None and (
        isinstance(max_iterations, bool)
        or not isinstance(max_iterations, int)
        or max_iterations < 1
    ):
        raise ValueError(f"max_iterations must be an int >= 1 or None; got {max_iterations!r}")
    plan = make_plan(loops, suites, limit=limit, concurrency=concurrency, seed=seed)
    contexts = {
        loop: run_context(loop, model=model, max_iterations=max_iterations) for loop in plan.loops
    }
    async with get_client(url=url) as client:
        await check_server(client, url, plan.loops)

        async def invoke(loop: str, task: Task) -> RunValues:
            inputs: dict[str, Any] = {"messages": [{"role": "user", "content": task.question}]}
            out = await client.runs.wait(
                None,
                loop,
                input=inputs,
                context=contexts[loop],
                raise_error=False,
            )
            if not isinstance(out, Mapping):
                raise TypeError(f"the run returned {type(out).__name__}, not its values")
            # The served loop's output values, as JSON.
            return failed_run(out["__error__"]) if "__error__" in out else cast(RunValues, out)

        started = datetime.now(timezone.utc)
        results = await run_plan(plan, invoke, console=console, show_progress=show_progress)
    return plan.report(
        results,
        started,
        model=model or SERVER_DEFAULT_MODEL,
        server=url,
        context={loop: context for loop, context in contexts.items() if context},
    )


def evaluate_server(
    url: str,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    model: str | None = None,
    max_iterations: int | None = None,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Run every loop on every task of the suites on a LangGraph server and score them.

    Works in a script and inside a running event loop (a notebook cell), as ``evaluate``.

    Args:
        url: The server's URL, e.g. ``"http://127.0.0.1:2024"``; an API key is read from
            ``LANGGRAPH_API_KEY`` (or ``LANGSMITH_API_KEY``) when the server needs one.
        loops: Loop names (a list, a comma-separated string, or ``"all"``); each is the
            id of a graph the server serves.
        suites: Suite names (a list, a comma-separated string, or ``"all"``).
        model: Model spec sent in each run's context; None: the server's default model.
        max_iterations: Budget sent in each run's context; None: the graph's own.
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight on the server at once.
        seed: Seed of the suites.
        console: Where the progress bar is drawn.
        show_progress: Draw a progress bar.

    Returns:
        The report, with the server's URL and the runs' contexts in its settings; a run
        that failed is recorded with status ``"error"`` and the server's message.

    Raises:
        ValueError: An unknown loop or suite name, or a bad ``limit``, ``concurrency``
            or ``max_iterations``.
        ServerUnavailableError: The server cannot be reached or lacks a loop's graph.
    """
    return run_coroutine(
        aevaluate_server(
            url,
            loops,
            suites,
            model=model,
            max_iterations=max_iterations,
            limit=limit,
            concurrency=concurrency,
            seed=seed,
            console=console,
            show_progress=show_progress,
        )
    )
