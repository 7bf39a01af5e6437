"""One tool call, then an answer: the scripted replies of every tool loop in every tool mode.

``tool_then_answer(loop, mode, tool, args, answer)`` returns the replies that make
``build_loop(loop, model, tools, tool_mode=mode)`` call ``tool`` once with ``args`` and
then end ``completed`` with ``answer``, for ``tests.support.fakes.ScriptedChatModel``
(``tests.support.scripts.model_for(mode, replies)`` makes a model whose profile fits the
mode). The script is used up exactly: one reply per model call of the run.

Each loop has one entry in ``SCRIPTS``: a function ``(mode, tool, args, answer)`` written
in the loop's grammar for the three tool modes. A loop of ``registry.TOOL_LOOPS`` without
an entry fails ``tests/behaviour/test_loop_scripts.py``, which names this file and the
loop; adding a loop to the registry means adding its entry here.

The grammars, per mode (native: function calling; json: a schema-constrained reply;
text: a text grammar):

- ``react``: an action (a native call, ``{"action", "action_input"}``, or
  ``Action:``/``Action Input:``), then the final answer in the same form.
- ``plan_execute``: a one-step plan (a ``Plan`` call, or the plan's JSON), the step's
  ReAct run (an action, then the step's answer), then the synthesis as plain text.
- ``reflexion``: one episode (an action, then the answer in ReAct's form), then a
  satisfied evaluation (an ``Evaluation`` call, its JSON, or ``SATISFACTORY``).
- ``self_ask``: a ``Follow up:`` turn that calls the tool (natively, or with ``Tool:`` and
  ``Tool Input:`` lines), then ``So the final answer is: ...``.
- ``critic``: a draft, a critique naming one claim checked with the tool (a
  ``CritiqueReport`` call, its JSON, or ``CLAIM:``/``TOOL:``/``TOOL INPUT:``), the
  revision (the answer), then a critique accepting it (``verified``, or ``VERIFIED``).
- ``lats``: three alike candidates calling the tool (one child), its value (a ``Value``
  call or its JSON), three alike candidates answering, and a satisfied ``Verdict``.
- ``rewoo``: a one-step plan (a ``Plan`` call or its JSON, the step's evidence ``#E1``),
  which the worker runs with no model call, then the solver's answer as plain text.

Tool inputs in json and text modes are written as JSON objects, which every loop reads as
the call's arguments whatever the tool's signature.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.support.fakes import calls, tool_call
from tests.support.scripts import MODES, act, final, rewoo_plan

HERE = "tests/support/loop_scripts.py"

Script = Callable[[str, str, dict[str, Any], str], list[Any]]
"""A loop's entry: ``(mode, tool, args, answer) -> replies``."""


def structured(mode: str, schema: str, data: dict[str, Any]) -> Any:
    """A structured reply: a native call of the schema's tool, else the JSON text (json
    mode's schema-constrained reply; text mode reads the same JSON)."""
    if mode == "native":
        return calls(tool_call(schema, data))
    return json.dumps(data)


def _react(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    return [act(mode, tool, args), final(mode, answer)]


def _plan_execute(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    return [
        structured(mode, "Plan", {"steps": [f"Call {tool} and report its result."]}),
        act(mode, tool, args),
        final(mode, f"The step is done: {answer}"),
        answer,  # the synthesis
    ]


def _reflexion(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    if mode == "text":
        satisfied: Any = "SATISFACTORY"
    else:
        satisfied = structured(mode, "Evaluation", {"satisfactory": True, "feedback": ""})
    return [act(mode, tool, args), final(mode, answer), satisfied]


def _self_ask(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    asked = f"Are follow up questions needed here? Yes.\nFollow up: What does {tool} give?"
    if mode == "native":
        turn: Any = calls(tool_call(tool, args), content=asked)
    else:
        turn = f"{asked}\nTool: {tool}\nTool Input: {json.dumps(args)}"
    return [turn, f"So the final answer is: {answer}"]


def _critic(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    claim = f"{tool} gives the draft's result"
    if mode == "text":
        critique: Any = f"CLAIM: {claim}\nTOOL: {tool}\nTOOL INPUT: {json.dumps(args)}"
        accepted: Any = "VERIFIED"
    else:
        found = {"claim": claim, "tool": tool, "tool_input": args}
        critique = structured(mode, "CritiqueReport", {"verified": False, "claims": [found]})
        accepted = structured(mode, "CritiqueReport", {"verified": True, "claims": []})
    return ["A first draft, not checked yet.", critique, answer, accepted]


def _lats(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    candidates = 3  # LATS's n_candidates: alike candidates are one child, run once
    value = structured(mode, "Value", {"score": 7, "reason": "on the way"})
    verdict = structured(mode, "Verdict", {"satisfactory": True, "feedback": ""})
    return [
        *[act(mode, tool, args)] * candidates,
        value,
        *[final(mode, answer)] * candidates,
        verdict,
    ]


def _rewoo(mode: str, tool: str, args: dict[str, Any], answer: str) -> list[Any]:
    return [rewoo_plan(mode, (tool, args)), answer]


SCRIPTS: dict[str, Script] = {
    "react": _react,
    "plan_execute": _plan_execute,
    "reflexion": _reflexion,
    "self_ask": _self_ask,
    "critic": _critic,
    "lats": _lats,
    "rewoo": _rewoo,
}
"""Each tool loop's script, by registry name: one entry per loop."""


class NoScript(LookupError):
    """A loop has no entry in ``SCRIPTS``."""


def tool_then_answer(
    loop: str, mode: str, tool: str, args: dict[str, Any], answer: str
) -> list[Any]:
    """The replies that make ``loop`` in tool mode ``mode`` call ``tool`` once with
    ``args``, then end ``completed`` with ``answer``.

    Raises:
        NoScript: ``loop`` has no entry in ``SCRIPTS`` (the message names this file).
        ValueError: ``mode`` is not a tool mode.
    """
    if mode not in MODES:
        raise ValueError(f"unknown tool mode {mode!r}; choose one of {', '.join(MODES)}")
    script = SCRIPTS.get(loop)
    if script is None:
        raise NoScript(
            f"{HERE} has no script for the loop {loop!r}: add SCRIPTS[{loop!r}], a function "
            "(mode, tool, args, answer) -> replies in the loop's grammar for every tool mode"
        )
    return script(mode, tool, dict(args), answer)
