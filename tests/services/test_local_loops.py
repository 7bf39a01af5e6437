"""Every loop on the real embedded llama.cpp model (SmolLM2-135M) in json mode."""

from __future__ import annotations

import pytest

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs import registry
from loopgraphs.nodes import most_calls
from loopgraphs.toolkits import calculator, make_search_tool
from tests.support.requests import RequestEnds

pytestmark = pytest.mark.integration

SMALL_BUDGETS = {
    "cot": {},
    "react": {"max_iterations": 2},
    "plan_execute": {"max_steps": 1, "max_step_iterations": 1},
    "reflexion": {"max_reflections": 1, "max_iterations": 1},
    "self_ask": {"max_follow_ups": 1},
    "critic": {"max_critique_rounds": 1},
    "tot": {"n_branches": 2, "beam_width": 1, "max_depth": 1},
    "rewoo": {"max_steps": 2},
    "lats": {"n_candidates": 2, "max_rollouts": 1},
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_runs_on_the_local_model(local_server, local_model, monkeypatch, name):
    """Each loop ends within its budget on the embedded model, taking the paths it takes
    for ``load_model("local")`` (the session server is the embedded one)."""
    from loopgraphs import prompts
    from loopgraphs.graphs import plan_execute, reflexion, tot
    from loopgraphs.graphs.lats.state import call_budget as lats_budget
    from loopgraphs.graphs.tot.state import call_budget as tot_budget
    from loopgraphs.models import local_server as embedded_servers
    from loopgraphs.nodes.tool_loop import check_history

    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    tools = [] if name not in registry.TOOL_LOOPS else [calculator, make_search_tool()]
    options = dict(SMALL_BUDGETS[name])
    if tools:
        options["tool_mode"] = "json"
    graph = build_loop(name, local_model, tools, **options)
    asked = RequestEnds()
    out = graph.invoke({"messages": [("user", "What is 6 * 7?")]}, {"callbacks": [asked]})
    # The model's answers vary; what each loop may end with and spend does not. An error
    # is never acceptable here: the server is local and every reply is handled.
    both = ("completed", "max_iterations")
    statuses, budget = {
        "cot": (both, 2),  # one more call when the sample is cut at the token cap
        "react": (both, 2 + 1),  # max_iterations, then one final-answer request
        "plan_execute": (
            ("completed",),  # a step that runs out is recorded and the plan goes on
            most_calls(plan_execute.LOOP, SMALL_BUDGETS[name]),
        ),
        "reflexion": (both, most_calls(reflexion.LOOP, SMALL_BUDGETS[name])),
        "self_ask": (both, 1 + 1),  # max_follow_ups + 1
        "critic": (("completed",), 1 + 2 * 1),  # the rounds running out still complete
        "rewoo": (both, 2 + 2),  # the plan and the answer, each asked once more
        "tot": (both, tot_budget(tot.LOOP.resolve(SMALL_BUDGETS["tot"]))),
        "lats": (both, lats_budget(SMALL_BUDGETS["lats"])),
    }[name]
    assert out["status"] in statuses, out.get("error")
    assert 1 <= out["llm_calls"] <= budget
    assert isinstance(out["answer"], str)
    if out["status"] == "completed":
        assert out["answer"].strip()
    usage = out["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert 0 <= usage["cached_tokens"] <= usage["input_tokens"]
    check_history(out["messages"])  # no tool call is left without its result
    forced = [text for text in asked.texts if text == prompts.FORCE_FINAL_ANSWER]
    if name == "cot":
        assert out["llm_calls"] in (1, 2)  # a cut sample is asked once more
    if name == "react":
        # Out of turns means all of them were used, and the last call asked for the answer.
        # A reply cut twice, or twice saying nothing, also ends "max_iterations", with no
        # final-answer request.
        again = (prompts.SHORT_ANSWER, prompts.NO_ANSWER)
        cut = [text for text in asked.texts if text in again]
        ran_out = out["status"] == "max_iterations" and not cut
        assert len(forced) == int(ran_out) and (out["llm_calls"] == budget or not ran_out)
    if name == "self_ask" and out["status"] == "max_iterations":
        assert out["llm_calls"] == budget  # the follow-up, then the forced answer
    if name == "reflexion":
        assert out["episode"] == 1 and out["answer"] == out["episode_answers"][-1]
        (verdict,) = out["evaluations"]
        assert verdict["satisfactory"] == (out["status"] == "completed")
