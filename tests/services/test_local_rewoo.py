"""ReWOO on the real embedded llama.cpp model (SmolLM2-135M), in every tool mode."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from loopgraphs.graphs.rewoo import LOOP, create_rewoo_graph
from loopgraphs.graphs.rewoo.state import call_budget
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.nodes.tool_loop import check_history
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration

QUESTION = "In which place was the founder of Quillmark Instruments born?"


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_rewoo_ends_within_its_budget(local_server, local_model, monkeypatch, mode):
    """The model's plans and answers vary; the loop's rules do not: at most 4 model calls
    (the plan and the answer, each asked once more), whatever the plan holds; every step
    that ran has its evidence and every call its result; the answer leaves no call open."""
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    graph = create_rewoo_graph(
        local_model, [calculator, make_search_tool()], tool_mode=mode, max_steps=3
    )
    out = graph.invoke({"messages": [("user", QUESTION)]})
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert 1 <= out["llm_calls"] <= call_budget(LOOP.defaults) == 4
    assert isinstance(out["answer"], str)
    if out["status"] == "completed":
        assert out["answer"].strip()
    assert len(out["plan"]) <= 3 and len(out["evidence"]) == len(out["plan"])
    assert all(step["tool"] for step in out["plan"])
    check_history(out["messages"])
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    waves = [m for m in replies if m.tool_calls]
    assert sum(len(m.tool_calls) for m in waves) <= len(out["plan"])
    assert replies and not replies[-1].tool_calls
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
