"""LATS against the real embedded llama.cpp server (SmolLM2-135M)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from loopgraphs.graphs.lats import create_lats_graph
from loopgraphs.graphs.lats.state import call_budget
from loopgraphs.nodes.tool_loop import check_history
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration

SMALL = {"n_candidates": 2, "max_rollouts": 2}


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_lats_ends_within_its_budget(local_model, mode):
    graph = create_lats_graph(
        local_model, [calculator, make_search_tool()], tool_mode=mode, **SMALL
    )
    out = graph.invoke({"messages": [("user", "What is 12 * 7?")]})
    # The model's replies vary; the loop's rules do not: it ends within its budget with
    # an answer (a satisfactory one completes the run), its tree and its rollouts.
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert 1 <= out["llm_calls"] <= call_budget(SMALL)
    assert isinstance(out["answer"], str)
    if out["status"] == "completed":
        assert out["answer"].strip() and out["stop_reason"] in ("solved", "tool")
    assert 1 <= out["rollouts"] <= SMALL["max_rollouts"]
    assert out["stop_reason"] in ("solved", "max_rollouts", "exhausted", "budget", "tool")
    assert out["tree"][0]["parent"] == -1 and out["best_node"] < len(out["tree"])
    check_history(out["messages"])  # every call made has its result
    assert [m for m in out["messages"] if isinstance(m, HumanMessage)] == out["messages"][:1]
    assert isinstance(out["messages"][-1], AIMessage) and not out["messages"][-1].tool_calls
    assert out["tool_mode"] == mode
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
