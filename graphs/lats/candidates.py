"""LATS's candidates: the turns of an expansion read into new nodes of the tree (an
action or a final answer each, equal ones once), and the model settings they are
sampled with."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage

from loopgraphs.graphs.lats.state import Action, LATSOptions, TreeNode
from loopgraphs.graphs.lats.tree import copied, new_node, trajectory_messages
from loopgraphs.models import takes_temperature
from loopgraphs.nodes import (
    Step,
    Turn,
    content_text,
    read_action,
    repaired_answer,
    scratch_of,
    unusable,
)

LATSStep = Step[LATSOptions[Any, Any]]


def expansion_settings(step: LATSStep) -> dict[str, object] | None:
    """The candidates' model settings: ``temperature`` for a model that takes one."""
    if not takes_temperature(step.run.chat_model):
        return None
    return {"temperature": step.options["temperature"]}


def candidate_nodes(
    state: Mapping[str, Any],
    step: LATSStep,
    tree: Sequence[TreeNode],
    index: int,
    turns: Sequence[Turn],
    require: str | None,
) -> tuple[list[TreeNode], list[int]]:
    """The tree with the candidates of leaf ``index`` added as its children, and their
    indices. A candidate equal to an earlier one (the same calls, or the same answer) is
    left out, and so is a reply that reads as neither."""
    grown = copied(tree)
    known: set[str] = set()
    used = {action["id"] for node in tree for action in node["actions"]}
    added: list[int] = []
    for turn in turns:
        node = candidate(state, step, tree, index, turn, require, used)
        if node is None or node_key(node) in known:
            continue
        known.add(node_key(node))
        used |= {action["id"] for action in node["actions"]}
        grown.append(node)
        grown[index]["children"].append(len(grown) - 1)
        added.append(len(grown) - 1)
    return grown, added


def candidate(
    state: Mapping[str, Any],
    step: LATSStep,
    tree: Sequence[TreeNode],
    index: int,
    turn: Turn,
    require: str | None,
    used: set[str],
) -> TreeNode | None:
    """One candidate turn as a child of node ``index``: its tool calls (each with an id
    no other call of the tree has), or its final answer as the answer checks keep it (a
    text-mode reply in no tool grammar is one, see ``plain_answer``); None for a reply
    cut at the token cap, unreadable, or whose answer is no answer."""
    if turn.cut:
        return None
    reading = read_action(step, state, turn, require=require)
    depth = tree[index]["depth"] + 1
    if reading.outcome == "tools":
        actions: list[Action] = []
        for call in reading.message.tool_calls:
            call_id = call["id"] if call["id"] and call["id"] not in used else fresh_id()
            used = used | {call_id}
            actions.append(Action(id=call_id, tool=call["name"], args=dict(call["args"])))
        thought = content_text(reading.message.content).strip()
        return new_node(index, depth, thought=thought, actions=actions)
    if reading.outcome != "final" and not plain_answer(turn, reading.outcome, require):
        return None
    answer = checked_answer(state, step, trajectory_messages(tree, index), reading.answer)
    return new_node(index, depth, answer=answer) if answer else None


def plain_answer(turn: Turn, outcome: str, require: str | None) -> bool:
    """Whether a text-mode reply in no tool grammar is an answer as it stands, as ReAct
    takes one: no tool was required, and the reply is not JSON mode's to reformat."""
    return outcome == "retry" and require is None and turn.tool_mode == "text"


def checked_answer(
    state: Mapping[str, Any], step: LATSStep, branch: list[AnyMessage], answer: str
) -> str:
    """A final answer as the run keeps it, read on its own branch (see ``branch_view``):
    repaired where it only restates the last tool call, empty where it is no answer (a
    copied tool result, the question read back, nothing said)."""
    view = branch_view(state, branch)
    kept = repaired_answer(step, view, answer)
    start = scratch_of(state).get("transcript_start", 0)
    if not kept or (not step.run.step_run and unusable(kept, view["messages"], start)):
        return ""
    return kept


def branch_view(state: Mapping[str, Any], branch: list[AnyMessage]) -> dict[str, Any]:
    """The state as one branch sees it: the caller's conversation, then the branch's
    steps as the run's transcript (for the answer checks, which read the run's last
    tool calls)."""
    start = scratch_of(state).get("transcript_start", 0)
    return {**state, "messages": [*state["messages"][:start], *branch]}


def node_key(node: TreeNode) -> str:
    """What makes two candidates the same: their calls (names and arguments), or their
    answer (case and spacing aside)."""
    if node["terminal"]:
        return "answer:" + " ".join(node["answer"].lower().split())
    calls = [[action["tool"], action["args"]] for action in node["actions"]]
    return json.dumps(calls, sort_keys=True, default=str)


def fresh_id() -> str:
    """A new tool-call id, for a call whose id another call of the tree has (providers
    number the calls of each reply afresh, and candidates are separate replies)."""
    return f"call_{uuid.uuid4().hex[:16]}"


__all__ = [
    "branch_view",
    "candidate",
    "candidate_nodes",
    "checked_answer",
    "expansion_settings",
    "fresh_id",
    "node_key",
    "plain_answer",
]
