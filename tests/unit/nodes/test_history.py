"""What a model call reads of the conversation before the request (``nodes/history.py``)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from loopgraphs.nodes.history import bounded, conversation, earlier_turns, request_at, turns_of
from loopgraphs.nodes.settings import make_settings
from tests.support.fakes import ScriptedChatModel

CALL = {"name": "refund", "args": {"order": "A-17"}, "id": "c1"}


def test_turns_keep_each_user_turn_and_the_answer_it_got():
    messages = [
        SystemMessage("Be brief.", id="s"),
        HumanMessage("Refund A-17.", id="h1"),
        AIMessage("", tool_calls=[CALL], id="call"),
        ToolMessage("refunded", tool_call_id="c1", id="result"),
        AIMessage("Working on it.", id="draft"),
        AIMessage("Refunded A-17.", id="a1"),
        HumanMessage("And B-22?", id="h2"),
        AIMessage("", id="empty"),  # a run that ended without an answer
        HumanMessage("Hello?", id="h3"),
    ]
    assert [m.id for m in turns_of(messages)] == ["s", "h1", "a1", "h2", "h3"]


def test_the_request_is_the_last_user_message_before_the_runs_own():
    messages = [HumanMessage("a"), AIMessage("b"), HumanMessage("c"), AIMessage("d")]
    assert request_at(messages, 4) == 2
    assert request_at(messages, 2) == 0
    assert request_at(messages, 9) == 2  # a start past the end (messages removed since)
    assert request_at([AIMessage("only")], 1) == 0


def test_the_bound_keeps_the_latest_turns_starting_on_a_user_turn():
    turns = [HumanMessage("Refund A-17."), AIMessage("Refunded."), HumanMessage("And B-22?")]
    assert bounded(turns, None) == turns
    assert bounded(turns, 0) == []
    # Each message counts 3 tokens and one per 4 characters: the last one fits in 8.
    assert [m.content for m in bounded(turns, 8)] == ["And B-22?"]
    assert [m.content for m in bounded(turns[:2], 8)] == []  # never starts on an answer


def test_the_request_and_what_follows_it_are_read_whatever_the_bound():
    settings = make_settings(
        "cot", ScriptedChatModel(replies=[]), None, {"max_history_tokens": 0}, takes_tools=False
    )
    messages = [HumanMessage("old", id="h1"), AIMessage("old answer"), HumanMessage("now")]
    state = {"messages": [*messages, AIMessage("run")], "scratch": {"transcript_start": 3}}
    assert earlier_turns(state, settings) == []
    assert [m.content for m in conversation(state, settings)] == ["now"]
