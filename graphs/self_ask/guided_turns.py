"""Self-Ask's turns on a model it guides (json and text modes on a small model, see
``loopgraphs.graphs.self_ask.guided.guided``): each turn reads a short scratchpad after
one worked example, each tool result is read in a call of its own, and replies are
decoded under grounded schemas. The graph is the same as the plain path's; its steps
(``loopgraphs.graphs.self_ask.steps``) hand their turn to these functions when the run
is guided."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall

from loopgraphs import prompts
from loopgraphs.graphs.self_ask.budget import may_answer, may_call_tools
from loopgraphs.graphs.self_ask.guided import (
    GUIDED_MAX_CHARS,
    as_shown,
    asked_before,
    copies_example,
    fact_of,
    final_of,
    grounding,
    guided_choice,
    guided_fallback,
    guided_form,
    guided_steps,
    next_follow_up,
    read_of,
    read_request,
    scratchpad,
    worked_example,
)
from loopgraphs.graphs.self_ask.replies import best_answer, new_call_id, with_calls
from loopgraphs.graphs.self_ask.state import FollowUp, SelfAskState, SelfAskStep
from loopgraphs.models import capabilities
from loopgraphs.nodes import (
    JSON_TURN,
    LogicOf,
    LoopSettings,
    Turn,
    answer_message,
    coerce_args,
    content_text,
    cut_short,
    earlier_turns,
    generate,
    reasked,
    request_of,
    scratch_of,
    spent_together,
    tool_for,
)
from loopgraphs.nodes.parsing.self_ask import (
    SelfAskTurn,
    open_json_field,
    parse_self_ask,
    read_answer,
)


def guided_call(
    state: SelfAskState, step: SelfAskStep, messages: Sequence[AnyMessage], *, final: bool
) -> Generator[Any, Any, Turn]:
    """One guided turn: constrained in json mode (falling back to the text form when the
    provider refuses the schema); its first follow-up honours the tool choice."""
    run = step.run
    mode = state.get("tool_mode") or "text"
    choice = guided_choice(run)
    tool = tool_for(run.tools, request_of(state), choice)
    answered = any(f.get("tool") for f in state.get("follow_ups", []))
    described = guided_form(mode, tool, final=final, grounded=None)
    if mode == "json" and capabilities(run.chat_model).structured_output is not False:
        grounded = grounding(request_of(state), state.get("follow_ups", []), final=final)
        form, fallback = guided_form(mode, tool, final=final, grounded=grounded), described
        require = None if final or answered else choice
    else:
        form, fallback, require = described, None, None
    turn = yield from generate(
        step,
        state,
        messages,
        instructions=form,
        tools=run.tools.tools,
        tool_choice=require,
        purpose=JSON_TURN if mode == "json" else None,
        again=False,
        fallback=fallback,
    )
    return turn


def turn_messages(
    state: SelfAskState, run: LoopSettings, follow_ups: Sequence[FollowUp]
) -> list[AnyMessage]:
    """The worked example, the conversation's earlier turns, then the run's scratchpad
    (the last tool result's closest sentences while it is still to read)."""
    mode = state.get("tool_mode") or "text"
    question = request_of(state)
    tool = tool_for(run.tools, question, guided_choice(run))
    fence = scratch_of(state).get("fence", "")
    steps = guided_steps(follow_ups, state.get("phase") == "reading", fence)
    return [
        *worked_example(mode, run.tools, tool),
        *earlier_turns(state, run),
        HumanMessage(scratchpad(question, steps)),
    ]


def read_result(
    state: SelfAskState, step: SelfAskStep
) -> Generator[Any, Any, tuple[FollowUp, Turn]]:
    """Read the last follow-up's intermediate answer from its tool result, in a call of
    its own: a fact the result's closest sentences give (not an answer copied from the
    worked example), else those sentences.

    Returns:
        The last follow-up with its intermediate answer, and the read's ``Turn``.
    """
    follow_ups = state.get("follow_ups", [])
    last = follow_ups[-1]
    mode = state.get("tool_mode") or "text"
    fence = scratch_of(state).get("fence", "")
    question, result = str(last["question"]), str(last["answer"])
    read = read_request(mode, question, result, fence, request_of(state), follow_ups[:-1])
    turn = yield from generate(
        step,
        state,
        read.messages,
        instructions=read.form,
        tools=step.run.tools.tools,
        purpose=JSON_TURN if mode == "json" else None,
        again=False,
    )
    said = read_of(turn.reply)
    if copies_example(said, f"{last['question']} {last['answer']}"):
        said = ""
    said = fact_of(said, read.facts) or guided_fallback(follow_ups, unread=True)
    return FollowUp(question=last["question"], answer=said, tool=last["tool"]), turn


def guided_generate(state: SelfAskState, step: SelfAskStep) -> LogicOf[SelfAskState]:
    """Read the last tool result (in the ``"reading"`` phase), then ask the next
    follow-up while the budget allows (else the phase is ``"finish_budget"``); each is one
    model call. ``messages`` holds the replies, not yet read."""
    run = step.run
    made = scratch_of(state).get("iterations", 0)
    follow_ups = list(state.get("follow_ups", []))
    update: SelfAskState = {}
    replies: list[AnyMessage] = []
    if state.get("phase") == "reading" and follow_ups:
        follow_ups[-1], read = yield from read_result(state, step)
        update = {**spent_together(update, read.spent), "follow_ups": follow_ups, "phase": "asking"}
        replies.append(read.reply)
        made += 1
    if made < run.max_iterations:
        view: SelfAskState = {**state, "follow_ups": follow_ups, "phase": "asking"}
        messages = turn_messages(view, run, follow_ups)
        turn = yield from guided_call(view, step, messages, final=False)
        update = {**update, **spent_together(update, turn.spent)}
        replies.append(turn.reply)
        made += 1
    else:
        update["phase"] = "finish_budget"
    return {**update, "messages": replies, "scratch": {"iterations": made}}


def guided_parse(state: SelfAskState, step: SelfAskStep, reply: AIMessage) -> SelfAskState:
    """Read a guided reply: until a tool has answered a follow-up the reply is a follow-up
    (its question, else its first line, else the user's question); later a new follow-up
    goes to the tool, a final answer that was not cut ends the run, and anything else (a
    follow-up asked before, no question) moves on to the answer (``"finish_asked"``).

    Args:
        state: The state as the turn leaves it (its reply last in ``messages``).
        step: The running step.
        reply: The model's reply asking (or answering).

    Returns:
        The turn's update; ``messages``, when it has them, hold the reply as the run
        keeps it.
    """
    run = step.run
    follow_ups = list(state.get("follow_ups", []))
    answered = any(f.get("tool") for f in follow_ups)
    text = content_text(reply.content)
    turn = parse_self_ask(text)
    asks = turn.kind in ("tool", "follow_up") or bool(turn.kind == "final" and turn.question)
    new_question = bool(turn.question) and not asked_before(turn.question, follow_ups)
    final = turn.kind == "final" and bool(turn.answer) and not new_question
    if answered and final and not cut_short(reply):
        shown = answer_message(reply, turn.answer)
        return {"status": "completed", "answer": turn.answer, "messages": [shown]}
    question, rewritten = _question_of(state, turn, text, asks=asks)
    if not question or (answered and asked_before(question, follow_ups)):
        if may_answer(state, step):
            return {"phase": "finish_asked"}
        answer = best_answer(state, follow_ups, guided_run=True)
        return {"status": "max_iterations", "answer": answer}
    default = tool_for(run.tools, request_of(state), guided_choice(run))
    name = turn.tool if asks and turn.tool else default
    given = asks and turn.tool and turn.tool_input and not rewritten
    args = turn.tool_input if given else question
    if may_call_tools(state, step):
        call_id = new_call_id()
        call = ToolCall(name=name, args=coerce_args(run.tools, name, args), id=call_id)
        return {
            "pending": [{"id": call_id, "name": name, "question": question}],
            "phase": "tools",
            "messages": [with_calls(reply, [call])],
        }
    return {"status": "max_iterations", "answer": best_answer(state, follow_ups, guided_run=True)}


def _question_of(
    state: SelfAskState, turn: SelfAskTurn, text: str, *, asks: bool
) -> tuple[str, bool]:
    """The follow-up a guided reply asks, and whether it was rewritten: before any tool
    has answered, its question, else its first line, else the user's question; later
    the fact the user's question still needs of the answer found (``next_follow_up``)."""
    follow_ups = state.get("follow_ups", [])
    question = (turn.question if asks else "") or open_json_field(text, "follow_up")
    rewritten = False
    if not any(f.get("tool") for f in follow_ups):
        question = question or read_answer(text) or request_of(state)
    elif question and not asked_before(question, follow_ups):
        # asked of the answer found, the fact the question needs (not "Who is X?")
        needed = next_follow_up(request_of(state), question, follow_ups)
        rewritten, question = needed != question, needed
    return question[:GUIDED_MAX_CHARS], rewritten


def guided_final(state: SelfAskState, step: SelfAskStep) -> LogicOf[SelfAskState]:
    """Ask for the final answer on the scratchpad; a cut reply is asked once more for a
    short answer while the budget allows, and is never the answer: the run then ends,
    not completed, with the last intermediate answer. Only an answer after the model
    asked nothing new (``"finish_asked"``) completes the run."""
    run = step.run
    follow_ups = list(state.get("follow_ups", []))
    messages = turn_messages(state, run, follow_ups)
    turn = yield from guided_call(state, step, messages, final=True)
    reply, spent = turn.reply, turn.spent
    shown: list[AnyMessage] = [reply]
    answer = final_of(reply)
    asked = state.get("phase") == "finish_asked"
    made = scratch_of(state).get("iterations", 0)
    if not answer and cut_short(reply) and asked and made < run.max_iterations:
        mode = state.get("tool_mode") or "text"
        tool = tool_for(run.tools, request_of(state), guided_choice(run))
        form = guided_form(mode, tool, final=True, grounded=None)
        shorter = reasked([*messages, reply], prompts.SHORT_ANSWER)
        again = yield from generate(step, state, shorter, instructions=form, again=False)
        shown, spent = [reply, again.reply], spent_together(spent, again.spent)
        answer = final_of(again.reply)
    evidence = " ".join(f"{f['question']} {f['answer']}" for f in follow_ups)
    if copies_example(answer, f"{request_of(state)} {evidence}"):
        answer = ""
    done = bool(answer) and asked
    answer = answer or best_answer(state, follow_ups, guided_run=True)
    last = shown[-1]
    if isinstance(last, AIMessage):
        shown = [*shown[:-1], answer_message(last, answer)]
    shown = [as_shown(state.get("tool_mode") or "text", message) for message in shown]
    return {
        **spent,
        "messages": shown,
        "answer": answer,
        "status": "completed" if done else "max_iterations",
    }
