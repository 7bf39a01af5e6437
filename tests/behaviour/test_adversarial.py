"""Hostile models against every loop and tool mode.

For each loop in ``LOOPS`` and each of its tool modes, a scripted model that misbehaves
forever (random text, never finishing, only calling tools, raising on every call, empty
replies, 1 MB replies) must not be able to break the loop: the run ends, within the loop's
documented call budget, with an allowed status, a string answer, and an exact
``llm_calls`` (every reply received, none of the calls that raised).
"""

from __future__ import annotations

import inspect
import json
import random
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from loopgraphs import LOOPS, build_loop
from loopgraphs.toolkits import calculator
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, model_for

# ---------------------------------------------------------------- loops and budgets


@dataclass(frozen=True)
class LoopCase:
    """Small options for one loop and its documented call budget for them."""

    options: dict[str, Any]
    budget: int
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# Budgets are the formulas stated in each factory's docstring, evaluated for these options.
LOOP_CASES: dict[str, LoopCase] = {
    # max_iterations + 1 (forced final answer)
    "react": LoopCase({"max_iterations": 3}, 3 + 1),
    # batched/propose: 1 + w(d-1) expansions + d scoring calls + 1 final answer
    "tot": LoopCase({"n_branches": 2, "beam_width": 1, "max_depth": 2}, (1 + 1 * 1) + 2 + 1),
    # exactly self_consistency calls
    "cot": LoopCase({"self_consistency": 2}, 2),
    # 1 + 2 * max_critique_rounds
    "critic": LoopCase({"max_critique_rounds": 2}, 1 + 2 * 2),
    # 2 planner + steps * (step_iterations + 1) + 2 * (steps - 1) replans + 1 synthesis
    "plan_execute": LoopCase(
        {"max_steps": 2, "max_step_iterations": 2, "replan": True}, 2 + 2 * 3 + 2 * 1 + 1
    ),
    # reflections * (iterations + 1) + 2 * reflections (evaluator) + (reflections - 1)
    "reflexion": LoopCase({"max_reflections": 2, "max_iterations": 2}, 2 * 3 + 2 * 2 + 1),
    # max_follow_ups + 1
    "self_ask": LoopCase({"max_follow_ups": 3}, 3 + 1),
    # 2 planner (the plan, one re-ask) + 2 solver (the answer, one re-ask), any max_steps
    "rewoo": LoopCase({"max_steps": 3}, 2 + 2),
    # 4 * n_candidates * max_rollouts (a candidate, its verdict and its reflection)
    "lats": LoopCase({"n_candidates": 2, "max_rollouts": 2}, 4 * 2 * 2),
}


def loop_names() -> list[str]:
    """Every registered loop, read at collection time."""
    return sorted(LOOPS)


def takes(name: str, parameter: str) -> bool:
    return parameter in inspect.signature(LOOPS[name]).parameters


def modes_of(name: str) -> tuple[str, ...]:
    """The tool modes a loop can run in ("default" for loops without tools/tool_mode)."""
    return MODES if takes(name, "tool_mode") else ("default",)


def loop_mode_params() -> list[Any]:
    return [
        pytest.param(name, mode, id=f"{name}-{mode}")
        for name in loop_names()
        for mode in modes_of(name)
    ]


def case_of(name: str) -> LoopCase:
    if name not in LOOP_CASES:
        pytest.fail(
            f"loop {name!r} is registered but has no budget in tests/behaviour/test_adversarial.py "
            "LOOP_CASES: add its small options and its documented call budget"
        )
    return LOOP_CASES[name]


def lookup(query: str) -> str:
    """Look a query up in the reference notes."""
    return f"notes about {query}: nothing conclusive"


TOOLS = [lookup, calculator]


def make_model(mode: str, replies: list[Any], **kwargs: Any) -> ScriptedChatModel:
    if mode == "default":
        profile = {"tool_calling": True, "structured_output": True}
        return ScriptedChatModel(replies=replies, profile=profile, **kwargs)
    return model_for(mode, replies, **kwargs)


def build(name: str, mode: str, model: ScriptedChatModel, **extra: Any) -> Any:
    options = {**case_of(name).options, "retry_policy": FAST_RETRY, **extra}
    if mode != "default":
        options["tool_mode"] = mode
    tools = TOOLS if name != "cot" else ()
    return build_loop(name, model, tools, **options)


# ---------------------------------------------------------------- hostile models


class Counter:
    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._value += 1
            return self._value


def random_text(mode: str) -> Callable[[list[Any]], str]:
    counter = Counter()
    alphabet = string.printable + "{}[]\"'\\:*#-•日本語😀"

    def reply(messages: list[Any]) -> str:
        rng = random.Random(counter.next())
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 400)))

    return reply


NEVER_DONE = """Follow up: what is known about q{n}?
CLAIM: q{n} is still unknown
TOOL: lookup
TOOL INPUT: q{n}
1. look up q{n}
2. look up everything else about q{n}
UNSATISFACTORY: not finished, keep going
Thought: I need more information.
Action: lookup
Action Input: {{"query": "q{n}"}}"""


def never_finishes(mode: str) -> Callable[[list[Any]], Any]:
    """Every reply asks for more: a follow-up, claims to check, a plan, a tool call."""
    counter = Counter()

    def reply(messages: list[Any]) -> Any:
        n = counter.next()
        text = NEVER_DONE.format(n=n)
        if mode in ("native", "default"):
            return calls(tool_call("lookup", {"query": f"q{n}"}), content=text)
        return text

    return reply


def always_tools(mode: str) -> Callable[[list[Any]], Any]:
    """Every reply is a bare tool call (new arguments each time), in the mode's grammar."""
    counter = Counter()

    def reply(messages: list[Any]) -> Any:
        n = counter.next()
        if mode in ("native", "default"):
            return calls(tool_call("lookup", {"query": f"q{n}"}))
        if mode == "json":
            return json.dumps(
                {"thought": "more", "action": "lookup", "action_input": {"query": f"q{n}"}}
            )
        return f'Thought: more\nAction: lookup\nAction Input: {{"query": "q{n}"}}'

    return reply


HUGE = ("All work and no play makes a dull model. " * 25_000)[:1_000_000]

SCENARIOS: dict[str, Callable[[str], Any]] = {
    "random_text": random_text,
    "never_finishes": never_finishes,
    "always_tools": always_tools,
    "raises_transient": lambda mode: ProviderError(503, "overloaded"),
    "raises_permanent": lambda mode: ProviderError(401, "invalid api key"),
    "empty": lambda mode: AIMessage(content=""),
    "huge": lambda mode: HUGE,
}
RAISING = {"raises_transient", "raises_permanent"}

# Statuses each loop ends a hostile scenario with, from its documented behaviour:
# ReAct, CoT and Self-Ask take a reply without any action marker as the answer (ReAct asks
# once more after a reply with no text, then ends "max_iterations"); CRITIC
# accepts a draft whose critique cannot be read, and ends "completed" when the rounds run
# out after a revision; Plan-and-Execute records a step that hit its budget and goes on;
# Reflexion never hears "SATISFACTORY" and ends at max_reflections; ToT completes when the
# forced final answer has text and ends "max_iterations" when no thought was ever produced.
# A model that never stops asking ends at the budget ("max_iterations"). A reply that
# repeats itself until it ends ("huge") is cut, never an answer: it ends "max_iterations"
# in ReAct, CoT, ToT, CRITIC, Self-Ask and Plan-and-Execute; so does a CoT sample with no text
# (empty, or tool calls only). ReAct, CoT and Self-Ask ask once more after an empty reply,
# then end "max_iterations".
DONE, BUDGET, ERROR = {"completed"}, {"max_iterations"}, {"error"}
EXPECTED: dict[str, dict[str, set[str]]] = {
    "react": {
        "random_text": DONE,
        "empty": BUDGET,
        "huge": BUDGET,
        "never_finishes": BUDGET,
        "always_tools": BUDGET,
    },
    "cot": {
        "random_text": DONE,
        "never_finishes": DONE,
        "empty": BUDGET,
        "huge": BUDGET,
        "always_tools": DONE | BUDGET,  # native: tool calls only, no text
    },
    # A model that writes no text (empty replies, or tool calls only) gives no answer: the
    # run ends "error" saying so.
    "critic": {
        **{s: DONE for s in ("random_text", "never_finishes")},
        **{s: ERROR for s in ("empty", "always_tools")},
        "huge": BUDGET,
    },
    "plan_execute": {
        **{s: DONE for s in ("random_text", "never_finishes")},
        **{s: ERROR for s in ("empty", "always_tools")},
        "huge": BUDGET,
    },
    "reflexion": {
        s: BUDGET for s in ("random_text", "empty", "huge", "never_finishes", "always_tools")
    },
    "self_ask": {
        "random_text": DONE,
        "empty": BUDGET,  # asked once more for the answer, which never comes
        "huge": BUDGET,
        "never_finishes": BUDGET,
        # Self-Ask reads its own grammar: a bare ReAct-style action is plain text to it,
        # while a native tool call is a follow-up.
        "always_tools": BUDGET,
    },
    # ReWOO reads no plan from any of these: its solver takes a reply with text as the
    # answer (a json or text action too), and ends "max_iterations" without one (empty,
    # cut, or native tool calls only).
    "rewoo": {
        "random_text": DONE,
        "never_finishes": DONE,
        "empty": BUDGET,
        "huge": BUDGET,
        "always_tools": DONE | BUDGET,
    },
    "tot": {
        "random_text": DONE,
        "huge": BUDGET,
        "never_finishes": DONE,
        "empty": BUDGET,
        "always_tools": BUDGET,
    },
}


def expected_statuses(name: str, mode: str, scenario: str) -> set[str]:
    if scenario in RAISING:
        return ERROR
    if name == "self_ask" and scenario == "always_tools" and mode in ("json", "text"):
        return DONE
    # A loop registered after this table was written gets the general rule.
    return EXPECTED.get(name, {}).get(scenario, {"completed", "max_iterations"})


def run_scenario(name: str, mode: str, scenario: str) -> tuple[dict[str, Any], Any, float]:
    script = SCENARIOS[scenario](mode)
    model = make_model(mode, [script], repeat_last=True)
    graph = build(name, mode, model)
    started = time.monotonic()
    out = graph.invoke({"messages": [("user", "What is the capital of Atlantis?")]})
    return out, model, time.monotonic() - started


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize(("name", "mode"), loop_mode_params())
def test_hostile_model_cannot_break_the_loop(name: str, mode: str, scenario: str) -> None:
    case = case_of(name)
    out, model, elapsed = run_scenario(name, mode, scenario)
    assert out["status"] in expected_statuses(name, mode, scenario), (
        out["status"],
        out.get("error"),
    )
    assert isinstance(out["answer"], str)
    if scenario in RAISING:
        # Every call raised: each request sent counts, retried ones in ``retries`` too, and
        # each failure was attempted at most max_attempts times (permanent ones once).
        assert out["llm_calls"] == model.call_count
        retried = FAST_RETRY.max_attempts - 1 if scenario == "raises_transient" else 0
        assert out["retries"] == retried
        assert "HTTP" in out["error"] and ("503" in out["error"] or "401" in out["error"])
        attempts = FAST_RETRY.max_attempts if scenario == "raises_transient" else 1
        assert 1 <= model.call_count <= case.budget * attempts
    else:
        assert out["llm_calls"] == model.call_count
        assert 1 <= model.call_count <= case.budget, (model.call_count, case.budget)
        if out["status"] == "error":  # the model wrote nothing that answers
            assert out["answer"] == "" and out["error"].startswith("no usable answer:")
    assert elapsed < 30


@pytest.mark.parametrize(("name", "mode"), loop_mode_params())
async def test_hostile_model_async(name: str, mode: str) -> None:
    """The same guarantees under ``ainvoke``, with a model that never finishes."""
    case = case_of(name)
    model = make_model(mode, [never_finishes(mode)], repeat_last=True)
    out = await build(name, mode, model).ainvoke({"messages": [("user", "Go on forever.")]})
    assert out["status"] in expected_statuses(name, mode, "never_finishes")
    assert out["llm_calls"] == model.call_count <= case.budget
    assert isinstance(out["answer"], str)


@pytest.mark.parametrize("name", loop_names())
def test_budget_table_matches_the_factory(name: str) -> None:
    """Each budget above uses options the factory really accepts."""
    case = case_of(name)
    parameters = inspect.signature(LOOPS[name]).parameters
    assert set(case.options) <= set(parameters), set(case.options) - set(parameters)
