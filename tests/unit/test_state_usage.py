"""The run's accounting in ``state.py``: usage records, counters, and a run's starting values.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Overwrite

from loopgraphs.state import (
    add_totals,
    add_usage,
    empty_usage,
    new_fence,
    run_defaults,
    usage_of,
)

# --- Accounting: usage records, counters and a run's starting values --------------------


def test_usage_records_add_field_by_field() -> None:
    assert empty_usage() == {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
    left = {"input_tokens": 5, "output_tokens": 2, "cached_tokens": 1}
    right = {"input_tokens": 7, "output_tokens": None, "cached_tokens": 3}
    assert add_usage(left, right) == {"input_tokens": 12, "output_tokens": 2, "cached_tokens": 4}
    assert add_usage(None, left) == left
    assert add_usage(left, {"output_tokens": 1}) == {
        "input_tokens": 5,
        "output_tokens": 3,
        "cached_tokens": 1,
    }
    assert add_usage(left, None) == empty_usage()  # a None update resets the record
    assert add_usage({}, {"input_tokens": 1}) == {
        "input_tokens": 1,
        "output_tokens": 0,
        "cached_tokens": 0,
    }


def test_usage_of_reads_the_providers_metadata() -> None:
    reply = AIMessage(
        "x",
        usage_metadata={
            "input_tokens": 9,
            "output_tokens": 4,
            "total_tokens": 13,
            "input_token_details": {"cache_read": 6, "cache_creation": 2},
        },
    )
    assert usage_of(reply) == {"input_tokens": 9, "output_tokens": 4, "cached_tokens": 6}
    assert usage_of(AIMessage("x")) == empty_usage()
    assert usage_of(object()) == empty_usage()
    bare = AIMessage("x", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2})
    assert usage_of(bare) == {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 0}


def test_add_totals_adds_each_reported_count_to_the_run() -> None:
    state = {"llm_calls": 3, "retries": 1, "usage": {"input_tokens": 10, "output_tokens": 5}}
    update = {"llm_calls": 2, "usage": {"input_tokens": 1, "cached_tokens": 4}, "answer": "a"}
    assert add_totals(state, update) == {
        "llm_calls": 5,
        "usage": {"input_tokens": 11, "output_tokens": 5, "cached_tokens": 4},
        "answer": "a",
    }
    assert add_totals({}, {"retries": None, "llm_calls": 1}) == {"retries": 0, "llm_calls": 1}
    assert add_totals(state, {"llm_calls": Overwrite(7), "retries": 2}) == {
        "llm_calls": 7,
        "retries": 3,
    }


def test_a_run_starts_from_zero_with_a_new_scratch() -> None:
    question = HumanMessage("q", id="h1")
    assert run_defaults({"messages": [question]}, iterations=0) == {
        "llm_calls": 0,
        "retries": 0,
        "usage": empty_usage(),
        "status": "running",
        "answer": "",
        "error": "",
        "scratch": {
            "fence": new_fence([question]),
            "transcript_start": 1,
            "seen": "h1",
            "iterations": 0,
        },
    }
    empty = run_defaults({"messages": []})
    assert (empty["status"], empty["scratch"]["seen"], empty["scratch"]["transcript_start"]) == (
        "error",
        "",
        0,
    )
    assert empty["error"] == (
        "the input has no messages: pass {'messages': [('user', 'your question')]}"
    )
    assert run_defaults({})["status"] == "error"
