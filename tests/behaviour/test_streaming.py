"""Streaming: answer tokens with stream_mode="messages", each step with "updates"."""

from __future__ import annotations

import pytest

from loopgraphs import LOOPS, build_loop, create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel
from tests.support.scripts import act, final, model_for


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_messages_mode_yields_answer_tokens():
    model = model_for(
        "native",
        [act("native", "multiply", {"a": 6, "b": 7}), final("native", "The product is 42.")],
    )
    graph = create_react_graph(model, [multiply])
    tokens = [
        content_text(chunk.content)
        for chunk, meta in graph.stream({"messages": [("user", "6*7?")]}, stream_mode="messages")
        if meta["langgraph_node"] == "generate" and content_text(chunk.content)
    ]
    assert tokens == ["The ", "product ", "is ", "42."]


async def test_synthesized_answer_streams_from_its_own_node():
    model = model_for(
        "native",
        [
            act("native", "multiply", {"a": 6, "b": 7}),
            final("native", "42"),
            "Six times seven is 42.",
        ],
    )
    graph = create_react_graph(model, [multiply], synthesize_answer=True)
    tokens = []
    final_state = None
    async for mode, chunk in graph.astream(
        {"messages": [("user", "6*7?")]}, stream_mode=["messages", "values"]
    ):
        if mode == "messages" and chunk[1]["langgraph_node"] == "synthesize":
            tokens.append(content_text(chunk[0].content))
        elif mode == "values":
            final_state = chunk
    assert "".join(tokens) == "Six times seven is 42."
    assert final_state["answer"] == "Six times seven is 42."
    assert final_state["llm_calls"] == 3
    synthesis_prompt = content_text(model.prompts[2][-1].content)
    assert "Tool result:" in synthesis_prompt and "6*7?" in synthesis_prompt


def test_synthesis_context_cuts_tool_results_to_2000_chars():
    def dump(n: int) -> str:
        """Return n characters."""
        return "x" * n

    model = model_for("native", [act("native", "dump", {"n": 3000}), final("native", "done"), "ok"])
    graph = create_react_graph(model, [dump], synthesize_answer=True, max_tool_output_chars=5000)
    graph.invoke({"messages": [("user", "go")]})
    prompt = content_text(model.prompts[2][-1].content)
    (shown,) = prompt.split("Tool result: ")[1:]
    shown = shown.split("\nAssistant:")[0]
    # The result is cut to 2,000 characters and fenced as untrusted data.
    assert shown.startswith("<<tool_output ") and shown.endswith(">>")
    assert "x" * 2000 in shown and "x" * 2001 not in shown
    assert "[... truncated 1000 of 3000 characters]" in shown


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_updates_mode_shows_each_node(name):
    model = ScriptedChatModel(replies=["FINAL ANSWER: 4"], repeat_last=True)
    graph = build_loop(name, model, [])
    nodes = [
        next(iter(u)) for u in graph.stream({"messages": [("user", "2+2?")]}, stream_mode="updates")
    ]
    # Each step shows once, in order. With no tools and a model that always answers
    # "FINAL ANSWER: 4" every loop takes its shortest path, except Reflexion: its evaluator
    # reads no verdict in that reply, so it reflects until its 3 episodes are spent.
    episode = ["generate", "evaluate"]
    expected_nodes, expected_calls = {
        "cot": (["prepare", "generate", "parse"], 1),
        "critic": (["prepare", "generate"], 1),  # no tools: no claim to check, the draft stands
        "plan_execute": (["prepare", "plan", "execute", "synthesize"], 4),
        "react": (["generate"], 1),  # its first step starts the run
        "reflexion": (["prepare", *episode, "reflect", *episode, "reflect", *episode], 11),
        "self_ask": (["prepare", "generate"], 1),
        "tot": (["prepare", "expand", "score_branches"], 1),  # the first thought answers
        "rewoo": (["prepare", "solve"], 1),  # no tools: nothing to plan
        # LATS's 3 alike candidates are one answer, judged (no verdict read: 2 requests)
        # and reflected on; no step is left to expand, and the answer is that one.
        "lats": (["expand", "evaluate", "best_answer"], 3 + 2 + 1),  # expand starts the run
    }[name]
    assert nodes == expected_nodes
    assert model.call_count == expected_calls
    assert set(nodes) <= set(graph.get_graph().nodes)


@pytest.mark.integration
def test_local_model_streams_answer_tokens(local_model):
    graph = create_react_graph(local_model)
    chunks = [
        chunk
        for chunk, meta in graph.stream(
            {"messages": [("user", "Say hello.")]}, stream_mode="messages"
        )
        if meta["langgraph_node"] == "generate"
    ]
    text = "".join(content_text(c.content) for c in chunks)
    assert len([c for c in chunks if content_text(c.content)]) > 1 and text.strip()
