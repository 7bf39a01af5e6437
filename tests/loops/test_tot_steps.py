"""Tree-of-Thoughts' steps, each called on its own with a state (no graph).

A step's logic is driven with ``run_sync`` against the scripted model: the replies come
in call order, so each test scripts exactly the calls its step makes.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs.graphs.tot import LOOP
from loopgraphs.graphs.tot.steps import (
    close_level,
    expand,
    expansions,
    final_answer,
    opening,
    route_level,
)
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.step import Step
from tests.support.fakes import ScriptedChatModel

QUESTION = [HumanMessage("What is 6*7?")]
# Graph steps a level takes after ``score_branches`` (or ``prepare``): expand, its
# scoring, then the final answer (counted by the kit from the wiring).
LEVEL_AND_ANSWER = 3


def step_with(*replies: str, node: str = "expand", **options) -> tuple[Step, ScriptedChatModel]:
    """The ``Step`` ToT's ``node`` is handed, its model playing ``replies`` back in order."""
    model = ScriptedChatModel(replies=list(replies))
    return LOOP.step(node, model, **options), model


def candidate(thoughts: list[str], parent: int, index: int, answer: str = "") -> dict:
    return {"thoughts": thoughts, "score": None, "parent": parent, "index": index, "answer": answer}


# --- the router and the level's tasks -----------------------------------------------


def test_the_router_expands_the_beam_until_the_search_stops():
    step, _ = step_with(node="score_branches")
    state = {"status": "running", "messages": QUESTION, "stop_reason": ""}
    assert route_level(state, step) == "expand"
    assert route_level({**state, "stop_reason": "max_depth"}, step) == "final_answer"
    assert route_level({**state, "status": "completed"}, step) == END


def test_a_level_sends_one_task_per_branch():
    """The kit sends the tasks ``expansions`` gives (after the ``before_model`` hooks,
    when there are some), each with the run's state and its branch."""
    beam = [{"thoughts": ["a"], "score": 9.0}, {"thoughts": ["b"], "score": 4.0}]
    state = {"status": "running", "messages": QUESTION, "branches": beam, "stop_reason": ""}
    sends = expansions(state)
    assert [(type(s), s.node) for s in sends] == [(Send, "expand"), (Send, "expand")]
    assert [s.arg["branch"] for s in sends] == [
        {"thoughts": ["a"], "parent": 0},
        {"thoughts": ["b"], "parent": 1},
    ]
    assert sends[0].arg["messages"] == QUESTION  # each task gets the run's state


# --- starting and expanding ------------------------------------------------------------


def test_opening_stops_the_search_when_the_budget_allows_no_level():
    step = LOOP.step("prepare", None)
    fresh = opening({"messages": QUESTION}, step)
    assert (fresh["problem"], fresh["stop_reason"], fresh["depth"]) == ("What is 6*7?", "", 0)
    going = opening({"messages": QUESTION, "remaining_steps": LEVEL_AND_ANSWER + 1}, step)
    assert going["stop_reason"] == ""
    short = {"messages": QUESTION, "remaining_steps": LEVEL_AND_ANSWER}
    assert opening(short, step)["stop_reason"] == "step_limit" and "status" not in opening(
        short, step
    )
    assert step.may_finish(short)  # final_answer still fits
    # Too few steps even for final_answer: the kit's prepare ends the run max_iterations.
    spent = {"messages": QUESTION, "remaining_steps": 1}
    assert opening(spent, step)["stop_reason"] == "step_limit"
    assert not step.may_finish(spent)
    assert opening({"messages": [HumanMessage("")]}, step)["status"] == "error"


def test_expand_makes_candidates_of_a_branch_and_reads_their_answers():
    step, model = step_with("1. multiply 6 by 7\n2. ANSWER: 42\n3. guess")
    payload = {"messages": QUESTION, "branch": {"thoughts": ["start"], "parent": 1}}
    update = run_sync(expand(payload, step), {})
    assert model.call_count == 1 and update["llm_calls"] == 1
    assert update["candidates"] == [
        candidate(["start", "multiply 6 by 7"], 1, 0),
        candidate(["start", "ANSWER: 42"], 1, 1, answer="42"),
        candidate(["start", "guess"], 1, 2),
    ]


def test_sampled_thoughts_leave_out_empty_replies():
    step, model = step_with("idea one", "", "ANSWER: 42", generation="sample")
    payload = {"messages": QUESTION, "branch": {"thoughts": [], "parent": 0}}
    update = run_sync(expand(payload, step), {})
    assert model.call_count == 3 == update["llm_calls"]
    assert [c["thoughts"] for c in update["candidates"]] == [["idea one"], ["ANSWER: 42"]]
    assert [c["answer"] for c in update["candidates"]] == ["", "42"]


# --- closing a level, and finishing ----------------------------------------------------


def test_an_answering_candidate_ends_the_search_without_scoring():
    step, model = step_with(node="score_branches")
    state = {
        "messages": QUESTION,
        "depth": 0,
        "candidates": [candidate(["x", "ANSWER: 42"], 1, 0, "42"), candidate(["y"], 0, 2)],
    }
    update = run_sync(close_level(state, step), {})
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
    step, _ = step_with('{"scores": [3, 9, 9]}', node="score_branches", max_depth=1)
    update = run_sync(close_level(state, step), {})
    assert update["branches"] == [
        {"thoughts": ["b"], "score": 9.0},
        {"thoughts": ["c"], "score": 9.0},
    ]
    assert (update["stop_reason"], update["best_path"]) == ("max_depth", ["b"])
    assert [c["score"] for c in update["candidates"]] == [3.0, 9.0, 9.0]
    step, _ = step_with('{"scores": [3, 9, 9]}', node="score_branches")
    going_on = run_sync(close_level(state, step), {})
    assert "stop_reason" not in going_on and going_on["candidates"] is None
    step, _ = step_with('{"scores": [3, 9, 9]}', node="score_branches")
    limited = {**state, "remaining_steps": LEVEL_AND_ANSWER}
    assert run_sync(close_level(limited, step), {})["stop_reason"] == "step_limit"
    step, _ = step_with('{"scores": [3, 9, 9]}', node="score_branches")
    roomy = {**state, "remaining_steps": LEVEL_AND_ANSWER + 1}
    assert "stop_reason" not in run_sync(close_level(roomy, step), {})


@pytest.mark.parametrize(
    ("stop_reason", "reply", "answer", "status"),
    [
        ("max_depth", "So it is 42.\nANSWER: 42", "42", "completed"),
        ("step_limit", "ANSWER: 42", "42", "max_iterations"),
        ("dead_end", "", "times 7", "max_iterations"),  # no text: the branch's last thought
    ],
)
def test_final_answer_asks_the_best_branch(stop_reason, reply, answer, status):
    step, model = step_with(reply, node="final_answer")
    beam = [{"thoughts": ["take 6", "times 7"], "score": 8.0}]
    state = {"messages": QUESTION, "branches": beam, "stop_reason": stop_reason}
    update = run_sync(final_answer(state, step), {})
    assert (update["answer"], update["status"]) == (answer, status)
    assert update["best_path"] == ["take 6", "times 7"] and update["llm_calls"] == 1
    assert update["messages"][0].content == answer
    assert "Step 2: times 7" in model.prompts[0][-1].content


def test_search_options_are_checked_when_resolved():
    with pytest.raises(ValueError, match="beam_width must be <= n_branches"):
        LOOP.resolve({"n_branches": 2, "beam_width": 3})
    with pytest.raises(ValueError, match="scoring must be one of"):
        LOOP.resolve({"scoring": "sideways"})
