"""ReWOO's steps: plan the whole work at once, run the plan's steps through the tool step
(those that wait on no missing evidence at once), and answer from the plan and the
evidence."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any, Literal

from langchain_core.messages import AIMessage, ToolCall
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.rewoo.evidence import Gathered, gathered
from loopgraphs.graphs.rewoo.plans import (
    filled,
    input_text,
    plan_from_text,
    plan_schema,
    planned_steps,
    waits_on,
)
from loopgraphs.graphs.rewoo.state import (
    PLANNER_CALLS,
    PlannedStep,
    ReWOOOptions,
    ReWOOState,
)
from loopgraphs.models import needs_guided_steps
from loopgraphs.nodes import (
    END,
    LogicOf,
    Step,
    answer_message,
    coerce_args,
    conversation,
    earlier_turns,
    final_answer_of,
    generate,
    must_call,
    parse,
    prompt_message,
    repaired_answer,
    request_of,
    scratch_of,
    tool_calls,
    without_tool_calls,
)
from loopgraphs.toolkits import ToolRegistry

ReWOOStep = Step[ReWOOOptions[Any, Any]]

SMALL_ANSWER_STOP = ["\n"]
"""Where a small model's answer ends (``loopgraphs.models.needs_guided_steps``)."""


def opening(state: ReWOOState, step: ReWOOStep) -> ReWOOState:
    """The run's starting values: no plan, no evidence (a thread's last run left its own),
    and ``shortfall="recursion_limit"`` when the graph steps left could not carry a plan
    through (the solver then answers alone)."""
    tight = len(step.run.tools) > 0 and not step.may_continue(state)
    shortfall = "recursion_limit" if tight else ""
    return {"plan": [], "evidence": [], "step_calls": [], "shortfall": shortfall}


def route_start(state: ReWOOState, step: ReWOOStep) -> Literal["plan", "solve"]:
    """The planner, or the solver straight away for a run without tools (nothing to plan)
    or without the graph steps a plan needs."""
    return "plan" if len(step.run.tools) and not state.get("shortfall") else "solve"


def planner_instructions(limit: int, require: str | None, tools: ToolRegistry) -> str:
    """The planner's system text: at most ``limit`` steps with the request's ``tools``,
    and at least one while the run must call a tool (``require``)."""
    if require is None:
        need = prompts.REWOO_PLAN_MAY_BE_EMPTY
    elif require == "required":
        need = prompts.REWOO_PLAN_MUST_CALL
    else:
        need = prompts.REWOO_PLAN_MUST_CALL_TOOL.format(tool=require)
    return prompts.REWOO_PLANNER_SYSTEM.format(limit=limit, need=need, tools=tools.describe())


def make_plan(state: ReWOOState, step: ReWOOStep) -> LogicOf[ReWOOState]:
    """Write the whole plan in one internal call (``parse`` with the plan's schema, the
    classic text form read as a fallback, one re-ask when the reply is unreadable or
    cut). A plan that cannot be read is empty: the solver then answers without evidence.

    Returns:
        The call's counts, the plan cut to ``max_steps`` (``shortfall`` says when it
        was), no evidence yet, and the run's ``tool_mode`` stepped down when the provider
        refused function calling.
    """
    run = step.run
    limit = step.options["max_steps"]
    require = must_call(step, state)
    result = yield from parse(
        step,
        state,
        conversation(state, run),
        schema=plan_schema(
            limit, tuple(run.tools.names), require is not None, needs_guided_steps(run.chat_model)
        ),
        fallback=plan_from_text,
        instructions=partial(planner_instructions, limit, require),
        tools=run.tools.tools,
        with_system=True,
        max_calls=PLANNER_CALLS,
        purpose="plan",
    )
    steps = planned_steps(result.value.steps if result.value is not None else [], run.tools)
    kept = steps[:limit]
    update: ReWOOState = {
        **result.spent,
        "plan": kept,
        "evidence": [""] * len(kept),
        "step_calls": [""] * len(kept),
        "shortfall": "max_steps" if len(steps) > limit else "",
    }
    if "native" in result.refused and state.get("tool_mode") == "native":
        # The provider refused function calling: the run is in the mode that answered.
        update["tool_mode"] = "text" if "json" in result.refused else "json"
    return update


def route_plan(state: ReWOOState) -> Literal["work", "solve"]:
    """The worker when the plan has steps; the solver straight away when it has none."""
    return "work" if state.get("plan") else "solve"


def work(state: ReWOOState, step: ReWOOStep) -> ReWOOState:
    """Send the plan's next wave of steps to the tool step: every step not yet run whose
    input names no evidence still to be gathered (one step with ``parallel_steps=False``),
    as one reply of tool calls the loop writes itself, the evidence put in place of the
    names (see ``plans.filled``). No model call.

    Sends nothing (``route_work`` goes on to the solver) when every step has run, or when
    the run's budget (``max_tool_calls``, ``recursion_limit``) leaves no room for more;
    a wave is cut to the tool calls ``max_tool_calls`` still allows. A tool that ended the
    run (``return_direct``) ends it here with its result.

    Returns:
        The evidence gathered so far and, with a wave, its reply and the ids of its calls.
    """
    plan = state.get("plan") or []
    sent = list(state.get("step_calls") or [""] * len(plan))
    found = gathered(state, plan, sent, step.run.loop_break)
    update: ReWOOState = {"evidence": [found.value(i) if sent[i] else "" for i in range(len(plan))]}
    if scratch_of(state).get("tool_ended"):
        return {**update, "status": "completed"}
    ready = [
        i for i, call in enumerate(sent) if not call and all(sent[j] for j in waits_on(plan, i))
    ]
    if not step.options["parallel_steps"]:
        ready = ready[:1]
    left = step.run.budget.tool_calls_left(state)
    if left is not None:
        ready = ready[:left]
    if not ready or not step.may_continue(state, tools=True):
        return update
    wave = uuid.uuid4().hex[:8]
    calls = []
    for index in ready:
        sent[index] = f"rewoo_{wave}_{index + 1}"
        calls.append(step_call(plan, index, found, step.run.tools, sent[index]))
    shown = "\n\n".join(step_line(plan[index]) for index in ready)
    reply = AIMessage(shown, tool_calls=calls, name=step.run.agent_name)
    return {**update, "messages": [reply], "step_calls": sent}


def step_call(
    plan: list[PlannedStep], index: int, found: Gathered, tools: ToolRegistry, call_id: str
) -> ToolCall:
    """Step ``index`` as a tool call: its input with the evidence it names put in (a name
    no earlier step writes says that the evidence is missing), as the tool's arguments."""
    given = filled(plan, index, found.value, missing_evidence)
    name = plan[index]["tool"]
    return ToolCall(name=name, args=coerce_args(tools, name, given), id=call_id)


def missing_evidence(name: str) -> str:
    """What stands in a step's input for evidence no earlier step gathers."""
    return prompts.REWOO_MISSING_EVIDENCE.format(name=name)


def step_line(step: PlannedStep) -> str:
    """A step as the wave's reply shows it: ``Plan: ...`` and ``#E1 = tool[input]``."""
    line = f"{step['evidence']} = {step['tool']}[{input_text(step['tool_input'])}]"
    return f"Plan: {step['plan']}\n{line}" if step["plan"] else line


def route_work(state: ReWOOState, step: ReWOOStep) -> str | list[Send]:
    """The wave's calls (through the review when they pause for a human), the solver
    when the worker sent none, or the end when a tool ended the run."""
    if state.get("status") != "running":
        return END
    calls = tool_calls(state, step)
    return calls if calls else "solve"


def solve(state: ReWOOState, step: ReWOOStep) -> LogicOf[ReWOOState]:
    """Answer the request from the plan and its evidence in one chat turn (asked once
    more when it is cut at the token cap or empty), reading the conversation's earlier
    turns first; a small model's answer is its first line.

    Returns:
        The turn's update: the answer, every step's evidence (a note for a step that did
        not run), and the status: ``completed`` when every planned step ran,
        ``max_iterations`` when ``max_steps`` cut the plan or the run's budget stopped the
        worker (or the answer was cut again).
    """
    plan = state.get("plan") or []
    sent = list(state.get("step_calls") or [""] * len(plan))
    found = gathered(state, plan, sent, step.run.loop_break)
    shown = "\n\n".join(found.shown(index) for index in range(len(plan)))
    text = prompts.REWOO_SOLVE.format(
        request=request_of(state), work=shown or prompts.REWOO_NO_PLAN
    )
    asked = [*earlier_turns(state, step.run), prompt_message(state, text, found.media())]
    system = prompts.REWOO_SOLVER_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    # A small model's answer ends with its first line: it would run on to its token cap.
    small = needs_guided_steps(step.run.chat_model)
    one_line = {"stop": SMALL_ANSWER_STOP} if small else None
    turn = yield from generate(step, state, asked, instructions=system, model_settings=one_line)
    answer = repaired_answer(step, state, final_answer_of(turn.text)) if turn.text else ""
    ran_all = all(sent) and not state.get("shortfall")
    # The solver is offered no tools: a call it makes anyway is no part of the answer.
    earlier = [without_tool_calls(m) for m in turn.messages[:-1] if isinstance(m, AIMessage)]
    return {
        **turn.spent,
        "evidence": found.evidence(),
        "answer": answer,
        "status": "completed" if answer and ran_all else "max_iterations",
        "messages": [*earlier, answer_message(without_tool_calls(turn.reply), answer)],
    }
