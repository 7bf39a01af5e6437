"""Self-Ask guided on the real embedded llama.cpp model (SmolLM2-135M)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from loopgraphs import create_self_ask_graph
from loopgraphs.graphs.self_ask.guided import HOLD_WORDS
from loopgraphs.models import local_server as embedded_servers
from loopgraphs.nodes.grounding import WORD_RE
from loopgraphs.nodes.parsing.self_ask import builds_on, needed_words
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_self_ask_asks_a_tool_and_ends(local_server, local_model, monkeypatch, mode):
    """The embedded model is guided: its first reply is a follow-up the search tool
    answers, and the run ends within its budget. (Its answers vary, so they are not
    pinned.)"""
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    graph = create_self_ask_graph(
        local_model, [calculator, make_search_tool()], tool_mode=mode, max_follow_ups=3
    )
    out = graph.invoke(
        {"messages": [("user", "In which year was the founder of Quillmark Instruments born?")]}
    )
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert 2 <= out["llm_calls"] <= 3 + 1  # max_follow_ups + 1, reads included
    first = out["follow_ups"][0]
    assert first["tool"] in ("search", "calculator") and first["question"].strip()
    assert isinstance(out["answer"], str) and out["answer"].strip()
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert len(replies) == out["llm_calls"] and not replies[-1].tool_calls
    assert out["tool_mode"] == mode


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_self_ask_asks_the_needed_fact_of_the_answer_found(
    local_server, local_model, monkeypatch, mode
):
    """On a question phrased as users do (a possessive), the follow-up after the first
    answer asks the fact the question needs of that answer, each answer read from a
    result names something the follow-up and the question do not, and the run ends
    within its budget."""
    monkeypatch.setattr(embedded_servers, "_local_servers", {local_server.gguf: local_server})
    question = "What is the profession of Tobiah Grenvaux's mentor?"
    graph = create_self_ask_graph(
        local_model, [make_search_tool()], tool_mode=mode, max_follow_ups=5
    )
    out = graph.invoke({"messages": [("user", question)]})
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert 2 <= out["llm_calls"] <= 5 + 1
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert len(replies) == out["llm_calls"] and not replies[-1].tool_calls
    follow_ups = out["follow_ups"]
    for item in follow_ups:
        said = {w.lower()[:5] for w in WORD_RE.findall(f"{item['question']} {question}")}
        assert {w.lower()[:5] for w in WORD_RE.findall(item["answer"])} - said, item
    if len(follow_ups) >= 2 and len(WORD_RE.findall(follow_ups[0]["answer"])) <= HOLD_WORDS:
        first, second = follow_ups[0], follow_ups[1]
        needed = needed_words(question, [first["question"], first["answer"]])
        assert builds_on(second["question"], first["answer"].rstrip("."), needed), second
