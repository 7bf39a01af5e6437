"""ReAct's steps: pick the tools (above 12), take a turn, ask once for the answer when
the turns run out, and write the answer from the transcript (``synthesize_answer``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.types import Send
from pydantic import BaseModel, Field, create_model

from loopgraphs import prompts
from loopgraphs.graphs.react.state import (
    TOOL_SELECTION_CALLS,
    TOOL_SELECTION_MAX,
    TOOL_SELECTION_THRESHOLD,
    ReActOptions,
    ReActState,
)
from loopgraphs.nodes import (
    END,
    LogicOf,
    Reading,
    Step,
    act,
    answer_message,
    best_effort_answer,
    bounded_thread,
    content_text,
    cut_short,
    earlier_turns,
    fence_output,
    final_answer_of,
    generate,
    interpret,
    must_call,
    parse,
    read_action,
    reasked,
    repaired_answer,
    request_of,
    scratch_of,
    tool_calls,
    transcript_of,
    unusable,
    without_answer,
    without_tool_calls,
)

SYNTHESIS_TOOL_CHARS = 2000

ReActStep = Step[ReActOptions[Any, Any]]


def select_tools(state: ReActState, step: ReActStep) -> LogicOf[ReActState]:
    """Pick up to 6 of the run's tools for the request from a compact catalog of them
    (a run with more than 12 tools does this before its first turn).

    Returns:
        The call's counts and ``scratch["selected_tools"]``: the names chosen, none
        when the selection failed (the run then keeps all of its tools).
    """
    run = step.run
    allowed: Any = Literal[tuple(run.tools.names)]
    choice: type[BaseModel] = create_model(
        "ToolSelection",
        tools=(list[allowed], Field(description="names of the tools to use")),
    )
    prompt = prompts.SELECT_TOOLS.format(
        limit=TOOL_SELECTION_MAX, catalog=run.tools.catalog(), request=request_of(state)
    )
    asked = [*earlier_turns(state, run), HumanMessage(prompt)]
    result = yield from parse(
        step,
        state,
        asked,
        schema=choice,
        max_calls=TOOL_SELECTION_CALLS,
        purpose="tool_selection",
    )
    chosen = list(dict.fromkeys(getattr(result.value, "tools", []) or []))
    return {**result.spent, "scratch": {"selected_tools": chosen[:TOOL_SELECTION_MAX]}}


def take_turn(state: ReActState, step: ReActStep) -> LogicOf[ReActState]:
    """One ReAct turn: ask the model in the run's tool mode and read its reply.

    Writes nothing when the run must select its tools first or has no turns left
    (``route_turn`` then moves on to ``select_tools`` or ``final_answer``); ends the run
    when no graph step is left for the final answer (``out_of_steps``).

    Returns:
        The turn's update: its reply, with tool calls to run, or a final answer
        (``status="completed"``), or a re-ask for the next turn (``scratch["reask"]``).
    """
    run = step.run
    scratch = scratch_of(state)
    if scratch.get("tool_ended"):
        return {"status": "completed"}
    if needs_selection(state, step):
        return {}
    if turns_spent(state, step):
        return {} if step.may_finish(state, through="final_answer") else out_of_steps(state)
    require = must_call(step, state)
    history = reasked(bounded_thread(state, run), scratch.get("reask"))
    turn = yield from act(step, state, history, require=require)
    update: ReActState = {**turn.spent}
    if turn.tool_mode != state.get("tool_mode"):
        update["tool_mode"] = turn.tool_mode
    reading = read_action(step, state, turn, require=require)
    iterations = scratch.get("iterations", 0) + 1
    update["scratch"] = {"iterations": iterations, "reformat": False, "reask": ""}
    update["messages"] = [reading.message]
    if reading.outcome == "final":
        return {**update, **final_reply(state, step, reading, iterations)}
    if reading.outcome == "tools":
        return update
    if require:
        update["scratch"]["reask"] = prompts.REQUIRE_TOOL
        return update
    if turn.tool_mode == "json" and not scratch.get("reformat"):
        update["scratch"].update({"reformat": True, "reask": prompts.REFORMAT_ACTION})
        return update
    if turn.tool_mode == "json" and run.tool_mode == "auto":
        return {**update, "tool_mode": "text"}
    return {**update, **plain_reply(state, step, reading, iterations)}


def out_of_steps(state: ReActState) -> ReActState:
    """The run's end when its turns are spent and no graph step is left for the final
    answer (a ``recursion_limit`` this tight): the best answer its transcript holds."""
    return {"answer": answer_so_far(state), "status": "max_iterations"}


def answer_so_far(state: ReActState) -> str:
    """The last answer-like text of the run's own transcript (a reply cut short is none)."""
    return best_effort_answer([m for m in transcript_of(state) if not cut_short(m)])


def final_reply(
    state: ReActState, step: ReActStep, reading: Reading, iterations: int
) -> ReActState:
    """A reply read as a final answer: the answer, restated where it only points at an
    earlier one, or a re-ask when it was cut short or says nothing usable (see
    ``unread_reply``)."""
    if cut_short(reading.message):
        return unread_reply(state, step, reading.message, iterations)
    answer = repaired_answer(step, state, reading.answer)
    scratch = scratch_of(state)
    start = scratch.get("transcript_start", 0)
    # A step's result inside another loop may be a tool result; that loop checks its own
    # answer.
    checked = not step.run.step_run and unusable(
        answer, state["messages"], start, fence=scratch.get("fence", "")
    )
    if not answer or checked:
        return unread_reply(state, step, reading.message, iterations, prompts.NO_ANSWER)
    return {
        "messages": [answer_message(reading.message, answer)],
        "status": "completed",
        "answer": answer,
    }


def plain_reply(
    state: ReActState, step: ReActStep, reading: Reading, iterations: int
) -> ReActState:
    """A reply in no tool grammar, taken as the answer as it is, or a re-ask when it
    was cut short or says nothing (see ``unread_reply``)."""
    if cut_short(reading.message):
        return unread_reply(state, step, reading.message, iterations)
    if not reading.answer:
        return unread_reply(state, step, reading.message, iterations, prompts.NO_ANSWER)
    return {
        "messages": [answer_message(reading.message, reading.answer)],
        "status": "completed",
        "answer": reading.answer,
    }


def unread_reply(
    state: ReActState,
    step: ReActStep,
    reply: AIMessage,
    iterations: int,
    again: str = prompts.SHORT_ANSWER,
) -> ReActState:
    """A reply cut at the token cap, or a final answer that says nothing, is not an
    answer: ask once more (``again``, in the next request) while turns are left; else
    end, not completed, without an answer (see ``answer_check``). Either way the thread
    keeps the reply as the chat was shown it (``without_answer``: never raw JSON), the
    model's own text under ``RAW_REPLY`` for the next request."""
    if not scratch_of(state).get("shortened") and iterations < step.run.max_iterations:
        kept = without_answer(reply)
        return {"messages": [kept], "scratch": {"shortened": True, "reask": again}}
    return {"messages": [without_answer(reply)], "answer": "", "status": "max_iterations"}


def final_answer(state: ReActState, step: ReActStep) -> LogicOf[ReActState]:
    """The run's best-effort finish when its turns or budget run out: ask once, with no
    tools, for the answer; failing one, take the best answer the transcript holds.

    Returns:
        The call's update with the answer and ``status="max_iterations"``.
    """
    # A re-ask still due gives way to this one: no more tool calls, the answer now.
    history = reasked(bounded_thread(state, step.run), prompts.FORCE_FINAL_ANSWER)
    turn = yield from act(step, state, history, require="none")
    reply = without_tool_calls(turn.reply)
    read = interpret(turn.tool_mode or "none", reply)
    cut = cut_short(reply)
    answer = read.answer if read.kind == "final" and not cut else ""
    if not answer and read.kind == "none" and not cut:
        answer = final_answer_of(content_text(reply.content))
    answer = repaired_answer(step, state, answer)
    if not answer:
        answer = answer_so_far(state)
    update: ReActState = {
        **turn.spent,
        "messages": [answer_message(reply, answer)],
        "answer": answer,
        "status": "max_iterations",
    }
    if turn.tool_mode != state.get("tool_mode"):
        update["tool_mode"] = turn.tool_mode
    return update


def synthesize(state: ReActState, step: ReActStep) -> LogicOf[ReActState]:
    """Write the user-facing answer in a separate (streamed) call that reads the run's
    transcript (see ``synthesis_trace``) and its draft answer.

    Returns:
        The call's update with the written answer (the draft when the reply was cut
        short or empty).
    """
    scratch = scratch_of(state)
    trace = synthesis_trace(transcript_of(state), scratch.get("fence", ""))
    request = HumanMessage(
        prompts.SYNTHESIZE_USER.format(
            question=request_of(state), trace=trace, draft=state.get("answer", "")
        )
    )
    asked = [*earlier_turns(state, step.run), request]
    turn = yield from generate(
        step, state, asked, instructions=prompts.SYNTHESIZE_SYSTEM, with_system=False, again=False
    )
    text = turn.text or state.get("answer", "")
    return {**turn.spent, "answer": text, "messages": [answer_message(turn.reply, text)]}


def turns_spent(state: ReActState, step: ReActStep) -> bool:
    """Whether the run has used its ``max_iterations`` turns, or the run budget leaves
    no room for another turn with tools and the final answer."""
    iterations = scratch_of(state).get("iterations", 0)
    spent = iterations >= step.run.max_iterations
    return spent or not step.may_continue(state, tools=True)


def needs_selection(state: ReActState, step: ReActStep) -> bool:
    """Above 12 tools a run picks its tools first (before its first model turn)."""
    many = len(step.run.tools) > TOOL_SELECTION_THRESHOLD
    return many and "selected_tools" not in scratch_of(state)


def route_turn(state: ReActState, step: ReActStep) -> str | list[Send]:
    """The step after a turn.

    Returns:
        The end, once the run has an answer or gave up on one (``synthesize`` first for
        an answer the model wrote after using tools, when the graph synthesizes); else
        the turn's pending tool calls, ``select_tools``, ``final_answer`` when the turns
        are spent, or ``generate`` for another turn.
    """
    if state.get("status") == "max_iterations":  # a reply cut again (see unread_reply)
        return END
    if state.get("status") == "completed":
        # An answer the model wrote after using tools may be rewritten by synthesis;
        # one a tool ended the run with stands as it is.
        scratch = scratch_of(state)
        used_tools = scratch.get("iterations", 0) > 1 and not scratch.get("tool_ended")
        return "synthesize" if step.options["synthesize_answer"] and used_tools else END
    calls = tool_calls(state, step)
    if calls:
        return calls
    if needs_selection(state, step):
        return "select_tools"
    return "final_answer" if turns_spent(state, step) else "generate"


def synthesis_trace(messages: Sequence[AnyMessage], fence: str = "") -> str:
    """The run's transcript for answer synthesis, each tool result cut to 2,000 characters
    and fenced as untrusted data."""
    lines = []
    for message in messages:
        text = content_text(message.content)
        if isinstance(message, ToolMessage):
            lines.append(f"Tool result: {fence_output(text, fence, SYNTHESIS_TOOL_CHARS)}")
        elif text.startswith("Observation:"):
            lines.append(f"Tool result: {text[:SYNTHESIS_TOOL_CHARS]}")
        elif isinstance(message, AIMessage):
            calls = ", ".join(
                f"{c['name']}({json.dumps(c['args'], default=str)})" for c in message.tool_calls
            )
            lines.append(f"Assistant: {text}" + (f" [calls: {calls}]" if calls else ""))
    return "\n".join(lines)
