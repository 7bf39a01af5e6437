"""CRITIC's steps and routers on their own: each called with a state (and a scripted
model where it asks one), outside a graph."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import after_model, before_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.critic import LOOP
from loopgraphs.graphs.critic.checks import checked_claims
from loopgraphs.graphs.critic.steps import (
    critique,
    finish,
    opening,
    revise,
    route_critique,
    route_draft,
    write_checks,
    write_draft,
)
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.loop import reviewed_calls
from loopgraphs.nodes.parsing.critic import Critique, make_claim
from tests.support.scripts import model_for, note

QUESTION = HumanMessage("When was the Eiffel Tower completed?")
DRAFT = "The Eiffel Tower was completed in 1887."
REVISED = "The Eiffel Tower was completed in 1889."
NODES = {write_draft: "generate", critique: "critique", revise: "revise"}


def step_for(node, replies=(), **options):
    """The ``Step`` CRITIC's ``node`` is handed (text mode, no middleware, two rounds),
    its model answering with ``replies``."""
    model = model_for("text", list(replies))
    options = {"tool_mode": "text", **options}
    return LOOP.step(node, model, [note], **options)


def run_step(logic, state, replies=(), **options):
    """The update a step writes for ``state``, its model answering with ``replies``."""
    return run_sync(logic(state, step_for(NODES[logic], replies, **options)), {})


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


@before_model
def looks_before(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@after_model
def looks_after(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@after_model
def looks_again(state: Any, runtime: Any) -> None:
    """Another hook that changes nothing."""


def test_the_kit_counts_the_hooks_and_the_review():
    """The graph steps the kit counts from CRITIC's wiring: each model step weighs one
    more per ``before_model``/``after_model`` hook (4 here, 2 of them after the step),
    the review one more."""
    plan = step_for("generate", middleware=[looks_before, looks_after, looks_again]).plan
    assert plan is not None
    assert plan.counts("prepare").shortest_finish == 4  # the draft
    # the draft's hooks, then a critique, its hooks, the checks and a revision
    assert plan.counts("generate").another_round == 11
    assert plan.counts("critique").finish == 7  # its hooks, the checks and the revision
    # its hooks, a round back to a revision, then a critique that may end the run
    assert plan.counts("revise").another_round == 15
    reviewed = step_for("critique", interrupt_before_tools=True).plan
    assert reviewed is not None and reviewed.counts("critique").finish == 3


def test_opening_ends_the_run_when_no_steps_are_left_for_a_draft():
    step = step_for("prepare")
    assert opening({"remaining_steps": 5}, step) == {
        "draft": "",
        "claims": [],
        "round": 0,
        "verified": False,
        "pending": [],
    }
    # The kit's prepare writes the opening, and ends the run when the draft cannot fit.
    assert step.may_finish({"remaining_steps": 5})
    assert not step.may_finish({"remaining_steps": 1})


def test_generate_writes_the_draft_as_the_answer():
    out = run_step(write_draft, {"messages": [QUESTION], "tool_mode": "text"}, [DRAFT])
    assert (out["draft"], out["answer"], out["llm_calls"]) == (DRAFT, DRAFT, 1)
    assert "status" not in out


def test_generate_finishes_on_the_draft_when_no_round_fits():
    state = {"messages": [QUESTION], "tool_mode": "text", "remaining_steps": 3}
    out = run_step(write_draft, state, [DRAFT])
    assert (out["answer"], out["status"]) == (DRAFT, "max_iterations")


def test_a_draft_cut_twice_finishes_with_no_answer():
    state = {"messages": [QUESTION], "tool_mode": "text"}
    out = run_step(write_draft, state, [cut("The tower " * 50), cut("It " * 80)])
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
    step = step_for("critique")
    accepted = write_checks(state, step, Critique(verified=True))
    assert accepted == {"status": "completed", "answer": DRAFT, "verified": True}
    claim = make_claim("completed in 1887", "note", "tower year")
    assert claim is not None
    short = write_checks({**state, "remaining_steps": 2}, step, Critique(claims=[claim]))
    assert short == {"status": "max_iterations", "answer": DRAFT, "verified": False}


def test_route_critique_sends_each_check_to_call_tool():
    step = step_for("critique")
    state = checked_round()
    state["messages"] = state["messages"][:3]
    (sent,) = route_critique(state, step)
    assert isinstance(sent, Send) and sent.node == "call_tool"
    assert route_critique({**state, "status": "completed"}, step) == END
    assert route_critique({**state, "messages": [QUESTION]}, step) == "revise"
    reviewed = step_for("critique", interrupt_before_tools=True)
    assert route_critique(state, reviewed) == "review"


def test_route_draft_goes_to_the_critique_while_the_run_goes_on():
    assert route_draft({"status": "running"}) == "critique"
    assert route_draft({"status": "completed"}) == END


def test_the_review_goes_to_revise_when_no_check_is_left():
    state = checked_round()
    assert reviewed_calls(state, otherwise="revise") == "revise"
    (sent,) = reviewed_calls({**state, "messages": state["messages"][:3]}, otherwise="revise")
    assert sent.node == "call_tool"
    graph = LOOP.create(model_for("text", []), [note], interrupt_before_tools=True)
    after = {edge.target for edge in graph.get_graph().edges if edge.source == "review"}
    assert after == {"call_tool", "revise", "__end__"}


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
