"""LATS's search tree: its records, selection by UCT, back-propagation, the best node,
and a trajectory as the model and the judges read it. Plain functions of the tree (a
list of ``TreeNode`` records, the root first), no model calls."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage

from loopgraphs import prompts
from loopgraphs.graphs.lats.state import Action, Observation, TreeNode
from loopgraphs.text import media_kinds

ROOT = 0
OBSERVATION_CHARS = 1500
"""Most characters of one observation shown to a judge."""


def new_node(
    parent: int,
    depth: int,
    *,
    thought: str = "",
    actions: Sequence[Action] = (),
    answer: str = "",
) -> TreeNode:
    """A node not yet evaluated (a final answer when it has an ``answer``)."""
    return TreeNode(
        parent=parent,
        depth=depth,
        thought=thought,
        actions=list(actions),
        observations=[],
        answer=answer,
        terminal=bool(answer),
        satisfactory=False,
        score=0.0,
        value=0.0,
        visits=0,
        feedback="",
        children=[],
    )


def root() -> list[TreeNode]:
    """A tree holding only its root: the empty trajectory."""
    return [new_node(-1, 0)]


def path(tree: Sequence[TreeNode], index: int) -> list[int]:
    """The indices from the root to ``index``, both included."""
    found = [index]
    while tree[found[-1]]["parent"] >= 0:
        found.append(tree[found[-1]]["parent"])
    return found[::-1]


def expandable(node: TreeNode, max_depth: int) -> bool:
    """Whether a node may get children: it is no final answer and not ``max_depth`` deep."""
    return not node["terminal"] and node["depth"] < max_depth


def open_nodes(tree: Sequence[TreeNode], max_depth: int) -> set[int]:
    """The nodes under which something may still be expanded: a leaf that may get
    children, or a node with such a leaf below it."""
    found: set[int] = set()
    for index in range(len(tree) - 1, -1, -1):  # children come after their parent
        node = tree[index]
        children = node["children"]
        if (not children and expandable(node, max_depth)) or any(c in found for c in children):
            found.add(index)
    return found


def uct(tree: Sequence[TreeNode], index: int, weight: float) -> float:
    """A child's upper confidence bound: its mean value, plus ``weight`` times
    ``sqrt(ln(parent's visits) / its visits)`` (infinite before its first visit)."""
    node = tree[index]
    if node["visits"] == 0:
        return math.inf
    parent = tree[node["parent"]]
    spread = math.log(max(parent["visits"], 1)) / node["visits"]
    return node["value"] + weight * math.sqrt(spread)


def select(tree: Sequence[TreeNode], weight: float, max_depth: int) -> int | None:
    """The leaf to expand: from the root, the open child with the highest UCT at each
    level (the first of equals), down to a leaf. None when no leaf may be expanded (every
    trajectory ended in a final answer or reached ``max_depth``)."""
    live = open_nodes(tree, max_depth)
    if ROOT not in live:
        return None
    index = ROOT
    while tree[index]["children"]:
        children = [child for child in tree[index]["children"] if child in live]
        index = max(children, key=lambda child: uct(tree, child, weight))
    return index


def backpropagate(tree: list[TreeNode], index: int, score: float) -> None:
    """Add ``score`` to the running mean of every node from ``index`` up to the root."""
    for on_path in path(tree, index):
        node = tree[on_path]
        node["visits"] += 1
        node["value"] += (score - node["value"]) / node["visits"]


def best_node(tree: Sequence[TreeNode]) -> int:
    """The node to answer from: the highest own score, a final answer before an
    unfinished step of the same score, then the deeper one, then the first found (the
    root when nothing was added)."""
    if len(tree) == 1:
        return ROOT
    return max(
        range(1, len(tree)),
        key=lambda i: (tree[i]["score"], tree[i]["terminal"], tree[i]["depth"], -i),
    )


def step_messages(node: TreeNode) -> list[AnyMessage]:
    """One step as the model reads it back: its tool calls and their results."""
    calls = [ToolCall(name=a["tool"], args=a["args"], id=a["id"]) for a in node["actions"]]
    names = {action["id"]: action["tool"] for action in node["actions"]}
    results: list[AnyMessage] = [
        ToolMessage(
            content=[{"type": "text", "text": seen["content"]}, *seen["media"]]
            if seen.get("media")
            else seen["content"],
            tool_call_id=seen["call_id"],
            name=names.get(seen["call_id"]),
            status="error" if seen["error"] else "success",
        )
        for seen in node["observations"]
    ]
    return [AIMessage(content=node["thought"], tool_calls=calls), *results]


def trajectory_messages(tree: Sequence[TreeNode], index: int) -> list[AnyMessage]:
    """The steps from the root to ``index`` as the model reads them (its final answer,
    if it is one, left out)."""
    messages: list[AnyMessage] = []
    for on_path in path(tree, index)[1:]:
        if tree[on_path]["actions"]:
            messages += step_messages(tree[on_path])
    return messages


def trajectory_text(tree: Sequence[TreeNode], index: int) -> str:
    """The steps from the root to ``index`` as a judge reads them: each thought, action
    and observation (each observation cut to 1,500 characters), then the final answer."""
    lines: list[str] = []
    for number, on_path in enumerate(path(tree, index)[1:], 1):
        node = tree[on_path]
        lines.append(f"Step {number}")
        if node["thought"]:
            lines.append(f"Thought: {node['thought']}")
        for action in node["actions"]:
            args = json.dumps(action["args"], ensure_ascii=False, default=str)
            lines.append(f"Action: {action['tool']}({args})")
        for seen in node["observations"]:
            media = seen.get("media") or []
            said = seen["content"] or (
                prompts.ATTACHED.format(kinds=media_kinds(media)) if media else ""
            )
            lines.append(f"Observation: {said[:OBSERVATION_CHARS]}")
        if node["terminal"]:
            lines.append(f"Final answer: {node['answer']}")
    return "\n".join(lines) or "(no steps yet)"


def trajectory_media(tree: Sequence[TreeNode], index: int) -> list[dict[str, Any]]:
    """The images and files the tools returned on the way from the root to ``index``, in
    order: a judge of the trajectory is sent them after its text."""
    return [
        block
        for on_path in path(tree, index)[1:]
        for seen in tree[on_path]["observations"]
        for block in seen.get("media") or []
    ]


def observed(node: TreeNode, seen: dict[str, Observation]) -> TreeNode:
    """The node with the results of its calls, found by call id in ``seen`` (a call no
    result answered has none)."""
    results = [seen[action["id"]] for action in node["actions"] if action["id"] in seen]
    return {**node, "observations": results}


def copied(tree: Sequence[TreeNode]) -> list[TreeNode]:
    """The tree with each record copied, to change without touching the state's."""
    return [{**node, "children": list(node["children"])} for node in tree]


def tool_error_share(node: TreeNode) -> float:
    """The share of a node's tool calls that ended in an error (0 without calls)."""
    if not node["actions"]:
        return 0.0
    return sum(seen["error"] for seen in node["observations"]) / len(node["actions"])


__all__ = [
    "OBSERVATION_CHARS",
    "ROOT",
    "backpropagate",
    "best_node",
    "copied",
    "expandable",
    "new_node",
    "observed",
    "open_nodes",
    "path",
    "root",
    "select",
    "step_messages",
    "tool_error_share",
    "trajectory_media",
    "trajectory_messages",
    "trajectory_text",
]
