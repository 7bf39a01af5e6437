"""Self-Ask's turns in its own grammar (every run the model is not guided in, see
``loopgraphs.graphs.self_ask_guided``): one call per turn in the run's tool mode, its
follow-ups written as tool calls, a reply answering its own new question cut where the
tool's answer belongs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from langchain_core.messages import AIMessage, AnyMessage, ToolCall

from loopgraphs import prompts
from loopgraphs.graphs.self_ask_guided import FollowUp
from loopgraphs.graphs.self_ask_replies import (
    args_text,
    asks_anew,
    best_answer,
    counts,
    new_call_id,
    record_intermediate,
    self_ask_form,
    with_calls,
    without_calls,
)
from loopgraphs.graphs.self_ask_state import PendingFollowUp, SelfAskState, TurnSteps
from loopgraphs.nodes.driver import LogicOf
from loopgraphs.nodes.generate import answer_message
from loopgraphs.nodes.model_call import ModelCall, first_accepted
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.parsing.self_ask import SelfAskTurn, asked_part, parse_self_ask
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.state import scratch_of


def plain_call(
    state: SelfAskState, step: Step, history: Sequence[AnyMessage]
) -> LogicOf[SelfAskState]:
    """One call in the run's mode; ``auto`` falls back to text when tools are refused.

    Returns:
        Its ``llm_calls``/``usage``, the reply as the only ``messages`` and the
        ``tool_mode`` the call ran in.
    """
    run = step.run
    mode = state.get("tool_mode") or "none"
    ask = step.ask(state)
    tools = run.tools.tools if mode != "none" else []
    forms: list[tuple[str, Callable[[], ModelCall]]] = []
    if mode == "native":
        choice = required_choice(state, run)
        native = self_ask_form("native")
        forms.append(("native", lambda: ask.call(history, native, tools=tools, tool_choice=choice)))
    if mode != "native" or run.tool_mode == "auto":
        plain = "text" if mode == "native" else mode
        forms.append((plain, lambda: ask.call(history, self_ask_form(plain), tools=tools)))
    index, outcome = yield from first_accepted([make for _, make in forms])
    return {**counts(outcome.update), "messages": [outcome.reply], "tool_mode": forms[index][0]}


def required_choice(state: SelfAskState, run: LoopSettings) -> str | None:
    """The ``tool_choice`` still to honour ("required" or a tool name): until a tool has
    answered a follow-up of this run."""
    choice = run.tool_choice
    if choice in (None, "auto") or not run.tools:
        return None
    answered = any(f.get("tool") for f in state.get("follow_ups", []))
    return None if answered else choice


def can_continue(state: SelfAskState, run: LoopSettings, steps: TurnSteps) -> bool:
    """Whether another turn fits: calls left in ``max_iterations`` and graph steps left
    for it and the answer."""
    made = scratch_of(state).get("iterations", 0)
    return made < run.max_iterations and run.budget.allows(state, steps=steps.turn)


def plain_parse(
    state: SelfAskState, run: LoopSettings, reply: AIMessage, steps: TurnSteps
) -> SelfAskState:
    """Read a reply in the run's mode: the answer, a follow-up for the tools (the reply
    with its tool calls), a follow-up the model answers itself next turn, or a request
    to go on.

    Args:
        state: The state as the turn leaves it (its reply last in ``messages``).
        run: The run's settings.
        reply: The model's reply.
        steps: The graph steps a turn must leave.

    Returns:
        The turn's update; its ``messages`` start with the reply as the run shows it.
    """
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
    if require and not asks and not native_calls and can_continue(state, run, steps):
        return {**update, "scratch": {"reask": prompts.SELF_ASK_REQUIRE_FOLLOW_UP}}
    answers = turn.kind == "final" or (turn.kind == "none" and not native_calls)
    said_nothing = not text.strip() and not native_calls
    if answers and (cut_short(reply) or said_nothing):
        return {**update, **_no_answer(state, run, steps, follow_ups, said_nothing=said_nothing)}
    if answers:
        shown = without_calls(reply) if native_calls else reply
        return {
            **update,
            "status": "completed",
            "answer": turn.answer,
            "messages": [answer_message(shown, turn.answer)],
        }
    calls, questions = _follow_up_calls(turn, native_calls, run, require) if has_tools else ([], [])
    if calls and run.budget.allows(state, steps=steps.tools(run)):
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
    if not calls and can_continue(state, run, steps):
        prompt = prompts.SELF_ASK_CONTINUE_SOLO if asks else prompts.SELF_ASK_CONTINUE
        update["scratch"] = {"reask": prompt}
    elif not run.budget.allows(state, steps=steps.answer):
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
    run: LoopSettings,
    steps: TurnSteps,
    follow_ups: Sequence[FollowUp],
    *,
    said_nothing: bool,
) -> SelfAskState:
    """After a reply cut at the token cap, or one that says nothing, which is not an
    answer: ask once more (for a short one, or for the answer itself), else let
    ``final_answer`` ask for it, as at the budget, else end with the best answer."""
    if not scratch_of(state).get("shortened") and can_continue(state, run, steps):
        again = prompts.NO_ANSWER if said_nothing else prompts.SHORT_ANSWER
        return {"scratch": {"shortened": True, "reask": again}}
    if run.budget.allows(state, steps=steps.answer):
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
