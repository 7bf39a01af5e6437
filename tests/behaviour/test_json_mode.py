"""Provider JSON for a model whose capabilities are unknown: json mode asks for it
unless the model's profile says the provider has none.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``), and that an answer turn written in json mode's action grammar
gives the action's answer in every tool loop.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from loopgraphs import build_loop, create_react_graph
from loopgraphs.graphs import registry
from loopgraphs.nodes import content_text
from tests.support.fakes import ScriptedChatModel
from tests.support.loop_scripts import tool_then_answer
from tests.support.scripts import model_for

# --- Provider JSON for a model whose capabilities are unknown ---------------------------


def note(text: str) -> str:
    """Keep a note."""
    return f"noted {text}"


JSON_FINAL = json.dumps({"thought": "Done.", "action": "final_answer", "action_input": "42"})


@pytest.mark.parametrize(
    ("profile", "uses_schema"),
    [
        (None, True),  # unknown: try the provider's JSON schema
        ({}, True),  # a profile that does not say: unknown too
        ({"structured_output": True}, True),
        ({"structured_output": False}, False),  # declared unsupported: never asked
    ],
)
def test_json_mode_asks_for_provider_json_unless_the_profile_says_no(profile, uses_schema):
    model = ScriptedChatModel(replies=[JSON_FINAL], profile=profile, structured_output=True)
    graph = create_react_graph(model, [note], tool_mode="json")
    out = graph.invoke({"messages": [("user", "what is 6 * 7?")]})
    assert out["status"] == "completed" and out["answer"] == "42"
    assert model.call_count == 1 == out["llm_calls"]
    assert len(model.schemas) == (1 if uses_schema else 0)
    if uses_schema:
        (schema,) = model.schemas
        assert schema["title"] == "react_step"


def test_the_fake_tells_unknown_from_unsupported():
    """The scripted model itself: three distinct cases of structured output."""
    follows = ScriptedChatModel(replies=[], profile={"structured_output": False})
    with pytest.raises(NotImplementedError):
        follows.with_structured_output({"type": "object"})
    refuses = ScriptedChatModel(
        replies=[], profile={"structured_output": True}, structured_output=False
    )
    with pytest.raises(NotImplementedError):
        refuses.with_structured_output({"type": "object"})
    unknown = ScriptedChatModel(replies=['{"a": 1}'], structured_output=True)
    assert unknown.with_structured_output({"type": "object"}).invoke("x") == {"a": 1}


# --- An answer turn written as a JSON action ---------------------------------------------


@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "fenced"])
@pytest.mark.parametrize("loop", registry.TOOL_LOOPS)
def test_an_answer_written_as_a_json_final_action_gives_its_answer(loop, wrapped):
    """In json mode a model writes its tool turns as JSON actions, and may write a turn
    that asks for plain text (a synthesis, a revision, a solver's answer) as one too: the
    run's answer, and the reply the chat shows, is the action's answer, never the JSON."""
    answer = "The mill opened in 1812."
    action = json.dumps({"thought": "Done.", "action": "final_answer", "action_input": answer})
    written = f"```json\n{action}\n```" if wrapped else action
    script = [
        written if isinstance(reply, str) and answer in reply and "{" not in reply else reply
        for reply in tool_then_answer(loop, "json", "note", {"text": "x"}, answer)
    ]
    model = model_for("json", script)
    out = build_loop(loop, model, [note], tool_mode="json").invoke(
        {"messages": [("user", "When did the mill open?")]}
    )
    assert out["answer"] == answer
    assert out["status"] == "completed"
    shown = [m for m in out["messages"] if isinstance(m, AIMessage) and not m.tool_calls]
    assert content_text(shown[-1].content) == answer
