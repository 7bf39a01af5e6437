"""Chain-of-Thought scenarios on the scripted model."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs.graphs.cot import create_cot_graph
from loopgraphs.graphs.cot.steps import majority
from loopgraphs.nodes.generate import RAW_REPLY
from loopgraphs.nodes.parsing.answers import answer_key
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.prompts import COT_SYSTEM
from tests.support.fakes import ProviderError, ScriptedChatModel
from tests.support.scripts import FAST_RETRY

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
QUESTION = {"messages": [("user", "What is 17 * 6 + 14?")]}


def build(replies: list, **kwargs):
    model = ScriptedChatModel(replies=replies, **kwargs.pop("model_kwargs", {}))
    return model, create_cot_graph(model, retry_policy=FAST_RETRY, **kwargs)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Step 1: 17 * 6 = 102\nStep 2: 102 + 14 = 116\nFINAL ANSWER: 116", "116"),
        ("Step 1: compute.\nfinal answer:   116", "116"),
        ("Step 1: compute.\nFINAL_ANSWER: one hundred sixteen", "one hundred sixteen"),
    ],
)
def test_answer_is_read_after_the_marker(reply, answer):
    model, graph = build([reply])
    out = graph.invoke(QUESTION)
    assert out["answer"] == answer
    assert out["status"] == "completed"
    assert out["llm_calls"] == 1 == model.call_count
    assert out["samples"] == [reply]
    last = out["messages"][-1]
    # A chat view shows the answer; the reasoning stays on the message and in samples.
    assert isinstance(last, AIMessage) and last.content == answer
    assert last.additional_kwargs[RAW_REPLY] == reply
    assert out["tool_mode"] == "none"


def test_raw_text_when_marker_is_absent():
    _model, graph = build(["  It is 116, because 102 + 14 = 116.  "])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "It is 116, because 102 + 14 = 116."
    assert out["status"] == "completed"


def test_prompt_asks_for_steps_and_keeps_extra_instructions_first():
    model, graph = build(["FINAL ANSWER: 1"], system_prompt="Answer in French.")
    graph.invoke(QUESTION)
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    text = content_text(system.content)
    assert text.startswith("Answer in French.") and COT_SYSTEM in text
    assert "step by step" in text and "FINAL ANSWER:" in text
    assert content_text(model.prompts[0][-1].content) == "What is 17 * 6 + 14?"
    assert model.tool_sets == []


@pytest.mark.parametrize("run_async", [False, True])
async def test_self_consistency_majority_runs_samples_concurrently(run_async):
    replies = ["Step 1: ...\nFINAL ANSWER: 42"] * 3 + ["Step 1: ...\nFINAL ANSWER: 41"] * 2
    model, graph = build(replies, self_consistency=5, model_kwargs={"delay": 0.2})
    out = await graph.ainvoke(QUESTION) if run_async else graph.invoke(QUESTION)
    assert out["answer"] == "42"
    assert out["votes"] == {"42": 3, "41": 2}
    assert out["llm_calls"] == 5 == model.call_count
    assert model.max_concurrency > 1
    assert len(out["samples"]) == 5
    assert out["status"] == "completed"
    assert out["messages"][-1].content == out["answer"]
    assert out["messages"][-1].additional_kwargs[RAW_REPLY] == replies[0]
    assert out["usage"]["output_tokens"] > 0


def test_votes_compare_numbers_by_value_and_ignore_case_and_punctuation():
    replies = [
        "FINAL ANSWER: 323.0",
        "FINAL ANSWER: 1000",
        "FINAL ANSWER: 323",
        "FINAL ANSWER: 1,000.",
    ]
    replies += ["FINAL ANSWER: 323!"]
    _model, graph = build(replies, self_consistency=5)
    out = graph.invoke(QUESTION)
    assert answer_key(out["answer"]) == answer_key("323")
    assert sorted(out["votes"].values()) == [2, 3]


def test_failed_samples_are_ignored():
    replies = ["FINAL ANSWER: 7", ProviderError(401, "bad key"), "FINAL ANSWER: 7"]
    model, graph = build(replies, self_consistency=3)
    out = graph.invoke(QUESTION)
    assert out["status"] == "completed" and out["answer"] == "7"
    # The failed sample's request was sent, so it counts; a 401 is not retried.
    assert out["llm_calls"] == 3 == model.call_count
    assert out["retries"] == 0
    assert out["votes"] == {"7": 2}


def test_all_samples_failing_is_an_error():
    model, graph = build(
        [ProviderError(401, "invalid api key")],
        self_consistency=3,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION)
    assert out["status"] == "error" and "401" in out["error"]
    # All three failed requests count as model calls; none was retried.
    assert out["llm_calls"] == 3 == model.call_count
    assert out["retries"] == 0
    assert isinstance(out["answer"], str)


def test_majority_ties_go_to_the_earliest_answer():
    assert majority(["b", "a", "a", "b"]) == (0, {"b": 2, "a": 2})
    assert majority(["x", "Paris.", "paris", "y"])[0] == 1
    assert majority(["", " ", "z"]) == (2, {"z": 1})
    assert majority(["", ""]) == (0, {})
    assert majority([]) == (-1, {})


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("323.0", "323", True),
        (" 1,000 ", "1000", True),
        ("1e3", "1000", True),
        ("-0", "0", True),
        ("**Paris**.", "paris", True),
        ("3.14", "3.141", False),
        ("nan", "NaN", True),
        ("12 apples", "12", False),
    ],
)
def test_answer_key(left, right, same):
    assert (answer_key(left) == answer_key(right)) is same


def random_text(messages) -> str:
    rng = random.Random(len(messages))
    return "".join(rng.choice(string.printable) for _ in range(300))


def test_random_garbage_is_returned_as_the_answer():
    model, graph = build([random_text])
    out = graph.invoke(QUESTION)
    assert out["status"] == "completed"
    assert isinstance(out["answer"], str) and out["llm_calls"] == 1 == model.call_count


@pytest.mark.parametrize("samples", [1, 4])
def test_budget_is_exactly_self_consistency_calls(samples):
    model, graph = build(
        [random_text], self_consistency=samples, model_kwargs={"repeat_last": True}
    )
    out = graph.invoke(QUESTION)
    assert out["llm_calls"] == samples == model.call_count
    assert out["status"] == "completed"


def test_permanent_error_ends_with_status_error():
    model, graph = build([ProviderError(401, "invalid api key")])
    out = graph.invoke(QUESTION)
    assert out["status"] == "error" and "invalid api key" in out["error"]
    # The rejected request counts as a model call, and a 401 is not retried.
    assert out["llm_calls"] == 1 == model.call_count
    assert out["retries"] == 0
    assert out["answer"] == ""


def test_transient_error_is_retried():
    model, graph = build([ProviderError(503, "overloaded"), "FINAL ANSWER: 5"])
    out = graph.invoke(QUESTION)
    # Both requests count: the failed one and the retried one that answered.
    assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", "5", 2)
    assert model.call_count == 2 and out["retries"] == 1


@pytest.mark.parametrize("samples", [1, 3])
@pytest.mark.parametrize("limit", range(2, 8))
def test_small_recursion_limit_never_raises(samples, limit):
    model, graph = build(
        ["FINAL ANSWER: 9"], self_consistency=samples, model_kwargs={"repeat_last": True}
    )
    out = graph.invoke(QUESTION, {"recursion_limit": limit})
    assert out["llm_calls"] == model.call_count <= samples
    assert out["status"] in ("completed", "max_iterations")
    assert isinstance(out["answer"], str)
    if out["status"] == "completed":
        assert out["answer"] == "9"


def test_thread_counts_each_run_separately():
    model = ScriptedChatModel(replies=["FINAL ANSWER: 1", "FINAL ANSWER: 2"])
    graph = create_cot_graph(model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(QUESTION, config)
    out = graph.invoke({"messages": [("user", "and again?")]}, config)
    assert out["answer"] == "2" and out["llm_calls"] == 1
    assert len(out["messages"]) == 4
    assert len(model.prompts[1]) == 4  # system, first question, first reply, second question


def test_empty_input_is_a_clear_error():
    model, graph = build([])
    out = graph.invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"self_consistency": 0}, ValueError, "self_consistency"),
        ({"self_consistency": "3"}, TypeError, "self_consistency"),
        ({"self_consistency": True}, TypeError, "self_consistency"),
        ({"system_prompt": 3}, TypeError, "system_prompt"),
        ({"retry_policy": "fast"}, TypeError, "retry_policy"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_cot_graph(ScriptedChatModel(replies=[]), **kwargs)


def test_model_must_be_a_chat_model():
    with pytest.raises(TypeError, match="model must be"):
        create_cot_graph(42)


@pytest.mark.parametrize(("samples", "drawing"), [(1, "cot.mmd"), (5, "cot_vote.mmd")])
def test_graph_shape_snapshot(samples, drawing):
    """One sample ends at ``parse``; several are voted on in ``vote``."""
    _, graph = build([], self_consistency=samples)
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / drawing).read_text()
