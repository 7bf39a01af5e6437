"""Once ``max_tool_calls`` is spent, the next model call asks for the final answer.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from loopgraphs import create_react_graph, prompts
from loopgraphs.nodes.parsing.text import content_text
from tests.support.scripts import MODES, act, final, model_for


def prompt_text(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def tool_messages(out: dict) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


# --- Once max_tool_calls is spent, the next call asks for the final answer --------------


@pytest.mark.parametrize("mode", MODES)
def test_the_call_after_the_tool_budget_is_the_final_answer_request(mode):
    ran: list = []

    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    model = model_for(
        mode,
        [act(mode, "lookup", {"key": "a"}), final(mode, "a is known")],
    )
    graph = create_react_graph(model, [lookup], tool_mode=mode, max_tool_calls=1)
    out = graph.invoke({"messages": [("user", "look things up")]})
    assert ran == ["a"]
    assert model.call_count == 2 == out["llm_calls"]
    last = model.prompts[-1][-1]
    assert isinstance(last, HumanMessage) and last.content == prompts.FORCE_FINAL_ANSWER
    assert prompts.FORCE_FINAL_ANSWER not in prompt_text(model.prompts[0])
    # No ordinary turn was spent on a call the budget would refuse.
    (result,) = tool_messages(out)
    assert "Not run" not in content_text(result.content)
    assert out["status"] == "max_iterations" and out["answer"] == "a is known"
