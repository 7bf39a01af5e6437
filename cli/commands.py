"""The subcommands that run the loops (run, list, draw, demo, fetch-model) and ``main``,
which dispatches to them."""

from __future__ import annotations

import argparse
import sqlite3
import sys
import uuid
from collections.abc import Sequence
from typing import cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loopgraphs.cli.approval import ask_decisions, pending_interrupts
from loopgraphs.cli.arguments import (
    build_parser,
    default_db,
    loop_options,
    model_from,
    use_modules,
)
from loopgraphs.cli.errors import CliError
from loopgraphs.cli.eval_command import command_eval
from loopgraphs.cli.rendering import print_result, stream_run
from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS, build_loop, get_spec
from loopgraphs.models import describe_model, fetch_default_gguf, find_default_gguf
from loopgraphs.state import OutputState
from loopgraphs.toolkits.registry import get_tools

DEMO_QUESTIONS = (
    "What is 17 * 19 + 4?",
    "Who founded Quillmark Instruments?",
)


def command_run(args: argparse.Namespace, console: Console) -> int:
    """``run``: run a loop on a question (or resume a thread), asking for approvals."""
    if args.loop not in LOOPS:
        raise CliError(f"unknown loop {args.loop!r}; choose one of {', '.join(LOOPS)}")
    try:
        tools = (
            get_tools(args.tools, files_root=args.files_root)
            if args.tools and get_spec(args.loop).takes_tools
            else []
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    model = model_from(args)
    db = args.db or default_db()
    db.parent.mkdir(parents=True, exist_ok=True)
    thread = args.thread or uuid.uuid4().hex[:12]
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    with sqlite3.connect(db, check_same_thread=False) as connection:
        try:
            graph = get_spec(args.loop).build(
                model, tools, checkpointer=SqliteSaver(connection), **loop_options(args)
            )
        except (TypeError, ValueError) as exc:
            raise CliError(str(exc)) from exc
        if not args.json:
            console.print(
                f"[bold]{args.loop}[/] on {escape(describe_model(model))} · thread {thread}"
            )
        inputs: object = {"messages": [("user", args.question)]} if args.question else None
        if inputs is None and not graph.get_state(config).next:
            raise CliError(f"nothing to resume on thread {thread!r}: give a question")
        while True:
            stream_run(graph, inputs, config, console, live=not args.json)
            waiting = pending_interrupts(graph, config)
            if not waiting:
                break
            requests = [r for payload in waiting for r in payload.get("action_requests", [])]
            if not requests or not sys.stdin.isatty():
                console.print(
                    "paused for approval; resume with: "
                    f"loopgraphs run {args.loop} --thread {thread} --approve-tools"
                )
                return 0
            inputs = Command(resume={"decisions": ask_decisions(console, requests)})
        values = cast(OutputState, graph.get_state(config).values)
    return print_result(values, console, as_json=args.json)


def command_list(console: Console) -> int:
    """``list``: print the loops, when to use each and its own keywords."""
    table = Table(title="loops")
    table.add_column("name")
    table.add_column("use it when")
    table.add_column("keywords (default)")
    for name in LOOPS:
        spec = LOOP_SPECS[name]
        own = getattr(spec, "own", ())
        keywords = ", ".join(f"{option.name}={option.default!r}" for option in own)
        table.add_row(name, spec.summary, keywords)
    console.print(table)
    return 0


def command_draw(args: argparse.Namespace, console: Console) -> int:
    """``draw``: print a loop's graph as Mermaid."""
    if args.loop not in LOOPS:
        raise CliError(f"unknown loop {args.loop!r}; choose one of {', '.join(LOOPS)}")
    graph = get_spec(args.loop).build(None, [])
    print(graph.get_graph().draw_mermaid())
    return 0


def command_demo(args: argparse.Namespace, console: Console) -> int:
    """``demo``: run ReAct with calculator and search on the two sample questions."""
    model = model_from(args)
    tools = get_tools(["calculator", "search"])
    graph = build_loop("react", model, tools, max_iterations=3)
    console.print(f"[bold]ReAct[/] on {escape(describe_model(model))} with calculator and search")
    for question in DEMO_QUESTIONS:
        console.rule(question)
        values = stream_run(graph, {"messages": [("user", question)]}, {}, console, live=True)
        print_result(values, console, as_json=False)
    return 0


def command_fetch_model(args: argparse.Namespace) -> int:
    """Fetch the default GGUF file (unless it is on this machine already); print its path."""
    try:
        path = fetch_default_gguf(args.dir) if args.dir else find_default_gguf()
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise CliError(str(exc)) from exc
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``loopgraphs`` console script."""
    console = Console()
    try:
        args = build_parser().parse_args(use_modules(sys.argv[1:] if argv is None else argv))
        if args.command == "run":
            return command_run(args, console)
        if args.command == "list":
            return command_list(console)
        if args.command == "draw":
            return command_draw(args, console)
        if args.command == "demo":
            return command_demo(args, console)
        if args.command == "fetch-model":
            return command_fetch_model(args)
        return command_eval(args, console)
    except CliError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        return 130
