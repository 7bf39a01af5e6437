"""The run's state helpers, one by one: where the caller's conversation ends, which
request a prompt reads, when a step starts a new run, a run's starting values, and the
state a node's writes leave for its router."""

from __future__ import annotations

import operator
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.last_value import LastValue
from langgraph.graph.message import add_messages
from langgraph.types import Command

from loopgraphs.state import (
    conversation_of,
    merge_scratch,
    messages_of,
    new_fence,
    request_of,
    start_run,
    starts_run,
    state_after,
)

ASKED = HumanMessage("What is 2 + 2?", id="h1")
ANSWERED = AIMessage("4", id="a1")
STEP_PROMPT = HumanMessage("Step 1: add the numbers", id="h2")


def test_the_messages_are_the_states_own_or_none():
    messages = [ASKED, ANSWERED]
    assert messages_of({"messages": messages}) is messages
    assert messages_of({}) == []
    assert messages_of({"messages": None}) == []


def test_the_conversation_is_every_message_before_the_run_has_a_transcript():
    assert conversation_of({"messages": [ASKED, ANSWERED]}) == [ASKED, ANSWERED]
    assert conversation_of({}) == []


def test_the_conversation_ends_where_the_runs_transcript_starts():
    state = {"messages": [ASKED, ANSWERED, STEP_PROMPT], "scratch": {"transcript_start": 1}}
    assert conversation_of(state) == [ASKED]
    assert conversation_of({**state, "scratch": {"transcript_start": 0}}) == []


def test_the_request_is_the_latest_user_message_of_the_conversation():
    later = HumanMessage("And 3 + 3?", id="h3")
    state = {"messages": [ASKED, ANSWERED, later, STEP_PROMPT], "scratch": {"transcript_start": 3}}
    assert request_of(state) == "And 3 + 3?"  # not the step's prompt after the start


def test_the_saved_request_is_the_fallback_when_the_conversation_has_none():
    assert request_of({"messages": [], "request": "saved question"}) == "saved question"
    assert request_of({"request": "saved"}) == "saved"
    assert request_of({}) == ""


def test_a_step_starts_a_run_when_none_is_going_on():
    assert starts_run({})
    assert starts_run({"status": "completed", "messages": [ASKED]})


def test_a_running_run_goes_on_after_its_own_messages():
    seen = {"scratch": {"seen": "h1"}, "status": "running"}
    assert not starts_run({**seen, "messages": [ASKED]})
    assert not starts_run({**seen, "messages": [ASKED, ANSWERED]})
    assert not starts_run({**seen, "messages": []})
    assert not starts_run({"status": "running"})


def test_new_human_input_during_an_unfinished_run_starts_a_new_one():
    state = {"status": "running", "scratch": {"seen": "h1"}}
    assert starts_run({**state, "messages": [ASKED, ANSWERED, HumanMessage("again", id="h9")]})


def test_a_run_starts_with_reset_counters_and_the_loops_own_scratch():
    update = start_run({"messages": [ASKED]}, iterations=0)
    assert update["llm_calls"] is None and update["retries"] is None and update["usage"] is None
    assert update["status"] == "running" and update["answer"] == ""
    assert update["scratch"]["iterations"] == 0
    assert update["scratch"]["transcript_start"] == 1 and update["scratch"]["seen"] == "h1"


def test_a_run_without_input_starts_in_error():
    update = start_run({"messages": []})
    assert update["status"] == "error" and "no messages" in update["error"]


CHANNELS: dict[str, Any] = {
    "status": LastValue(str),
    "total": BinaryOperatorAggregate(int, operator.add),
    "messages": BinaryOperatorAggregate(list, add_messages),
}


def test_the_state_after_takes_each_written_keys_last_value_or_its_reduction():
    state = {"status": "running", "total": 2, "other": "kept"}
    outputs = [{"status": "done", "total": 3}, Command(update={"total": 4, "free": 1})]
    after = state_after(CHANNELS, state, outputs)
    assert after == {"status": "done", "total": 9, "other": "kept", "free": 1}
    assert state == {"status": "running", "total": 2, "other": "kept"}  # not changed


def test_the_state_after_reads_updates_given_as_pairs():
    after = state_after(CHANNELS, {"total": 1}, [[("total", 2), ("status", "x")], None])
    assert after == {"total": 3, "status": "x"}


def test_a_reduced_key_absent_from_the_state_starts_from_its_channel():
    assert state_after(CHANNELS, {}, [{"total": 5}])["total"] == 5


def test_new_messages_follow_the_states():
    reply = AIMessage("4")
    after = state_after(CHANNELS, {"messages": [ASKED]}, [{"messages": [reply]}])
    assert after["messages"] == [ASKED, reply] and after["messages"][1] is reply
    two = state_after(CHANNELS, {"messages": [ASKED]}, [{"messages": ANSWERED}, {"messages": []}])
    assert two["messages"] == [ASKED, ANSWERED]


def test_a_message_with_a_known_id_replaces_the_states_own():
    fixed = AIMessage("four", id="a1")
    after = state_after(CHANNELS, {"messages": [ASKED, ANSWERED]}, [{"messages": [fixed]}])
    assert [m.content for m in after["messages"]] == ["What is 2 + 2?", "four"]


def test_messages_to_convert_go_through_the_reducer():
    after = state_after(CHANNELS, {"messages": [ASKED]}, [{"messages": [("ai", "4")]}])
    assert [type(m) for m in after["messages"]] == [HumanMessage, AIMessage]
    result = ToolMessage("4", tool_call_id="c1", id="t1")
    plain = state_after(CHANNELS, {"messages": []}, [{"messages": [result]}])
    assert plain["messages"] == [result]


def test_a_fence_marker_depends_on_the_first_messages_type_content_and_calls():
    asked = [HumanMessage("hi")]
    call = {"name": "add", "args": {}, "id": "c1", "type": "tool_call"}
    assert new_fence(asked) == new_fence([HumanMessage("hi", id="other")])  # ids do not count
    assert new_fence(asked) != new_fence([AIMessage("hi")])
    assert new_fence(asked) != new_fence([HumanMessage("ho")])
    assert new_fence([AIMessage("")]) != new_fence([AIMessage("", tool_calls=[call])])


def test_a_fence_marker_is_the_same_in_every_process():
    # The marker is part of every prompt: the same conversation gives the same prompts.
    assert new_fence([]) == "87346eb28235"
    assert new_fence([HumanMessage("What is 2 + 2?")]) == "a31bc438226d"


def test_a_thread_keeps_its_fence_marker():
    """Every turn of a thread fences with the marker of its first message: the earlier
    turns' tool results are sent as they were (a prompt cache reuses them), and a long
    thread costs a run's start no more than a new one."""
    first = HumanMessage("q")
    later = [
        AIMessage("a"),
        HumanMessage("again?"),
        *(HumanMessage(f"turn {i}") for i in range(50)),
    ]
    assert new_fence([first]) == new_fence([first, *later]) == new_fence([first, *later[:3]])
    assert new_fence([first, *later]) != new_fence(later)


def test_a_fence_marker_reads_plain_values_and_broken_text():
    assert new_fence([("user", "hi")]) != new_fence([("user", "ho")])
    assert new_fence(["hi"]) != new_fence([1])
    assert len(new_fence([HumanMessage("\ud800 lone surrogate")])) == 12


def test_a_scratch_update_replaces_the_values_it_names_and_a_fence_starts_afresh():
    old = {"fence": "f1", "iterations": 3, "seen": "h1"}
    assert merge_scratch(old, {"iterations": 4}) == {"fence": "f1", "iterations": 4, "seen": "h1"}
    assert merge_scratch(old, {"fence": "f2"}) == {"fence": "f2"}
    assert merge_scratch(None, {"seen": "h2"}) == {"seen": "h2"}
    assert merge_scratch(old, None) == old
