"""What a chat view shows: the last assistant message of a run is its answer.

Chat apps and LangGraph Studio's chat view render ``messages``. In every loop and tool
mode the run's last assistant message holds the answer text; what the model wrote (a JSON
action, reasoning before ``FINAL ANSWER:``) stays on the message under
``additional_kwargs["loopgraphs_reply"]``, and the model reads its own text back on later
turns.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import create_react_graph, strip_fence
from loopgraphs.nodes import fence_output
from loopgraphs.nodes.generate import RAW_REPLY
from loopgraphs.nodes.parsing.text import content_text
from tests.behaviour.test_custom_state import TOOL_LOOPS, build, start
from tests.support.scripts import MODES, act, final, model_for


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def last_reply(out: dict) -> AIMessage:
    message = out["messages"][-1]
    assert isinstance(message, AIMessage)
    return message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_the_last_assistant_message_is_the_answer(loop, mode):
    out = build(loop, mode).invoke(start(fruits=[]))
    assert out["status"] == "completed", out.get("error")
    assert content_text(last_reply(out).content) == out["answer"]
    assert not last_reply(out).tool_calls


@pytest.mark.parametrize("loop", ["cot", "tot"])
def test_the_last_assistant_message_is_the_answer_without_tools(loop):
    out = build(loop, "native").invoke(start())
    assert out["answer"] == "4"
    assert content_text(last_reply(out).content) == "4"


@pytest.mark.parametrize("mode", ["json", "text"])
def test_actions_show_their_thought_and_keep_the_reply(mode):
    script = [act(mode, "lookup", {"key": "a"}, thought="Look a up."), final(mode, "A is 1.")]
    model = model_for(mode, script)
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(start())
    action, answer = (m for m in out["messages"] if isinstance(m, AIMessage))
    assert action.content == "Look a up."
    assert action.additional_kwargs[RAW_REPLY] == script[0]
    assert [(c["name"], c["args"]) for c in action.tool_calls] == [("lookup", {"key": "a"})]
    assert answer.content == "A is 1." == out["answer"]
    assert answer.additional_kwargs[RAW_REPLY] == script[1]
    # The model read its own action text back, not the thought.
    assert any(m.content == script[0] for m in model.prompts[1] if isinstance(m, AIMessage))


@pytest.mark.parametrize("mode", MODES)
def test_the_next_turn_reads_the_replies_as_written(mode):
    script = [final(mode, "It is 1."), final(mode, "It is 2.")]
    model = model_for(mode, script)
    graph = create_react_graph(model, [lookup], tool_mode=mode, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"view-{mode}"}}
    graph.invoke(start(), config)
    out = graph.invoke({"messages": [("user", "And now?")]}, config)
    assert [content_text(m.content) for m in out["messages"] if isinstance(m, AIMessage)] == [
        "It is 1.",
        "It is 2.",
    ]
    written = content_text(script[0].content) if mode == "native" else script[0]
    shown = [content_text(m.content) for m in model.prompts[1] if isinstance(m, AIMessage)]
    assert shown == [written]


def test_a_synthesized_answer_is_the_last_message():
    script = [
        act("native", "lookup", {"key": "a"}),
        final("native", "a"),
        "The value of a is 'value of a'.",
    ]
    graph = create_react_graph(model_for("native", script), [lookup], synthesize_answer=True)
    out = graph.invoke(start())
    assert out["answer"] == "The value of a is 'value of a'."
    assert content_text(last_reply(out).content) == out["answer"]


def test_a_json_final_answer_is_plain_text_in_the_transcript():
    reply = json.dumps({"thought": "Done.", "action": "final_answer", "action_input": "42"})
    out = create_react_graph(model_for("json", [reply]), [lookup], tool_mode="json").invoke(start())
    assert last_reply(out).content == "42"
    assert "final_answer" not in content_text(last_reply(out).content)


def test_the_thread_keeps_tool_output_as_returned_and_strip_fence_reads_an_old_one():
    """A chat's tool panel shows the result the thread keeps: as the tool returned it, no
    fence markers (the model alone is sent them). ``strip_fence`` still reads a result
    kept fenced by an earlier release."""
    script = [act("native", "lookup", {"key": "a"}), final("native", "done")]
    out = create_react_graph(model_for("native", script), [lookup]).invoke(start())
    (result,) = [m for m in out["messages"] if m.type == "tool"]
    assert result.content == "value of a"
    assert strip_fence(fence_output("value of a", "0f76a1b2c3d4")) == "value of a"
    assert strip_fence("plain text") == "plain text"
