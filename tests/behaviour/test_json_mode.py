"""Provider JSON for a model whose capabilities are unknown: json mode asks for it
unless the model's profile says the provider has none.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``).
"""

from __future__ import annotations

import json

import pytest

from loopgraphs import create_react_graph
from tests.support.fakes import ScriptedChatModel

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
