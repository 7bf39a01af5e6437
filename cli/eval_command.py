"""The ``eval`` subcommand: evaluate the loops here or on a LangGraph server, then print
the table and write the report files."""

from __future__ import annotations

import argparse
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from rich.console import Console

from loopgraphs.cli.arguments import model_from
from loopgraphs.cli.errors import CliError
from loopgraphs.eval import (
    EvalReport,
    ServerUnavailableError,
    evaluate,
    evaluate_server,
    write_report,
)
from loopgraphs.eval.report import CHART_NEEDS
from loopgraphs.eval.runner import DEFAULT_CONCURRENCY
from loopgraphs.graphs.registry import LOOP_SPECS


def command_eval(args: argparse.Namespace, console: Console) -> int:
    """``eval``: evaluate the loops here, or on the LangGraph server of ``--server``."""
    if args.server:
        return run_cli_server_eval(args, console)
    return run_cli_eval(args, model_from(args), console)


def run_cli_eval(args: argparse.Namespace, model: BaseChatModel, console: Console) -> int:
    """Evaluate the loops on ``model`` in this process, print the table, write the files.

    Args:
        args: The ``eval`` subcommand's flags.
        model: The chat model every loop uses.
        console: Where the progress and the table are printed.

    Returns:
        The exit status, 0.

    Raises:
        CliError: An unknown loop or suite, or a bad limit or concurrency.
    """
    budgets = (
        {name: {spec.budget_option: args.max_iterations} for name, spec in LOOP_SPECS.items()}
        if args.max_iterations is not None
        else None
    )
    try:
        report = evaluate(
            model,
            args.loops,
            args.suite,
            limit=args.limit,
            concurrency=args.concurrency,
            loop_options=budgets,
            console=console,
        )
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    return print_and_write_report(report, args.out, console)


def run_cli_server_eval(args: argparse.Namespace, console: Console) -> int:
    """Evaluate the loops on the LangGraph server at ``args.server``, print, write the files.

    Args:
        args: The ``eval`` subcommand's flags.
        console: Where the progress and the table are printed.

    Returns:
        The exit status, 0 (items the server failed are rows with status ``error``).

    Raises:
        CliError: Conflicting model flags, a bad selection, an unreachable server or one
            that lacks a loop's graph.
    """
    if args.gguf:
        raise CliError("--gguf names a file on this machine; with --server give --model")
    if args.model and args.base_url:
        raise CliError("give --model or --base-url, not both")
    try:
        report = evaluate_server(
            args.server,
            args.loops,
            args.suite,
            model=args.model or args.base_url,
            max_iterations=args.max_iterations,
            limit=args.limit,
            concurrency=DEFAULT_CONCURRENCY if args.concurrency is None else args.concurrency,
            console=console,
        )
    except (ValueError, ServerUnavailableError) as exc:
        raise CliError(str(exc)) from exc
    return print_and_write_report(report, args.out, console)


def print_and_write_report(report: EvalReport, out: Path, console: Console) -> int:
    """Print an evaluation's table and write its JSON, Markdown and chart into ``out``.

    Args:
        report: The evaluation's report.
        out: The folder of the three files.
        console: Where the table and the paths written are printed.

    Returns:
        The exit status, 0 (also without matplotlib: the chart is then left out, with a
        one-line note).
    """
    console.print(report.table())
    console.print(report.integrity_line(), markup=False, highlight=False)
    paths = write_report(report, out)
    console.print("wrote " + ", ".join(str(path) for path in paths.values()))
    if "chart" not in paths:
        console.print(CHART_NEEDS, markup=False, highlight=False)
    return 0
