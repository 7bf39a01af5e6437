"""A run's answer is the model's own: never a tool result copied whole, nor the library's
prompt text, nor the question read back. When the model gives no usable answer the run
says so: ``answer`` is empty, ``error`` says why, and the status is not ``completed``.

Every loop is run in every tool mode on scripted models that echo their prompt or copy a
tool result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import build_loop, prompts
from loopgraphs.graphs import registry
from loopgraphs.nodes.answer_check import (
    NO_ANSWER,
    copied_result,
    echoes_prompt,
    settle_answer,
    unusable,
)
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.state import new_fence
from tests.compat.middleware_support import call, calls
from tests.support.loop_scripts import tool_then_answer
from tests.support.scripts import MODES, act, final, model_for

TOOL_LOOPS = registry.TOOL_LOOPS
LOOP_MODES = [(loop, mode) for loop in TOOL_LOOPS for mode in MODES] + [
    ("cot", "native"),
    ("tot", "native"),
]
OPTIONS: dict[str, dict[str, Any]] = {
    "tot": {"max_depth": 1, "beam_width": 1, "n_branches": 2},
    "plan_execute": {"max_steps": 2, "max_step_iterations": 2},
    "reflexion": {"max_reflections": 1, "max_iterations": 3},
    "lats": {"n_candidates": 1, "max_rollouts": 2},
}
NOTHING_FOUND = "No results for 1980 in the archive."
QUESTION = "In which year did the Harrowby mill open?"


@tool
def search(query: str) -> str:
    """Look a fact up."""
    return NOTHING_FOUND


def _build(loop: str, mode: str, replies: list[Any]) -> Any:
    model = model_for(mode, replies, repeat_last=True)
    tools = [search] if loop in TOOL_LOOPS else []
    mode_option = {"tool_mode": mode} if loop in TOOL_LOOPS else {}
    return build_loop(loop, model, tools, **mode_option, **OPTIONS.get(loop, {})), model


def _no_answer(out: dict[str, Any]) -> None:
    """The run ended saying that the model gave no usable answer."""
    assert out["answer"] == ""
    assert out["status"] in ("error", "max_iterations")
    assert out["error"].startswith(NO_ANSWER) or out["status"] == "error", out["error"]


def _last(messages: list[BaseMessage]) -> str:
    return content_text(messages[-1].content)


def _first(messages: list[BaseMessage]) -> str:
    return content_text(messages[0].content)


@pytest.mark.parametrize("echo", [_last, _first], ids=["last-message", "first-message"])
@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_model_echoing_its_prompt_gives_no_answer(loop, mode, echo):
    """Every reply reads back the request's last (or first: the loop's system prompt)
    message. Nothing the run ends with may be that text."""
    graph, model = _build(loop, mode, [echo])
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    _no_answer(out)
    assert model.call_count >= 1


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_model_copying_an_earlier_tool_result_gives_no_answer(loop, mode):
    """The conversation holds a tool result; every reply copies it whole."""
    looked_up = call("search", {"query": "1980"})
    history = [
        HumanMessage("Look 1980 up."),
        AIMessage("", tool_calls=[looked_up]),
        ToolMessage(NOTHING_FOUND, tool_call_id=looked_up["id"]),
        AIMessage("Nothing was found."),
        HumanMessage(QUESTION),
    ]
    graph, _ = _build(loop, mode, [NOTHING_FOUND])
    out = graph.invoke({"messages": history})
    _no_answer(out)


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_model_answering_with_the_fence_marker_gives_no_answer(loop, mode):
    """The conversation holds a tool result, which the model is sent fenced; every reply
    is the fence's marker alone (as a small model copies it), and no message the thread
    keeps is raw JSON."""
    looked_up = call("search", {"query": "1980"})
    history = [
        HumanMessage("Look 1980 up."),
        AIMessage("", tool_calls=[looked_up]),
        ToolMessage(NOTHING_FOUND, tool_call_id=looked_up["id"]),
        AIMessage("Nothing was found."),
        HumanMessage(QUESTION),
    ]
    graph, _ = _build(loop, mode, [new_fence(history)])
    out = graph.invoke({"messages": history})
    _no_answer(out)


@pytest.mark.parametrize("mode", MODES)
def test_react_answering_the_fence_marker_in_its_grammar_keeps_no_json(mode):
    """ReAct's final action names the fence's marker, is asked again, and then the model
    keeps calling the tool until the budget ends: no answer, and the thread keeps what
    the chat was shown of each reply, never its JSON."""
    marker = new_fence([HumanMessage(QUESTION)])
    looked_up = act(mode, "search", {"query": "1980"})
    model = model_for(mode, [final(mode, marker), looked_up, final(mode, marker)])
    graph = build_loop("react", model, [search], tool_mode=mode, max_iterations=3)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    _no_answer(out)
    kept = [content_text(m.content) for m in out["messages"] if isinstance(m, AIMessage)]
    assert kept and not [text for text in kept if text.lstrip().startswith("{")], kept


SEARCH_ARGS = {"query": "Harrowby mill"}
FOLLOW_UP = "Are follow up questions needed here? Yes.\nFollow up: When did the mill open?"
CLAIM = {"claim": "it opened in 1980", "tool": "search", "tool_input": {"query": "1980"}}


def _structured(mode: str, name: str, value: dict[str, Any]) -> Any:
    """A structured reply: a native call of the schema's tool, else the JSON itself."""
    return calls(call(name, value)) if mode == "native" else json.dumps(value)


def _own_result_script(loop: str, mode: str) -> list[Any]:
    """The loop calls ``search`` once, then answers with its result word for word."""
    looked_up = act(mode, "search", SEARCH_ARGS)
    copied = final(mode, NOTHING_FOUND)
    if loop == "react":
        return [looked_up, copied]
    if loop == "plan_execute":
        return [
            _structured(mode, "Plan", {"steps": ["look it up"]}),
            looked_up,
            copied,
            NOTHING_FOUND,
        ]
    if loop == "reflexion":
        verdict = {"satisfactory": True, "feedback": ""}
        return [looked_up, copied, _structured(mode, "Evaluation", verdict)]
    if loop == "lats":  # the copy is a candidate's answer, then the forced answer's
        return [looked_up, _structured(mode, "Value", {"score": 5, "reason": "ok"}), copied]
    if loop == "self_ask":
        asked = calls(call("search", SEARCH_ARGS), content=FOLLOW_UP)
        return [
            asked if mode == "native" else FOLLOW_UP,
            f"So the final answer is: {NOTHING_FOUND}",
        ]
    if loop == "rewoo":
        planned = {"plan": "Look it up.", "evidence": "#E1", "tool": "search"}
        plan = {"steps": [{**planned, "tool_input": SEARCH_ARGS}]}
        return [_structured(mode, "Plan", plan), NOTHING_FOUND]
    critique = {"verified": False, "claims": [CLAIM]}
    return [
        "The mill opened in 1980.",
        _structured(mode, "CritiqueReport", critique),
        NOTHING_FOUND,
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_tool_result_of_the_run_copied_as_the_answer_is_not_the_answer(loop, mode):
    """The loop calls the tool, then answers with its result, word for word: the run ends
    without an answer, except CRITIC, whose checked draft (the model's) stands."""
    graph, _ = _build(loop, mode, _own_result_script(loop, mode))
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results and NOTHING_FOUND in content_text(results[0].content)
    if loop == "critic":
        assert out["answer"] == "The mill opened in 1980."
    else:
        _no_answer(out)


def test_a_cot_reply_reading_back_the_reask_prompt_is_no_answer():
    """The first reply runs on to the token cap; the model then reads back the request to
    answer shortly."""
    cut = AIMessage("Let me think " * 40, response_metadata={"finish_reason": "length"})
    graph, model = _build("cot", "native", [cut, _last])
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    assert model.call_count == 2
    assert echoes_prompt(content_text(model.prompts[1][-1].content))
    _no_answer(out)


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_model_answering_in_its_own_words_is_kept(loop, mode):
    """The checks take nothing from a real answer, even one that names the tool result."""
    answer = "The mill opened in 1921; no results for 1980 were found."
    replies: dict[str, list[Any]] = {
        "tot": ["1. It opened in 1921.\n2. It opened in 1980.", '{"scores": [9, 1]}', answer],
        "plan_execute": [calls(call("Plan", {"steps": ["answer it"]})), answer, answer],
        "reflexion": [answer, calls(call("Evaluation", {"satisfactory": True, "feedback": ""}))],
        "self_ask": [f"Are follow up questions needed here? No.\nSo the final answer is: {answer}"],
    }
    script = replies.get(loop, [answer]) if mode == "native" else [answer]
    if loop == "reflexion" and mode != "native":
        script = [final(mode, answer), '{"satisfactory": true, "feedback": ""}']
    if loop == "lats":
        verdict = {"satisfactory": True, "feedback": ""}
        script = [final(mode, answer), _structured(mode, "Verdict", verdict)]
    graph, _ = _build(loop, mode, script)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    assert out["status"] == "completed" and "1921" in out["answer"], out
    assert out.get("error", "") == ""


# --- the checks themselves --------------------------------------------------------


def test_prompt_text_is_found_wherever_it_stands():
    assert echoes_prompt(prompts.SHORT_ANSWER)
    assert echoes_prompt("Sure. " + prompts.FENCE_NOTE + " 42")
    assert not echoes_prompt("Paris is the capital of France, and has been for centuries.")
    assert not echoes_prompt("")
    filled = prompts.SYNTHESIZE_USER.format(question="Q?", trace="Step 1: x", draft="d")
    assert echoes_prompt(filled)
    assert echoes_prompt("<the final answer>.") and echoes_prompt("followed only by the answer.")
    assert echoes_prompt("<answer>") and not echoes_prompt("answer")
    # A worked example's names may be a real answer to a question about them.
    assert not echoes_prompt("J. R. R. Tolkien") and not echoes_prompt("1892")


@pytest.mark.parametrize(
    ("answer", "copied"),
    [
        (NOTHING_FOUND, True),
        (f"Final answer: {NOTHING_FOUND.upper()}", True),
        ("1921", False),
        ("No results.", False),  # shorter than the result: the model's own words
        (NOTHING_FOUND + " It opened in 1921.", False),
    ],
)
def test_a_copied_result_is_the_whole_result(answer, copied):
    messages = [ToolMessage(NOTHING_FOUND, tool_call_id="c1")]
    assert copied_result(answer, messages) is copied


def test_a_short_result_may_be_the_answer_but_an_error_may_not():
    assert not copied_result("323", [ToolMessage("323", tool_call_id="c1")])
    error = ToolMessage("Error: bad", tool_call_id="c1", status="error")
    assert copied_result("Error: bad", [error])
    assert copied_result("Error: no", [ToolMessage("Error: no", tool_call_id="c1")])


def test_the_reasons_name_what_was_wrong():
    messages = [HumanMessage(QUESTION), ToolMessage(NOTHING_FOUND, tool_call_id="c1")]
    assert unusable("  ", messages, 1) == "said nothing"
    assert unusable(prompts.SHORT_ANSWER, messages, 1) == "repeated the instructions it was given"
    assert unusable(NOTHING_FOUND, messages, 1) == "only copied a tool result"
    assert unusable(QUESTION.lower(), messages, 1) == "only repeated the question"
    assert unusable("1921", messages, 1) == ""


def test_settling_leaves_runs_that_go_on_or_end_otherwise_alone():
    state: dict[str, Any] = {"messages": [HumanMessage(QUESTION)], "answer": ""}
    running = {"answer": QUESTION}
    assert settle_answer(state, running) is running
    for scratch in ({"tool_ended": True}, {"hook_ended": True}):
        ended = {"status": "completed", "answer": "", "scratch": scratch}
        assert settle_answer(state, ended) is ended
    shaped = {"status": "completed", "answer": "", "structured_response": {"year": 1921}}
    assert settle_answer(state, shaped) is shaped
    fine = {"status": "completed", "answer": "1921"}
    assert settle_answer(state, fine) is fine


def test_settling_empties_the_answer_and_says_why():
    state: dict[str, Any] = {"messages": [HumanMessage(QUESTION)], "scratch": {}}
    done = settle_answer(state, {"status": "completed", "answer": QUESTION})
    assert done == {
        "status": "error",
        "answer": "",
        "error": "no usable answer: the model's reply only repeated the question",
    }
    spent = settle_answer(state, {"status": "max_iterations", "answer": ""})
    assert spent == {
        "status": "max_iterations",
        "answer": "",
        "error": "no usable answer: the model gave none before the run ended",
    }


EARLIER_ANSWER = "The archive lists no opening year."


@pytest.mark.parametrize(("loop", "mode"), LOOP_MODES)
def test_a_run_without_an_answer_does_not_take_an_earlier_turns(loop, mode):
    """The thread holds an earlier turn's answer; this run's model only ever calls the
    tool, so the run ends without one. Its answer is not the earlier turn's."""
    history = [
        HumanMessage("When did the Harrowby mill close?"),
        AIMessage(EARLIER_ANSWER),
        HumanMessage(QUESTION),
    ]
    replies = [act(mode, "search", {"query": "mill"})] if loop in TOOL_LOOPS else [""]
    graph, model = _build(loop, mode, replies)
    out = graph.invoke({"messages": history})
    assert model.call_count >= 1
    assert out["answer"] != EARLIER_ANSWER


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_run_a_failing_model_ends_does_not_take_an_earlier_turns_answer(loop):
    """The first turn of a thread answers; in the second the model fails for good. The
    run ends with an error and no answer: the first turn's is not taken for one."""
    script = tool_then_answer(loop, "native", "search", {"query": "mill"}, EARLIER_ANSWER)
    model = model_for("native", [*script, ValueError("the model is gone")], repeat_last=True)
    graph = build_loop(
        loop,
        model,
        [search],
        tool_mode="native",
        checkpointer=InMemorySaver(),
        **OPTIONS.get(loop, {}),
    )
    thread = {"configurable": {"thread_id": loop}}
    first = graph.invoke({"messages": [HumanMessage("When did the mill close?")]}, thread)
    second = graph.invoke({"messages": [HumanMessage(QUESTION)]}, thread)
    assert first["answer"] == EARLIER_ANSWER
    assert second["status"] == "error"
    assert "the model is gone" in second["error"]
    assert second["answer"] == ""
