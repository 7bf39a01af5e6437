"""Every loop on the real embedded llama.cpp model (SmolLM2-135M) in json mode."""

from __future__ import annotations

import pytest

from loopgraphs import LOOPS, build_loop
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration

SMALL_BUDGETS = {
    "cot": {},
    "react": {"max_iterations": 2},
    "plan_execute": {"max_steps": 1, "max_step_iterations": 1},
    "reflexion": {"max_reflections": 1, "max_iterations": 1},
    "self_ask": {"max_follow_ups": 1},
    "critic": {"max_critique_rounds": 1},
    "tot": {"n_branches": 2, "beam_width": 1, "max_depth": 1},
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_runs_on_the_local_model(local_model, name):
    tools = [] if name in ("cot", "tot") else [calculator, make_search_tool()]
    options = dict(SMALL_BUDGETS[name])
    if tools:
        options["tool_mode"] = "json"
    graph = build_loop(name, local_model, tools, **options)
    out = graph.invoke({"messages": [("user", "What is 6 * 7?")]})
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert out["llm_calls"] >= 1
    assert out["usage"]["input_tokens"] > 0
