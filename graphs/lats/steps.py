"""LATS's steps: expand the node UCT selects with candidate actions, evaluate the new
nodes (values, verdicts, reflections) and back-propagate, then answer from the best
trajectory; and the routers between them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.lats.candidates import branch_view, candidate_nodes, expansion_settings
from loopgraphs.graphs.lats.judge import MAX_LESSONS, judged
from loopgraphs.graphs.lats.state import (
    Action,
    LATSOptions,
    LATSState,
    Observation,
    StopReason,
    TreeNode,
)
from loopgraphs.graphs.lats.tree import (
    ROOT,
    backpropagate,
    best_node,
    copied,
    observed,
    root,
    select,
    trajectory_messages,
)
from loopgraphs.nodes import (
    END,
    LogicOf,
    LoopState,
    Step,
    TotalsState,
    act,
    all_failed,
    answer_message,
    best_effort_answer,
    content_text,
    conversation,
    cut_short,
    failed_requests,
    final_answer_of,
    in_parallel,
    interpret,
    must_call,
    reasked,
    repaired_answer,
    scratch_of,
    spent_together,
    tool_calls,
    without_tool_calls,
)
from loopgraphs.text import media_of

LATSStep = Step[LATSOptions[Any, Any]]


def opening(state: LATSState, step: LATSStep) -> LATSState:
    """A run's starting values: a tree of its root alone, no reflections, no rollouts."""
    return {
        "tree": root(),
        "reflections": [],
        "rollouts": 0,
        "pending": [],
        "best_node": ROOT,
        "stop_reason": None,
    }


def next_node(state: LATSState, step: LATSStep) -> tuple[int | None, StopReason | None]:
    """The node to expand next, or why the search stops: the rollouts are spent, nothing
    is left to expand, or the run's budget (graph steps, tool calls) leaves no room for
    another expansion and the answer."""
    if state.get("rollouts", 0) >= step.run.max_iterations:
        return None, "max_rollouts"
    options = step.options
    index = select(state["tree"], options["exploration_weight"], options["max_depth"])
    if index is None:
        return None, "exhausted"
    if not step.may_continue(state, tools=True):
        return None, "budget"
    return index, None


def expand(state: LATSState, step: LATSStep) -> LogicOf[LATSState]:
    """Select a node by UCT and expand it: ``n_candidates`` candidate next actions sampled
    at once (internal turns in the run's tool mode, at ``temperature`` where the model
    takes one), each a new child: an action whose tool calls run next (all of them in one
    assistant message of the loop's, through the tool step), or a final answer. Equal
    candidates are one child; an unreadable, cut or empty reply is none.

    Returns:
        The new tree, its new nodes in ``pending``, the rollout counted and the message
        of the candidates' tool calls; or ``stop_reason`` when the search stops.
    """
    index, stop = next_node(state, step)
    if index is None:
        stopped: LATSState = {
            "stop_reason": stop,
            "pending": [],
            "best_node": best_node(state["tree"]),
        }
        if step.may_finish(state, through=answer_step({**state, **stopped})):
            return stopped
        return {**stopped, **out_of_steps({**state, **stopped}, step)}
    tree = state["tree"]
    history = expansion_prompt(state, step, index)
    require = must_call(step, state)
    settings = expansion_settings(step)
    outcomes = yield from in_parallel(
        [
            act(step, state, history, require=require, purpose="expansion", model_settings=settings)
            for _ in range(step.options["n_candidates"])
        ]
    )
    turns = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
    if not turns:
        raise all_failed(outcomes)
    spent = spent_in(outcomes, [{**turn.spent} for turn in turns])
    grown, added = candidate_nodes(state, step, tree, index, turns, require)
    update: LATSState = {
        **spent,
        "tree": grown,
        "pending": added,
        "rollouts": state.get("rollouts", 0) + 1,
    }
    if turns[0].tool_mode != state.get("tool_mode"):
        update["tool_mode"] = turns[0].tool_mode
    calls = [
        {"name": a["tool"], "args": a["args"], "id": a["id"], "type": "tool_call"}
        for i in added
        for a in grown[i]["actions"]
    ]
    if calls:
        update["messages"] = [AIMessage(content="", tool_calls=calls, name=step.run.agent_name)]
    return update


def expansion_prompt(state: LATSState, step: LATSStep, index: int) -> list[AnyMessage]:
    """What a candidate turn reads: the conversation (the user's earlier turns, the
    request with the latest lessons ahead of its text) and the trajectory to ``index``."""
    asked = conversation(state, step.run)
    lessons = state.get("reflections", [])[-MAX_LESSONS:]
    return [*with_lessons(asked, lessons), *trajectory_messages(state["tree"], index)]


def with_lessons(messages: list[AnyMessage], lessons: list[str]) -> list[AnyMessage]:
    """The messages with ``lessons`` written ahead of the latest user message's text (a
    copy for the prompt; the thread keeps the user's message as it is)."""
    if not lessons:
        return messages
    block = prompts.LATS_LESSONS.format(lessons="\n".join(f"- {text}" for text in lessons))
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, str):
                merged: str | list[str | dict[str, object]] = block + content
            else:
                merged = [{"type": "text", "text": block}, *content]
            return [*messages[:at], HumanMessage(merged), *messages[at + 1 :]]
    return [*messages, HumanMessage(block.rstrip())]


def evaluate_nodes(state: LATSState, step: LATSStep) -> LogicOf[LATSState]:
    """Evaluate the nodes the last expansion added, all at once: an action's value (the
    kit's ``evaluate`` with ``Value``, lowered by a tool error), a final answer's verdict
    (``evaluate`` with ``Verdict``) and, when it fails, a reflection (``reflect``); then
    back-propagate each score to the root. The search stops on a satisfactory answer,
    when a tool ended the run, or when nothing more may be expanded.

    Returns:
        The tree with the scores, the new reflections, and ``stop_reason`` (with
        ``best_node``) when the search stops here.
    """
    if scratch_of(state).get("tool_ended"):
        return {"stop_reason": "tool", "pending": [], "best_node": best_node(state["tree"])}
    tree = with_observations(state)
    pending = state.get("pending", [])
    outcomes = yield from in_parallel([judged(state, step, tree, i) for i in pending])
    if pending and all(isinstance(outcome, BaseException) for outcome in outcomes):
        raise all_failed(outcomes)
    done = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
    spent = spent_in(outcomes, [outcome.spent for outcome in done])
    lessons = list(state.get("reflections", []))
    for index, outcome in zip(pending, outcomes, strict=True):
        if not isinstance(outcome, BaseException):
            tree[index] = outcome.node
            lessons += [outcome.lesson] if outcome.lesson else []
        backpropagate(tree, index, tree[index]["score"])
    update: LATSState = {**spent, "tree": tree, "reflections": lessons, "pending": []}
    solved = next((i for i in pending if tree[i]["satisfactory"]), None)
    if solved is not None:
        return {**update, "stop_reason": "solved", "best_node": solved}
    _, stop = next_node({**state, **update}, step)
    return {**update, "stop_reason": stop, "best_node": best_node(tree)} if stop else update


def spent_in(outcomes: Sequence[object], spends: Sequence[LoopState]) -> TotalsState:
    """What calls run side by side spent: the requests of those that failed, and the
    ``spent`` of the others."""
    total: LoopState = {"llm_calls": failed_requests(outcomes)}
    for spend in spends:
        total = {**total, **spent_together(total, spend)}
    return {**total}


def with_observations(state: LATSState) -> list[TreeNode]:
    """A copy of the tree whose new nodes hold their calls as they ran (a reviewer's edit
    included) and their results, read from the run's transcript by call id."""
    tree = copied(state["tree"])
    start = scratch_of(state).get("transcript_start", 0)
    own = state["messages"][start:]
    ran = {c["id"]: c for m in own if isinstance(m, AIMessage) for c in m.tool_calls}
    seen = {
        m.tool_call_id: Observation(
            call_id=m.tool_call_id,
            content=content_text(m.content),
            error=m.status == "error",
            media=media_of(m.content),
        )
        for m in own
        if isinstance(m, ToolMessage)
    }
    for index in state.get("pending", []):
        node = tree[index]
        actions = [
            Action(id=a["id"], tool=ran[a["id"]]["name"], args=ran[a["id"]]["args"])
            if a["id"] in ran
            else a
            for a in node["actions"]
        ]
        tree[index] = observed({**node, "actions": actions}, seen)
    return tree


def best_answer(state: LATSState, step: LATSStep) -> LATSState:
    """The run's answer when the best node is a final answer: ``status="completed"``
    when it was judged satisfactory, else ``"max_iterations"``; its message is the
    chat's answer (the candidate's turn was internal). A tool that ended the run has
    answered it."""
    if state.get("stop_reason") == "tool":
        return {"status": "completed"}
    node = state["tree"][state.get("best_node", ROOT)]
    return {
        "answer": node["answer"],
        "messages": [AIMessage(content=node["answer"], name=step.run.agent_name)],
        "status": "completed" if node["satisfactory"] else "max_iterations",
    }


def out_of_steps(state: LATSState, step: LATSStep) -> LATSState:
    """The run's answer when the search stopped and no graph step is left for the answer
    step (a ``recursion_limit`` this tight): ``best_answer``'s when the best node is a
    final answer; else the last answer-like text of its trajectory, without the turn
    ``forced_answer`` would take (``status="max_iterations"``)."""
    if answer_step(state) == "best_answer":
        return best_answer(state, step)
    branch = trajectory_messages(state["tree"], state.get("best_node", ROOT))
    text = best_effort_answer([m for m in branch if not cut_short(m)])
    shown: list[AnyMessage] = [AIMessage(content=text, name=step.run.agent_name)] if text else []
    return {"answer": text, "messages": shown, "status": "max_iterations"}


def forced_answer(state: LATSState, step: LATSStep) -> LogicOf[LATSState]:
    """The run's answer when the best node is an unfinished step: one turn asking, with
    no tools, for the answer from its trajectory (a chat turn); failing an answer, the
    trajectory's last answer-like text. ``status="max_iterations"``."""
    best = state.get("best_node", ROOT)
    branch = trajectory_messages(state["tree"], best)
    history = reasked([*conversation(state, step.run), *branch], prompts.FORCE_FINAL_ANSWER)
    turn = yield from act(step, state, history, require="none")
    reply = without_tool_calls(turn.reply)
    read = interpret(turn.tool_mode or "none", reply)
    cut = cut_short(reply)
    text = read.answer if read.kind == "final" and not cut else ""
    if not text and read.kind == "none" and not cut:
        text = final_answer_of(content_text(reply.content))
    text = repaired_answer(step, branch_view(state, branch), text)
    if not text:
        text = best_effort_answer([m for m in branch if not cut_short(m)])
    update: LATSState = {
        **turn.spent,
        "messages": [answer_message(reply, text)],
        "answer": text,
        "status": "max_iterations",
    }
    if turn.tool_mode != state.get("tool_mode"):
        update["tool_mode"] = turn.tool_mode
    return update


def answer_step(state: LATSState) -> Literal["best_answer", "final_answer"]:
    """Where the answer comes from once the search stopped: ``best_answer`` when the best
    node is a final answer (or a tool ended the run), else a ``final_answer`` turn."""
    if state.get("stop_reason") == "tool":
        return "best_answer"
    terminal = state["tree"][state.get("best_node", ROOT)]["terminal"]
    return "best_answer" if terminal else "final_answer"


def route_expand(state: LATSState, step: LATSStep) -> str | list[Send]:
    """After an expansion: its tool calls (through the review when they pause for one),
    else the evaluation; the answer when the search stopped (the end when no step was left
    for it)."""
    if state.get("status") != "running":  # the expansion answered: no step was left
        return END
    if state.get("stop_reason"):
        return answer_step(state)
    calls = tool_calls(state, step) if state.get("pending") else []
    return calls or "evaluate"


def route_evaluate(state: LATSState) -> Literal["expand", "best_answer", "final_answer"]:
    """After an evaluation: the answer when the search stopped, else the next expansion."""
    return answer_step(state) if state.get("stop_reason") else "expand"


__all__ = [
    "LATSStep",
    "answer_step",
    "best_answer",
    "evaluate_nodes",
    "expand",
    "expansion_prompt",
    "forced_answer",
    "next_node",
    "opening",
    "route_evaluate",
    "route_expand",
    "spent_in",
    "with_lessons",
    "with_observations",
]
