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
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import build_loop
from tests.benchmarks.common import lookup_tool, ratio_spread, scripted, spread
from tests.support.fakes import calls, tool_call

WINDOWS: dict[str, tuple[int, int]] = {
    "1-5": (1, 5),
    "28-32": (28, 32),
    "56-60": (56, 60),
    "196-200": (196, 200),
}
GROWTH_LOOPS = ("react", "plan_execute", "reflexion", "self_ask", "critic")
ANSWER = "So the final answer is: done.\nFINAL ANSWER: done"


def asked_schema(messages: Sequence[BaseMessage]) -> str:
    """What a loop's structured request asks for, read from its words (the scripted model
    sees no schema): a plan, a verdict, a critique, or nothing."""
    text = " ".join(str(m.content) for m in messages[-2:]).lower()
    if "numbered steps" in text or ("steps" in text and "plan" in text):
        return "plan"
    if "satisfactory" in text:
        return "verdict"
    if "claim" in text and "draft" in text:
        return "critique"
    return ""


def turn_reply(messages: list[BaseMessage]) -> AIMessage:
    """Each turn: call the tool once, then answer; a loop's structured requests get the
    object that lets it finish (a one-step plan, a satisfied verdict, a verified draft)."""
    wanted = asked_schema(messages)
    if wanted == "plan":
        return AIMessage(json.dumps({"steps": ["answer the question"]}))
    if wanted == "verdict":
        return AIMessage(json.dumps({"satisfactory": True, "feedback": ""}))
    if wanted == "critique":
        return AIMessage(json.dumps({"verified": True, "claims": []}))
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(ANSWER)
    follow = "Are follow up questions needed here? Yes.\nFollow up: what is it?"
    return calls(tool_call("lookup", {"key": f"k{len(messages)}"}), content=follow)


Contender = Callable[[Any], Any]


def contenders(loop: str) -> dict[str, Contender]:
    """``create_agent`` and a loop, each built for a checkpointer."""

    def agent(checkpointer: Any) -> Any:
        return create_agent(scripted(turn_reply), [lookup_tool()], checkpointer=checkpointer)

    def ours(checkpointer: Any) -> Any:
        model = scripted(turn_reply)
        return build_loop(
            loop, model, [lookup_tool()], tool_mode="native", checkpointer=checkpointer
        )

    return {"create_agent": agent, loop: ours}


def new_checkpointer(kind: str, folder: Path, name: str) -> Any:
    if kind == "memory":
        return InMemorySaver()
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(folder / f"{name}.sqlite", check_same_thread=False)
    return SqliteSaver(connection)


def thread_turns(
    graphs: dict[str, Any], turns: int, mode: str
) -> dict[str, list[tuple[float, int]]]:
    """Every contender's ``turns`` turns on a thread of its own, turn by turn side by side:
    per turn, its CPU seconds and the checkpoints it wrote."""
    loop = asyncio.new_event_loop()
    costs: dict[str, list[tuple[float, int]]] = {name: [] for name in graphs}
    names = list(graphs)
    try:
        for index in range(turns):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                graph = graphs[name]
                config = {"configurable": {"thread_id": name}}
                question = {"messages": [HumanMessage(f"Question {index}: look k{index} up.")]}
                before = len(list(graph.checkpointer.list(config))) if index % 10 == 0 else -1
                gc.collect()
                start = time.process_time()
                if mode == "invoke":
                    out = graph.invoke(question, config)
                else:
                    out = loop.run_until_complete(graph.ainvoke(question, config))
                spent = time.process_time() - start
                written = len(list(graph.checkpointer.list(config))) - before if before >= 0 else -1
                assert not out.get("status") or out["status"] == "completed", out.get("error")
                costs[name].append((spent, written))
    finally:
        loop.close()
    return costs


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
    """The chat-turn section: ReAct against ``create_agent`` per window, mode and
    checkpointer, and every chat loop's growth from its first turns to its last."""
    results: dict[str, Any] = {"react": {}, "growth": {}, "checkpoints_per_turn": {}}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for kind in checkpointers:
            for mode in modes:
                ratios: dict[str, list[float]] = {name: [] for name in WINDOWS}
                cpu: dict[str, dict[str, list[float]]] = {"react": {}, "create_agent": {}}
                for repeat in range(repeats):
                    made = contenders("react")
                    graphs = {
                        name: build(
                            new_checkpointer(kind, folder, f"{name}-{kind}-{mode}-{repeat}")
                        )
                        for name, build in made.items()
                    }
                    length = growth_turns if repeat == 0 else turns
                    costs = thread_turns(graphs, length, mode)
                    for label, (first, last) in WINDOWS.items():
                        if last > length:
                            continue
                        ours = window(costs["react"], first, last)
                        theirs = window(costs["create_agent"], first, last)
                        ratios[label].append(ours / theirs)
                        cpu["react"].setdefault(label, []).append(ours)
                        cpu["create_agent"].setdefault(label, []).append(theirs)
                    if repeat == 0:
                        results["checkpoints_per_turn"][f"{kind}/{mode}"] = {
                            name: sorted({w for _, w in costs[name] if w >= 0}) for name in costs
                        }
                results["react"][f"{kind}/{mode}"] = {
                    label: {
                        "ratio": spread(values),
                        "react_ms": spread([v * 1000 for v in cpu["react"][label]]),
                        "create_agent_ms": spread([v * 1000 for v in cpu["create_agent"][label]]),
                    }
                    for label, values in ratios.items()
                    if values
                }
        for loop in growth_loops:
            made = contenders(loop)
            graphs = {name: build(InMemorySaver()) for name, build in made.items()}
            costs = thread_turns(graphs, turns, "invoke")
            early = {name: window(costs[name], 1, 5) for name in costs}
            late = {name: window(costs[name], turns - 4, turns) for name in costs}
            results["growth"][loop] = {
                "early_ms": {name: round(value * 1000, 3) for name, value in early.items()},
                "late_ms": {name: round(value * 1000, 3) for name, value in late.items()},
                "late_over_early": {name: late[name] / early[name] for name in costs},
            }
    return results


__all__ = ["chat_turns", "ratio_spread", "turn_reply"]
