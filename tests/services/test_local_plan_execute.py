"""Plan-and-Execute on the real embedded llama.cpp model (SmolLM2-135M): a one-step
question ends within a few capped calls, and every prompt fits the context window."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from loopgraphs import create_plan_execute_graph
from loopgraphs.graphs.plan_execute import LOOP
from loopgraphs.graphs.plan_execute.plans import CHARS_PER_TOKEN
from loopgraphs.nodes import most_calls
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.tool_loop import check_history
from loopgraphs.toolkits import calculator, make_search_tool

pytestmark = pytest.mark.integration


class Prompts(BaseCallbackHandler):
    """Records the text of every prompt sent to the model."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.texts.append("\n".join(content_text(m.content) for m in messages[0]))


def test_one_step_arithmetic_question_ends_within_a_few_calls(local_model):
    graph = create_plan_execute_graph(
        local_model, [calculator, make_search_tool()], tool_mode="json", max_step_iterations=2
    )
    seen = Prompts()
    question = "What is 81 * 31 + 131?"
    out = graph.invoke({"messages": [("user", question)]}, {"callbacks": [seen]})
    # The server is local and every reply is handled: the run never errors.
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    # One step, the question itself: the planner (2 at most), one ReAct run (2 iterations
    # and the forced answer at most) and the synthesis when that run did not complete
    # (2 at most), far below the budget of a 7-step plan.
    assert out["plan"] == [question], out["plan"]
    assert 1 <= out["llm_calls"] == len(seen.texts) <= 2 + (2 + 1) + 2
    assert most_calls(LOOP, {"max_step_iterations": 2}) == 2 + (2 + 1 + 2 * 6) + 2
    assert isinstance(out["answer"], str)
    check_history(out["messages"])
    # Every reply is capped, and every prompt fits the server's window with its reply.
    cap = local_model.max_tokens
    assert cap and out["usage"]["output_tokens"] <= cap * out["llm_calls"]
    window = local_model.profile["max_input_tokens"]
    assert all(len(text) // CHARS_PER_TOKEN + cap <= window for text in seen.texts)
