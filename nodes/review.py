"""Human approval of tool calls, in langchain's human-in-the-loop format.

The ``review`` node pauses with one ``interrupt`` listing the flagged calls of the last
model reply (``action_requests`` and ``review_configs``) and resumes with
``Command(resume={"decisions": [...]})``, one decision per flagged call, in order:
``approve``, ``edit`` (``edited_action``), ``reject`` (``message``) or ``respond``
(``message``: the human answers in the tool's place). The decisions are stored in state;
the tool wrapper applies them when the calls run, so the model's own message is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.types import interrupt
from typing_extensions import TypedDict

from loopgraphs.state import DecisionType, ReviewDecision

DECISION_TYPES: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
ANY_TOOL = "*"


class ReviewConfig(TypedDict, total=False):
    """How calls of one tool are reviewed."""

    allowed_decisions: list[DecisionType]
    description: str


ReviewPolicy = dict[str, ReviewConfig]


def review_policy(value: object, tool_names: Sequence[str]) -> ReviewPolicy:
    """Normalise ``interrupt_before_tools`` into a policy per tool name.

    Accepts True/False, a list of tool names, or ``{name: True | False | ReviewConfig}``.
    ``"*"`` stands for every tool.

    Raises:
        TypeError, ValueError: the value or a tool name is not valid.
    """
    if isinstance(value, bool):
        return {ANY_TOOL: {"allowed_decisions": list(DECISION_TYPES)}} if value else {}
    if isinstance(value, Mapping):
        items: list[tuple[object, object]] = list(value.items())
    elif isinstance(value, Sequence) and not isinstance(value, str):
        items = [(name, True) for name in value]
    else:
        raise TypeError(
            "interrupt_before_tools must be a bool, a list of tool names or a dict "
            f"{{name: True | False | {{'allowed_decisions': [...]}}}}; got {value!r}"
        )
    unknown = sorted(str(name) for name, _ in items if name not in tool_names)
    if unknown:
        raise ValueError(
            f"interrupt_before_tools names unknown tools {unknown}; tools are {list(tool_names)}"
        )
    policy: ReviewPolicy = {}
    # Every name is one of ``tool_names`` now.
    for name, config in cast("list[tuple[str, object]]", items):
        if config is False:
            continue
        if config is True:
            policy[name] = {"allowed_decisions": list(DECISION_TYPES)}
            continue
        if not isinstance(config, Mapping):
            raise TypeError(f"interrupt_before_tools[{name!r}] must be a bool or a dict")
        allowed = list(config.get("allowed_decisions", DECISION_TYPES))
        bad = [d for d in allowed if d not in DECISION_TYPES]
        if bad or not allowed:
            raise ValueError(
                f"interrupt_before_tools[{name!r}]['allowed_decisions'] must name some of "
                f"{', '.join(DECISION_TYPES)}; got {allowed!r}"
            )
        entry: ReviewConfig = {"allowed_decisions": allowed}
        if config.get("description"):
            entry["description"] = str(config["description"])
        policy[name] = entry
    return policy


def middleware_review(middleware: Sequence[object]) -> ReviewPolicy:
    """The review policy of the ``HumanInTheLoopMiddleware`` among a loop's middleware
    (batched mode), for tool calls the loop writes itself: its ``after_model`` hook reads
    the reply of a model step, so it never sees them. Each tool's ``allowed_decisions``
    and a text ``description`` are kept; a ``when`` predicate is not consulted (every
    call of the tool pauses) and a description made by a function gives way to the
    review's own. A middleware in ``per_call`` mode reviews each call as it runs, in the
    tool step, and is left out here.

    Args:
        middleware: The loop's middleware, in order (a later one's tool wins).
    """
    policy: ReviewPolicy = {}
    for item in middleware:
        if not isinstance(item, HumanInTheLoopMiddleware) or item.interrupt_mode != "batched":
            continue
        for name, config in item.interrupt_on.items():
            entry: ReviewConfig = {"allowed_decisions": list(config["allowed_decisions"])}
            if isinstance(config.get("description"), str):
                entry["description"] = str(config.get("description"))
            policy[name] = entry
    return policy


def config_for(policy: ReviewPolicy, tool_name: str) -> ReviewConfig | None:
    """The review config of a tool, or None when its calls run without review."""
    return policy.get(tool_name) or policy.get(ANY_TOOL)


def flagged_calls(policy: ReviewPolicy, message: object) -> list[ToolCall]:
    """The tool calls of a model reply that need review."""
    if not policy or not isinstance(message, AIMessage):
        return []
    return [call for call in message.tool_calls if config_for(policy, call["name"])]


def _describe(call: ToolCall, config: ReviewConfig, describe_tool: Mapping[str, str]) -> str:
    if config.get("description"):
        return config["description"]
    args = json.dumps(call["args"], ensure_ascii=False, default=str)
    about = describe_tool.get(call["name"], "unknown tool")
    return f"Tool call {call['name']}({args}): {about}"


def decision_problem(
    decisions: object, calls: Sequence[ToolCall], configs: Sequence[ReviewConfig]
) -> str:
    """What is wrong with a resume value, or an empty string when it is valid."""
    if not isinstance(decisions, list) or len(decisions) != len(calls):
        count = len(decisions) if isinstance(decisions, list) else 0
        return (
            "resume with {'decisions': [...]} holding one decision per tool call: "
            f"expected {len(calls)}, got {count}"
        )
    for call, config, decision in zip(calls, configs, decisions, strict=True):
        kind = decision.get("type") if isinstance(decision, dict) else None
        allowed = config.get("allowed_decisions", list(DECISION_TYPES))
        if kind not in allowed:
            return f"decision for {call['name']} must be one of {', '.join(allowed)}; got {kind!r}"
        if kind == "edit" and not isinstance(decision.get("edited_action"), dict):
            return "an edit decision needs 'edited_action': {'name': ..., 'args': {...}}"
        if kind == "respond" and not isinstance(decision.get("message"), str):
            return "a respond decision needs 'message': the text the model gets as the result"
    return ""


def ask_reviewer(
    policy: ReviewPolicy, message: AIMessage, describe_tool: Mapping[str, str]
) -> dict[str, ReviewDecision]:
    """Pause until a valid decision arrives for every flagged call; decisions by call id."""
    calls = flagged_calls(policy, message)
    configs = [config_for(policy, call["name"]) or {} for call in calls]
    request = {
        "action_requests": [
            {
                "name": call["name"],
                "args": call["args"],
                "description": _describe(call, c, describe_tool),
            }
            for call, c in zip(calls, configs, strict=True)
        ],
        "review_configs": [
            {"action_name": call["name"], "allowed_decisions": list(c["allowed_decisions"])}
            for call, c in zip(calls, configs, strict=True)
        ],
    }
    problem = ""
    while True:
        payload = interrupt({**request, "error": problem} if problem else request)
        decisions = payload.get("decisions") if isinstance(payload, dict) else None
        problem = decision_problem(decisions, calls, configs)
        if not problem:
            valid = cast("list[ReviewDecision]", decisions)  # checked by decision_problem
            return {
                call["id"] or "": cast("ReviewDecision", dict(d))
                for call, d in zip(calls, valid, strict=True)
            }


def reviewed_call(call: ToolCall, decision: ReviewDecision | None) -> ToolCall:
    """The call to run after review: the reviewer's edit, or the model's own call."""
    if not decision or decision.get("type") != "edit":
        return call
    edited = decision.get("edited_action") or {}
    return ToolCall(
        name=edited.get("name", call["name"]),
        args=edited.get("args", call["args"]),
        id=call["id"],
        type="tool_call",
    )


def answer_without_running(call: ToolCall, decision: ReviewDecision | None) -> ToolMessage | None:
    """The result of a rejected or answered call (the tool does not run), else None."""
    kind = (decision or {}).get("type")
    if kind == "respond":
        return ToolMessage(
            content=str(decision["message"]),  # type: ignore[index]
            name=call["name"],
            tool_call_id=call["id"] or "",
            status="success",
        )
    if kind == "reject":
        reason = (decision or {}).get("message") or "The user rejected this tool call."
        return ToolMessage(
            content=f"Rejected by the user: {reason}",
            name=call["name"],
            tool_call_id=call["id"] or "",
            status="error",
        )
    return None
