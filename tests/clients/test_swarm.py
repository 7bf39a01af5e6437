"""Each tool-using loop as an agent of a langgraph-swarm: it calls its own tool, hands off
to a colleague with the swarm's handoff tool (a ``Command`` to the parent graph carrying the
whole history), the colleague hands back, and the loop answers."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_swarm import create_handoff_tool, create_swarm

from loopgraphs import LOOPS, create_react_graph
from tests.clients.support import (
    ANSWER,
    TOOL_LOOPS,
    answered_once,
    calls_of,
    fenced_once,
    handoff_script,
    search,
    tool_messages,
)
from tests.compat.middleware_support import call, calls, native


def swarm(loop: str):
    to_bob = create_handoff_tool(agent_name="bob")
    to_alice = create_handoff_tool(agent_name="alice")
    alice_model = native([*handoff_script(loop, to_bob.name), ANSWER], repeat_last=True)
    alice = LOOPS[loop](alice_model, [search, to_bob], name="alice")
    bob_model = native([calls(call(to_alice.name, {}))])
    bob = create_react_graph(bob_model, [to_alice], name="bob")
    graph = create_swarm([alice, bob], default_active_agent="alice")
    return graph.compile(checkpointer=InMemorySaver()), bob_model


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_loop_hands_off_after_its_own_tool_call_and_takes_the_work_back(loop):
    app, bob_model = swarm(loop)
    config = {"configurable": {"thread_id": f"swarm-{loop}"}}
    out = app.invoke({"messages": [HumanMessage("What is six times seven?")]}, config)
    messages = out["messages"]

    # alice's own tool ran once, then she handed off; bob ran and handed back.
    assert len(tool_messages(messages, "search")) == 1
    handed = tool_messages(messages, "transfer_to_bob")
    assert len(handed) == 1 and "Successfully transferred to bob" in str(handed[0].content)
    assert bob_model.call_count == 1 and tool_messages(messages, "transfer_to_alice")
    assert out["active_agent"] == "alice"
    # alice answered last, under her name, and the history was never rewritten.
    last = messages[-1]
    assert isinstance(last, AIMessage) and last.name == "alice" and ANSWER in last.content
    assert answered_once(messages) and fenced_once(messages)
    assert len({m.id for m in messages}) == len(messages)
    # The handoff is a call in the transcript, made by alice.
    handoffs = calls_of(messages, "transfer_to_bob")
    assert len(handoffs) == 1
    maker = next(m for m in messages if isinstance(m, AIMessage) and handoffs[0] in m.tool_calls)
    assert maker.name == "alice"
    # What the handoff took along is the conversation: no loop prompt became user input.
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    assert [h.content for h in humans] == ["What is six times seven?"]
