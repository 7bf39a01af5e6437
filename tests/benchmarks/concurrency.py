"""Wall time of concurrent work against the sum of its latencies.

The scripted model waits ``delay`` seconds per call and every tool call sleeps ``delay``
seconds, so a run's sequential cost is known exactly: (model calls + tool calls) × delay.
Runs are timed under ``invoke`` (threads) and ``ainvoke`` (asyncio).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.messages import AIMessage

from loopgraphs import create_react_graph
from loopgraphs.graphs.registry import build_loop
from tests.benchmarks.common import Script, TimedTools, ratio_spread, scripted, spread
from tests.benchmarks.scenarios import QUESTION, critic_scenario, tot_scenario
from tests.support.fakes import calls, tool_call

PARALLEL_TOOLS = 4
CRITIC_CLAIMS = 4


def run_once(graph: Any, *, is_async: bool) -> tuple[dict[str, Any], float]:
    inputs = {"messages": [("user", QUESTION)]}
    start = time.perf_counter()
    out = asyncio.run(graph.ainvoke(inputs)) if is_async else graph.invoke(inputs)
    return out, time.perf_counter() - start


def measure(
    label: str,
    graph: Any,
    *,
    delay: float,
    tool_calls: int,
    repeats: int,
    modes: tuple[str, ...],
    reset: Any = None,
    tools: TimedTools | None = None,
    critical_path: int,
    target: tuple[str, float] | None,
) -> list[dict[str, Any]]:
    """Time ``repeats`` runs per mode; the ratio divides each wall time by that run's
    sequential sum of latencies."""
    rows = []
    for mode in modes:
        walls, sequential, phases, slowest = [], [], [], []
        model_calls = 0
        for _ in range(repeats):
            if reset:
                reset()
            if tools:
                tools.reset()
            out, wall = run_once(graph, is_async=mode == "ainvoke")
            if out.get("status") != "completed":
                raise AssertionError(f"{label}: run ended with {out.get('status')}")
            model_calls = int(out["llm_calls"])
            walls.append(wall)
            sequential.append((model_calls + tool_calls) * delay)
            if tools and tools.spans:
                span, longest = tools.phase()
                phases.append(span)
                slowest.append(longest)
        row: dict[str, Any] = {
            "scenario": label,
            "mode": mode,
            "model_calls": model_calls,
            "tool_calls": tool_calls,
            "delay_s": delay,
            "wall_s": spread(walls),
            "sequential_s": spread(sequential),
            "ratio_wall_vs_sequential": ratio_spread(walls, sequential),
            "ideal_ratio": critical_path / (model_calls + tool_calls),
        }
        if phases:
            row["tool_phase_s"] = spread(phases)
            row["ratio_tool_phase_vs_slowest_tool"] = ratio_spread(phases, slowest)
        if target:
            key, limit = target
            row["target"] = {"figure": key, "max": limit}
            row["met"] = row[key]["median"] <= limit
        rows.append(row)
    return rows


def concurrency(*, delay: float, repeats: int, modes: tuple[str, ...]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    # Tree-of-Thoughts, one candidate per call and one scoring call per candidate.
    b, w, d = 3, 2, 3
    for generation, scoring in (("sample", "per_branch"), ("propose", "batched")):
        scenario = tot_scenario(
            n_branches=b, beam_width=w, max_depth=d, scoring=scoring, generation=generation
        )
        model = scripted(scenario.reply, profile=None, delay=delay)
        graph = build_loop("tot", model, (), **scenario.options)
        default = generation == "propose"
        rows += measure(
            f"tot {generation}/{scoring} b={b} w={w} d={d}" + (" (default)" if default else ""),
            graph,
            delay=delay,
            tool_calls=0,
            repeats=repeats,
            modes=modes,
            critical_path=2 * d + 1,  # expand + score per level, then the final answer
            target=None if default else ("ratio_wall_vs_sequential", 1 / b),
        )

    # CRITIC: one critique listing 4 claims, each verified by its own slow tool.
    timed = TimedTools(delay)
    names = tuple(f"source_{i}" for i in range(CRITIC_CLAIMS))
    scenario = critic_scenario(claims=CRITIC_CLAIMS, tool_names=names)
    model = scripted(scenario.reply, delay=delay)
    graph = build_loop("critic", model, [timed.make(n) for n in names], tool_mode="native")
    rows += measure(
        f"critic, {CRITIC_CLAIMS} claims",
        graph,
        delay=delay,
        tool_calls=CRITIC_CLAIMS,
        repeats=repeats,
        modes=modes,
        reset=scenario.reset,
        tools=timed,
        critical_path=scenario.calls + 1,  # draft, critique, checks, revise, critique
        target=("ratio_tool_phase_vs_slowest_tool", 1.3),
    )

    # ReAct: one reply asking for 4 tool calls at once.
    timed = TimedTools(delay)
    names = tuple(f"source_{i}" for i in range(PARALLEL_TOOLS))
    request = calls(*(tool_call(n, {"key": f"k{i}"}, id=f"call_{i}") for i, n in enumerate(names)))
    script = Script([request, AIMessage("all four looked up")])
    model = scripted(script, delay=delay)
    graph = create_react_graph(model, [timed.make(n) for n in names], tool_mode="native")
    rows += measure(
        f"react, {PARALLEL_TOOLS} parallel tool calls",
        graph,
        delay=delay,
        tool_calls=PARALLEL_TOOLS,
        repeats=repeats,
        modes=modes,
        reset=script.reset,
        tools=timed,
        critical_path=3,  # model, tools, model
        target=("ratio_tool_phase_vs_slowest_tool", 1.3),
    )
    return rows
