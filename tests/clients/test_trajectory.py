"""agentevals' trajectory evaluators read a loop's run like create_agent's: every tool call
the loop made is an assistant message with ``tool_calls`` in ``out["messages"]``, followed
by its result."""

from __future__ import annotations

import pytest
from agentevals.trajectory.match import create_trajectory_match_evaluator
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.clients.support import ANSWER, SEARCH_ARGS, TOOL_LOOPS, loop_agent

REFERENCE = [
    HumanMessage("What is six times seven?"),
    AIMessage("", tool_calls=[{"name": "search", "args": SEARCH_ARGS, "id": "1"}]),
    ToolMessage("42", tool_call_id="1"),
    AIMessage(ANSWER),
]


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_trajectory_superset_match(loop):
    graph, _ = loop_agent(loop)
    out = graph.invoke({"messages": [HumanMessage("What is six times seven?")]})
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="superset")
    result = evaluator(outputs=out["messages"], reference_outputs=REFERENCE)
    assert result["score"] is True, result


def test_react_trajectory_strict_match():
    graph, _ = loop_agent("react")
    out = graph.invoke({"messages": [HumanMessage("What is six times seven?")]})
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="strict")
    result = evaluator(outputs=out["messages"], reference_outputs=REFERENCE)
    assert result["score"] is True, result


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_wrong_reference_does_not_match(loop):
    graph, _ = loop_agent(loop)
    out = graph.invoke({"messages": [HumanMessage("What is six times seven?")]})
    other = AIMessage("", tool_calls=[{"name": "calculator", "args": {}, "id": "2"}])
    wrong = [*REFERENCE[:1], other]
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="superset")
    assert evaluator(outputs=out["messages"], reference_outputs=wrong)["score"] is False
