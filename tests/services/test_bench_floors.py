"""Section 5's floor graphs: they hold the conversation every contender holds, and the
keyed one returns what ReAct returns, so their counts stay comparable."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from loopgraphs import create_react_graph
from tests.benchmarks.common import lookup_tool, scripted
from tests.benchmarks.floors import FLOORS, floor_graph
from tests.benchmarks.overhead import QUESTION, tool_script
from tests.benchmarks.report import instruction_lines

N = 3
INPUT = {"messages": [("user", QUESTION)]}


def react_result(asynchronous: bool) -> dict:
    graph = create_react_graph(
        scripted(tool_script(N)), [lookup_tool()], tool_mode="native", max_iterations=N + 2
    )
    return asyncio.run(graph.ainvoke(INPUT)) if asynchronous else graph.invoke(INPUT)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("name", FLOORS)
def test_a_floor_graph_holds_the_benchmark_conversation(name: str, asynchronous: bool) -> None:
    model = scripted(tool_script(N))
    graph = floor_graph(name, model, [lookup_tool()])
    result = asyncio.run(graph.ainvoke(INPUT)) if asynchronous else graph.invoke(INPUT)

    assert model.call_count == N + 1
    messages = result["messages"]
    assert [type(m) for m in messages[1:]] == [AIMessage, ToolMessage] * N + [AIMessage]
    assert all(m.status == "success" for m in messages if isinstance(m, ToolMessage))
    assert messages[-1].content == "done"
    if name == "langgraph":
        assert set(result) == {"messages"}
        return
    react = react_result(asynchronous)
    assert set(result) == set(react)
    assert {key: result[key] for key in ("status", "answer", "llm_calls", "tool_mode")} == {
        key: react[key] for key in ("status", "answer", "llm_calls", "tool_mode")
    }


def test_an_unknown_floor_is_named() -> None:
    with pytest.raises(ValueError, match=r"'bare'.*langgraph, langgraph_keys"):
        floor_graph("bare", scripted(tool_script(1)), [lookup_tool()])


def test_the_floors_are_shown_in_the_rows_without_middleware() -> None:
    def row(middleware: int, floors: dict[str, float] | None) -> dict:
        spread = {"median": 5e6, "min": 5e6, "max": 5e6, "n": 1}
        data = {
            "tool_calls": 5,
            "middleware": middleware,
            "mode": "invoke",
            "batches": 1,
            "runs_per_batch": 1,
            "per_call": {"loopgraphs": spread, "create_agent": spread},
            "ratio_vs_create_agent": 1.0,
        }
        return {**data, "floors_vs_create_agent": floors} if floors is not None else data

    floors = {"langgraph": 0.9071, "langgraph_keys": 0.9604}
    lines = instruction_lines({"rows": [row(0, floors), row(3, None)]})
    table = [line for line in lines if line.startswith("| 5 |")]
    assert table[0].endswith("| 1.000× | 0.907× | 0.960× |")
    assert table[1].endswith("| 1.000× | - | - |")
