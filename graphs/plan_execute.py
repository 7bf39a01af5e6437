"""Plan-and-Execute: write a plan, carry out each step with a small ReAct loop, synthesise.

Graph: ``prepare → plan → [review_plan] → execute → [replan] → execute … → synthesize``.
The planner writes numbered steps; each visit of ``execute`` runs one step through the
compiled ReAct subgraph (with the request, the plan and the earlier results as context);
``synthesize`` writes the answer in one call, with the synthesis prompt ReAct uses (the
step results as the work log, the latest result as the draft). Optionally the remaining
steps are revised after each step (``replan``) and the plan is shown to a human for
approval or editing before execution (``approve_plan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import BaseModel, Field, field_validator, model_validator
from typing_extensions import Unpack

from loopgraphs import prompts
from loopgraphs.context import LoopContext
from loopgraphs.graphs.react_subgraph import ReactSubgraph
from loopgraphs.nodes.build import compile_loop, new_graph, route, steps_left
from loopgraphs.nodes.call_tool import new_fence
from loopgraphs.nodes.generate import asker, call_model
from loopgraphs.nodes.model_send import Form
from loopgraphs.nodes.parsing.plans import clean_steps, plan_from_text, update_from_text
from loopgraphs.nodes.parsing.text import content_text, final_answer_of, question_text
from loopgraphs.nodes.runner import Logic, add_step, node_callable
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    check_flag,
    check_positive,
    make_settings,
)
from loopgraphs.nodes.structured import structured_call
from loopgraphs.nodes.tool_modes import resolve_mode
from loopgraphs.state import LoopState, OutputState, request_of, start_run
from loopgraphs.toolkits.registry import ToolRegistry

PLAN_MIN_ASKED = 3
PLAN_MAX_ASKED = 7
PLANNER_CALLS = 2
REPLAN_CALLS = 2
# Graph steps that must still follow a node (see ``steps_left``).
EXECUTE_STEPS = 2  # execute, then synthesize
REVIEW_STEPS = 3  # review_plan, execute, synthesize
RESULT_CHARS = 2000


class _Steps(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict) and "steps" not in data:
            for key in ("plan", "tasks", "remaining", "remaining_steps"):
                if key in data:
                    return {**data, "steps": data[key]}
        return data

    @field_validator("steps", mode="before", check_fields=False)
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean_steps(value)


class Plan(_Steps):
    """The plan: the steps that solve the request, in order."""

    steps: list[str] = Field(
        min_length=1, description="3 to 7 short, self-contained steps, in the order to do them"
    )


class PlanUpdate(_Steps):
    """The steps still needed, in order; an empty list when the request is answered."""

    steps: list[str] = Field(description="the remaining steps in order; [] when nothing is left")


class PlanExecuteOutput(OutputState, total=False):
    """Output of Plan-and-Execute: the plan, each step's result, the steps executed."""

    plan: list[str]
    step_results: list[dict[str, str]]
    current_step: int


class PlanExecuteState(PlanExecuteOutput, LoopState, total=False):
    """State of Plan-and-Execute."""

    request: str


def call_budget(
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    tool_selection: bool = False,
) -> int:
    """Most model replies one run can take (see ``create_plan_execute_graph``)."""
    per_step = max_step_iterations + 1 + (2 if tool_selection else 0)
    replans = REPLAN_CALLS * (max_steps - 1) if replan else 0
    return PLANNER_CALLS + max_steps * per_step + replans + 1


def numbered(steps: Sequence[str]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def results_text(results: Sequence[dict[str, str]]) -> str:
    """Earlier step results for a prompt, each cut to 2,000 characters."""
    if not results:
        return prompts.NOTHING_YET
    lines = []
    for i, record in enumerate(results, 1):
        note = "" if record.get("status") == "completed" else f" [{record.get('status')}]"
        lines.append(f"Step {i}: {record['step']}{note}\nResult: {record['result'][:RESULT_CHARS]}")
    return "\n\n".join(lines)


def review_decision(decision: Any, steps: list[str], max_steps: int) -> dict[str, Any]:
    """Apply a human's decision on the plan; raise ValueError on a malformed one."""
    kind = decision.get("type") if isinstance(decision, dict) else None
    if kind == "approve":
        return {}
    if kind == "edit":
        edited = decision.get("steps")
        if (
            not isinstance(edited, list)
            or not edited
            or not all(isinstance(step, str) and step.strip() for step in edited)
        ):
            raise ValueError(
                "an edit decision needs 'steps': a non-empty list of non-empty strings; "
                f"got {edited!r}"
            )
        if len(edited) > max_steps:
            raise ValueError(
                f"an edited plan may have at most max_steps={max_steps} steps; got {len(edited)}"
            )
        return {"plan": [step.strip() for step in edited]}
    if kind == "reject":
        message = str(decision.get("message") or "no reason given")
        return {"status": "error", "error": f"plan rejected: {message}", "answer": ""}
    raise ValueError(
        "resume with {'type': 'approve'}, {'type': 'edit', 'steps': [...]} or "
        f"{{'type': 'reject', 'message': '...'}}; got {decision!r}"
    )


def build_plan_execute(
    settings: LoopSettings,
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    approve_plan: bool = False,
    options: Any = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled Plan-and-Execute graph for ``settings``."""
    react = ReactSubgraph(
        dataclasses.replace(settings, max_iterations=max_step_iterations), options or {}
    )

    def plan_done(state: dict[str, Any]) -> bool:
        return state.get("current_step", 0) >= len(state.get("plan") or [])

    def finished(state: dict[str, Any]) -> bool:
        return plan_done(state) or not steps_left(state, EXECUTE_STEPS)

    def prepare(state: PlanExecuteState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
        from loopgraphs.nodes.tool_loop import check_history

        check_history(state.get("messages") or [])  # before any model call
        run = settings.for_run(runtime)
        return {
            **start_run(state, new_fence()),
            "request": question_text(state.get("messages", [])),
            "plan": [],
            "step_results": [],
            "current_step": 0,
            "tool_mode": resolve_mode(run),
        }

    def plan(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        high = min(PLAN_MAX_ASKED, max_steps)
        low = min(PLAN_MIN_ASKED, high)

        def instructions(tools: ToolRegistry) -> str:
            listed = tools.describe() or prompts.PLANNER_NO_TOOLS
            return prompts.PLANNER_SYSTEM.format(low=low, high=high, tools=listed)

        result = yield from structured_call(
            asker(run, state, runtime),
            list(state["messages"]),
            Plan,
            instructions=instructions,
            tools=run.tools.tools,
            with_system=True,
            regex_fallback=plan_from_text,
            max_calls=PLANNER_CALLS,
        )
        steps = list(result.value.steps)[:max_steps] if result.value is not None else []
        return {
            **result.state_update(),
            "plan": steps or [request_of(state) or "Answer the request."],
        }

    def review_plan(state: PlanExecuteState) -> dict[str, Any]:
        steps = list(state.get("plan") or [])
        decision = interrupt({"plan": steps, "question": request_of(state)})
        return review_decision(decision, steps, max_steps)

    def execute(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        steps = state.get("plan") or []
        index = state.get("current_step", 0)
        done = list(state.get("step_results") or [])
        prompt = prompts.EXECUTE_STEP.format(
            request=request_of(state),
            plan=numbered(steps),
            results=results_text(done),
            number=index + 1,
            step=steps[index],
        )
        out, spent = yield from react.run(runtime, state, [HumanMessage(prompt)])
        status = out.get("status") or "error"
        result = str(out.get("answer") or "")
        update: dict[str, Any] = {
            **spent,
            "step_results": [*done, {"step": steps[index], "result": result, "status": status}],
            "current_step": index + 1,
        }
        if status == "error":
            previous = next((r["result"] for r in reversed(done) if r["result"]), "")
            return {
                **update,
                "status": "error",
                "error": out.get("error") or f"step {index + 1} failed",
                "answer": result or previous,
            }
        message = AIMessage(f"Step {index + 1}: {steps[index]}\nResult: {result}")
        return {**update, "answer": result, "messages": [message]}

    def revise(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        steps = list(state.get("plan") or [])
        index = state.get("current_step", 0)
        room = max_steps - index
        prompt = [
            HumanMessage(
                prompts.REPLAN_USER.format(
                    request=request_of(state),
                    results=results_text(state.get("step_results") or []),
                    remaining=numbered(steps[index:]),
                )
            ),
        ]
        result = yield from structured_call(
            asker(run, state, runtime),
            prompt,
            PlanUpdate,
            instructions=prompts.REPLAN_SYSTEM.format(room=room),
            with_system=True,
            regex_fallback=update_from_text,
            max_calls=REPLAN_CALLS,
        )
        if result.value is None:
            return result.state_update()
        return {**result.state_update(), "plan": steps[:index] + list(result.value.steps)[:room]}

    def synthesize(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        results = state.get("step_results") or []
        latest = next((r["result"] for r in reversed(results) if r["result"]), "")
        request = HumanMessage(
            prompts.SYNTHESIZE_USER.format(
                question=request_of(state), trace=results_text(results), draft=latest
            )
        )
        call = asker(run, state, runtime).call([request], Form(prompts.SYNTHESIZE_SYSTEM))
        reply, update = yield from call_model(call)
        answer = final_answer_of(content_text(reply.content)) or latest
        return {
            **update,
            "answer": answer,
            "status": "completed" if plan_done(state) else "max_iterations",
            "messages": [AIMessage(answer)],
        }

    def route_planned(state: dict[str, Any]) -> str:
        if not steps_left(state, EXECUTE_STEPS):
            return "synthesize"
        if not approve_plan:
            return "execute"
        # review, then at least one step and the synthesis must fit
        return "review_plan" if steps_left(state, REVIEW_STEPS) else "synthesize"

    def route_reviewed(state: dict[str, Any]) -> str:
        # No check of remaining_steps here: review_plan only runs with room for a step,
        # and LangGraph's update_state (used to settle a review) reports too few steps.
        return "synthesize" if plan_done(state) else "execute"

    def route_executed(state: dict[str, Any]) -> str:
        if finished(state):
            return "synthesize"
        return "replan" if replan else "execute"

    def route_replanned(state: dict[str, Any]) -> str:
        return "synthesize" if finished(state) else "execute"

    policy = settings.retry_policy
    builder = new_graph(
        PlanExecuteState, PlanExecuteOutput, options or {}, loop="plan_execute", settings=settings
    )
    builder.add_node("prepare", prepare)
    add_step(builder, "plan", plan, policy, model_step=True)
    add_step(builder, "execute", execute, policy, subgraph=react.graph)
    add_step(builder, "synthesize", synthesize, policy, model_step=True)
    builder.add_edge(START, "prepare")
    route(builder, "prepare", lambda state: "plan", ["plan"])
    review = ["review_plan"] if approve_plan else []
    route(builder, "plan", route_planned, [*review, "execute", "synthesize"])
    if approve_plan:
        builder.add_node("review_plan", node_callable(review_plan, None, name="review_plan"))
        route(builder, "review_plan", route_reviewed, ["execute", "synthesize"])
    revise_node = ["replan"] if replan else []
    route(builder, "execute", route_executed, ["execute", *revise_node, "synthesize"])
    if replan:
        add_step(builder, "replan", revise, policy, model_step=True)
        route(builder, "replan", route_replanned, ["execute", "synthesize"])
    builder.add_edge("synthesize", END)
    return builder


def create_plan_execute_graph(
    model: Any,
    tools: ToolsArg = None,
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    approve_plan: bool = False,
    **options: Unpack[ToolLoopOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build Plan-and-Execute: plan numbered steps, run each as a ReAct loop, synthesise.

    Call budget (model replies, whatever the model says)::

        2                                     planner (one reformat retry)
        + max_steps × (max_step_iterations + 1)   one ReAct run per step
        + 2 × (max_steps − 1)                 with replan=True (one revision after each
                                              step that has steps after it)
        + 1                                   synthesis

    plus 2 per step when more than 12 tools are given (ReAct's tool selection). A run's
    ``context`` ``max_iterations`` replaces ``max_step_iterations`` in the formula. A step
    that ends with ``max_iterations`` is recorded and the plan goes on; if the graph runs
    low on steps (``recursion_limit``) the remaining steps are skipped, the answer is
    synthesised from the results so far and the status is ``max_iterations``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables for the steps. None or empty: reasoning only.
        max_steps: Most plan steps executed; a longer plan is cut.
        max_step_iterations: Model calls allowed in each step's ReAct loop.
        replan: After each step, revise the remaining steps (may end the plan early).
        approve_plan: Pause after planning with ``interrupt({"plan": [...], "question":
            ...})``; resume with ``Command(resume={"type": "approve"})``, ``{"type":
            "edit", "steps": [...]}`` or ``{"type": "reject", "message": "..."}`` (the run
            then ends with ``status="error"``). Needs a checkpointer.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            the tool options apply to every step's ReAct loop.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``plan`` (list of steps),
        ``step_results`` (``{"step", "result", "status"}`` per executed step),
        ``current_step`` (steps executed) and, in ``messages``, one message per step
        result and the final answer.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_steps", max_steps)
    check_positive("max_step_iterations", max_step_iterations)
    settings = make_settings("plan_execute", model, tools, options)
    builder = build_plan_execute(
        settings,
        max_steps=max_steps,
        max_step_iterations=max_step_iterations,
        replan=check_flag("replan", replan),
        approve_plan=check_flag("approve_plan", approve_plan),
        options=options,
    )
    return compile_loop(builder, settings, options, default_name="plan_execute")
