"""A ReAct run in its own process, to be killed mid-run and resumed by another process.

Usage (from the repository root)::

    python -m tests.support.crash_worker run|resume sqlite|postgres <db> <thread> <workdir>

``<db>`` is the database's path (SQLite) or URI (PostgreSQL).

The scripted model calls ``step_one`` then ``step_two`` (one tool call per turn), then
answers. Both tools append to ``<workdir>/side_effects.log``. ``step_two`` blocks the
first time it runs: it writes ``<workdir>/blocked.marker`` and sleeps, so that the test
can SIGKILL the process while the second tool call is in flight. ``resume`` continues the
thread with ``invoke(None, config)``. The final state is printed as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_core.messages import AIMessage, ToolMessage

from loopgraphs import create_react_graph
from tests.support.fakes import ScriptedChatModel, calls, tool_call

LOG = "side_effects.log"
MARKER = "blocked.marker"
BLOCK_SECONDS = 120.0
ANSWER = "Both steps are done."


def make_tools(workdir: Path) -> list[Any]:
    log = workdir / LOG
    marker = workdir / MARKER

    def record(line: str) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()

    def step_one(item: str) -> str:
        """Store an item (a side effect that must happen once)."""
        record(f"one:{item}")
        return f"stored {item}"

    def step_two(item: str) -> str:
        """Process an item (blocks the first time, so the process can be killed)."""
        record(f"two-start:{item}")
        if not marker.exists():
            marker.write_text("blocked", encoding="utf-8")
            time.sleep(BLOCK_SECONDS)
        record(f"two-done:{item}")
        return f"processed {item}"

    return [step_one, step_two]


def scripted_reply(messages: list[Any]) -> AIMessage:
    """Decide from the transcript alone, so a new process continues where the old stopped."""
    done = sum(isinstance(message, ToolMessage) for message in messages)
    if done == 0:
        return calls(tool_call("step_one", {"item": "alpha"}, id="call_one"))
    if done == 1:
        return calls(tool_call("step_two", {"item": "beta"}, id="call_two"))
    return AIMessage(content=ANSWER)


def build_graph(checkpointer: Any, workdir: Path) -> Any:
    model = ScriptedChatModel(
        replies=[scripted_reply], repeat_last=True, profile={"tool_calling": True}
    )
    return create_react_graph(
        model,
        make_tools(workdir),
        tool_mode="native",
        checkpointer=checkpointer,
        tool_timeout=BLOCK_SECONDS * 2,
    )


@contextmanager
def open_saver(backend: str, target: str) -> Iterator[Any]:
    if backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(target) as saver:
            yield saver
    elif backend == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as saver:
            saver.setup()
            yield saver
    else:
        raise SystemExit(f"unknown backend {backend!r}")


def main(argv: list[str]) -> int:
    command, backend, target, thread, workdir = argv
    config = {"configurable": {"thread_id": thread}}
    with open_saver(backend, target) as saver:
        graph = build_graph(saver, Path(workdir))
        if command == "run":
            inputs: Any = {"messages": [("user", "Store alpha, then process beta.")]}
        elif command == "resume":
            inputs = None
        else:
            raise SystemExit(f"unknown command {command!r}")
        # "sync" durability: each step's checkpoint is written before the next step starts.
        out = graph.invoke(inputs, config, durability="sync")
    print(
        json.dumps(
            {key: out.get(key) for key in ("status", "answer", "llm_calls", "error")},
            default=str,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
