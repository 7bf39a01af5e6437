"""Self-Ask's steps and routers, and its turns in its own grammar.

``take_turn`` runs one turn after answering the last turn's follow-ups from their tool
results: plain (below: one call in the run's tool mode, its follow-ups written as tool
calls, a reply answering its own new question cut where the tool's answer belongs) or
guided (``loopgraphs.graphs.self_ask.guided_turns``); ``final_answer``, the run's one
finish step, asks once for the answer. Where the run goes next is read from its
``phase`` (see ``SelfAskState``); the run budget is the kit's (``Step.may_continue``,
``Step.may_finish``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from langchain_core.messages import AIMessage, AnyMessage, ToolCall
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.self_ask.budget import can_continue, may_answer, may_call_tools
from loopgraphs.graphs.self_ask.guided import as_shown, guided
from loopgraphs.graphs.self_ask.guided_turns import guided_final, guided_generate, guided_parse
from loopgraphs.graphs.self_ask.replies import (
    answered,
    args_text,
    asks_anew,
    best_answer,
    new_call_id,
    record_intermediate,
    self_ask_form,
    with_calls,
    without_calls,
)
from loopgraphs.graphs.self_ask.state import (
    FINISHING,
    FollowUp,
    PendingFollowUp,
    SelfAskState,
    SelfAskStep,
)
from loopgraphs.nodes import (
    END,
    LogicOf,
    LoopSettings,
    answer_message,
    bounded_thread,
    coerce_args,
    content_text,
    cut_short,
    generate,
    reasked,
    scratch_of,
    tool_calls,
)
from loopgraphs.nodes.parsing.self_ask import SelfAskTurn, asked_part, parse_self_ask


def opening(state: SelfAskState, step: SelfAskStep) -> SelfAskState:
    """The run's starting values: no follow-ups yet, the model's turn to ask."""
    return {"follow_ups": [], "pending": [], "phase": "asking"}


def settle(state: SelfAskState, run: LoopSettings) -> SelfAskState:
    """In the ``"tools"`` phase, the last turn's follow-ups answered from their tool
    results (see ``answered``); a guided run reads the last result next (``"reading"``)."""
    if state.get("phase") != "tools":
        return {}
    reading = guided(run, state.get("tool_mode") or "none")
    return {
        "follow_ups": answered(state),
        "pending": [],
        "phase": "reading" if reading else "asking",
    }


def take_turn(state: SelfAskState, step: SelfAskStep) -> LogicOf[SelfAskState]:
    """One turn: the model's reply, read in the run's mode. A follow-up for the tools is
    written as the reply with its tool calls; the last turn's follow-ups are answered
    first from their tool results."""
    run = step.run
    done = settle(state, run)
    if scratch_of(state).get("tool_ended"):  # a tool ended the run
        return {**done, "status": "completed"}
    view: SelfAskState = {**state, **done}  # as the settled follow-ups leave it
    guided_run = guided(run, state.get("tool_mode") or "none")
    if guided_run:
        update = yield from guided_generate(view, step)
    else:
        history = reasked(bounded_thread(state, run), scratch_of(state).get("reask"))
        update = yield from plain_call(view, step, history)
        made = scratch_of(state).get("iterations", 0) + 1
        update["scratch"] = {"iterations": made, "reask": ""}
    replies = update.pop("messages")
    if not replies:  # a guided run out of budget before it could ask
        return {**done, **update}
    after_turn: SelfAskState = {
        **view,
        **update,
        "messages": [*state["messages"], *replies],
        "scratch": {**scratch_of(state), **update["scratch"]},
    }
    reply = replies[-1]
    assert isinstance(reply, AIMessage)  # the model's reply to the turn
    if guided_run and after_turn.get("phase") in FINISHING:  # it asked nothing: the budget
        parsed: SelfAskState = {}
    elif guided_run:
        parsed = guided_parse(after_turn, step, reply)
    else:
        parsed = plain_parse(after_turn, step, reply)
    shown = [*replies[:-1], *parsed.pop("messages", replies[-1:])]
    if guided_run:
        shown = [as_shown(state.get("tool_mode") or "none", message) for message in shown]
    extra = parsed.pop("scratch", {})
    return {
        **done,
        **update,
        **parsed,
        "messages": shown,
        "scratch": {**update["scratch"], **extra},
    }


def final_answer(state: SelfAskState, step: SelfAskStep) -> LogicOf[SelfAskState]:
    """Ask once for the answer (the follow-up budget is spent, or a reply was cut),
    after answering the last turn's follow-ups from their tool results; without one the
    run ends with the best answer it holds (see ``best_answer``)."""
    run = step.run
    done = settle(state, run)
    view: SelfAskState = {**state, **done}  # as the settled follow-ups leave it
    if guided(run, state.get("tool_mode") or "none"):
        return {**done, **(yield from guided_final(view, step))}
    # A re-ask still due gives way to this one: no more follow-ups, the answer now.
    history = reasked(bounded_thread(state, run), prompts.SELF_ASK_FORCE_FINAL)
    update = yield from plain_call(view, step, history)
    reply = update["messages"][0]
    assert isinstance(reply, AIMessage)  # the model's reply
    if reply.tool_calls:
        reply = without_calls(reply)
    cut = cut_short(reply)  # a reply cut at the token cap is not an answer
    turn = parse_self_ask("" if cut else content_text(reply.content))
    follow_ups = record_intermediate(list(view.get("follow_ups", [])), turn)
    answer = turn.answer if turn.kind in ("final", "none") else ""
    if not answer:
        answer = turn.intermediate or best_answer(state, follow_ups, guided_run=False)
    return {
        **done,
        **update,
        "messages": [answer_message(reply, answer)],
        "follow_ups": follow_ups,
        "answer": answer,
        "status": "max_iterations",
    }


def route_turn(state: SelfAskState, step: SelfAskStep) -> str | list[Send]:
    """After a turn: the tools for its follow-ups (through the review when it pauses for
    one), ``final_answer`` in a finishing phase, else as after the tools."""
    if state.get("status") != "running":
        return END
    phase = state.get("phase")
    if phase == "tools":
        # route_tools when a middleware answered every call
        return tool_calls(state, step) or route_tools(state, step)
    if phase in FINISHING:
        return "final_answer"
    return route_tools(state, step)


def route_tools(state: SelfAskState, step: SelfAskStep) -> str:
    """After the tools (or a turn): another turn while one fits, else ``final_answer``;
    ``generate`` ends a run a tool ended."""
    if scratch_of(state).get("tool_ended"):  # take_turn ends the run
        return "generate"
    return "generate" if can_continue(state, step) else "final_answer"


def plain_call(
    state: SelfAskState, step: SelfAskStep, history: Sequence[AnyMessage]
) -> LogicOf[SelfAskState]:
    """One call in the run's mode; ``auto`` falls back to text when tools are refused.

    Returns:
        Its ``llm_calls``/``usage``, the reply as the only ``messages`` and the
        ``tool_mode`` the call ran in.
    """
    run = step.run
    mode = state.get("tool_mode") or "none"
    native = mode == "native"
    turn = yield from generate(
        step,
        state,
        history,
        instructions=self_ask_form(mode),
        tools=run.tools.tools if mode != "none" else [],
        tool_choice=required_choice(state, run) if native else None,
        again=False,
        fallback=self_ask_form("text") if native and run.tool_mode == "auto" else None,
    )
    used = "text" if turn.fell_back else mode
    return {**turn.spent, "messages": [turn.reply], "tool_mode": used}


def required_choice(state: SelfAskState, run: LoopSettings) -> str | None:
    """The ``tool_choice`` still to honour ("required" or a tool name): until a tool has
    answered a follow-up of this run."""
    choice = run.tool_choice
    if choice in (None, "auto") or not run.tools:
        return None
    answered = any(f.get("tool") for f in state.get("follow_ups", []))
    return None if answered else choice


def plain_parse(state: SelfAskState, step: SelfAskStep, reply: AIMessage) -> SelfAskState:
    """Read a reply in the run's mode: the answer, a follow-up for the tools (the reply
    with its tool calls), a follow-up the model answers itself next turn, or a request
    to go on.

    Args:
        state: The state as the turn leaves it (its reply last in ``messages``).
        step: The running step.
        reply: The model's reply.

    Returns:
        The turn's update; its ``messages`` start with the reply as the run shows it.
    """
    run = step.run
    mode = state.get("tool_mode", "none")
    native_calls = reply.tool_calls if mode == "native" else []
    text = content_text(reply.content)
    turn = parse_self_ask(text)
    follow_ups = record_intermediate(list(state.get("follow_ups", [])), turn)
    has_tools = mode != "none" and len(run.tools) > 0
    written_follow_ups = has_tools and mode != "native"
    turn, written = held_for_tool(turn, reply, follow_ups, written_follow_ups=written_follow_ups)
    update: SelfAskState = {"follow_ups": follow_ups, "messages": [written]}
    require = required_choice(state, run) if has_tools else None
    asks = turn.kind in ("tool", "follow_up")
    if require and not asks and not native_calls and can_continue(state, step):
        return {**update, "scratch": {"reask": prompts.SELF_ASK_REQUIRE_FOLLOW_UP}}
    answers = turn.kind == "final" or (turn.kind == "none" and not native_calls)
    said_nothing = not text.strip() and not native_calls
    if answers and (cut_short(reply) or said_nothing):
        return {**update, **_no_answer(state, step, follow_ups, said_nothing=said_nothing)}
    if answers:
        shown = without_calls(reply) if native_calls else reply
        return {
            **update,
            "status": "completed",
            "answer": turn.answer,
            "messages": [answer_message(shown, turn.answer)],
        }
    calls, questions = _follow_up_calls(turn, native_calls, run, require) if has_tools else ([], [])
    if calls and may_call_tools(state, step):
        pending = [
            PendingFollowUp(id=call["id"] or "", name=call["name"], question=question)
            for call, question in zip(calls, questions, strict=True)
        ]
        return {
            **update,
            "pending": pending,
            "phase": "tools",
            "messages": [with_calls(written, calls)],
        }
    if native_calls:
        update["messages"] = [without_calls(reply)]
    if not has_tools and asks:
        follow_ups = [*follow_ups, FollowUp(question=turn.question, answer="", tool=None)]
        update["follow_ups"] = follow_ups
    if not calls and can_continue(state, step):
        prompt = prompts.SELF_ASK_CONTINUE_SOLO if asks else prompts.SELF_ASK_CONTINUE
        update["scratch"] = {"reask": prompt}
    elif not may_answer(state, step):
        answer = best_answer(state, follow_ups, guided_run=False)
        update.update({"status": "max_iterations", "answer": answer})
    return update


def held_for_tool(
    turn: SelfAskTurn,
    reply: AIMessage,
    follow_ups: Sequence[FollowUp],
    *,
    written_follow_ups: bool,
) -> tuple[SelfAskTurn, AIMessage]:
    """The turn a reply (read as ``turn``) takes, and the reply as the run keeps it. When
    the tools answer follow-ups written in the grammar (``written_follow_ups``), a reply
    answering its own new question is cut where the tool's answer belongs, and its final
    line waits for that answer."""
    if turn.kind == "final" and written_follow_ups and asks_anew(turn, follow_ups):
        asked = replace(turn, kind="tool" if turn.tool else "follow_up", answer="")
        kept = asked_part(content_text(reply.content))
        return asked, reply.model_copy(update={"content": kept})
    return turn, reply


def _no_answer(
    state: SelfAskState,
    step: SelfAskStep,
    follow_ups: Sequence[FollowUp],
    *,
    said_nothing: bool,
) -> SelfAskState:
    """After a reply cut at the token cap, or one that says nothing, which is not an
    answer: ask once more (for a short one, or for the answer itself), else let
    ``final_answer`` ask for it, as at the budget, else end with the best answer."""
    if not scratch_of(state).get("shortened") and can_continue(state, step):
        again = prompts.NO_ANSWER if said_nothing else prompts.SHORT_ANSWER
        return {"scratch": {"shortened": True, "reask": again}}
    if may_answer(state, step):
        return {"phase": "finish_cut"}
    return {"status": "max_iterations", "answer": best_answer(state, follow_ups, guided_run=False)}


def _follow_up_calls(
    turn: SelfAskTurn, native_calls: Sequence[ToolCall], run: LoopSettings, require: str | None
) -> tuple[list[ToolCall], list[str]]:
    """The tool calls answering a turn's follow-ups and their questions: the model's own
    calls (the first for the turn's question, each other for its arguments), else one call
    for the written follow-up (to the tool it names, else the required or first tool)."""
    calls: list[ToolCall] = []
    questions: list[str] = []
    if native_calls:
        for index, call in enumerate(native_calls):
            calls.append({**call, "id": call.get("id") or new_call_id()})
            first = index == 0 and turn.question
            questions.append(turn.question if first else args_text(call["args"]))
    elif turn.kind in ("tool", "follow_up"):
        first = require if require in run.tools.names else run.tools.names[0]
        name = turn.tool if turn.kind == "tool" else first
        args = turn.tool_input if turn.kind == "tool" else turn.question
        calls = [ToolCall(name=name, args=coerce_args(run.tools, name, args), id=new_call_id())]
        questions = [turn.question or args_text(args)]
    return calls, questions
