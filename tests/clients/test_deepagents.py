"""Each tool-using loop as a deepagents subagent (``CompiledSubAgent``): the main agent's
``task`` tool runs the loop on its own conversation and reads back the loop's last reply;
the loop's result keys do not break the main agent's state."""

from __future__ import annotations

import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.clients.support import ANSWER, TOOL_LOOPS, loop_agent
from tests.compat.middleware_support import call, calls, native

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="deepagents needs 3.11+")


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("loop", TOOL_LOOPS)
async def test_loop_runs_as_a_deepagents_subagent(loop, how):
    from deepagents import CompiledSubAgent, create_deep_agent

    agent, agent_model = loop_agent(loop)
    task = {"description": "What is six times seven?", "subagent_type": "math_expert"}
    main_model = native([calls(call("task", task)), "The expert says 42."])
    subagent = CompiledSubAgent(
        name="math_expert", description="Answers arithmetic questions.", runnable=agent
    )
    app = create_deep_agent(model=main_model, subagents=[subagent])
    request = {"messages": [HumanMessage("Ask the expert: what is six times seven?")]}
    out = app.invoke(request) if how == "invoke" else await app.ainvoke(request)

    result = next(m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "task")
    assert ANSWER in str(result.content)
    assert agent_model.call_count > 0
    # The expert's own question was the task's description, not the main conversation.
    assert "What is six times seven?" in str(agent_model.prompts[0])
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and last.content == "The expert says 42."
