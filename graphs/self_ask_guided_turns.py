"""Self-Ask's turns on a model it guides (json and text modes on a small model, see
``loopgraphs.graphs.self_ask_guided.guided``): each turn reads a short scratchpad after
one worked example, each tool result is read in a call of its own, and replies are
decoded under grounded schemas. The graph is the same as the plain path's; its steps
(``loopgraphs.graphs.self_ask_steps``) hand their turn to these functions when the run
is guided."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall

from loopgraphs.graphs.self_ask_guided import (
    GUIDED_MAX_CHARS,
    FollowUp,
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
from loopgraphs.graphs.self_ask_replies import best_answer, counts, new_call_id, with_calls
from loopgraphs.graphs.self_ask_state import SelfAskState, TurnSteps
from loopgraphs.models import capabilities
from loopgraphs.nodes.driver import LogicOf
from loopgraphs.nodes.generate import answer_message, call_model, short_again, spent_together
from loopgraphs.nodes.grounding import tool_for
from loopgraphs.nodes.history import earlier_turns
from loopgraphs.nodes.model_call import JSON_TURN, ModelCall, first_accepted
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.parsing.self_ask import (
    SelfAskTurn,
    open_json_field,
    parse_self_ask,
    read_answer,
)
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.state import ModelSpend, empty_usage, request_of, scratch_of

GuidedCall: TypeAlias = Generator[ModelCall, Any, tuple[AIMessage, ModelSpend]]
"""One guided model call as node logic: it returns the reply and its ``llm_calls``/``usage``."""


def guided_call(
    state: SelfAskState, step: Step, messages: Sequence[AnyMessage], *, final: bool
) -> GuidedCall:
    """One guided turn: constrained in json mode (falling back to the text form when the
    provider refuses the schema); its first follow-up honours the tool choice."""
    run = step.run
    mode = state.get("tool_mode") or "text"
    choice = guided_choice(run)
    tool = tool_for(run.tools, request_of(state), choice)
    ask = step.ask(state)
    answered = any(f.get("tool") for f in state.get("follow_ups", []))
    require = None if final or answered else choice
    purpose = JSON_TURN if mode == "json" else None
    forms: list[Callable[[], ModelCall]] = []
    if mode == "json" and capabilities(run.chat_model).structured_output is not False:
        grounded = grounding(request_of(state), state.get("follow_ups", []), final=final)
        constrained = guided_form(mode, tool, final=final, grounded=grounded)
        forms.append(
            lambda: ask.call(
                messages, constrained, tools=run.tools.tools, tool_choice=require, purpose=purpose
            )
        )
    described = guided_form(mode, tool, final=final, grounded=None)
    forms.append(lambda: ask.call(messages, described, tools=run.tools.tools, purpose=purpose))
    _, outcome = yield from first_accepted(forms)
    return outcome.reply, outcome.update


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
    state: SelfAskState, step: Step
) -> Generator[ModelCall, Any, tuple[FollowUp, AIMessage, ModelSpend]]:
    """Read the last follow-up's intermediate answer from its tool result, in a call of
    its own: a fact the result's closest sentences give (not an answer copied from the
    worked example), else those sentences.

    Returns:
        The last follow-up with its intermediate answer, the reply to the read and its
        ``llm_calls``/``usage``.
    """
    follow_ups = state.get("follow_ups", [])
    last = follow_ups[-1]
    mode = state.get("tool_mode") or "text"
    fence = scratch_of(state).get("fence", "")
    question, result = str(last["question"]), str(last["answer"])
    read = read_request(mode, question, result, fence, request_of(state), follow_ups[:-1])
    call = step.ask(state).call(
        read.messages,
        read.form,
        tools=step.run.tools.tools,
        purpose=JSON_TURN if mode == "json" else None,
    )
    reply, spent = yield from call_model(call)
    said = read_of(reply)
    if copies_example(said, f"{last['question']} {last['answer']}"):
        said = ""
    said = fact_of(said, read.facts) or guided_fallback(follow_ups, unread=True)
    return FollowUp(question=last["question"], answer=said, tool=last["tool"]), reply, spent


def guided_generate(state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
    """Read the last tool result (in the ``"reading"`` phase), then ask the next
    follow-up while the budget allows (else the phase is ``"finish_budget"``); each is one
    model call. ``messages`` holds the replies, not yet read."""
    run = step.run
    made = scratch_of(state).get("iterations", 0)
    follow_ups = list(state.get("follow_ups", []))
    update: SelfAskState = {"llm_calls": 0, "usage": empty_usage()}
    replies: list[AnyMessage] = []
    if state.get("phase") == "reading" and follow_ups:
        follow_ups[-1], reply, spent = yield from read_result(state, step)
        update = {
            **counts(spent_together(update, spent)),
            "follow_ups": follow_ups,
            "phase": "asking",
        }
        replies.append(reply)
        made += 1
    if made < run.max_iterations:
        view: SelfAskState = {**state, "follow_ups": follow_ups, "phase": "asking"}
        messages = turn_messages(view, run, follow_ups)
        reply, spent = yield from guided_call(view, step, messages, final=False)
        update = {**update, **counts(spent_together(update, spent))}
        replies.append(reply)
        made += 1
    else:
        update["phase"] = "finish_budget"
    return {**update, "messages": replies, "scratch": {"iterations": made}}


def guided_parse(
    state: SelfAskState, run: LoopSettings, reply: AIMessage, steps: TurnSteps
) -> SelfAskState:
    """Read a guided reply: until a tool has answered a follow-up the reply is a follow-up
    (its question, else its first line, else the user's question); later a new follow-up
    goes to the tool, a final answer that was not cut ends the run, and anything else (a
    follow-up asked before, no question) moves on to the answer (``"finish_asked"``).

    Args:
        state: The state as the turn leaves it (its reply last in ``messages``).
        run: The run's settings.
        reply: The model's reply asking (or answering).
        steps: The graph steps a turn must leave.

    Returns:
        The turn's update; ``messages``, when it has them, hold the reply as the run
        keeps it.
    """
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
        if run.budget.allows(state, steps=steps.answer):
            return {"phase": "finish_asked"}
        answer = best_answer(state, follow_ups, guided_run=True)
        return {"status": "max_iterations", "answer": answer}
    default = tool_for(run.tools, request_of(state), guided_choice(run))
    name = turn.tool if asks and turn.tool else default
    given = asks and turn.tool and turn.tool_input and not rewritten
    args = turn.tool_input if given else question
    if run.budget.allows(state, steps=steps.tools(run)):
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


def guided_final(state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
    """Ask for the final answer on the scratchpad; a cut reply is asked once more for a
    short answer while the budget allows, and is never the answer: the run then ends,
    not completed, with the last intermediate answer. Only an answer after the model
    asked nothing new (``"finish_asked"``) completes the run."""
    run = step.run
    follow_ups = list(state.get("follow_ups", []))
    messages = turn_messages(state, run, follow_ups)
    reply, update = yield from guided_call(state, step, messages, final=True)
    shown: list[AnyMessage] = [reply]
    answer = final_of(reply)
    asked = state.get("phase") == "finish_asked"
    made = scratch_of(state).get("iterations", 0)
    if not answer and cut_short(reply) and asked and made < run.max_iterations:
        mode = state.get("tool_mode") or "text"
        tool = tool_for(run.tools, request_of(state), guided_choice(run))
        form = guided_form(mode, tool, final=True, grounded=None)
        again, shown, update = yield from short_again(
            step.ask(state), messages, form, reply, update
        )
        answer = final_of(again)
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
        **counts(update),
        "messages": shown,
        "answer": answer,
        "status": "completed" if done else "max_iterations",
    }
