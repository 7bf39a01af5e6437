"""Printing a run: its steps live as they stream, the model's tokens, and the result."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StreamMode
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.state import CompiledLoop, OutputState

SHOWN_CHARS = 600
TOKEN_TAIL = 90


class StepPrinter:
    """Render stream updates as thought / action / observation / answer lines."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def update(self, node: str, values: object) -> None:
        """Print a node's update: its messages, and its plan, draft or reflections."""
        if not isinstance(values, dict):
            return
        for message in values.get("messages", []) or []:
            self.message(node, message)
        for key in ("plan", "draft", "reflections"):
            if values.get(key):
                shown = json.dumps(values[key], ensure_ascii=False, default=str)
                self.console.print(f"[magenta]{node}[/] {key}: {escape(_short(shown))}")

    def message(self, node: str, message: AnyMessage) -> None:
        """Print one message as a thought and actions, or as an observation."""
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
    graph: CompiledLoop, inputs: object, config: RunnableConfig, console: Console, *, live: bool
) -> OutputState:
    """Run the graph, printing each step and showing the model's tokens as they arrive.

    Returns:
        The last state of the top-level graph.
    """
    printer = StepPrinter(console)
    values: OutputState = {}
    tokens = ""
    modes: list[StreamMode] = ["updates", "messages", "values"]
    with console.status("thinking…", spinner="dots") if live else nullcontext() as spinner:
        # With subgraphs and a list of modes, each part is (namespace, mode, chunk), and
        # what the chunk holds depends on the mode.
        parts = graph.stream(inputs, config, stream_mode=modes, subgraphs=True)
        for namespace, mode, chunk in cast(Iterator[tuple[tuple[str, ...], str, Any]], parts):
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


def print_result(values: OutputState, console: Console, *, as_json: bool) -> int:
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
        usage: Mapping[str, object] = values.get("usage") or {}
        console.print(
            f"status {values.get('status')} · {values.get('llm_calls', 0)} model calls · "
            f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens "
            f"({usage.get('cached_tokens', 0)} cached)"
            + (f" · error: {escape(values['error'])}" if values.get("error") else "")
        )
    return 0 if values.get("status") != "error" else 1
