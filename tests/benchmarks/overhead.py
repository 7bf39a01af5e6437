"""Framework overhead per model call, on a scripted zero-latency model.

Three contenders run the same conversation (N tool calls of one zero-latency tool, then
an answer) on the same scripted model: loopgraphs' ReAct in native mode, langchain's
``create_agent``, and a plain Python loop (``model.invoke`` + ``tool.invoke``); then the
first two again with the same three pass-through middleware (model hooks, a model-call
wrapper, a tool-call wrapper), the cost of the middleware path on each side. Time per
model call includes the scripted model itself, which is the same for all three. Each
repeat times every contender back to back (in a rotating order), so every ratio pairs
figures measured side by side.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from loopgraphs import create_react_graph
from tests.benchmarks.common import lookup_tool, ratio_spread, scripted, spread
from tests.benchmarks.scenarios import QUESTION, build, loop_scenarios
from tests.support.fakes import calls, tool_call

Runner = Callable[[], Any]


def tool_script(n: int) -> Callable[[list[BaseMessage]], AIMessage]:
    """Call the tool until ``n`` results are in the conversation, then answer."""

    def reply(messages: list[BaseMessage]) -> AIMessage:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < n:
            return calls(tool_call("lookup", {"key": f"k{done}"}, id=f"call_{done}"))
        return AIMessage("done")

    return reply


def plain_loop(model: Any, tool: BaseTool) -> tuple[Runner, Runner]:
    """The baseline: a while loop around ``invoke``, sync and async."""
    bound = model.bind_tools([tool])

    def run() -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(QUESTION)]
        while True:
            reply = bound.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return messages
            for call in reply.tool_calls:
                result = tool.invoke(call["args"])
                messages.append(ToolMessage(result, tool_call_id=call["id"], name=call["name"]))

    async def arun() -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(QUESTION)]
        while True:
            reply = await bound.ainvoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return messages
            for call in reply.tool_calls:
                result = await tool.ainvoke(call["args"])
                messages.append(ToolMessage(result, tool_call_id=call["id"], name=call["name"]))

    return run, arun


class PassHooks(AgentMiddleware):
    """``before_model`` and ``after_model`` that change nothing."""

    def before_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_model(self, state: Any, runtime: Any) -> None:
        return None


class PassModelCall(AgentMiddleware):
    """A ``wrap_model_call`` that hands the request on."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


class PassToolCall(AgentMiddleware):
    """A ``wrap_tool_call`` that hands the call on."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def pass_through() -> list[AgentMiddleware]:
    """Three middleware that change nothing: what the middleware path itself costs."""
    return [PassHooks(), PassModelCall(), PassToolCall()]


def graph_runners(graph: Any, before: Callable[[], None] | None = None) -> tuple[Runner, Runner]:
    inputs = {"messages": [("user", QUESTION)]}

    def run() -> Any:
        if before:
            before()
        return graph.invoke(inputs)

    async def arun() -> Any:
        if before:
            before()
        return await graph.ainvoke(inputs)

    return run, arun


def time_runs(runner: Runner, runs: int, *, is_async: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for ``runs`` sequential runs."""

    async def many() -> None:
        for _ in range(runs):
            await runner()

    wall, cpu = time.perf_counter(), time.process_time()
    if is_async:
        asyncio.run(many())
    else:
        for _ in range(runs):
            runner()
    return time.perf_counter() - wall, time.process_time() - cpu


def calibrate(runner: Runner, target: float, *, is_async: bool, cap: int = 2000) -> int:
    """Runs needed for one timing of about ``target`` seconds."""
    once = max(time_runs(runner, 3, is_async=is_async)[0] / 3, 1e-6)
    return max(3, min(cap, int(target / once)))


def measure(
    contenders: dict[str, tuple[Runner, Runner]],
    calls_per_run: dict[str, int],
    *,
    repeats: int,
    target: float,
    is_async: bool,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """µs per model call for each contender, one value per repeat: (CPU, wall)."""
    index = 1 if is_async else 0
    runs = {
        name: calibrate(pair[index], target, is_async=is_async) for name, pair in contenders.items()
    }
    names = list(contenders)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        gc.collect()
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            seconds, used = time_runs(contenders[name][index], runs[name], is_async=is_async)
            calls = runs[name] * calls_per_run[name]
            wall[name].append(1e6 * seconds / calls)
            cpu[name].append(1e6 * used / calls)
    return cpu, wall


def check_calls(run: Runner, expected: int, model: Any) -> None:
    """Run once and check the conversation took the expected number of model calls."""
    before = model.call_count
    run()
    made = model.call_count - before
    if made != expected:
        raise AssertionError(f"expected {expected} model calls per run, got {made}")


def framework_overhead(
    tool_calls: list[int], *, repeats: int, target: float, modes: tuple[str, ...]
) -> list[dict[str, Any]]:
    """loopgraphs ReAct vs create_agent vs a plain loop, for each N in ``tool_calls``,
    without middleware and with the three of ``pass_through`` on both sides (the plain
    loop has none)."""
    from langchain.agents import create_agent

    rows = []
    for n, middleware in ((n, count) for count in (0, 3) for n in tool_calls):
        model = scripted(tool_script(n))
        tool = lookup_tool()
        extra = pass_through() if middleware else []
        ours = create_react_graph(
            model, [tool], tool_mode="native", max_iterations=n + 2, middleware=extra
        )
        theirs = create_agent(model, [tool], middleware=extra)
        contenders = {
            "loopgraphs": graph_runners(ours),
            "create_agent": graph_runners(theirs),
            "plain": plain_loop(model, tool),
        }
        for name, (run, _) in contenders.items():
            try:
                check_calls(run, n + 1, model)
            except AssertionError as error:
                raise AssertionError(f"{name}, N={n}: {error}") from error
        for mode in modes:
            per_call, wall = measure(
                contenders,
                dict.fromkeys(contenders, n + 1),
                repeats=repeats,
                target=target,
                is_async=mode == "ainvoke",
            )
            rows.append(
                {
                    "tool_calls": n,
                    "middleware": middleware,
                    "model_calls": n + 1,
                    "mode": mode,
                    "us_per_call": {name: spread(v) for name, v in per_call.items()},
                    "wall_us_per_call": {name: spread(v) for name, v in wall.items()},
                    "wall_ratio_vs_create_agent": ratio_spread(
                        wall["loopgraphs"], wall["create_agent"]
                    ),
                    "ratio_vs_create_agent": ratio_spread(
                        per_call["loopgraphs"], per_call["create_agent"]
                    ),
                    "ratio_vs_plain": ratio_spread(per_call["loopgraphs"], per_call["plain"]),
                    "create_agent_vs_plain": ratio_spread(
                        per_call["create_agent"], per_call["plain"]
                    ),
                }
            )
    return rows


def loops_overhead(*, repeats: int, target: float) -> list[dict[str, Any]]:
    """Every loop's scripted scenario: µs per model call, next to a plain loop making the
    same number of model calls and tool calls, measured in the same repeats."""
    rows = []
    for scenario in loop_scenarios():
        model = scripted(scenario.reply, profile=scenario.profile)
        graph = build(scenario, [lookup_tool()], model)
        runner = graph_runners(graph, before=scenario.reset)
        scenario.reset()
        out = graph.invoke({"messages": [("user", QUESTION)]})
        model_calls = int(out["llm_calls"])
        if scenario.calls and model_calls != scenario.calls:
            raise AssertionError(
                f"{scenario.name}: expected {scenario.calls} model calls, got {model_calls}"
            )
        baseline_model = scripted(tool_script(max(model_calls - 1, 0)))
        baseline = plain_loop(baseline_model, lookup_tool())
        per_call, wall = measure(
            {"loop": runner, "plain": baseline},
            {"loop": model_calls, "plain": model_calls},
            repeats=repeats,
            target=target,
            is_async=False,
        )
        rows.append(
            {
                "loop": scenario.loop,
                "scenario": scenario.name,
                "model_calls": model_calls,
                "status": out["status"],
                "us_per_call": spread(per_call["loop"]),
                "plain_us_per_call": spread(per_call["plain"]),
                "ratio_vs_plain": ratio_spread(per_call["loop"], per_call["plain"]),
                "wall_us_per_call": spread(wall["loop"]),
            }
        )
    return rows
