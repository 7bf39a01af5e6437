"""Human approval at the terminal: the tool calls a paused run waits on, and the
user's decision on each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot
from rich.console import Console
from rich.panel import Panel
from rich.prompt import Prompt
from rich.text import Text

from loopgraphs.cli.errors import CliError
from loopgraphs.state import CompiledLoop

if TYPE_CHECKING:
    from langchain.agents.middleware.human_in_the_loop import ActionRequest, Decision


def ask_decisions(console: Console, requests: Sequence[ActionRequest]) -> list[Decision]:
    """Ask the user to approve, edit or reject each pending tool call."""
    decisions: list[Decision] = []
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


def pending_interrupts(graph: CompiledLoop, config: RunnableConfig) -> list[Any]:
    """Interrupt payloads waiting on the thread: any value a node or a tool passed to
    ``interrupt()`` (the tool-call review's is a ``HITLRequest``)."""
    snapshot = graph.get_state(config, subgraphs=True)
    found: list[Any] = []
    stack = [snapshot]
    while stack:
        state = stack.pop()
        for task in state.tasks:
            found.extend(item.value for item in task.interrupts)
            if isinstance(task.state, StateSnapshot):
                stack.append(task.state)
    return found
