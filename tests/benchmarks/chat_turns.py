"""A chat turn in a long checkpointed thread: CPU per turn against ``create_agent``'s.

A chat app never runs a loop once: LangGraph Server, and every app with memory,
checkpoints every step of every turn, and a turn is a question, a tool call or two and an
answer, in a thread that grows. Each contender here holds one thread on a checkpointer
(``InMemorySaver``, or ``SqliteSaver`` on a file) and answers one question per turn on the
same scripted zero-latency model: the first reply of a turn calls one zero-latency tool,
the second answers. Both contenders of a pair take their turn ``k`` back to back, in a
rotating order, so a ratio pairs figures measured side by side; each figure is the CPU
time of the process (``time.process_time``: every thread, the tool threads included)
over one turn, and a window's figure the median of its turns. A repeat starts two new
threads.

Windows: turns 1-5, 28-32 and 56-60 of a 60-turn thread, and turns 196-200 of a 200-turn
one (the growth). Beside ReAct, the other loops a chat uses most (Plan-and-Execute,
Reflexion, Self-Ask, CRITIC) are measured for their growth only: how much a late turn
costs against an early one, next to ``create_agent``'s.

Each run also records, per turn, the supersteps it took and the checkpoints it wrote.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import build_loop
from tests.benchmarks.common import lookup_tool, scripted, spread
from tests.support.loop_scripts import tool_then_answer

WINDOWS: dict[str, tuple[int, int]] = {
    "1-5": (1, 5),
    "28-32": (28, 32),
    "56-60": (56, 60),
    "196-200": (196, 200),
}
GROWTH_LOOPS = ("react", "plan_execute", "reflexion", "self_ask", "critic")
ANSWER = "done"


class Turns:
    """A scripted model's replies for a thread: each turn, the loop's own script of one
    call of ``lookup`` and an answer (``tests.support.loop_scripts``), over and over."""

    def __init__(self, loop: str) -> None:
        self.script = tool_then_answer(loop, "native", "lookup", {"key": "k"}, ANSWER)
        self.calls = 0

    def __call__(self, messages: list[BaseMessage]) -> Any:
        reply = self.script[self.calls % len(self.script)]
        self.calls += 1
        return reply


Contender = Callable[[Any], Any]


def contenders(loop: str) -> dict[str, Contender]:
    """``create_agent`` and a loop, each built for a checkpointer."""

    def agent(checkpointer: Any) -> Any:
        model = scripted(Turns("react"))
        return create_agent(model, [lookup_tool()], checkpointer=checkpointer)

    def ours(checkpointer: Any) -> Any:
        model = scripted(Turns(loop))
        return build_loop(
            loop, model, [lookup_tool()], tool_mode="native", checkpointer=checkpointer
        )

    return {"create_agent": agent, loop: ours}


def new_checkpointer(kind: str, mode: str, path: Path, loop: asyncio.AbstractEventLoop) -> Any:
    """A checkpointer of ``kind`` for ``mode``: ``InMemorySaver``, or a SQLite file
    (``SqliteSaver`` under ``invoke``, ``AsyncSqliteSaver`` on ``loop`` under ``ainvoke``)."""
    if kind == "memory":
        return InMemorySaver()
    if mode == "invoke":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def opened() -> AsyncSqliteSaver:  # the saver keeps the loop it is made on
        return AsyncSqliteSaver(await aiosqlite.connect(path))

    return loop.run_until_complete(opened())


def last_step(
    graph: Any, config: dict[str, Any], mode: str, loop: asyncio.AbstractEventLoop
) -> int:
    """The step of the thread's latest checkpoint (LangGraph numbers a thread's
    checkpoints one by one, its turns included)."""
    if mode == "invoke":
        snapshot = graph.get_state(config)
    else:
        snapshot = loop.run_until_complete(graph.aget_state(config))
    return int((snapshot.metadata or {}).get("step", -1))


def thread_turns(
    made: dict[str, Contender], turns: int, kind: str, mode: str, folder: Path
) -> dict[str, list[tuple[float, int]]]:
    """Every contender's ``turns`` turns on a thread of its own, turn by turn side by side
    in a rotating order: per turn, its CPU seconds and the checkpoints it wrote."""
    loop = asyncio.new_event_loop()
    costs: dict[str, list[tuple[float, int]]] = {name: [] for name in made}
    names = list(made)
    try:
        graphs = {
            name: build(new_checkpointer(kind, mode, folder / f"{name}.sqlite", loop))
            for name, build in made.items()
        }
        for index in range(turns):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                graph = graphs[name]
                config = {"configurable": {"thread_id": name}}
                question = {"messages": [HumanMessage(f"Question {index}: look k{index} up.")]}
                before = last_step(graph, config, mode, loop) if index else -2
                gc.collect()
                start = time.process_time()
                if mode == "invoke":
                    out = graph.invoke(question, config)
                else:
                    out = loop.run_until_complete(graph.ainvoke(question, config))
                spent = time.process_time() - start
                if out.get("status", "completed") != "completed":
                    raise RuntimeError(f"{name}, turn {index + 1}: {out.get('error')}")
                written = last_step(graph, config, mode, loop) - before
                costs[name].append((spent, written))
        for graph in graphs.values():
            close(graph.checkpointer, loop)
    finally:
        loop.close()
    return costs


def close(checkpointer: Any, loop: asyncio.AbstractEventLoop) -> None:
    """Close a SQLite checkpointer's connection."""
    connection = getattr(checkpointer, "conn", None)
    if connection is None:
        return
    result = connection.close()
    if asyncio.iscoroutine(result):
        loop.run_until_complete(result)


def window(costs: list[tuple[float, int]], first: int, last: int) -> float:
    return statistics.median(cost for cost, _ in costs[first - 1 : last])


def chat_turns(
    *,
    repeats: int = 3,
    turns: int = 60,
    growth_turns: int = 200,
    modes: Sequence[str] = ("invoke", "ainvoke"),
    checkpointers: Sequence[str] = ("memory", "sqlite"),
    growth_loops: Sequence[str] = GROWTH_LOOPS,
) -> dict[str, Any]:
    """The chat-turn section.

    Args:
        repeats: Threads per checkpointer and mode (the first one ``growth_turns`` long).
        turns: The length of the other threads, and of the growth loops' threads.
        growth_turns: The length of the first thread.
        modes: ``invoke`` and/or ``ainvoke``.
        checkpointers: ``memory`` and/or ``sqlite``.
        growth_loops: The loops whose growth is measured (each against ``create_agent``).

    Returns:
        ``react``: per checkpointer and mode, per window, ReAct's CPU per turn over
        ``create_agent``'s and both in milliseconds (median and spread over the repeats);
        ``checkpoints_per_turn``: the checkpoints each contender wrote per turn;
        ``growth``: per loop, its and ``create_agent``'s CPU per turn early and late in a
        thread, and the late window over the early one.
    """
    results: dict[str, Any] = {"react": {}, "checkpoints_per_turn": {}, "growth": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for kind in checkpointers:
            for mode in modes:
                key = f"{kind}/{mode}"
                ratios: dict[str, list[float]] = {}
                cpu: dict[str, dict[str, list[float]]] = {"react": {}, "create_agent": {}}
                for repeat in range(repeats):
                    folder = Path(scratch) / f"{kind}-{mode}-{repeat}"
                    folder.mkdir()
                    length = growth_turns if repeat == 0 else turns
                    costs = thread_turns(contenders("react"), length, kind, mode, folder)
                    for label, (first, last) in WINDOWS.items():
                        if last > length:
                            continue
                        ours = window(costs["react"], first, last)
                        theirs = window(costs["create_agent"], first, last)
                        ratios.setdefault(label, []).append(ours / theirs)
                        cpu["react"].setdefault(label, []).append(ours * 1000)
                        cpu["create_agent"].setdefault(label, []).append(theirs * 1000)
                    if repeat == 0:
                        results["checkpoints_per_turn"][key] = {
                            name: sorted({written for _, written in costs[name]}) for name in costs
                        }
                results["react"][key] = {
                    label: {
                        "ratio": spread(values),
                        "react_ms": spread(cpu["react"][label]),
                        "create_agent_ms": spread(cpu["create_agent"][label]),
                    }
                    for label, values in ratios.items()
                }
        for loop in growth_loops:
            folder = Path(scratch) / f"growth-{loop}"
            folder.mkdir()
            costs = thread_turns(contenders(loop), turns, "memory", "invoke", folder)
            early = {name: window(costs[name], 1, 5) * 1000 for name in costs}
            late = {name: window(costs[name], turns - 4, turns) * 1000 for name in costs}
            results["growth"][loop] = {
                "turns": turns,
                "early_ms": {name: round(value, 3) for name, value in early.items()},
                "late_ms": {name: round(value, 3) for name, value in late.items()},
                "late_over_early": {name: round(late[name] / early[name], 3) for name in costs},
            }
    return results


__all__ = ["chat_turns"]
