"""Fixed scripted scenarios, one per loop, for the overhead and economy benchmarks.

Each scenario is a complete, successful run in native tool mode with a known number of
model calls, next to the loop's call budget (the most its options allow) and the seeds'
formula for the same run. A loop registered later without a scenario here gets a
generic one (the model answers at once), so the benchmarks always cover ``LOOPS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool

from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS, build_loop
from loopgraphs.graphs.tot.state import call_budget as tot_budget
from tests.benchmarks.common import NATIVE_PROFILE, Script, prompt_text
from tests.support.fakes import calls, tool_call

QUESTION = "How much is a plus b?"


@dataclass
class Scenario:
    """One scripted run of a loop."""

    name: str
    loop: str
    options: dict[str, Any]
    reply: Callable[[list[BaseMessage]], Any]
    calls: int
    budget: int | None
    budget_formula: str
    seed_formula: str
    seed_calls: int | None
    profile: dict[str, Any] | None = field(default_factory=lambda: dict(NATIVE_PROFILE))
    tool_calls: int = 0

    def reset(self) -> None:
        if isinstance(self.reply, Script):
            self.reply.reset()


def structured(schema: str, data: dict[str, Any]) -> AIMessage:
    """A structured reply in native mode: a call of the schema's tool."""
    return calls(tool_call(schema, data))


def act(key: str, index: int) -> AIMessage:
    return calls(tool_call("lookup", {"key": key}, id=f"call_{index}_{key}"))


def react_scenario(tool_calls: int = 3) -> Scenario:
    replies: list[Any] = [act(f"k{i}", i) for i in range(tool_calls)]
    return Scenario(
        name="react",
        loop="react",
        options={"max_iterations": 10},
        reply=Script([*replies, AIMessage("a plus b is 3")]),
        calls=tool_calls + 1,
        budget=10 + 1,
        budget_formula="max_iterations + 1",
        seed_formula="N tool calls + 1",
        seed_calls=tool_calls + 1,
        tool_calls=tool_calls,
    )


def cot_scenario() -> Scenario:
    return Scenario(
        name="cot",
        loop="cot",
        options={},
        reply=Script(["a is 1 and b is 2, so a + b = 3.\nFINAL ANSWER: 3"]),
        calls=1,
        budget=1,
        budget_formula="self_consistency",
        seed_formula="1",
        seed_calls=1,
    )


def plan_execute_scenario() -> Scenario:
    steps = ["find a", "find b", "add a and b"]
    replies: list[Any] = [structured("Plan", {"steps": steps})]
    for index, key in enumerate(("a", "b", "a+b")):
        replies += [act(key, index), AIMessage(f"{key} done")]
    replies.append("a plus b is 3")
    budget: int | None
    try:
        from loopgraphs.graphs.plan_execute import LOOP
        from loopgraphs.nodes import most_calls

        budget = most_calls(LOOP, {"max_steps": 7, "max_step_iterations": 5})
    except ImportError:
        budget = None
    return Scenario(
        name="plan_execute",
        loop="plan_execute",
        options={},
        reply=Script(replies),
        calls=8,
        budget=budget,
        budget_formula="2 + max_steps·(max_step_iterations + 1) + 1",
        seed_formula="1 plan + Σ step ReAct calls (3 × 2) + 1 synthesis",
        seed_calls=1 + 3 * 2 + 1,
        tool_calls=3,
    )


def reflexion_scenario() -> Scenario:
    def verdict(ok: bool, feedback: str = "") -> AIMessage:
        return structured("Evaluation", {"satisfactory": ok, "feedback": feedback})

    replies = [
        act("a", 0),
        AIMessage("a plus b is 4"),
        verdict(False, "b was not looked up"),
        "Reflection: look up both values before adding them.",
        act("b", 1),
        AIMessage("a plus b is 3"),
        verdict(True),
    ]
    budget: int | None
    try:
        from loopgraphs.graphs.reflexion import LOOP
        from loopgraphs.nodes import most_calls

        budget = most_calls(LOOP, {"max_reflections": 3, "max_iterations": 10})
    except ImportError:
        budget = None
    return Scenario(
        name="reflexion",
        loop="reflexion",
        options={},
        reply=Script(replies),
        calls=7,
        budget=budget,
        budget_formula="R·(max_iterations + 1) + 2·R + (R − 1), R = max_reflections",
        seed_formula="episodes × ReAct calls + evaluations + reflections = 2×2 + 2 + 1",
        seed_calls=2 * 2 + 2 + 1,
        tool_calls=2,
    )


def self_ask_scenario() -> Scenario:
    def ask(question: str, index: int) -> AIMessage:
        text = f"Are follow up questions needed here? Yes.\nFollow up: {question}"
        return calls(tool_call("lookup", {"key": question}, id=f"ask_{index}"), content=text)

    replies = [ask("What is a?", 0), ask("What is b?", 1), "So the final answer is: 3"]
    return Scenario(
        name="self_ask",
        loop="self_ask",
        options={},
        reply=Script(replies),
        calls=3,
        budget=5 + 1,
        budget_formula="max_follow_ups + 1",
        seed_formula="follow-ups + 1",
        seed_calls=3,
        tool_calls=2,
    )


def critic_scenario(claims: int = 2, tool_names: tuple[str, ...] = ("lookup",)) -> Scenario:
    items = [
        {
            "claim": f"value {i} is {i}",
            "tool": tool_names[i % len(tool_names)],
            "tool_input": {"key": f"value {i}"},
        }
        for i in range(claims)
    ]
    replies = [
        "a is 1, b is 2, so a plus b is 4.",
        structured("CritiqueReport", {"verified": False, "claims": items}),
        "a is 1, b is 2, so a plus b is 3.",
        structured("CritiqueReport", {"verified": True, "claims": []}),
    ]
    return Scenario(
        name="critic" if claims == 2 else f"critic ({claims} claims)",
        loop="critic",
        options={},
        reply=Script(replies),
        calls=4,
        budget=1 + 2 * 2,
        budget_formula="1 + 2·max_critique_rounds",
        seed_formula="draft + critique + revise + accepting critique",
        seed_calls=4,
        tool_calls=claims,
    )


_ATTEMPT = re.compile(r"attempt (\d+) of")
_CANDIDATE = re.compile(r"Candidate \d+:")


def tot_reply(messages: list[BaseMessage]) -> str:
    """Reply by prompt kind, never answering before the forced final answer, so the search
    runs to ``max_depth`` and spends its whole budget."""
    text = prompt_text(messages)
    if "exploration is over" in text:
        return "ANSWER: 3"
    if "Score each candidate" in text:
        count = len(_CANDIDATE.findall(text.split("Candidate lines of reasoning:", 1)[1]))
        return "\n".join(f"{i}: {10 - i % 10}" for i in range(1, count + 1))
    if "How promising" in text:
        return '{"score": 6, "reason": "plausible"}'
    if "Write the single next step" in text:
        match = _ATTEMPT.search(text)
        return f"consider option {match.group(1) if match else 1}"
    if "Propose" in text:
        return "1. look at a\n2. look at b\n3. add them"
    return "ANSWER: 3"


def tot_scenario(
    *,
    n_branches: int = 3,
    beam_width: int = 2,
    max_depth: int = 3,
    scoring: str = "batched",
    generation: str = "propose",
) -> Scenario:
    options = {
        "n_branches": n_branches,
        "beam_width": beam_width,
        "max_depth": max_depth,
        "scoring": scoring,
        "generation": generation,
    }
    b, w, d = n_branches, beam_width, max_depth
    budget = tot_budget(options)
    if scoring == "per_branch" and generation == "sample":
        seed_formula, seed_calls = "d·b·2 + 1 (w = 1)", d * b * 2 + 1
    elif scoring == "batched" and generation == "propose":
        seed_formula, seed_calls = "≤ 2·d + 1 (w = 1)", 2 * d + 1
    else:
        seed_formula, seed_calls = "-", None
    return Scenario(
        name=f"tot {generation}/{scoring} b={b} w={w} d={d}",
        loop="tot",
        options=options,
        reply=tot_reply,
        calls=budget,
        budget=budget,
        budget_formula="E·e + d + 1" if scoring == "batched" else "E·(e + b) + 1",
        seed_formula=seed_formula,
        seed_calls=seed_calls,
        profile=None,
    )


def lats_scenario() -> Scenario:
    """One rollout that calls the tool, one that answers: the candidates of an expansion
    are alike (one child each, whatever order they are sampled in)."""
    from loopgraphs.nodes import most_calls

    options = {"n_candidates": 3, "max_rollouts": 5}
    value = structured("Value", {"score": 7, "reason": "a is known"})
    verdict = structured("Verdict", {"satisfactory": True, "feedback": ""})
    replies: list[Any] = [*[act("a", 0)] * 3, value, *[AIMessage("a plus b is 3")] * 3, verdict]
    return Scenario(
        name="lats",
        loop="lats",
        options=options,
        reply=Script(replies),
        calls=len(replies),
        budget=most_calls(LOOP_SPECS["lats"], options),
        budget_formula="4·n_candidates·max_rollouts",
        seed_formula="n_candidates per expansion + 1 value or verdict per child",
        seed_calls=3 + 1 + 3 + 1,
        tool_calls=1,
    )


def rewoo_scenario() -> Scenario:
    """A three-step plan (the third step reads the first two's evidence), then the answer."""
    from loopgraphs.nodes import most_calls

    steps = [
        {"plan": "Find a.", "evidence": "#E1", "tool": "lookup", "tool_input": {"key": "a"}},
        {"plan": "Find b.", "evidence": "#E2", "tool": "lookup", "tool_input": {"key": "b"}},
        {
            "plan": "Add them.",
            "evidence": "#E3",
            "tool": "lookup",
            "tool_input": {"key": "#E1+#E2"},
        },
    ]
    return Scenario(
        name="rewoo",
        loop="rewoo",
        options={},
        reply=Script([structured("Plan", {"steps": steps}), AIMessage("a plus b is 3")]),
        calls=2,
        budget=most_calls(LOOP_SPECS["rewoo"], {}),
        budget_formula="4 (the plan and the answer, each asked once more)",
        seed_formula="1 plan + 1 solve, whatever the number of steps",
        seed_calls=2,
        tool_calls=3,
    )


def generic_scenario(loop: str) -> Scenario:
    return Scenario(
        name=f"{loop} (answers at once)",
        loop=loop,
        options={},
        reply=lambda messages: "FINAL ANSWER: 3",
        calls=0,  # unknown: the measured count is reported as is
        budget=None,
        budget_formula="-",
        seed_formula="-",
        seed_calls=None,
    )


BUILDERS: dict[str, Callable[[], Scenario]] = {
    "cot": cot_scenario,
    "react": react_scenario,
    "plan_execute": plan_execute_scenario,
    "reflexion": reflexion_scenario,
    "self_ask": self_ask_scenario,
    "critic": critic_scenario,
    "tot": tot_scenario,
    "lats": lats_scenario,
    "rewoo": rewoo_scenario,
}


def loop_scenarios() -> list[Scenario]:
    """One scenario per registered loop, in ``LOOPS`` order."""
    return [BUILDERS[name]() if name in BUILDERS else generic_scenario(name) for name in LOOPS]


def tot_configurations(depth: int = 3, branches: int = 3) -> list[Scenario]:
    """ToT at b branches and depth d, beam 1 (the seed's setting) and 2 (the default)."""
    return [
        tot_scenario(
            n_branches=branches,
            beam_width=beam,
            max_depth=depth,
            scoring=scoring,
            generation=generation,
        )
        for beam in (1, 2)
        for generation, scoring in (
            ("sample", "per_branch"),
            ("propose", "per_branch"),
            ("sample", "batched"),
            ("propose", "batched"),
        )
    ]


def build(scenario: Scenario, tools: list[BaseTool], model: Any) -> Any:
    """Compile the scenario's loop on ``model`` (tools only for the loops that use them)."""
    options = dict(scenario.options)
    if LOOP_SPECS[scenario.loop].takes_tools:
        options.setdefault("tool_mode", "native")
        return build_loop(scenario.loop, model, tools, **options)
    return build_loop(scenario.loop, model, (), **options)
