"""Plan-and-Execute's steps and routers, each a function of its own.

A step is node logic ``step(state, step)`` (see ``loopgraphs.nodes.driver.add_step``), a
router ``router(state)`` or ``router(state, runtime)``; those that need the factory's
options take a ``PlanExecuteOptions`` first, which ``loopgraphs.graphs.plan_execute``
binds with ``functools.partial`` when it wires the graph.

``synthesize`` is the loop's one finish step: a run that the budget, its plan or a
revision ends goes there for its answer, with the best-effort fallback
(``fallback_answer``) when its reply is cut. Only a step that fails or that a middleware
limit stops ends the run at once (``executed``), with the latest result as its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import interrupt

from loopgraphs import prompts
from loopgraphs.graphs.plan_execute_state import (
    RESULT_CHARS,
    Plan,
    PlanExecuteState,
    PlanUpdate,
    StepResult,
    answer_id,
    bounded,
    latest_result,
    numbered,
    plan_done,
    results_room,
    results_text,
    review_decision,
    step_failed,
)
from loopgraphs.graphs.react.state import TOOL_SELECTION_THRESHOLD
from loopgraphs.nodes.driver import LogicOf
from loopgraphs.nodes.generate import answer_message, call_model, short_again
from loopgraphs.nodes.history import conversation, earlier_turns
from loopgraphs.nodes.inner import (
    InnerLoop,
    closing_message,
    ended_by_hook,
    tool_work,
)
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.plans import plan_from_text, sized_plan, update_from_text
from loopgraphs.nodes.parsing.text import content_text, cut_short, final_answer_of
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import structured_call
from loopgraphs.state import InnerOutput, LoopRuntime, Status, request_of
from loopgraphs.text import question_text
from loopgraphs.toolkits.registry import ToolRegistry

PLAN_MAX_ASKED = 7
PLANNER_CALLS = 2  # the plan, and one reformat request
REPLAN_CALLS = 2
SYNTHESIS_CALLS = 2  # the answer, and once more for a short one when it was cut
STEP_MIN_CALLS = 2  # one ReAct iteration and its forced final answer
SELECTION_CALLS = 2  # ReAct's tool selection, above TOOL_SELECTION_THRESHOLD tools
# Graph steps that must still follow a node (see ``RunBudget.allows``).
EXECUTE_STEPS = 2  # execute, then synthesize
REVIEW_STEPS = 3  # review_plan, execute, synthesize


@dataclass(frozen=True)
class PlanExecuteOptions:
    """What Plan-and-Execute's steps take from its factory.

    Attributes:
        settings: The factory's settings (the run budget, the agent's name).
        react: The ReAct subgraph each step runs, with ``max_step_iterations`` as its
            ``max_iterations``.
        max_steps: Most plan steps executed; a longer plan is cut.
        replan: Revise the remaining steps after a step that failed.
        approve_plan: Show the plan to a human (``review_plan``) before executing it.
    """

    settings: LoopSettings
    react: InnerLoop
    max_steps: int
    replan: bool
    approve_plan: bool


def call_budget(
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    tool_selection: bool = False,
) -> int:
    """Most model replies one run can take (see ``create_plan_execute_graph``)."""
    selection = SELECTION_CALLS * max_steps if tool_selection else 0
    steps = max_step_iterations + 1 + STEP_MIN_CALLS * (max_steps - 1) + selection
    replans = REPLAN_CALLS * (max_steps - 1) if replan else 0
    return PLANNER_CALLS + steps + replans + SYNTHESIS_CALLS


def step_iterations(
    options: PlanExecuteOptions, state: PlanExecuteState, runtime: LoopRuntime
) -> int:
    """ReAct iterations the next step gets: an even share of the calls the run has left
    for its remaining steps (after the synthesis and the revisions that may still come),
    at most the run's ``max_iterations``; 0 when not even one iteration fits."""
    react = options.react
    run = react.settings.for_run(runtime)
    index = state.get("current_step", 0)
    to_go = len(state.get("plan") or []) - index
    selects = len(run.tools) > TOOL_SELECTION_THRESHOLD
    budget = call_budget(
        max_steps=options.max_steps,
        max_step_iterations=run.max_iterations,
        replan=options.replan,
        tool_selection=selects,
    )
    revisions = REPLAN_CALLS * max(0, options.max_steps - 1 - index) if options.replan else 0
    left = budget - int(state.get("llm_calls") or 0) - SYNTHESIS_CALLS - revisions
    overhead = 1 + (SELECTION_CALLS if selects else 0)  # the forced final answer
    wanted = min(run.max_iterations, left // max(to_go, 1) - overhead)
    if to_go <= 0 or wanted < 1:
        return 0
    iterations = react.iterations(runtime, wanted)
    return iterations if iterations + overhead <= left else 0


def finished(options: PlanExecuteOptions, state: PlanExecuteState, runtime: LoopRuntime) -> bool:
    """Whether no step runs next: the plan is done, or the run budget or the calls left
    do not allow another step before the synthesis."""
    return (
        plan_done(state)
        or not options.settings.budget.allows(state, steps=EXECUTE_STEPS)
        or not step_iterations(options, state, runtime)
    )


def opening(state: PlanExecuteState, step: Step) -> PlanExecuteState:
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


def plan(
    options: PlanExecuteOptions, state: PlanExecuteState, step: Step
) -> LogicOf[PlanExecuteState]:
    """Write the plan: as few steps as the request needs, at most ``max_steps``; when the
    planner gives none, one step that answers the request."""
    run = step.run
    high = min(PLAN_MAX_ASKED, options.max_steps)
    result = yield from structured_call(
        step.ask(state),
        conversation(state, run),
        bounded(Plan, high),
        instructions=partial(planner_instructions, high),
        tools=run.tools.tools,
        with_system=True,
        regex_fallback=plan_from_text,
        max_calls=PLANNER_CALLS,
        purpose="plan",
    )
    steps = list(result.value.steps)[: options.max_steps] if result.value is not None else []
    steps = sized_plan(steps, request_of(state))
    return {**result.state_update(), "plan": steps or ["Answer the request."]}


def review_plan(options: PlanExecuteOptions, state: PlanExecuteState) -> PlanExecuteState:
    """Pause with the plan for a human (``interrupt``) and apply the decision they resume
    with (see ``review_decision``)."""
    steps = list(state.get("plan") or [])
    decision = interrupt({"plan": steps, "question": request_of(state)})
    return review_decision(decision, steps, options.max_steps)


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


def execute(
    options: PlanExecuteOptions, state: PlanExecuteState, step: Step
) -> LogicOf[PlanExecuteState]:
    """Run the next step of the plan through the ReAct subgraph, on its share of the
    calls the run has left (``step_iterations``); with no share left, do nothing (the
    router then moves on to the synthesis)."""
    iterations = step_iterations(options, state, step.runtime)
    if not iterations:
        return {}
    asked = [*earlier_turns(state, step.run), HumanMessage(step_prompt(state, step.run))]
    out, spent = yield from options.react.run(step, state, asked, iterations)
    return executed(state, out, spent, options.settings.agent_name)


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


def revise(
    options: PlanExecuteOptions, state: PlanExecuteState, step: Step
) -> LogicOf[PlanExecuteState]:
    """Revise the steps still to run after a failed one (``replan``): the model's update
    replaces them (an empty one ends the plan); without one the plan stays."""
    run = step.run
    steps = list(state.get("plan") or [])
    index = state.get("current_step", 0)
    room = options.max_steps - index
    prompt = [
        *earlier_turns(state, run),
        HumanMessage(
            prompts.REPLAN_USER.format(
                request=request_of(state),
                results=results_text(state.get("step_results") or [], results_room(run.chat_model)),
                remaining=numbered(steps[index:]),
            )
        ),
    ]
    result = yield from structured_call(
        step.ask(state),
        prompt,
        bounded(PlanUpdate, max(room, 1)),
        instructions=prompts.REPLAN_SYSTEM.format(room=room),
        with_system=True,
        regex_fallback=update_from_text,
        max_calls=REPLAN_CALLS,
        purpose="replan",
    )
    if result.value is None:
        return {**result.state_update()}
    return {**result.state_update(), "plan": steps[:index] + list(result.value.steps)[:room]}


def fallback_answer(results: Sequence[StepResult]) -> str:
    """The answer when the synthesis gives none: the latest result of a step that did its
    work, else the latest result of any step ("" when no step gave one)."""
    return latest_result([r for r in results if not step_failed(r)]) or latest_result(results)


def synthesize(state: PlanExecuteState, step: Step) -> LogicOf[PlanExecuteState]:
    """Finish the run: write the answer from the step results.

    One call, with the synthesis prompt ReAct uses (the results as the work log, the
    fallback answer as the draft); a reply cut at the token cap is asked once more for
    a short answer (``short_again``). A reply still cut, or one without an answer, gives
    way to ``fallback_answer``. The status is "completed" when every step of the plan ran
    and the reply was not cut, else "max_iterations".
    """
    run = step.run
    results = state.get("step_results") or []
    fallback = fallback_answer(results)
    trace = results_text(results, results_room(run.chat_model))
    request = [
        *earlier_turns(state, run),
        HumanMessage(
            prompts.SYNTHESIZE_USER.format(
                question=request_of(state), trace=trace, draft=fallback[:RESULT_CHARS]
            )
        ),
    ]
    ask, form = step.ask(state), RequestForm(prompts.SYNTHESIZE_SYSTEM)
    reply, update = yield from call_model(ask.call(request, form))
    reply, shown, update = yield from short_again(ask, request, form, reply, update)
    cut = cut_short(reply)
    answer = ("" if cut else final_answer_of(content_text(reply.content))) or fallback
    return {
        **update,
        "answer": answer,
        "status": "completed" if plan_done(state) and not cut else "max_iterations",
        "messages": [*shown[:-1], answer_message(reply, answer)],
    }


def route_planned(
    options: PlanExecuteOptions, state: PlanExecuteState, runtime: LoopRuntime
) -> str:
    """After the plan: the review (with ``approve_plan``, when it and a step fit the run
    budget), else the first step, or the synthesis when no step can run."""
    if finished(options, state, runtime):
        return "synthesize"
    if not options.approve_plan:
        return "execute"
    # review, then at least one step and the synthesis must fit
    allowed = options.settings.budget.allows(state, steps=REVIEW_STEPS)
    return "review_plan" if allowed else "synthesize"


def route_reviewed(state: PlanExecuteState) -> str:
    """After the review: the next step, or the synthesis when no step is left to run."""
    # No check of remaining_steps here: review_plan only runs with room for a step,
    # and LangGraph's update_state (used to settle a review) reports too few steps.
    # Nor of the calls left (no runtime then either): execute checks them.
    return "synthesize" if plan_done(state) else "execute"


def route_executed(
    options: PlanExecuteOptions, state: PlanExecuteState, runtime: LoopRuntime
) -> str:
    """After a step: the next step, a revision (with ``replan``, after a failed step), or
    the synthesis when no step can run."""
    if finished(options, state, runtime):
        return "synthesize"
    results = state.get("step_results") or []
    failed = not results or step_failed(results[-1])
    return "replan" if options.replan and failed else "execute"


def route_replanned(
    options: PlanExecuteOptions, state: PlanExecuteState, runtime: LoopRuntime
) -> str:
    """After a revision: the next step, or the synthesis when no step can run."""
    return "synthesize" if finished(options, state, runtime) else "execute"
