"""The benchmark runner in its tiny configuration: every section is written with numbers."""

from __future__ import annotations

import json
import math
import os
import shutil

from loopgraphs.graphs.registry import LOOPS
from tests.benchmarks import run
from tests.benchmarks.floors import FLOORS
from tests.benchmarks.local_model import reused


def is_spread(value) -> bool:
    return (
        isinstance(value, dict)
        and all(isinstance(value[k], (int, float)) for k in ("median", "min", "max"))
        and value["min"] <= value["median"] <= value["max"]
        and all(math.isfinite(value[k]) and value[k] > 0 for k in ("median", "min", "max"))
    )


def test_quick_benchmarks_write_every_section(tmp_path):
    assert run.main(["--quick", "--no-local", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert {"meta", "overhead", "concurrency", "economy", "local", "instructions"} <= set(data)
    assert data["meta"]["machine"]["cores"] >= 1 and data["local"] == {"skipped": "--no-local"}
    assert data["evaluation"] == {"skipped": "--no-local"}

    react = data["overhead"]["react_vs_alternatives"]
    assert [(row["middleware"], row["tool_calls"]) for row in react] == [
        (0, 1),
        (0, 5),
        (3, 1),
        (3, 5),
    ]
    for row in react:
        assert set(row["us_per_call"]) == {"loopgraphs", "create_agent", "plain"}
        assert all(is_spread(row[key]) for key in ("ratio_vs_create_agent", "ratio_vs_plain"))
    assert [row["loop"] for row in data["overhead"]["loops"]] == list(LOOPS)
    assert all(is_spread(row["ratio_vs_plain"]) for row in data["overhead"]["loops"])

    scenarios = {row["scenario"].split(",")[0].split(" ")[0] for row in data["concurrency"]}
    assert scenarios == {"tot", "critic", "react"}
    for row in data["concurrency"]:
        assert is_spread(row["ratio_wall_vs_sequential"])
        if "per_branch" in row["scenario"]:  # 31 calls on a critical path of 7
            assert row["ratio_wall_vs_sequential"]["median"] < 0.7
        if "target" in row:
            assert isinstance(row["met"], bool)
    tool_rows = [r for r in data["concurrency"] if r["tool_calls"]]
    assert tool_rows and all(is_spread(r["ratio_tool_phase_vs_slowest_tool"]) for r in tool_rows)

    economy = data["economy"]
    assert [row["loop"] for row in economy["loops"]] == list(LOOPS)
    for row in economy["loops"] + economy["tot"]:
        assert row["status"] == "completed" and row["model_calls"] >= 1
        assert row["model_calls"] == row["model_calls_seen_by_model"]
        if row["budget"]:
            assert row["model_calls"] <= row["budget"]
    seeds = {row["scenario"]: row for row in economy["tot"]}
    assert seeds["tot sample/per_branch b=3 w=1 d=3"]["model_calls"] == 3 * 3 * 2 + 1
    assert seeds["tot propose/batched b=3 w=1 d=3"]["model_calls"] <= 2 * 3 + 1

    counted = data["instructions"]
    if shutil.which("valgrind"):
        [row] = counted["rows"]
        assert (row["tool_calls"], row["middleware"], row["mode"]) == (1, 0, "invoke")
        assert set(row["per_call"]) == {"loopgraphs", "create_agent", *FLOORS}
        assert all(is_spread(spread) for spread in row["per_call"].values())
        # All run the same scripted model; the framework's part is not ten times either's.
        assert 0.1 < row["ratio_vs_create_agent"] < 10
        floors = row["floors_vs_create_agent"]
        assert set(floors) == set(FLOORS) and all(0.1 < value < 10 for value in floors.values())
        # The keys cost LangGraph something: the keyed floor counts more than the bare one.
        assert floors["langgraph"] < floors["langgraph_keys"]
    else:
        assert "valgrind" in counted["skipped"]

    turns = data["chat_turns"]
    assert set(turns["react"]) == {"memory/invoke", "sqlite/invoke"}
    for windows in turns["react"].values():
        figure = windows["1-5"]
        assert all(is_spread(figure[key]) for key in ("ratio", "react_ms", "create_agent_ms"))
    for per in turns["checkpoints_per_turn"].values():
        assert set(per) == {"react", "create_agent"} and all(per.values())
    assert set(turns["growth"]) == {"react", "plan_execute", "reflexion", "self_ask", "critic"}
    for loop, row in turns["growth"].items():
        assert set(row["early_ms"]) == set(row["late_ms"]) == {loop, "create_agent"}

    markdown = (tmp_path / "results.md").read_text()
    assert "scripted model" in markdown and f"{os.cpu_count()} cores" in markdown
    assert "| ReAct / create_agent, CPU µs per model call, N=1 (invoke) |" in markdown
    assert "## 5. Instructions per model call" in markdown
    assert "## 7. Chat turns in a long checkpointed thread" in markdown
    assert "| ReAct / create_agent, CPU per chat turn, turns 1-5" in markdown


def test_reuse_counts_what_the_previous_call_left_in_the_cache():
    def usage(prompt, output, cached):
        details = {"cache_read": cached}
        return {"input_tokens": prompt, "output_tokens": output, "input_token_details": details}

    calls = [usage(700, 20, 0), usage(1000, 25, 719), {}, usage(1300, 20, 1024)]
    # The second call could reuse 720 tokens (read 719); the failed third call has no
    # usage, so neither the pair before nor the pair after it counts.
    assert reused(calls) == (719, 720)
    assert reused([usage(900, 30, 0), usage(800, 10, 500)]) == (500, 800)
