"""Scripts and checks shared by the multi-agent client tests.

Each tool-using loop runs as an agent named ``math_expert`` (or ``alice`` in a swarm) on a
scripted native model: one call of ``search`` whose result holds 42, then an answer saying
42 (``LOOP_SCRIPTS``). ``HANDOFF_SCRIPTS`` make a loop call ``search`` and then hand off with
its second tool call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import tool

from loopgraphs import build_loop
from loopgraphs.graphs import registry
from tests.compat.middleware_support import LOOP_SCRIPTS as OTHER_LOOPS
from tests.compat.middleware_support import call, calls, native
from tests.support.scripts import lats_brain

TOOL_LOOPS = registry.TOOL_LOOPS
SEARCH_ARGS = {"query": "six times seven"}
ANSWER = "The answer is 42."


@tool
def search(query: str) -> str:
    """Look a fact up."""
    return f"Found for {query!r}: 42"


def _react(tool_name: str, args: dict[str, Any]) -> list[Any]:
    return [calls(call(tool_name, args)), ANSWER]


LOOP_SCRIPTS: dict[str, Callable[[str, dict[str, Any]], list[Any]]] = {
    "react": _react,
    **OTHER_LOOPS,
}


def loop_agent(loop: str, name: str = "math_expert", tools: Sequence[Any] = (), **options: Any):
    """``loop`` as an agent called ``name`` with ``search`` (and ``tools``) on its script."""
    model = native(LOOP_SCRIPTS[loop]("search", SEARCH_ARGS))
    return build_loop(loop, model, [search, *tools], name=name, **options), model


def handoff_script(loop: str, handoff: str) -> list[Any]:
    """``loop`` calls ``search``, then hands off with the tool ``handoff``; whenever it runs
    again, it answers."""
    found = call("search", SEARCH_ARGS)
    away = call(handoff, {})
    return {
        "react": [calls(found), calls(away)],
        "plan_execute": [calls(call("Plan", {"steps": ["look it up"]})), calls(found), calls(away)],
        "reflexion": [calls(found), calls(away)],
        "self_ask": [
            calls(found, content="Are follow up questions needed here? Yes.\nFollow up: x"),
            calls(away, content="Follow up: ask a colleague"),
        ],
        "critic": [
            "The answer is 41.",
            calls(call("CritiqueReport", {"verified": False, "claims": [_claim("search")]})),
            "The answer is 42.",
            calls(call("CritiqueReport", {"verified": False, "claims": [_claim(handoff)]})),
        ],
        # The handoff's input names the search's evidence: it waits for the next wave.
        "rewoo": [
            calls(
                call(
                    "Plan",
                    {
                        "steps": [
                            _step(1, "search", SEARCH_ARGS),
                            _step(2, handoff, {"about": "#E1"}),
                        ]
                    },
                )
            )
        ],
        "lats": [lats_brain([("search", SEARCH_ARGS), (handoff, {})], ANSWER)] * 60,
    }[loop]


def _step(n: int, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"plan": f"Step {n}.", "evidence": f"#E{n}", "tool": tool_name, "tool_input": tool_input}


def _claim(tool_name: str) -> dict[str, Any]:
    args = SEARCH_ARGS if tool_name == "search" else {}
    return {"claim": "the answer is 41", "tool": tool_name, "tool_input": args}


def tool_messages(messages: Sequence[AnyMessage], name: str) -> list[ToolMessage]:
    """The results of the calls of tool ``name``."""
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


def calls_of(messages: Sequence[AnyMessage], name: str) -> list[dict[str, Any]]:
    """The calls of tool ``name`` the assistant messages made."""
    return [
        c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == name
    ]


def answered_once(messages: Sequence[AnyMessage]) -> bool:
    """Every tool call has exactly one result, and every result answers a call."""
    made = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    return sorted(made) == sorted(results) and len(set(made)) == len(made)


def fenced_once(messages: Sequence[AnyMessage]) -> bool:
    """No tool result carries more than one fence (an earlier result fenced again)."""
    return all(
        str(m.content).count("<<tool_output ") <= 1 for m in messages if isinstance(m, ToolMessage)
    )
