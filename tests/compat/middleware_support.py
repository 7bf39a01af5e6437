"""Fixtures and shared functions for the middleware suite (``test_middleware_*.py``).

The middleware tests are written once and run against two factories:

* ``"create_agent"``: ``langchain.agents.create_agent``, the reference behaviour: these
  cases show the tests state what LangChain's middleware does.
* ``"react"``: ``create_react_graph(..., tool_mode="native")``.

``agent(model, tools, *, middleware=..., **kwargs)`` builds the graph under test. The
other tool loops (``loop_agent``) and the json/text tool modes of ReAct (``mode_agent``)
are covered by a few cases each.

Assertions are about what a user sees: what the scripted model received (prompts, bound
tools, ``tool_choice``), which tools ran, the messages and keys of the output, interrupts
and counts. Where loopgraphs differs on purpose (extra output keys, fenced tool output,
its own instructions after the caller's system prompt), the functions below compare in a
way that holds for both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from loopgraphs import (
    create_critic_graph,
    create_plan_execute_graph,
    create_react_graph,
    create_reflexion_graph,
    create_self_ask_graph,
)
from loopgraphs.graphs.lats import create_lats_graph
from loopgraphs.graphs.rewoo import create_rewoo_graph
from tests.compat.fake import call, message_text
from tests.compat.support import tool_text
from tests.support.fakes import ScriptedChatModel, calls
from tests.support.scripts import LATS_SMALL, lats_brain, model_for

__all__ = [
    "LOOP_SCRIPTS",
    "ScriptedChatModel",
    "agent",
    "ai_texts",
    "call",
    "calls",
    "factory",
    "humans_seen",
    "loop_agent",
    "message_text",
    "mode_agent",
    "native",
    "raised_or_failed",
    "system_text",
    "tool_results",
    "tool_text",
]

AgentFactory = Callable[..., Any]


def native(replies: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
    """A scripted model with native tool calling (works with both factories)."""
    return model_for("native", list(replies), **kwargs)


def _build(
    kind: str,
    model: Any,
    tools: Sequence[Any] = (),
    *,
    middleware: Sequence[Any] = (),
    tool_mode: str = "native",
    **kwargs: Any,
) -> Any:
    if kind == "create_agent":
        return create_agent(model, list(tools), middleware=list(middleware), **kwargs)
    factory = {
        "react": create_react_graph,
        "plan_execute": create_plan_execute_graph,
        "reflexion": create_reflexion_graph,
        "self_ask": create_self_ask_graph,
        "critic": create_critic_graph,
        "rewoo": create_rewoo_graph,
        # One candidate a rollout: the hooks of a model step then run once per request.
        "lats": functools.partial(create_lats_graph, **LATS_SMALL),
    }[kind]
    return factory(model, list(tools), middleware=list(middleware), tool_mode=tool_mode, **kwargs)


def factory(kind: str, tool_mode: str = "native") -> AgentFactory:
    """``agent(...)`` for one factory (``"create_agent"``, ``"react"``, a loop name)."""

    def make(
        model: Any, tools: Sequence[Any] = (), *, middleware: Sequence[Any] = (), **kwargs: Any
    ) -> Any:
        if kind != "create_agent":
            kwargs.setdefault("tool_mode", tool_mode)
        return _build(kind, model, tools, middleware=middleware, **kwargs)

    make.kind = kind  # type: ignore[attr-defined]
    make.tool_mode = tool_mode  # type: ignore[attr-defined]
    return make


@pytest.fixture(params=["create_agent", "react"])
def agent(request: pytest.FixtureRequest) -> AgentFactory:
    """``agent(model, tools, *, middleware=[...], **kwargs)`` for both factories."""
    return factory(request.param)


@pytest.fixture(params=["json", "text"])
def mode_agent(request: pytest.FixtureRequest) -> AgentFactory:
    """ReAct in the json and text tool modes; ``.tool_mode`` names the mode, and
    ``tests.support.scripts.act``/``final`` write replies in its grammar."""
    return factory("react", request.param)


def _plan_execute(tool: str, args: dict[str, Any]) -> list[Any]:
    return [
        calls(call("Plan", {"steps": ["look it up"]})),
        calls(call(tool, args)),
        "Step result: 42.",
        "The answer is 42.",
    ]


def _reflexion(tool: str, args: dict[str, Any]) -> list[Any]:
    return [
        calls(call(tool, args)),
        "The answer is 42.",
        calls(call("Evaluation", {"satisfactory": True, "feedback": ""})),
    ]


def _self_ask(tool: str, args: dict[str, Any]) -> list[Any]:
    return [
        calls(call(tool, args), content="Are follow up questions needed here? Yes.\nFollow up: x"),
        "So the final answer is: The answer is 42.",
    ]


def _critic(tool: str, args: dict[str, Any]) -> list[Any]:
    claim = {"claim": "the answer is 41", "tool": tool, "tool_input": args}
    return [
        "The answer is 41.",
        calls(call("CritiqueReport", {"verified": False, "claims": [claim]})),
        "The answer is 42.",
        calls(call("CritiqueReport", {"verified": True, "claims": []})),
    ]


def _rewoo(tool: str, args: dict[str, Any]) -> list[Any]:
    step = {"plan": "Look it up.", "evidence": "#E1", "tool": tool, "tool_input": args}
    return [calls(call("Plan", {"steps": [step]})), "The answer is 42."]


def _lats(tool: str, args: dict[str, Any]) -> list[Any]:
    # Its candidates are sampled at once: each reply is chosen by what is asked.
    return [lats_brain([(tool, args)], "The answer is 42.")] * 60


LOOP_SCRIPTS: dict[str, Callable[[str, dict[str, Any]], list[Any]]] = {
    "plan_execute": _plan_execute,
    "reflexion": _reflexion,
    "self_ask": _self_ask,
    "critic": _critic,
    "rewoo": _rewoo,
    "lats": _lats,
}
"""Native-mode scripts for the other tool loops: one call of ``tool`` with ``args``, then
an answer mentioning 42."""


@pytest.fixture(params=list(LOOP_SCRIPTS))
def loop_agent(request: pytest.FixtureRequest) -> AgentFactory:
    """The other tool loops in native mode; ``.kind`` names the loop, whose script is
    ``LOOP_SCRIPTS[kind]``."""
    return factory(request.param)


def raised_or_failed(
    graph: Any,
    request: Any,
    error: type[BaseException],
    match: str | None = None,
    config: dict[str, Any] | None = None,
) -> bool:
    """The run raised ``error`` (whose text contains ``match``, if given), or ended with
    ``status="error"``: loopgraphs ends a failed run with that status instead of raising."""
    try:
        out = graph.invoke(request, config)
    except error as exc:
        return match is None or match in str(exc)
    return isinstance(out, dict) and out.get("status") == "error"


# -- reading what happened ------------------------------------------------------------


def system_text(prompt: Sequence[BaseMessage]) -> str:
    """The text of the system message a model call started with ("" without one)."""
    if prompt and isinstance(prompt[0], SystemMessage):
        return message_text(prompt[0])
    return ""


def humans_seen(prompt: Sequence[BaseMessage]) -> list[str]:
    """Texts of the user messages one model call received, in order."""
    return [message_text(m) for m in prompt if m.type == "human"]


def ai_texts(out: dict[str, Any]) -> list[str]:
    """Texts of the AI messages of an output, in order."""
    return [message_text(m) for m in out["messages"] if isinstance(m, AIMessage)]


def tool_results(out: dict[str, Any]) -> list[tuple[str | None, str]]:
    """``(name, text)`` of every ToolMessage of an output, the text without any fence."""
    return [(m.name, tool_text(m)) for m in out["messages"] if isinstance(m, ToolMessage)]
