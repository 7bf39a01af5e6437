"""Self-Ask's graph steps and routers (wired by ``loopgraphs.graphs.self_ask``).

``generate`` runs one turn, plain (``loopgraphs.graphs.self_ask_plain``) or guided
(``loopgraphs.graphs.self_ask_guided_turns``), after answering the last turn's follow-ups
from their tool results; ``final_answer``, the run's one finish step, asks once for the
answer. Where the run goes next is read from its ``phase`` (see ``SelfAskState``). The
steps that check the run budget take the graph steps a turn must leave (``TurnSteps``)
first, bound by the builder; the routers are methods of ``SelfAskRoutes``, which holds
the loop's settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.self_ask_guided import as_shown, guided
from loopgraphs.graphs.self_ask_guided_turns import guided_final, guided_generate, guided_parse
from loopgraphs.graphs.self_ask_plain import can_continue, plain_call, plain_parse
from loopgraphs.graphs.self_ask_replies import (
    answered,
    best_answer,
    record_intermediate,
    without_calls,
)
from loopgraphs.graphs.self_ask_state import FINISHING, SelfAskState, TurnSteps
from loopgraphs.nodes.driver import LogicOf
from loopgraphs.nodes.generate import answer_message, reasked
from loopgraphs.nodes.history import bounded_thread
from loopgraphs.nodes.parsing.self_ask import parse_self_ask
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_loop import pending_step
from loopgraphs.nodes.tool_step import dispatch, pending_calls
from loopgraphs.state import Bookkeeping, LoopRuntime, scratch_of


def opening(steps: TurnSteps, state: SelfAskState, step: Step) -> SelfAskState:
    """The run's starting values: no follow-ups yet, the model's turn to ask; the run
    ends at once when the graph steps left do not allow one model step."""
    run = step.run
    update: SelfAskState = {"follow_ups": [], "pending": [], "phase": "asking"}
    if not run.budget.allows(state, steps=steps.model):
        update.update({"status": "max_iterations", "answer": ""})
    return update


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


def generate(steps: TurnSteps, state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
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
    scratch: Bookkeeping = {**scratch_of(state), **update["scratch"]}
    after_turn: SelfAskState = {
        **view,
        **update,
        "messages": [*state["messages"], *replies],
        "scratch": scratch,
    }
    reply = replies[-1]
    assert isinstance(reply, AIMessage)  # the model's reply to the turn
    if guided_run and after_turn.get("phase") in FINISHING:  # it asked nothing: the budget
        parsed: SelfAskState = {}
    elif guided_run:
        parsed = guided_parse(after_turn, run, reply, steps)
    else:
        parsed = plain_parse(after_turn, run, reply, steps)
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


def final_answer(state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
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


@dataclass(frozen=True)
class SelfAskRoutes:
    """Where Self-Ask's steps lead: the routers, which resolve the run's settings from the
    loop's.

    Attributes:
        settings: The loop's settings.
        steps: The graph steps a turn must leave.
    """

    settings: LoopSettings
    steps: TurnSteps

    def route_generated(self, state: SelfAskState, runtime: LoopRuntime) -> str | list[Send]:
        """After a turn: the tools for its follow-ups (through the review when it pauses
        for one), ``final_answer`` in a finishing phase, else as after the tools."""
        if state.get("status") != "running":
            return END
        phase = state.get("phase")
        if phase == "tools":
            # route_tools when a middleware answered every call
            run = self.settings.for_run(runtime)
            return pending_step(run, state) or self.route_tools(state, runtime)
        if phase in FINISHING:
            return "final_answer"
        return self.route_tools(state, runtime)

    def route_tools(self, state: SelfAskState, runtime: LoopRuntime) -> str:
        """After the tools (or a turn): another turn while one fits, else
        ``final_answer``; ``generate`` ends a run a tool ended."""
        if scratch_of(state).get("tool_ended"):  # generate ends the run
            return "generate"
        run = self.settings.for_run(runtime)
        return "generate" if can_continue(state, run, self.steps) else "final_answer"

    def route_reviewed(self, state: SelfAskState, runtime: LoopRuntime) -> str | list[Send]:
        """After the review: the calls it let through, else as after the tools."""
        return dispatch(pending_calls(state["messages"])) or self.route_tools(state, runtime)
