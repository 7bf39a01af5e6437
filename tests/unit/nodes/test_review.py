"""Approval (``nodes/review.py``): policies, requests and decisions.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

import datetime
from unittest.mock import patch

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, HumanMessage

from loopgraphs.nodes.review import (
    answer_without_running,
    ask_reviewer,
    config_for,
    decision_problem,
    flagged_calls,
    middleware_review,
    review_policy,
    reviewed_call,
)


def ask(*calls: tuple[str, dict, str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


# --- Approval: policies, requests and decisions -----------------------------------------


def test_review_policy_normalises_every_accepted_form() -> None:
    everything = {"allowed_decisions": ["approve", "edit", "reject", "respond"]}
    assert review_policy(True, ["a", "b"]) == {"*": everything}
    assert review_policy(False, ["a"]) == {}
    assert review_policy(["a"], ["a", "b"]) == {"a": everything}
    assert review_policy({"a": True, "b": False}, ["a", "b"]) == {"a": everything}
    assert review_policy({"b": False, "a": True}, ["a", "b"]) == {"a": everything}
    configured = {"a": {"allowed_decisions": ["approve"], "description": "Check it"}}
    assert review_policy(configured, ["a"]) == {
        "a": {"allowed_decisions": ["approve"], "description": "Check it"}
    }
    assert review_policy({"a": {}}, ["a"]) == {"a": everything}
    assert review_policy({"a": {"description": ""}}, ["a"]) == {"a": everything}


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("a", TypeError, "interrupt_before_tools must be a bool, a list of tool names or a dict"),
        (["zz", "a", "yy"], ValueError, "names unknown tools ['yy', 'zz']; tools are ['a']"),
        ({"a": 3}, TypeError, "interrupt_before_tools['a'] must be a bool or a dict"),
        (
            {"a": {"allowed_decisions": ["approve", "maybe"]}},
            ValueError,
            "interrupt_before_tools['a']['allowed_decisions'] must name some of approve, edit, "
            "reject, respond; got ['approve', 'maybe']",
        ),
        ({"a": {"allowed_decisions": []}}, ValueError, "must name some of"),
    ],
)
def test_review_policy_names_what_is_wrong(value, error, message) -> None:
    with pytest.raises(error) as raised:
        review_policy(value, ["a"])
    assert message in str(raised.value)


def test_flagged_calls_are_the_reviewed_tools_calls_of_a_reply() -> None:
    reply = ask(("a", {}, "c1"), ("b", {}, "c2"))
    assert [c["id"] for c in flagged_calls(review_policy(["b"], ["a", "b"]), reply)] == ["c2"]
    assert [c["id"] for c in flagged_calls(review_policy(True, ["a", "b"]), reply)] == ["c1", "c2"]
    assert flagged_calls({}, reply) == []
    assert flagged_calls(review_policy(True, ["a"]), HumanMessage("a")) == []
    specific = {"a": {"allowed_decisions": ["approve"]}, "*": {"allowed_decisions": ["edit"]}}
    assert config_for(specific, "a") == {"allowed_decisions": ["approve"]}
    assert config_for(specific, "b") == {"allowed_decisions": ["edit"]}
    assert config_for({}, "a") is None


@pytest.mark.parametrize(
    ("decisions", "problem"),
    [
        ([{"type": "approve"}], ""),
        ("approve", "one decision per tool call: expected 1, got 0"),
        ([], "expected 1, got 0"),
        ([{"type": "approve"}] * 2, "expected 1, got 2"),
        (["approve"], "decision for a must be one of approve, edit; got None"),
        ([{"type": "reject"}], "decision for a must be one of approve, edit; got 'reject'"),
        (
            [{"type": "edit"}],
            "an edit decision needs 'edited_action': {'name': ..., 'args': {...}}",
        ),
        ([{"type": "edit", "edited_action": {"name": "a", "args": {}}}], ""),
    ],
)
def test_decision_problem_checks_each_decision(decisions, problem) -> None:
    configs = [{"allowed_decisions": ["approve", "edit"]}]
    found = decision_problem(decisions, [tool_call_of("a")], configs)
    if problem.startswith("an edit") or not problem:
        assert found == problem
    else:
        assert problem in found


def test_a_respond_decision_needs_its_message() -> None:
    configs = [{"allowed_decisions": ["respond"]}]
    assert decision_problem([{"type": "respond"}], [tool_call_of("a")], configs) == (
        "a respond decision needs 'message': the text the model gets as the result"
    )
    assert (
        decision_problem([{"type": "respond", "message": "hi"}], [tool_call_of("a")], configs) == ""
    )


def test_a_decision_without_allowed_decisions_may_be_any_kind() -> None:
    assert decision_problem([{"type": "respond", "message": "x"}], [tool_call_of("a")], [{}]) == ""


def test_answers_given_without_running_the_tool() -> None:
    call = tool_call_of("a")
    responded = answer_without_running(call, {"type": "respond", "message": "42"})
    assert (responded.content, responded.name, responded.tool_call_id, responded.status) == (
        "42",
        "a",
        "c-a",
        "success",
    )
    rejected = answer_without_running(call, {"type": "reject"})
    assert (rejected.content, rejected.status, rejected.tool_call_id, rejected.name) == (
        "Rejected by the user: The user rejected this tool call.",
        "error",
        "c-a",
        "a",
    )
    reason = answer_without_running(call, {"type": "reject", "message": "no"})
    assert reason.content == "Rejected by the user: no"
    assert answer_without_running(call, {"type": "approve"}) is None
    assert answer_without_running(call, None) is None
    unnamed = {**call, "id": None}
    assert answer_without_running(unnamed, {"type": "reject"}).tool_call_id == ""
    assert answer_without_running(unnamed, {"type": "respond", "message": "x"}).tool_call_id == ""


def test_reviewed_call_applies_only_an_edit() -> None:
    call = tool_call_of("a", {"x": 1})
    assert reviewed_call(call, None) is call
    assert reviewed_call(call, {"type": "approve"}) is call
    assert reviewed_call(call, {"type": "edit", "edited_action": {"args": {"x": 2}}}) == {
        "name": "a",
        "args": {"x": 2},
        "id": "c-a",
        "type": "tool_call",
    }
    assert reviewed_call(call, {"type": "edit", "edited_action": {"name": "b"}})["args"] == {"x": 1}
    assert reviewed_call(call, {"type": "edit"}) == {**call, "type": "tool_call"}


def test_the_review_request_describes_each_flagged_call() -> None:
    policy = review_policy(
        {"a": True, "b": {"allowed_decisions": ["approve"], "description": "Check b"}},
        ["a", "b", "c"],
    )
    when = datetime.date(2024, 5, 1)
    reply = ask(("a", {"q": "ü", "when": when}, "c1"), ("b", {}, "c2"), ("c", {}, "c3"))
    seen: list = []
    answers = iter(
        [
            {"decisions": [{"type": "approve"}]},
            "approve",  # not a dict: asked again
            {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        ]
    )

    def answer(request: dict) -> object:
        seen.append(request)
        return next(answers)

    with patch("loopgraphs.nodes.review.interrupt", answer):
        decisions = ask_reviewer(policy, reply, {"a": "Does a."})
    assert decisions == {"c1": {"type": "approve"}, "c2": {"type": "approve"}}
    first, second, third = seen
    assert first == {
        "action_requests": [
            {
                "name": "a",
                "args": {"q": "ü", "when": when},
                "description": 'Tool call a({"q": "ü", "when": "2024-05-01"}): Does a.',
            },
            {"name": "b", "args": {}, "description": "Check b"},
        ],
        "review_configs": [
            {"action_name": "a", "allowed_decisions": ["approve", "edit", "reject", "respond"]},
            {"action_name": "b", "allowed_decisions": ["approve"]},
        ],
    }
    assert second == {**first, "error": second["error"]} and "expected 2, got 1" in second["error"]
    assert third == {**first, "error": third["error"]} and "expected 2, got 0" in third["error"]
    with patch(
        "loopgraphs.nodes.review.interrupt", lambda request: {"decisions": [{"type": "approve"}]}
    ):
        unknown = ask_reviewer(review_policy(["c"], ["c"]), ask(("c", {}, "c3")), {})
    assert unknown == {"c3": {"type": "approve"}}


def test_a_tool_with_no_description_is_described_as_unknown() -> None:
    requests: list = []

    def answer(request: dict) -> dict:
        requests.append(request)
        return {"decisions": [{"type": "approve"}]}

    with patch("loopgraphs.nodes.review.interrupt", answer):
        ask_reviewer(review_policy(True, ["c"]), ask(("c", {"n": 1}, "c3")), {})
    assert requests[0]["action_requests"][0]["description"] == 'Tool call c({"n": 1}): unknown tool'


def tool_call_of(name: str, args: dict | None = None) -> dict:
    return {"name": name, "args": args or {}, "id": f"c-{name}"}


def test_a_human_in_the_loop_middlewares_interrupt_on_is_a_review_policy() -> None:
    batched = HumanInTheLoopMiddleware(
        interrupt_on={
            "refund": True,
            "lookup": False,
            "email": {"allowed_decisions": ["approve", "reject"], "description": "Mail?"},
            "dump": {"allowed_decisions": ["reject"], "description": lambda *_: "made"},
        }
    )
    per_call = HumanInTheLoopMiddleware(interrupt_on={"other": True}, interrupt_mode="per_call")
    policy = middleware_review([object(), batched, per_call])
    assert policy == {
        "refund": {"allowed_decisions": ["approve", "edit", "reject", "respond"]},
        "email": {"allowed_decisions": ["approve", "reject"], "description": "Mail?"},
        "dump": {"allowed_decisions": ["reject"]},  # a made description: the review's own
    }
    assert middleware_review([]) == {}
