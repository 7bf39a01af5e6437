"""Model calls and tokens per loop on fixed scripted scenarios, next to the formulas.

Counts are exact (the scripted model is deterministic); tokens are the scripted model's
estimate (characters / 4 of every prompt and reply), so they compare prompt sizes between
loops and configurations, not any provider's bill.
"""

from __future__ import annotations

from typing import Any

from tests.benchmarks.common import lookup_tool, scripted
from tests.benchmarks.scenarios import (
    QUESTION,
    Scenario,
    build,
    loop_scenarios,
    tot_configurations,
)


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    model = scripted(scenario.reply, profile=scenario.profile)
    graph = build(scenario, [lookup_tool()], model)
    scenario.reset()
    out = graph.invoke({"messages": [("user", QUESTION)]})
    usage = out.get("usage") or {}
    made = int(out.get("llm_calls") or 0)
    return {
        "loop": scenario.loop,
        "scenario": scenario.name,
        "options": scenario.options,
        "status": out.get("status"),
        "model_calls": made,
        "model_calls_seen_by_model": model.call_count,
        "tool_calls": scenario.tool_calls,
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "budget": scenario.budget,
        "budget_formula": scenario.budget_formula,
        "seed_formula": scenario.seed_formula,
        "seed_calls": scenario.seed_calls,
        "ratio_vs_budget": made / scenario.budget if scenario.budget else None,
        "ratio_vs_seed": made / scenario.seed_calls if scenario.seed_calls else None,
    }


def economy() -> dict[str, Any]:
    loops = [run_scenario(s) for s in loop_scenarios()]
    tot = [run_scenario(s) for s in tot_configurations()]
    by_name = {row["scenario"]: row for row in tot}
    comparisons = []
    for beam in (1, 2):
        seed = by_name[f"tot sample/per_branch b=3 w={beam} d=3"]
        cheap = by_name[f"tot propose/batched b=3 w={beam} d=3"]
        comparisons.append(
            {
                "beam_width": beam,
                "calls": [seed["model_calls"], cheap["model_calls"]],
                "ratio_calls_batched_vs_per_branch": cheap["model_calls"] / seed["model_calls"],
                "ratio_input_tokens_batched_vs_per_branch": cheap["input_tokens"]
                / seed["input_tokens"],
            }
        )
    return {"loops": loops, "tot": tot, "tot_comparison": comparisons}
