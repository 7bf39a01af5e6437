"""LangGraph's floor for a model call: graphs with nothing but what a tool loop needs.

Section 5 counts these next to ReAct and ``create_agent`` (no middleware), so that a
ratio to ``create_agent`` can be read against the least any LangGraph graph of that shape
spends:

- ``langgraph``: a model node and LangGraph's ``ToolNode`` behind ``tools_condition``,
  ``messages`` the only key;
- ``langgraph_keys``: the same graph holding what every loopgraphs loop returns
  (``RunResult``: the answer, status, error, tool mode and counters) and its ``scratch``,
  each written as a run must write it: all of them on the run's first turn, the counters
  on every turn, the answer and status on the last. No ``prepare`` step, no tool guard,
  no checks of the answer.

Both call the chat model the way a loopgraphs model step does (the model itself, with
the arguments ``bind_tools`` gave the binding, see ``loopgraphs.nodes.model_send``), and
their model node has a sync and an async path, as ``create_agent``'s has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableBinding
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from loopgraphs.internals import untraced_callable
from loopgraphs.state import Bookkeeping, RunResult, empty_usage, run_defaults

FLOORS = ("langgraph", "langgraph_keys")


class KeysState(RunResult[Any], total=False):
    """What a loopgraphs loop returns, and its bookkeeping."""

    scratch: Bookkeeping


def run_keys(state: Mapping[str, Any], reply: AIMessage) -> dict[str, Any]:
    """The keys a turn of a loopgraphs run writes besides its reply: on the run's first
    turn the values a run starts with (``run_defaults``) and its tool mode."""
    first = {**run_defaults(state), "tool_mode": "native"} if "status" not in state else {}
    calls = int(state.get("llm_calls") or 0) + 1
    update: dict[str, Any] = {**first, "llm_calls": calls, "usage": empty_usage()}
    if not reply.tool_calls:
        update.update(status="completed", answer=str(reply.content))
    return update


def floor_graph(name: str, model: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    """The compiled floor graph ``name`` (one of ``FLOORS``) for ``model`` and ``tools``."""
    if name not in FLOORS:
        raise ValueError(f"unknown floor {name!r}: expected one of {', '.join(FLOORS)}")
    keys = name == "langgraph_keys"
    bound = model.bind_tools(list(tools))
    arguments = bound.kwargs if isinstance(bound, RunnableBinding) else {}

    def update(state: Mapping[str, Any], reply: AIMessage) -> dict[str, Any]:
        return {"messages": [reply], **(run_keys(state, reply) if keys else {})}

    def model_node(state: Mapping[str, Any]) -> dict[str, Any]:
        return update(state, model.invoke(state["messages"], **arguments))

    async def amodel_node(state: Mapping[str, Any]) -> dict[str, Any]:
        return update(state, await model.ainvoke(state["messages"], **arguments))

    builder: Any = (
        StateGraph(KeysState, output_schema=RunResult) if keys else StateGraph(MessagesState)
    )
    builder.add_node("model", untraced_callable(model_node, amodel_node, name="model"))
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    return builder.compile(name=name)
