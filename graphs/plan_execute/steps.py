"""Plan-and-Execute's steps and routers.

The steps that run the plan, and the routers that decide whether another plan step can
run, need the ReAct loop each plan step runs: an ``InnerLoop`` compiled once, when the
graph is wired. They are the methods of ``Execution``, the small frozen object that holds
it: ``wire`` makes one and hands its bound methods to the graph (``execution.execute``),
and a test makes one over the ``InnerLoop`` it wants. Every other step is a function of
the state and its ``Step``; all of them read the loop's keywords from ``step.options``.

``synthesize`` is the loop's one finish step: a run that the budget, its plan or a
revision ends goes there for its answer, with the best-effort fallback
(``fallback_answer``) when its reply is cut. Only a step that fails or that a middleware
limit stops ends the run at once (``executed``), with the latest result as its answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.types import interrupt

from loopgraphs import prompts
from loopgraphs.graphs.plan_execute.plans import (
    RESULT_CHARS,
    Plan,
    PlanUpdate,
    answer_id,
    bounded,
    fallback_answer,
    latest_result,
    numbered,
    plan_done,
    results_room,
    results_text,
    review_decision,
    step_failed,
)
from loopgraphs.graphs.plan_execute.state import (
    PLANNER_CALLS,
    REPLAN_CALLS,
    SYNTHESIS_CALLS,
    PlanExecuteOptions,
    PlanExecuteState,
    StepResult,
    call_budget,
)
from loopgraphs.nodes import (
    InnerLoop,
    InnerOutput,
    LogicOf,
    LoopSettings,
    Status,
    Step,
    answer_message,
    closing_message,
    content_text,
    conversation,
    earlier_turns,
    ended_by_hook,
    final_answer_of,
    generate,
    most_calls,
    parse,
    prompt_message,
    request_of,
    tool_work,
)
from loopgraphs.nodes.parsing.plans import plan_from_text, sized_plan, update_from_text
from loopgraphs.text import question_text
from loopgraphs.toolkits.registry import ToolRegistry

PLAN_MAX_ASKED = 7

PlanExecuteStep = Step[PlanExecuteOptions[Any, Any]]


def opening(state: PlanExecuteState, step: PlanExecuteStep) -> PlanExecuteState:
    """The run's starting values: the request, and no plan or result yet."""
    return {
        "request": question_text(state.get("messages", [])),
        "plan": [],
        "step_results": [],
        "current_step": 0,
    }


def planner_instructions(high: int, tools: ToolRegistry) -> str:
    """The planner's system text: at most ``high`` steps, with the ``tools`` they may use."""
    listed = tools.describe() or prompts.PLANNER_NO_TOOLS
    return prompts.PLANNER_SYSTEM.format(high=high, tools=listed)


def plan(state: PlanExecuteState, step: PlanExecuteStep) -> LogicOf[PlanExecuteState]:
    """Write the plan: as few steps as the request needs, at most ``max_steps``; when the
    planner gives none, one step that answers the request."""
    run = step.run
    most = step.options["max_steps"]
    high = min(PLAN_MAX_ASKED, most)
    result = yield from parse(
        step,
        state,
        conversation(state, run),
        schema=bounded(Plan, high),
        instructions=partial(planner_instructions, high),
        tools=run.tools.tools,
        with_system=True,
        fallback=plan_from_text,
        max_calls=PLANNER_CALLS,
        purpose="plan",
    )
    steps = list(result.value.steps)[:most] if result.value is not None else []
    steps = sized_plan(steps, request_of(state))
    return {**result.spent, "plan": steps or ["Answer the request."]}


def review_plan(state: PlanExecuteState, step: PlanExecuteStep) -> PlanExecuteState:
    """Pause with the plan for a human (``interrupt``) and apply the decision they resume
    with (see ``review_decision``; a malformed one raises ``ValueError``)."""
    steps = list(state.get("plan") or [])
    decision = interrupt({"plan": steps, "question": request_of(state)})
    return review_decision(decision, steps, step.options["max_steps"])


def step_prompt(state: PlanExecuteState, run: LoopSettings) -> str:
    """What the next step's ReAct run is asked: the request, the plan, the earlier results
    (cut to fit ``run``'s model) and the step; a plan of one step that is the request
    itself asks the request as it is."""
    steps = state.get("plan") or []
    request = request_of(state)
    if steps == [request]:
        return request
    index = state.get("current_step", 0)
    return prompts.EXECUTE_STEP.format(
        request=request,
        plan=numbered(steps),
        results=results_text(state.get("step_results") or [], results_room(run.chat_model)),
        number=index + 1,
        step=steps[index],
    )


@dataclass(frozen=True)
class Execution:
    """The ReAct loop each plan step runs, and the steps and routers that need it.

    ``wire`` compiles the ``InnerLoop`` once (``max_step_iterations`` as its
    ``max_iterations``) and binds these methods as the graph's ``execute`` step and the
    routers after ``plan``, ``execute`` and ``replan``: whether another plan step runs
    depends on the calls one of its ReAct runs may take.

    Attributes:
        react: The ReAct loop a plan step runs.
    """

    react: InnerLoop

    def step_iterations(self, state: PlanExecuteState, step: PlanExecuteStep) -> int:
        """ReAct iterations the next step gets: an even share of the calls the run has
        left for its remaining steps (after the synthesis and the revisions that may
        still come), at most the run's ``max_iterations``; 0 when not even one iteration
        fits."""
        react = self.react
        run = react.settings.for_run(step.runtime)
        options = step.options
        index = state.get("current_step", 0)
        to_go = len(state.get("plan") or []) - index
        selects = react.selects_tools(step.runtime)
        whole = {**options, "max_step_iterations": run.max_iterations}
        budget = call_budget(whole, tool_selection=selects)
        later = max(0, options["max_steps"] - 1 - index)
        revisions = REPLAN_CALLS * later if options["replan"] else 0
        left = budget - int(state.get("llm_calls") or 0) - SYNTHESIS_CALLS - revisions
        # A step's run asks for its final answer (and picks its tools) besides its turns.
        overhead = most_calls(react.spec, {"max_iterations": 1}, tool_selection=selects) - 1
        wanted = min(run.max_iterations, left // max(to_go, 1) - overhead)
        if to_go <= 0 or wanted < 1:
            return 0
        iterations = react.iterations(step.runtime, wanted)
        return iterations if iterations + overhead <= left else 0

    def finished(self, state: PlanExecuteState, step: PlanExecuteStep) -> bool:
        """Whether no plan step runs next: the plan is done, or the run budget (the
        graph steps from ``step``'s node, see ``Step.may_continue``) or the calls left do
        not allow another one before the synthesis."""
        return (
            plan_done(state)
            or not step.may_continue(state)
            or not self.step_iterations(state, step)
        )

    def execute(self, state: PlanExecuteState, step: PlanExecuteStep) -> LogicOf[PlanExecuteState]:
        """Run the next step of the plan through the ReAct loop, on its share of the
        calls the run has left (``step_iterations``); with no share left, do nothing (the
        router then moves on to the synthesis)."""
        iterations = self.step_iterations(state, step)
        if not iterations:
            return {}
        asked = [
            *earlier_turns(state, step.run),
            prompt_message(state, step_prompt(state, step.run)),
        ]
        out, spent = yield from self.react.run(step, state, asked, iterations)
        return executed(state, out, spent, step.run.agent_name)

    def route_planned(self, state: PlanExecuteState, step: PlanExecuteStep) -> str:
        """After the plan: the review (with ``approve_plan``), else the first step, or the
        synthesis when no step can run (the run budget counts the review's way too)."""
        if self.finished(state, step):
            return "synthesize"
        return "review_plan" if step.options["approve_plan"] else "execute"

    def route_executed(self, state: PlanExecuteState, step: PlanExecuteStep) -> str:
        """After a step: the next step, a revision (with ``replan``, after a failed step),
        or the synthesis when no step can run."""
        if self.finished(state, step):
            return "synthesize"
        results = state.get("step_results") or []
        failed = not results or step_failed(results[-1])
        return "replan" if step.options["replan"] and failed else "execute"

    def route_replanned(self, state: PlanExecuteState, step: PlanExecuteStep) -> str:
        """After a revision: the next step, or the synthesis when no step can run."""
        return "synthesize" if self.finished(state, step) else "execute"


def executed(
    state: PlanExecuteState,
    out: InnerOutput,
    spent: InnerOutput,
    agent_name: str | None,
) -> PlanExecuteState:
    """The update after the step's ReAct run: its result recorded, and its tool calls and
    results and its result message (named ``agent_name``) added to the transcript.

    Args:
        state: The state the step ran in.
        out: The ReAct run's output.
        spent: What the run spent, as the caller's update (see ``InnerLoop.run``).
        agent_name: The name the step's result message carries.

    Returns:
        The update. A run that failed ends the loop with ``status="error"``, and one that
        a middleware limit stopped ends it at once; either way with the latest result
        any step gave as the answer.
    """
    steps = state.get("plan") or []
    index = state.get("current_step", 0)
    status: Status = out.get("status") or "error"
    result = str(out.get("answer") or "")
    record = StepResult(step=steps[index], result=result, status=status)
    results = [*(state.get("step_results") or []), record]
    update: PlanExecuteState = {**spent, "step_results": results, "current_step": index + 1}
    if status == "error":
        error = out.get("error") or f"step {index + 1} failed"
        return {**update, "status": "error", "error": error, "answer": latest_result(results)}
    # The step's tool calls and results join the transcript (its prompt and its own
    # answer stay out: the step's result message stands for them, under the id of
    # that answer, which a chat streaming the step showed).
    produced = out.get("messages") or []
    work = list(tool_work(produced))
    if ended_by_hook(out):
        closing = closing_message(out)
        return {**update, "answer": latest_result(results), "messages": [*work, *closing]}
    if result:  # a step that gave nothing (stopped before the model answered) says nothing
        text = f"Step {index + 1}: {steps[index]}\nResult: {result}"
        work.append(AIMessage(text, name=agent_name, id=answer_id(produced)))
    return {**update, "answer": result, "messages": work}


def revise(state: PlanExecuteState, step: PlanExecuteStep) -> LogicOf[PlanExecuteState]:
    """Revise the steps still to run after a failed one (``replan``): the model's update
    replaces them (an empty one ends the plan); without one the plan stays."""
    run = step.run
    steps = list(state.get("plan") or [])
    index = state.get("current_step", 0)
    room = step.options["max_steps"] - index
    prompt = [
        *earlier_turns(state, run),
        prompt_message(
            state,
            prompts.REPLAN_USER.format(
                request=request_of(state),
                results=results_text(state.get("step_results") or [], results_room(run.chat_model)),
                remaining=numbered(steps[index:]),
            ),
        ),
    ]
    result = yield from parse(
        step,
        state,
        prompt,
        schema=bounded(PlanUpdate, max(room, 1)),
        instructions=prompts.REPLAN_SYSTEM.format(room=room),
        with_system=True,
        fallback=update_from_text,
        max_calls=REPLAN_CALLS,
        purpose="replan",
    )
    if result.value is None:
        return {**result.spent}
    return {**result.spent, "plan": steps[:index] + list(result.value.steps)[:room]}


def synthesize(state: PlanExecuteState, step: PlanExecuteStep) -> LogicOf[PlanExecuteState]:
    """Finish the run: write the answer from the step results.

    One call, with the synthesis prompt ReAct uses (the results as the work log, the
    fallback answer as the draft); a reply cut at the token cap is asked once more for
    a short answer (one that says nothing, for the answer). A reply still cut, or one
    without an answer, gives way to ``fallback_answer``. The status is "completed" when
    every step of the plan ran and the reply was not cut, else "max_iterations".
    """
    run = step.run
    results = state.get("step_results") or []
    fallback = fallback_answer(results)
    trace = results_text(results, results_room(run.chat_model))
    request = [
        *earlier_turns(state, run),
        prompt_message(
            state,
            prompts.SYNTHESIZE_USER.format(
                question=request_of(state), trace=trace, draft=fallback[:RESULT_CHARS]
            ),
        ),
    ]
    turn = yield from generate(step, state, request, instructions=prompts.SYNTHESIZE_SYSTEM)
    written = "" if turn.cut else final_answer_of(content_text(turn.reply.content))
    answer = written or fallback
    return {
        **turn.spent,
        "answer": answer,
        "status": "completed" if plan_done(state) and not turn.cut else "max_iterations",
        "messages": [*turn.messages[:-1], answer_message(turn.reply, answer)],
    }


def route_reviewed(state: PlanExecuteState) -> str:
    """After the review: the next step, or the synthesis when no step is left to run."""
    # No check of the run budget here: review_plan only runs with room for a step, and
    # LangGraph's update_state (used to settle a review) reports too few steps. Nor of
    # the calls left (no runtime then either): execute checks them.
    return "synthesize" if plan_done(state) else "execute"
