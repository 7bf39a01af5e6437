"""Tree-of-Thoughts' steps, each called on its own with a state (no graph).

A step's logic is driven with ``run_sync`` against the scripted model: the replies come
in call order, so each test scripts exactly the calls its step makes.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs.graphs.tot import (
    LEVEL_STEPS,
    LevelRouter,
    SearchOptions,
    expand,
    final_answer,
    opening,
    score_branches,
)
from loopgraphs.nodes.driver import run_sync, takes_runtime
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from tests.support.fakes import ScriptedChatModel

QUESTION = [HumanMessage("What is 6*7?")]


def step_with(*replies: str) -> tuple[Step, ScriptedChatModel]:
    """A step whose model plays ``replies`` back in order."""
    model = ScriptedChatModel(replies=list(replies))
    return Step(LoopSettings(model=model), SimpleNamespace(), {}), model


def candidate(thoughts: list[str], parent: int, index: int, answer: str = "") -> dict:
    return {"thoughts": thoughts, "score": None, "parent": parent, "index": index, "answer": answer}


# --- the router ----------------------------------------------------------------------


def test_the_router_is_read_as_a_router_of_the_state_alone():
    """LangGraph hands the runtime to a router that asks for it: a bound method asks for
    the state only, and keeps its name for the graph's branch."""
    router = LevelRouter(hooked=False).next_level
    assert not takes_runtime(router)
    assert router.__name__ == "next_level"


def test_the_router_sends_one_task_per_branch_until_the_search_stops():
    beam = [{"thoughts": ["a"], "score": 9.0}, {"thoughts": ["b"], "score": 4.0}]
    state = {"status": "running", "messages": QUESTION, "branches": beam, "stop_reason": ""}
    sends = LevelRouter(hooked=False).next_level(state)
    assert [type(s) for s in sends] == [Send, Send]
    assert [s.arg["branch"] for s in sends] == [
        {"thoughts": ["a"], "parent": 0},
        {"thoughts": ["b"], "parent": 1},
    ]
    assert sends[0].arg["messages"] == QUESTION  # each task gets the run's state
    # With before_model hooks, their last node sends the tasks.
    assert LevelRouter(hooked=True).next_level(state) == "expand"
    assert LevelRouter(hooked=False).next_level({**state, "stop_reason": "max_depth"}) == (
        "final_answer"
    )
    assert LevelRouter(hooked=False).next_level({**state, "status": "error"}) == END


# --- starting and expanding ------------------------------------------------------------


def test_opening_stops_the_search_when_the_budget_allows_no_level():
    run = LoopSettings(model=None)
    fresh = opening({"messages": QUESTION}, run)
    assert (fresh["problem"], fresh["stop_reason"], fresh["depth"]) == ("What is 6*7?", "", 0)
    short = opening({"messages": QUESTION, "remaining_steps": LEVEL_STEPS}, run)
    assert short["stop_reason"] == "step_limit" and "status" not in short
    spent = opening({"messages": QUESTION, "remaining_steps": 1}, run)
    assert (spent["stop_reason"], spent["status"]) == ("step_limit", "max_iterations")
    assert opening({"messages": [HumanMessage("")]}, run)["status"] == "error"


def test_expand_makes_candidates_of_a_branch_and_reads_their_answers():
    step, model = step_with("1. multiply 6 by 7\n2. ANSWER: 42\n3. guess")
    payload = {"messages": QUESTION, "branch": {"thoughts": ["start"], "parent": 1}}
    update = run_sync(expand(payload, step, options=SearchOptions()), {})
    assert model.call_count == 1 and update["llm_calls"] == 1
    assert update["candidates"] == [
        candidate(["start", "multiply 6 by 7"], 1, 0),
        candidate(["start", "ANSWER: 42"], 1, 1, answer="42"),
        candidate(["start", "guess"], 1, 2),
    ]


def test_sampled_thoughts_leave_out_empty_replies():
    step, model = step_with("idea one", "", "ANSWER: 42")
    payload = {"messages": QUESTION, "branch": {"thoughts": [], "parent": 0}}
    update = run_sync(expand(payload, step, options=SearchOptions(generation="sample")), {})
    assert model.call_count == 3 == update["llm_calls"]
    assert [c["thoughts"] for c in update["candidates"]] == [["idea one"], ["ANSWER: 42"]]
    assert [c["answer"] for c in update["candidates"]] == ["", "42"]


# --- closing a level, and finishing ----------------------------------------------------


def test_an_answering_candidate_ends_the_search_without_scoring():
    step, model = step_with()
    state = {
        "messages": QUESTION,
        "depth": 0,
        "candidates": [candidate(["x", "ANSWER: 42"], 1, 0, "42"), candidate(["y"], 0, 2)],
    }
    update = run_sync(score_branches(state, step, options=SearchOptions()), {})
    assert model.call_count == 0
    assert (update["answer"], update["status"], update["stop_reason"]) == (
        "42",
        "completed",
        "answer",
    )
    assert update["best_path"] == ["x", "ANSWER: 42"] and update["depth"] == 1
    assert update["messages"] == [AIMessage("42")]


def test_scoring_keeps_the_best_branches_and_stops_at_max_depth():
    candidates = [candidate(["a"], 0, 0), candidate(["b"], 0, 1), candidate(["c"], 0, 2)]
    state = {"messages": QUESTION, "depth": 0, "candidates": candidates}
    step, _ = step_with('{"scores": [3, 9, 9]}')
    update = run_sync(score_branches(state, step, options=SearchOptions(max_depth=1)), {})
    assert update["branches"] == [
        {"thoughts": ["b"], "score": 9.0},
        {"thoughts": ["c"], "score": 9.0},
    ]
    assert (update["stop_reason"], update["best_path"]) == ("max_depth", ["b"])
    assert [c["score"] for c in update["candidates"]] == [3.0, 9.0, 9.0]
    step, _ = step_with('{"scores": [3, 9, 9]}')
    going_on = run_sync(score_branches(state, step, options=SearchOptions()), {})
    assert "stop_reason" not in going_on and going_on["candidates"] is None
    step, _ = step_with('{"scores": [3, 9, 9]}')
    limited = {**state, "remaining_steps": LEVEL_STEPS}
    assert run_sync(score_branches(limited, step, options=SearchOptions()), {})["stop_reason"] == (
        "step_limit"
    )


@pytest.mark.parametrize(
    ("stop_reason", "reply", "answer", "status"),
    [
        ("max_depth", "So it is 42.\nANSWER: 42", "42", "completed"),
        ("step_limit", "ANSWER: 42", "42", "max_iterations"),
        ("dead_end", "", "times 7", "max_iterations"),  # no text: the branch's last thought
    ],
)
def test_final_answer_asks_the_best_branch(stop_reason, reply, answer, status):
    step, model = step_with(reply)
    beam = [{"thoughts": ["take 6", "times 7"], "score": 8.0}]
    state = {"messages": QUESTION, "branches": beam, "stop_reason": stop_reason}
    update = run_sync(final_answer(state, step), {})
    assert (update["answer"], update["status"]) == (answer, status)
    assert update["best_path"] == ["take 6", "times 7"] and update["llm_calls"] == 1
    assert update["messages"][0].content == answer
    assert "Step 2: times 7" in model.prompts[0][-1].content


def test_search_options_are_checked_when_made():
    with pytest.raises(ValueError, match="beam_width must be <= n_branches"):
        SearchOptions(n_branches=2, beam_width=3)
    with pytest.raises(ValueError, match="scoring must be one of"):
        SearchOptions(scoring="sideways")  # type: ignore[arg-type]
