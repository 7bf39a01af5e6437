"""Helpers that write scripted replies in each tool mode's grammar."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import RetryPolicy

from loopgraphs.nodes.errors import is_transient
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel, calls, tool_call

MODES = ("native", "json", "text")
FAST_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)


def act(mode: str, name: str, args: dict[str, Any], *, thought: str = "I need a tool.") -> Any:
    """A reply calling one tool, in the grammar of ``mode``."""
    if mode == "native":
        return calls(tool_call(name, args))
    if mode == "json":
        return json.dumps({"thought": thought, "action": name, "action_input": args})
    return f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(mode: str, answer: str) -> Any:
    """A reply giving the final answer, in the grammar of ``mode``."""
    if mode == "native":
        return AIMessage(content=answer)
    if mode == "json":
        return json.dumps({"thought": "Done.", "action": "final_answer", "action_input": answer})
    return f"Thought: I can answer now.\nFINAL_ANSWER: {answer}"


def valued(mode: str, score: int = 7) -> Any:
    """A value (the kit's ``Value``) in the form of ``mode``'s structured output."""
    data = {"score": score, "reason": "on the way"}
    return calls(tool_call("Value", data)) if mode == "native" else json.dumps(data)


def judged(mode: str, satisfactory: bool = True, feedback: str = "") -> Any:
    """A verdict (the kit's ``Verdict``) in the form of ``mode``'s structured output."""
    data = {"satisfactory": satisfactory, "feedback": feedback}
    return calls(tool_call("Verdict", data)) if mode == "native" else json.dumps(data)


FIRST_REQUESTS = {"lats": 3}
"""The requests a loop's first step sends at once, where more than one: LATS samples its
3 candidates (its default ``n_candidates``) together, each sent once."""

LATS_SMALL = {"n_candidates": 1, "max_rollouts": 2}
"""LATS with one candidate per rollout (its calls come in script order) and two rollouts."""


def lats_search(mode: str, name: str, args: dict[str, Any], answer: str) -> list[Any]:
    """A LATS run with ``LATS_SMALL``: a candidate calling ``name``, its value, then a
    candidate answering ``answer`` and the verdict that it is satisfactory."""
    return [act(mode, name, args), valued(mode), final(mode, answer), judged(mode)]


def lats_brain(
    steps: list[tuple[str, dict[str, Any]]], answer: str, *, mode: str = "native"
) -> Any:
    """A LATS model that replies by the request, whatever order its concurrent calls come
    in: a value (7) to a value request, a satisfactory verdict to a verdict request, a
    lesson to a reflection request; a candidate turn makes the first call of ``steps`` its
    trajectory has not made (read from the assistant messages of its prompt), then
    answers ``answer``."""

    def made(messages: list[Any], name: str) -> bool:
        return any(
            isinstance(m, AIMessage)
            and (any(c["name"] == name for c in m.tool_calls) or name in content_text(m.content))
            for m in messages
        )

    def reply(messages: list[Any]) -> Any:
        asked = "\n".join(content_text(m.content) for m in messages)
        if "The attempt is not finished" in asked:
            return valued(mode)
        if "<answer>" in asked:
            return judged(mode)
        if "Write the reflection" in asked:
            return "Check the result before answering."
        for name, args in steps:
            if not made(messages, name):
                return act(mode, name, args)
        return final(mode, answer)

    return reply


def step_alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of a json-mode step schema as a model got it: in the envelope
    written for the embedded model (``{"name", "schema": {"anyOf": [...]}}``), or as the
    plain schema other models get, its ``anyOf`` root wrapped in ``value``."""
    if "schema" in schema:
        return list(schema["schema"]["anyOf"])
    return list(schema["properties"]["value"]["anyOf"])


def follow_up(mode: str, text: str, tool: str = "note") -> Any:
    """A Self-Ask turn asking one follow-up of ``tool`` (whose one argument is ``text``),
    in the grammar of ``mode``."""
    line = f"Are follow up questions needed here? Yes.\nFollow up: {text}"
    if mode == "native":
        return calls(tool_call(tool, {"text": text}), content=line)
    if mode == "json":
        return f"{line}\nTool: {tool}\nTool Input: {json.dumps({'text': text})}"
    return f"{line}\nTool: {tool}\nTool Input: {text}"


def critique(mode: str, claim: str, tool: str = "note") -> Any:
    """A CRITIC critique naming one claim to check with ``tool``, in the form of ``mode``."""
    found = {"claim": claim, "tool": tool, "tool_input": {"text": claim}}
    if mode == "native":
        return calls(tool_call("CritiqueReport", {"verified": False, "claims": [found]}))
    if mode == "json":
        return json.dumps({"verified": False, "claims": [found]})
    return f"CLAIM: {claim}\nTOOL: {tool}\nTOOL INPUT: {claim}"


def rewoo_plan(mode: str, *steps: tuple[str, Any]) -> Any:
    """A ReWOO plan whose steps call ``(tool, input)`` in order, their evidence ``#E1``,
    ``#E2``, ..., in the form of ``mode`` (a native call of the plan's schema, else JSON)."""
    data = {
        "steps": [
            {"plan": f"Step {n}.", "evidence": f"#E{n}", "tool": name, "tool_input": given}
            for n, (name, given) in enumerate(steps, 1)
        ]
    }
    if mode == "native":
        return calls(tool_call("Plan", data))
    return json.dumps(data)


@tool
def note(text: str) -> str:
    """Write a note."""
    return f"noted {text}"


def model_for(mode: str, replies: list[Any], **kwargs: Any) -> ScriptedChatModel:
    """A scripted model whose profile matches ``mode`` (``profile=`` replaces it)."""
    profile = {
        "native": {"tool_calling": True, "structured_output": True},
        "json": {"tool_calling": False, "structured_output": True},
        "text": {"tool_calling": False, "structured_output": False},
    }[mode]
    return ScriptedChatModel(replies=replies, **{"profile": profile, **kwargs})


class Refunds:
    """A side-effecting tool, ``refund(order)``, that records the orders it refunded."""

    def __init__(self) -> None:
        self.done: list[str] = []

        @tool
        def refund(order: str) -> str:
            """Refund an order."""
            self.done.append(order)
            return f"refunded {order}"

        self.tool = refund


def run_in_parent(agent: Any, request: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """Run ``agent`` as a node of a parent graph that also has a node ``elsewhere``, which
    nothing leads to but a tool's ``Command(goto="elsewhere", graph=Command.PARENT)``;
    return the nodes of the parent that ran besides the agent, and the parent's output."""
    visited: list[str] = []

    def elsewhere(state: MessagesState) -> dict[str, Any]:
        visited.append("elsewhere")
        return {}

    parent = StateGraph(MessagesState)
    parent.add_node("agent", agent)
    parent.add_node("elsewhere", elsewhere)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", END)
    parent.add_edge("elsewhere", END)
    return visited, parent.compile().invoke(request)
