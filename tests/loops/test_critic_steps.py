"""CRITIC's steps and routers on their own: each called with a state (and a scripted
model where it asks one), outside a graph."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.critic_checks import checked_claims
from loopgraphs.graphs.critic_steps import (
    RoundSteps,
    critique,
    finish,
    generate,
    opening,
    revise,
    route_critique,
    route_review,
    write_checks,
)
from loopgraphs.nodes.driver import run_sync, takes_runtime
from loopgraphs.nodes.parsing.critic import Critique, make_claim
from loopgraphs.nodes.settings import make_settings
from loopgraphs.nodes.step import Step
from tests.support.scripts import model_for, note

QUESTION = HumanMessage("When was the Eiffel Tower completed?")
DRAFT = "The Eiffel Tower was completed in 1887."
REVISED = "The Eiffel Tower was completed in 1889."
NO_HOOKS = RoundSteps(before=0, after=0)
RUNTIME = SimpleNamespace(context=None)


def settings(replies=(), **options):
    model = model_for("text", list(replies))
    options = {"tool_mode": "text", **options}
    return make_settings("critic", model, [note], options, max_iterations=2)


def run_step(logic, state, replies=(), **options):
    """The update a step writes for ``state``, its model answering with ``replies``."""
    step = Step(settings(replies, **options), RUNTIME, {})
    return run_sync(logic(NO_HOOKS, state, step), {})


def cut(text: str) -> AIMessage:
    """A reply stopped at the token cap."""
    return AIMessage(content=text, response_metadata={"finish_reason": "length"})


def checked_round(number: int = 1) -> dict:
    """The state after a round's one check ran: its call, its result and its claim."""
    call = {"name": "note", "args": {"text": "tower year"}, "id": "claim_1"}
    return {
        "messages": [
            QUESTION,
            AIMessage(DRAFT),
            AIMessage("Checking: completed in 1887", tool_calls=[call]),
            ToolMessage("Construction ran from 1887 to 1889.", tool_call_id="claim_1"),
        ],
        "tool_mode": "text",
        "status": "running",
        "draft": DRAFT,
        "round": number,
        "claims": [],
        "pending": [
            {
                "claim": "completed in 1887",
                "tool": "note",
                "tool_input": "tower year",
                "id": "claim_1",
                "args": {"text": "tower year"},
            }
        ],
    }


def test_finish_completes_only_on_a_revision_written_in_full():
    assert finish(REVISED, revised=True) == {"answer": REVISED, "status": "completed"}
    assert finish(DRAFT) == {"answer": DRAFT, "status": "max_iterations"}
    assert finish("") == {"answer": "", "status": "max_iterations"}


def test_round_steps_count_the_hooks_and_the_review():
    steps = RoundSteps(before=1, after=2)
    assert steps.draft == 4
    assert steps.checks(settings()) == 7
    assert steps.checks(settings(interrupt_before_tools=True)) == 8
    assert steps.round(settings()) == 11


def test_opening_ends_the_run_when_no_steps_are_left_for_a_draft():
    run = settings()
    assert "status" not in opening(NO_HOOKS, {"remaining_steps": 5}, run)
    assert opening(NO_HOOKS, {"remaining_steps": 1}, run)["status"] == "max_iterations"


def test_generate_writes_the_draft_as_the_answer():
    out = run_step(generate, {"messages": [QUESTION], "tool_mode": "text"}, [DRAFT])
    assert (out["draft"], out["answer"], out["llm_calls"]) == (DRAFT, DRAFT, 1)
    assert "status" not in out


def test_generate_finishes_on_the_draft_when_no_round_fits():
    state = {"messages": [QUESTION], "tool_mode": "text", "remaining_steps": 3}
    out = run_step(generate, state, [DRAFT])
    assert (out["answer"], out["status"]) == (DRAFT, "max_iterations")


def test_a_draft_cut_twice_finishes_with_no_answer():
    state = {"messages": [QUESTION], "tool_mode": "text"}
    out = run_step(generate, state, [cut("The tower " * 50), cut("It " * 80)])
    assert (out["answer"], out["status"], out["llm_calls"]) == ("", "max_iterations", 2)
    assert "draft" not in out


def test_a_text_critique_writes_the_rounds_checks():
    state = {"messages": [QUESTION], "tool_mode": "text", "draft": DRAFT, "round": 0}
    reply = "CLAIM: completed in 1887\nTOOL: note\nTOOL INPUT: tower year"
    out = run_step(critique, state, [reply])
    (message,) = out["messages"]
    assert [call["args"] for call in message.tool_calls] == [{"text": "tower year"}]
    assert [item["claim"] for item in out["pending"]] == ["completed in 1887"]
    assert (out["round"], out["verified"], out["llm_calls"]) == (1, False, 1)
    assert "status" not in out


def test_write_checks_accepts_a_verified_draft_and_finishes_without_steps_for_a_check():
    state = {"draft": DRAFT, "round": 1}
    run = settings()
    accepted = write_checks(NO_HOOKS, state, run, Critique(verified=True))
    assert accepted == {"status": "completed", "answer": DRAFT, "verified": True}
    claim = make_claim("completed in 1887", "note", "tower year")
    assert claim is not None
    short = write_checks(NO_HOOKS, {**state, "remaining_steps": 2}, run, Critique(claims=[claim]))
    assert short == {"status": "max_iterations", "answer": DRAFT, "verified": False}


def test_route_critique_sends_each_check_to_call_tool():
    run = settings()
    state = checked_round()
    state["messages"] = state["messages"][:3]
    (sent,) = route_critique(run, state, RUNTIME)
    assert isinstance(sent, Send) and sent.node == "call_tool"
    assert route_critique(run, {**state, "status": "completed"}, RUNTIME) == END
    assert route_critique(run, {**state, "messages": [QUESTION]}, RUNTIME) == "revise"
    reviewed = settings(interrupt_before_tools=True)
    assert route_critique(reviewed, state, RUNTIME) == "review"


def test_route_review_goes_to_revise_when_no_check_is_left():
    state = checked_round()
    assert route_review(state) == "revise"
    (sent,) = route_review({**state, "messages": state["messages"][:3]})
    assert sent.node == "call_tool"


def test_bound_routers_keep_the_signature_the_graph_reads():
    assert takes_runtime(partial(route_critique, settings()))
    assert not takes_runtime(route_review)


def test_checked_claims_read_each_result_from_its_tool_message():
    state = checked_round()
    (found,) = checked_claims(state, "")
    assert found["observation"] == "Construction ran from 1887 to 1889."
    assert (found["tool"], found["round"]) == ("note", 1)
    (missing,) = checked_claims({**state, "messages": state["messages"][:3]}, "")
    assert missing["observation"] == prompts.NO_TOOL_RESULT


def test_a_revision_before_the_last_round_goes_on():
    out = run_step(revise, checked_round(1), [REVISED])
    assert (out["draft"], out["answer"], out["pending"]) == (REVISED, REVISED, [])
    assert [item["claim"] for item in out["claims"]] == ["completed in 1887"]
    assert "status" not in out


def test_a_revision_in_the_last_round_finishes_the_run_completed():
    out = run_step(revise, checked_round(2), [REVISED])
    assert (out["answer"], out["status"]) == (REVISED, "completed")


@pytest.mark.parametrize(("number", "status"), [(1, None), (2, "max_iterations")])
def test_a_revision_cut_twice_keeps_the_checked_draft(number, status):
    out = run_step(revise, checked_round(number), [cut("1889 " * 100), cut("1889 " * 100)])
    assert out["answer"] == DRAFT and "draft" not in out
    assert out.get("status") == status
