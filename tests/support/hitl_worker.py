"""Subprocess side of the cross-process approval test (PostgreSQL checkpointer).

``python -m tests.support.hitl_worker start URI THREAD LOG`` runs a ReAct graph until it pauses
before its tool call and prints the interrupt as JSON; ``... resume URI THREAD LOG``
approves the call from a fresh process and prints the final state as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command

from loopgraphs import create_react_graph
from tests.support.fakes import ScriptedChatModel, calls, tool_call


def reply(messages):
    if isinstance(messages[-1], ToolMessage):
        return f"The transfer is done: {messages[-1].content.splitlines()[1]}"
    return calls(tool_call("transfer", {"amount": 25}, id="c1"))


def main(command: str, uri: str, thread: str, log: str) -> None:
    def transfer(amount: int) -> str:
        """Transfer money."""
        with Path(log).open("a") as handle:
            handle.write(f"{amount}\n")
        return f"receipt {amount}"

    model = ScriptedChatModel(replies=[reply], repeat_last=True, profile={"tool_calling": True})
    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
        graph = create_react_graph(
            model, [transfer], checkpointer=saver, interrupt_before_tools=True
        )
        config = {"configurable": {"thread_id": thread}}
        if command == "start":
            graph.invoke({"messages": [("user", "send 25")]}, config)
            interrupts = [i.value for t in graph.get_state(config).tasks for i in t.interrupts]
            print(json.dumps({"interrupts": interrupts, "calls": model.call_count}))
        else:
            out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
            print(json.dumps({k: out[k] for k in ("answer", "status", "llm_calls")}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
