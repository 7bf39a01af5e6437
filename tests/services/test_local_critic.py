"""CRITIC on the real embedded llama.cpp model (SmolLM2-135M): a tool checks a claim."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from loopgraphs import create_critic_graph
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["json", "text"])
def test_small_model_checks_a_claim_with_a_tool_and_ends(
    local_server, local_model, monkeypatch, mode
):
    """The first critique names a claim for a tool by default, the run ends within its
    budget (one more call per cut reply asked again). (Its verdicts vary, so they are not
    pinned.)"""
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    graph = create_critic_graph(
        local_model, [calculator, make_search_tool()], tool_mode=mode, max_critique_rounds=1
    )
    claim = "Claim: Ines Caldrupe was born in Fenlow Reach. Is this true? If false, correct it."
    out = graph.invoke({"messages": [("user", claim)]})
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert out["claims"] and out["claims"][0]["tool"] in ("search", "calculator")
    assert out["claims"][0]["observation"].strip()
    assert 3 <= out["llm_calls"] <= 1 + 2 * 1 + 3  # draft, critique (+1 in text), revise, re-asks
    assert out["tool_mode"] == mode
    checks = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert checks and [r.tool_call_id for r in results] == [c["id"] for c in checks[0].tool_calls]
