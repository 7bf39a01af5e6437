"""Cached prompt tokens are summed over every call of a run.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``).
"""

from __future__ import annotations

import pytest

from loopgraphs import build_loop, create_react_graph
from tests.support.fakes import ScriptedChatModel
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for

# --- Cached prompt tokens are summed over every call -------------------------------------


def note(text: str) -> str:
    """Keep a note."""
    return f"noted {text}"


@pytest.mark.parametrize("mode", MODES)
def test_react_sums_cached_tokens_over_its_calls(mode):
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    model = model_for(
        mode,
        [act(mode, "lookup", {"key": "a"}), act(mode, "lookup", {"key": "b"}), final(mode, "ok")],
        cache_read=7,
    )
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
        {"messages": [("user", "look a and b up")]}
    )
    assert out["llm_calls"] == 3 == model.call_count
    assert out["usage"]["cached_tokens"] == 21
    assert out["usage"]["input_tokens"] > out["usage"]["cached_tokens"]


def test_reflexion_sums_cached_tokens_over_episodes_and_verdicts():
    model = model_for(
        "text",
        [
            final("text", "It weighs 5."),
            "UNSATISFACTORY: the unit is missing",
            "Reflection: state the unit.",
            final("text", "It weighs 5 kg."),
            "SATISFACTORY: fine",
        ],
        cache_read=4,
    )
    graph = build_loop("reflexion", model, [note], tool_mode="text", retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "How heavy is it?")]})
    assert out["status"] == "completed" and out["answer"] == "It weighs 5 kg."
    assert out["llm_calls"] == 5 == model.call_count
    assert out["usage"]["cached_tokens"] == 20


def test_a_model_without_cache_reads_reports_no_cached_tokens():
    model = ScriptedChatModel(replies=["plain answer"])
    out = create_react_graph(model).invoke({"messages": [("user", "hi")]})
    assert out["usage"]["cached_tokens"] == 0 and out["usage"]["input_tokens"] > 0
