"""Each tool-using loop as an agent of langgraph-supervisor: the supervisor hands the
question over, the loop answers with its tool, the supervisor forwards the loop's answer by
its name; with ``include_agent_name="inline"`` the supervisor's model reads who spoke."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph_supervisor import create_supervisor
from langgraph_supervisor.handoff import create_forward_message_tool

from tests.clients.support import (
    ANSWER,
    SEARCH_ARGS,
    TOOL_LOOPS,
    answered_once,
    calls_of,
    fenced_once,
    loop_agent,
    tool_messages,
)
from tests.compat.middleware_support import call, calls, native
from tests.support.fakes import ScriptedChatModel


def supervisor_model() -> ScriptedChatModel:
    return native(
        [
            calls(call("transfer_to_math_expert", {})),
            calls(call("forward_message", {"from_agent": "math_expert"})),
        ]
    )


def run(loop: str, output_mode: str) -> tuple[dict, ScriptedChatModel]:
    agent, _ = loop_agent(loop)
    model = supervisor_model()
    workflow = create_supervisor(
        [agent],
        model=model,
        tools=[create_forward_message_tool("supervisor")],
        output_mode=output_mode,
        include_agent_name="inline",
    )
    out = workflow.compile().invoke({"messages": [HumanMessage("What is six times seven?")]})
    return out, model


@pytest.mark.parametrize("output_mode", ["full_history", "last_message"])
@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_loop_answers_as_a_supervised_agent(loop, output_mode):
    out, model = run(loop, output_mode)
    messages = out["messages"]

    named = [
        m
        for m in messages
        if isinstance(m, AIMessage)
        and m.name == "math_expert"
        and not m.response_metadata.get("__is_handoff_back")
    ]
    assert named and ANSWER in named[-1].content
    # forward_message found the agent's reply by its name and repeated it as the supervisor.
    last = messages[-1]
    assert isinstance(last, AIMessage) and last.name == "supervisor" and ANSWER in last.content
    # The supervisor's model read the agent's reply with its name inline.
    seen = " ".join(str(m.content) for m in model.prompts[1])
    assert f"<name>math_expert</name><content>{ANSWER}" in seen
    assert answered_once(messages) and fenced_once(messages)
    if output_mode == "full_history":
        # The loop's own tool work is part of what it hands back.
        assert calls_of(messages, "search")[0]["args"] == SEARCH_ARGS
        assert "42" in str(tool_messages(messages, "search")[0].content)
    else:
        assert not calls_of(messages, "search")
