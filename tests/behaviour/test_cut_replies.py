"""A reply cut at the token cap is never an answer (ReAct, Chain-of-Thought,
Tree-of-Thoughts; Reflexion's episodes are ReAct runs).

A reply is cut when its provider says it stopped at the cap (``finish_reason="length"``)
or when its text repeats itself until the cap, the way small models run away."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from loopgraphs import create_cot_graph, create_react_graph, create_tot_graph, prompts
from loopgraphs.nodes.parsing.text import content_text, cut_short, ends_in_repetition
from tests.loops.test_tot import brain, scripted
from tests.support.scripts import MODES, act, final, model_for

RUNAWAY = "The United States of America " * 12 + "The Unit"


def capped(reply: object) -> AIMessage:
    """``reply`` (a mode's text, or a message) as a reply that stopped at the token cap."""
    text = content_text(reply.content) if isinstance(reply, AIMessage) else str(reply)
    return AIMessage(text, response_metadata={"finish_reason": "length"})


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} is 7"


def prompts_of(model) -> list[str]:
    return ["\n".join(content_text(m.content) for m in prompt) for prompt in model.prompts]


# --- what counts as cut ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (RUNAWAY, True),
        ("ha " * 30, True),
        ("The answer is 42. " * 4, True),
        ("1999", False),
        ("The answer is 42. The answer is 42.", False),
        ("Step 1: 6 * 7 = 42\nStep 2: 42 + 1 = 43\nFINAL ANSWER: 43", False),
        ("| a | b |\n|---|---|\n| 1 | 2 |", False),
        ("".join(f"item {i}, " for i in range(200)), False),
    ],
)
def test_a_run_of_repeats_at_the_end_is_a_runaway(text, expected):
    assert ends_in_repetition(text) is expected


def test_a_reply_is_cut_when_its_provider_says_so_or_it_runs_away():
    assert cut_short(AIMessage("Paris", response_metadata={"finish_reason": "length"}))
    assert cut_short(AIMessage("Paris", response_metadata={"stop_reason": "max_tokens"}))
    assert cut_short(AIMessage(RUNAWAY))
    assert not cut_short(AIMessage("Paris", response_metadata={"finish_reason": "stop"}))
    assert not cut_short(HumanMessage(""))


# --- ReAct -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_react_asks_once_for_a_short_answer_after_a_cut_one(mode):
    model = model_for(mode, [capped(final(mode, RUNAWAY)), final(mode, "Paris")])
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
        {"messages": [("user", "capital of France?")]}
    )
    assert (out["status"], out["answer"]) == ("completed", "Paris")
    assert out["llm_calls"] == 2 == model.call_count
    assert prompts.SHORT_ANSWER in prompts_of(model)[1]


@pytest.mark.parametrize("mode", MODES)
def test_react_cut_twice_ends_without_an_answer_not_completed(mode):
    """The tool's result is in the transcript, but it is not the model's answer."""
    replies = [
        act(mode, "lookup", {"key": "x"}),
        capped(final(mode, "7 7 7")),
        final(mode, RUNAWAY),
    ]
    model = model_for(mode, replies)
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
        {"messages": [("user", "what is x?")]}
    )
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"] == "no usable answer: the model gave none before the run ended"
    assert any("value of x is 7" in content_text(m.content) for m in out["messages"])
    assert out["llm_calls"] == 3 == model.call_count
    # The runaway reply streamed: the thread keeps it as shown (no bubble empties), though
    # it is no answer.
    kept = content_text(out["messages"][-1].content)
    assert kept.startswith("The United States") or kept.endswith(RUNAWAY), kept


@pytest.mark.parametrize("mode", MODES)
def test_react_cut_without_a_tool_result_ends_with_no_answer(mode):
    model = model_for(mode, [capped(final(mode, "x")), capped(final(mode, "y"))])
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
        {"messages": [("user", "what?")]}
    )
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert model.call_count == 2


@pytest.mark.parametrize("mode", MODES)
def test_react_does_not_ask_again_when_no_turn_is_left(mode):
    model = model_for(mode, [act(mode, "lookup", {"key": "x"}), capped(final(mode, "x"))])
    out = create_react_graph(model, [lookup], tool_mode=mode, max_iterations=2).invoke(
        {"messages": [("user", "what is x?")]}
    )
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"] == "no usable answer: the model gave none before the run ended"
    assert any("value of x is 7" in content_text(m.content) for m in out["messages"])
    assert model.call_count == 2


@pytest.mark.parametrize("mode", MODES)
def test_react_forced_final_answer_cut_ends_without_an_answer(mode):
    replies = [act(mode, "lookup", {"key": "x"}), capped(final(mode, "the value is"))]
    model = model_for(mode, replies)
    out = create_react_graph(model, [lookup], tool_mode=mode, max_iterations=1).invoke(
        {"messages": [("user", "what is x?")]}
    )
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"] == "no usable answer: the model gave none before the run ended"
    assert any("value of x is 7" in content_text(m.content) for m in out["messages"])
    assert model.call_count == 2


# --- Chain-of-Thought --------------------------------------------------------------------


def test_cot_asks_once_more_after_a_cut_reply():
    model = model_for("text", [capped("Step 1: think " * 20), "FINAL ANSWER: 42"])
    out = create_cot_graph(model).invoke({"messages": [("user", "6*7?")]})
    assert (out["status"], out["answer"]) == ("completed", "42")
    assert out["llm_calls"] == 2
    assert prompts.SHORT_ANSWER in prompts_of(model)[1]


def test_cot_cut_twice_is_not_completed():
    model = model_for("text", [capped("FINAL ANSWER: 4"), RUNAWAY])
    out = create_cot_graph(model).invoke({"messages": [("user", "6*7?")]})
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["llm_calls"] == 2


def test_cot_voting_leaves_cut_samples_out():
    model = model_for("text", [capped("FINAL ANSWER: 9"), "FINAL ANSWER: 42", RUNAWAY])
    out = create_cot_graph(model, self_consistency=3).invoke({"messages": [("user", "6*7?")]})
    assert (out["status"], out["answer"]) == ("completed", "42")
    assert out["votes"] == {"42": 1}
    assert out["llm_calls"] == 3


def test_cot_voting_with_every_sample_cut_is_not_completed():
    model = model_for("text", [capped("FINAL ANSWER: 9")], repeat_last=True)
    out = create_cot_graph(model, self_consistency=2).invoke({"messages": [("user", "6*7?")]})
    assert (out["status"], out["answer"]) == ("max_iterations", "")


# --- Tree-of-Thoughts ---------------------------------------------------------------------


def test_tot_takes_no_answer_from_a_cut_proposal():
    def propose(path):
        if not path:
            return capped("1. ANSWER: 9\n2. try 6*7")
        return "1. ANSWER: 42"

    out = create_tot_graph(scripted(brain(propose=propose))).invoke(
        {"messages": [("user", "6*7?")]}
    )
    assert (out["status"], out["answer"]) == ("completed", "42")
    assert out["depth"] == 2


def test_tot_cut_final_answer_is_not_completed():
    model = scripted(brain(propose=lambda path: "1. think", final=capped("ANSWER: 4")))
    out = create_tot_graph(model, max_depth=1).invoke({"messages": [("user", "6*7?")]})
    assert out["status"] == "max_iterations"
    assert out["answer"] == "think"
