"""Reflexion scenarios in every tool mode, on the scripted model."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from loopgraphs.graphs.reflexion import LOOP, create_reflexion_graph
from loopgraphs.graphs.reflexion.state import call_budget
from loopgraphs.graphs.reflexion.steps import NO_ATTEMPT, episode_update, with_reflections
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ProviderError, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def verdict(mode: str, satisfactory: bool, feedback: str = "") -> object:
    """The evaluator's reply: a native schema call, provider JSON, or plain text (regex)."""
    if mode == "native":
        return calls(tool_call("Evaluation", {"satisfactory": satisfactory, "feedback": feedback}))
    if mode == "json":
        return json.dumps({"satisfactory": satisfactory, "feedback": feedback})
    return f"{'SATISFACTORY' if satisfactory else 'UNSATISFACTORY'}: {feedback}"


def budget_of(**options) -> int:
    """The run's call budget for ``options`` (the rest at their defaults)."""
    return call_budget(LOOP.resolve(options))


def text_of(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def build(mode: str, replies: list, *, model_kwargs: dict | None = None, **kwargs):
    model = model_for(mode, replies, **(model_kwargs or {}))
    graph = create_reflexion_graph(
        model, kwargs.pop("tools", [lookup]), tool_mode=mode, retry_policy=FAST_RETRY, **kwargs
    )
    return model, graph


@pytest.mark.parametrize("mode", MODES)
def test_unsatisfactory_then_satisfactory(mode):
    script = [
        act(mode, "lookup", {"key": "weight"}),
        final(mode, "It weighs 5."),
        verdict(mode, False, "the unit is missing"),
        "Reflection: I gave a number without its unit. Next time state the unit.",
        act(mode, "lookup", {"key": "weight"}),
        final(mode, "It weighs 5 kg."),
        verdict(mode, True),
    ]
    model, graph = build(mode, script)
    history = [HumanMessage("How heavy is it?")]
    out = graph.invoke({"messages": history})
    assert out["status"] == "completed" and out["answer"] == "It weighs 5 kg."
    assert out["llm_calls"] == 7 == model.call_count
    assert out["episode"] == 2
    assert out["episode_answers"] == ["It weighs 5.", "It weighs 5 kg."]
    assert out["reflections"] == ["I gave a number without its unit. Next time state the unit."]
    assert out["evaluations"] == [
        {"satisfactory": False, "feedback": "the unit is missing"},
        {"satisfactory": True, "feedback": ""},
    ]
    first, evaluation, reflection, second = (model.prompts[i] for i in (0, 2, 3, 4))
    assert "Next time state the unit" not in text_of(first)
    assert "Next time state the unit" in content_text(second[-1].content)
    assert "How heavy is it?" in content_text(second[-1].content)
    assert first[0] == second[0]  # the ReAct system prompt is the same in every episode
    assert "It weighs 5." in text_of(evaluation) and "How heavy is it?" in text_of(evaluation)
    assert "the unit is missing" in text_of(reflection) and "It weighs 5." in text_of(reflection)
    assert "value of weight" in text_of(model.prompts[5])  # episode 2 used the tool again
    assert out["tool_mode"] == mode
    # the caller's messages are untouched and the transcript holds both episodes
    assert len(history) == 1 and content_text(out["messages"][0].content) == "How heavy is it?"
    assert not any("Next time" in content_text(m.content) for m in out["messages"])
    assert sum("It weighs 5" in content_text(m.content) for m in out["messages"]) == 2


async def test_reflexion_under_ainvoke():
    script = [
        final("native", "a"),
        verdict("native", False, "no"),
        "try b",
        final("native", "b"),
        verdict("native", True),
    ]
    model, graph = build("native", script)
    out = await graph.ainvoke({"messages": [("user", "q")]})
    assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", "b", 5)
    assert "try b" in content_text(model.prompts[3][-1].content)


def test_satisfactory_first_episode_costs_two_calls():
    model, graph = build("native", [final("native", "Paris"), verdict("native", True)])
    out = graph.invoke({"messages": [("user", "Capital of France?")]})
    assert out["status"] == "completed" and out["answer"] == "Paris"
    assert out["llm_calls"] == 2 == model.call_count and out["reflections"] == []


@pytest.mark.parametrize("mode", MODES)
def test_max_reflections_exhausted_returns_last_answer(mode):
    script = [
        final(mode, "first try"),
        verdict(mode, False, "wrong"),
        "Reflection: be careful.",
        final(mode, "second try"),
        verdict(mode, False, "still wrong"),
    ]
    model, graph = build(mode, script, max_reflections=2)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "max_iterations" and out["answer"] == "second try"
    assert out["llm_calls"] == 5 == model.call_count  # no reflection after the last episode
    assert out["reflections"] == ["be careful."]
    assert [e["satisfactory"] for e in out["evaluations"]] == [False, False]


@pytest.mark.parametrize("mode", MODES)
def test_an_episode_without_an_answer_is_not_judged_and_never_completes(mode):
    """An episode that ends with no answer (its ReAct run asked once more, then gave up)
    is not satisfactory and costs no evaluator call; the next episode goes on."""
    script = [
        final(mode, ""),
        final(mode, ""),
        "Reflection: answer the question.",
        final(mode, "Paris"),
        verdict(mode, True),
    ]
    model, graph = build(mode, script, max_reflections=2)
    out = graph.invoke({"messages": [("user", "Capital of France?")]})
    assert out["evaluations"][0] == {"satisfactory": False, "feedback": NO_ATTEMPT}
    assert (out["status"], out["answer"]) == ("completed", "Paris")
    assert out["llm_calls"] == 5 == model.call_count
    assert out["episode_answers"] == ["", "Paris"]


def test_evaluator_reply_in_plain_text_from_a_native_model():
    script = [
        final("native", "x"),
        "UNSATISFACTORY - too short",
        "longer",
        final("native", "x y z"),
        "SATISFACTORY",
    ]
    model, graph = build("native", script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["evaluations"][0] == {"satisfactory": False, "feedback": "too short"}
    assert out["status"] == "completed" and out["answer"] == "x y z"
    assert out["llm_calls"] == 5 == model.call_count


def test_unusable_evaluation_counts_as_not_satisfactory():
    script = [final("native", "a"), "???", "!!!", "", final("native", "b"), verdict("native", True)]
    model, graph = build("native", script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["evaluations"][0] == {"satisfactory": False, "feedback": "evaluation failed"}
    assert "evaluation failed" in out["reflections"][0]  # an empty reflection falls back
    assert out["answer"] == "b" and out["llm_calls"] == 6 == model.call_count


def test_evaluator_error_keeps_the_answer():
    model, graph = build(
        "native", [final("native", "draft"), ProviderError(401, "invalid api key")]
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error" and "401" in out["error"]
    assert out["answer"] == "draft"
    # The draft and the evaluator's rejected request both count; a 401 is not retried.
    assert model.call_count == 2 == out["llm_calls"] and out["retries"] == 0


def test_reflections_go_into_the_latest_user_turn():
    conversation = [HumanMessage("earlier"), HumanMessage([{"type": "text", "text": "now"}])]
    merged = with_reflections(conversation, ["lesson one", "lesson two"])
    assert merged[0] is conversation[0] and conversation[1].content == [
        {"type": "text", "text": "now"}
    ]
    assert "- lesson one\n- lesson two" in merged[1].content[0]["text"]
    assert merged[1].content[1] == {"type": "text", "text": "now"}
    assert with_reflections(conversation, []) == conversation


def conversation_with_lessons() -> tuple[list, list]:
    conversation = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    conversation.append(HumanMessage("mail ada@example.com", id="h2"))
    return conversation, with_reflections(conversation, ["be brief"])


def test_an_episode_adds_its_transcript_and_the_user_message_keeps_its_words():
    conversation, given = conversation_with_lessons()
    assert given[-1].id == "h2:lessons" and "be brief" in given[-1].content
    answer = AIMessage("done", id="a2")
    assert episode_update(conversation, given, [*given, answer]) == ([answer], None)


def test_an_input_message_changed_in_an_episode_goes_back_without_the_lessons():
    conversation, given = conversation_with_lessons()
    redacted = given[-1].model_copy(
        update={"content": given[-1].content.replace("ada@example.com", "[REDACTED_EMAIL]")}
    )
    answer = AIMessage("done", id="a2")
    update, start = episode_update(conversation, given, [*given[:-1], redacted, answer])
    assert start is None
    assert [m.id for m in update] == ["h2", "a2"]
    assert update[0].content == "mail [REDACTED_EMAIL]"


def test_an_episode_that_rewrote_its_input_replaces_the_conversation():
    conversation, given = conversation_with_lessons()
    summary = HumanMessage("SUMMARY", id="s1")
    produced = [summary, given[-1], AIMessage("done", id="a2")]
    update, start = episode_update(conversation, given, produced)
    assert isinstance(update[0], RemoveMessage) and update[0].id == REMOVE_ALL_MESSAGES
    assert [m.id for m in update[1:]] == ["s1", "h2", "a2"]
    assert update[2].content == "mail ada@example.com"
    assert start == 2
    # Nothing of the input left: the transcript starts after the leading user messages.
    update, start = episode_update(conversation, given, [summary, AIMessage("x", id="a3")])
    assert [m.id for m in update[1:]] == ["s1", "a3"] and start == 1


# adversarial models ----------------------------------------------------------------------

BUDGET = budget_of(max_reflections=3, max_iterations=2)


def test_budget_formula():
    assert BUDGET == 3 * (2 + 1) + 3 * 2 + (3 - 1) == 17
    assert budget_of() == 3 * 11 + 6 + 2


@pytest.mark.parametrize("mode", MODES)
def test_random_text_model_ends_within_budget(mode):
    rng = random.Random(3)
    words = ["lorem", "{", "}", "Action:", "satisfy", "42", "\n", "Thought", "zzz"]

    def noise(messages):
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 25)))

    model, graph = build(mode, [noise], model_kwargs={"repeat_last": True}, max_iterations=2)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "max_iterations" and isinstance(out["answer"], str)
    assert out["episode"] == 3
    assert out["llm_calls"] <= BUDGET and out["llm_calls"] == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_never_finishing_model_spends_exactly_the_budget(mode):
    counter = itertools.count()
    model, graph = build(
        mode,
        [lambda messages: act(mode, "lookup", {"key": str(next(counter))})],
        model_kwargs={"repeat_last": True},
        max_iterations=2,
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "max_iterations"
    # Every episode ran out of turns making tool calls: it gave no answer, so none was
    # evaluated (3 episodes of 2 turns and a final answer, 2 reflections).
    assert out["llm_calls"] == 3 * (2 + 1) + 2 == model.call_count <= BUDGET
    assert len(out["reflections"]) == 2 and all(out["reflections"])
    assert out["answer"] == "" and out["error"].startswith("no usable answer:")


@pytest.mark.parametrize("mode", MODES)
def test_permanent_provider_error_ends_with_error(mode):
    model, graph = build(
        mode, [ProviderError(401, "invalid api key")], model_kwargs={"repeat_last": True}
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error" and "invalid api key" in out["error"]
    # The rejected request counts as a model call; a 401 is not retried.
    assert model.call_count == 1 == out["llm_calls"] and out["retries"] == 0
    assert isinstance(out["answer"], str)


@pytest.mark.parametrize("limit", [4, 8, 12])
def test_small_recursion_limit_never_raises(limit):
    counter = itertools.count()
    model, graph = build(
        "native",
        [lambda messages: act("native", "lookup", {"key": str(next(counter))})],
        model_kwargs={"repeat_last": True},
        max_iterations=3,
        max_reflections=20,
    )
    out = graph.invoke({"messages": [("user", "q")]}, {"recursion_limit": limit})
    assert out["status"] == "max_iterations"
    assert 1 <= out["episode"] < 20
    assert out["llm_calls"] == model.call_count
    # each episode still gets its whole ReAct budget (3 iterations + a final answer); an
    # episode without an answer is not evaluated
    assert out["llm_calls"] == out["episode"] * 4 + (out["episode"] - 1)


def test_empty_input_is_a_clear_error():
    model, graph = build("native", [])
    out = graph.invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"max_reflections": 0}, ValueError, "max_reflections"),
        ({"max_reflections": "3"}, TypeError, "max_reflections"),
        ({"max_iterations": 0}, ValueError, "max_iterations"),
        ({"tool_mode": "xml"}, ValueError, "tool_mode"),
        ({"system_prompt": 5}, TypeError, "system_prompt"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_reflexion_graph(model_for("native", []), [lookup], **kwargs)


def test_graph_shape_snapshot():
    _, graph = build("native", [])
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "reflexion.mmd").read_text()


def test_tool_approval_inside_an_episode_pauses_and_resumes():
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    script = [act("native", "lookup", {"key": "a"}), final("native", "A"), verdict("native", True)]
    model = model_for("native", script)
    graph = create_reflexion_graph(
        model,
        [lookup],
        interrupt_before_tools=True,
        checkpointer=InMemorySaver(),
        retry_policy=FAST_RETRY,
    )
    config = {"configurable": {"thread_id": "tools"}}
    paused = graph.invoke({"messages": [("user", "q")]}, config)
    assert paused["__interrupt__"][0].value["action_requests"][0]["args"] == {"key": "a"}
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert out["status"] == "completed" and out["answer"] == "A"
    assert out["llm_calls"] == 3 == model.call_count
    assert [type(m).__name__ for m in model.prompts[1]] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    ]
