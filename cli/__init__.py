"""The ``loopgraphs`` command: run, list, draw, demo and evaluate the loops.

Modules: ``arguments`` (subcommands and flags, and the model and options they select),
``rendering`` (a run's steps, tokens and result at the terminal), ``approval`` (approving
tool calls at the terminal), ``eval_command`` (the ``eval`` subcommand) and ``commands``
(the other subcommands, and ``main``, the console script's entry point).
"""

from loopgraphs.cli.commands import DEMO_QUESTIONS, main
from loopgraphs.cli.errors import CliError
from loopgraphs.cli.eval_command import run_cli_eval

__all__ = ["DEMO_QUESTIONS", "CliError", "main", "run_cli_eval"]
