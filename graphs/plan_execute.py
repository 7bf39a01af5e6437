"""Plan-and-Execute: write a plan, carry out each step with a small ReAct loop, synthesise.

Graph: ``prepare → plan → [review_plan] → execute → [replan] → execute … → synthesize``.
The planner writes as few numbered steps as the request needs (a plan of one step is the
request itself); each visit of ``execute`` runs one step through the compiled ReAct
subgraph (with the request, the plan and the earlier results as context), on its share of
the model calls the run has left; ``synthesize`` writes the answer, with the synthesis
prompt ReAct uses (the step results as the work log, the latest result as the draft), and
asks once more for a short answer when its reply was cut. Earlier results are cut to fit
the model's context window. Optionally the remaining steps are revised after a step that
failed (``replan``) and the plan is shown to a human for approval or editing before
execution (``approve_plan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableBinding
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.json_schema import JsonDict
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.graphs.react import TOOL_SELECTION_THRESHOLD
from loopgraphs.graphs.react_subgraph import (
    ReactSubgraph,
    closing_message,
    ended_by_hook,
    tool_work,
)
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, add_step, node_callable
from loopgraphs.nodes.generate import answer_message, call_model, short_again
from loopgraphs.nodes.history import conversation, earlier_turns
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.plans import clean_steps, plan_from_text, sized_plan, update_from_text
from loopgraphs.nodes.parsing.text import content_text, cut_short, final_answer_of
from loopgraphs.nodes.routing import route
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    check_flag,
    check_positive,
)
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import structured_call, with_bounds
from loopgraphs.state import (
    LoopBuilder,
    LoopInput,
    LoopRuntime,
    LoopState,
    ResponseT,
    RunResult,
    Status,
    request_of,
)
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
RESULT_CHARS = 2000  # most of one step result a prompt shows
MIN_RESULT_CHARS = 100  # less of each result is not worth showing: the oldest are left out
CHARS_PER_TOKEN = 3  # a cautious average: small models split numbers and names finely
REPLY_TOKENS = 512  # room for the reply when the model does not say its cap
STEP_CHARS = 300  # of one planned step, in the schema the model is asked to fill


class _Steps(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        if isinstance(data, dict) and "steps" not in data:
            for key in ("plan", "tasks", "remaining", "remaining_steps"):
                if key in data:
                    return {**data, "steps": data[key]}
        return data

    @field_validator("steps", mode="before", check_fields=False)
    @classmethod
    def _clean(cls, value: object) -> object:
        return clean_steps(value)


class Plan(_Steps):
    """The plan: the steps that solve the request, in order."""

    steps: list[str] = Field(
        min_length=1,
        description="as few short, self-contained steps as the request needs (one for a "
        "simple question), at most 7, in the order to do them",
    )


class PlanUpdate(_Steps):
    """The steps still needed, in order; an empty list when the request is answered."""

    steps: list[str] = Field(description="the remaining steps in order; [] when nothing is left")


@cache
def bounded(schema: type[_Steps], most: int) -> type[_Steps]:
    """``schema`` whose JSON schema holds at most ``most`` steps of at most ``STEP_CHARS``
    characters each, so that a schema-constrained decoder ends the list: SmolLM2 repeated
    its one step until the token cap in an open one (see ``with_bounds``; a longer list
    is cut by the loop)."""
    bounds: JsonDict = {"maxItems": most, "items": {"type": "string", "maxLength": STEP_CHARS}}
    return with_bounds(schema, "steps", bounds)


class StepResult(TypedDict):
    """An executed step: its text, what its ReAct run answered and how that run ended."""

    step: str
    result: str
    status: Status


class PlanExecuteFields(TypedDict, total=False):
    """The keys of its own that Plan-and-Execute's state and output hold (see
    ``PlanExecuteOutput``)."""

    plan: list[str]
    step_results: list[StepResult]
    current_step: int


class PlanExecuteOutput(PlanExecuteFields, RunResult[ResponseT]):
    """Output of Plan-and-Execute: the plan, each step's result, the steps executed."""


class PlanExecuteState(PlanExecuteFields, LoopState, total=False):
    """State of Plan-and-Execute."""

    request: str


PlanExecuteGraph: TypeAlias = CompiledStateGraph[
    PlanExecuteState, ContextT, LoopInput, PlanExecuteOutput[ResponseT]
]
"""The compiled graph ``create_plan_execute_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def numbered(steps: Sequence[str]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def results_room(model: object) -> int | None:
    """Characters the earlier results may take in one prompt to ``model``: half of its
    context window (its profile's ``max_input_tokens``) less its reply cap, the other half
    left to the rest of the prompt; None when the profile does not say."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    window = (getattr(model, "profile", None) or {}).get("max_input_tokens")
    if not isinstance(window, int) or window <= 0:
        return None
    cap = getattr(model, "max_tokens", None)
    reply = min(cap if isinstance(cap, int) and cap > 0 else REPLY_TOKENS, window // 2)
    return (window - reply) // 2 * CHARS_PER_TOKEN


def results_text(results: Sequence[StepResult], limit: int | None = None) -> str:
    """Earlier step results for a prompt, each cut to ``RESULT_CHARS``, in about ``limit``
    characters: when they do not fit, the results share the room evenly (each cut to its
    share) and, when a share would be under ``MIN_RESULT_CHARS``, the oldest are left out."""
    if not results:
        return prompts.NOTHING_YET
    blocks = []
    for i, record in enumerate(results, 1):
        note = "" if record.get("status") == "completed" else f" [{record.get('status')}]"
        blocks.append(
            f"Step {i}: {record['step']}{note}\nResult: {record['result'][:RESULT_CHARS]}"
        )
    text = "\n\n".join(blocks)
    if limit is None or len(text) <= limit:
        return text
    dropped = 0
    while dropped < len(blocks) - 1 and limit // (len(blocks) - dropped) < MIN_RESULT_CHARS:
        dropped += 1
    share = limit // (len(blocks) - dropped)
    head = [prompts.EARLIER_RESULTS_LEFT_OUT.format(count=dropped)] if dropped else []
    return "\n\n".join(head + [block[:share] for block in blocks[dropped:]])


def answer_id(messages: Sequence[AnyMessage]) -> str | None:
    """The id of the reply a step's run answered with: its last message, when that is
    an assistant message calling no tool (None otherwise)."""
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and not last.tool_calls:
        return last.id
    return None


def step_failed(record: StepResult) -> bool:
    """Whether a step did not do its work: it did not complete, or gave no result."""
    return record["status"] != "completed" or not record["result"].strip()


def review_decision(decision: object, steps: list[str], max_steps: int) -> PlanExecuteState:
    """Apply a human's decision on the plan; raise ValueError on a malformed one."""
    given: Mapping[str, object] = decision if isinstance(decision, dict) else {}
    kind = given.get("type")
    if kind == "approve":
        return {}
    if kind == "edit":
        edited = given.get("steps")
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
        message = str(given.get("message") or "no reason given")
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
    options: Mapping[str, object] | None = None,
) -> LoopBuilder:
    """The uncompiled Plan-and-Execute graph for ``settings``."""
    react = ReactSubgraph(
        dataclasses.replace(settings, max_iterations=max_step_iterations), options or {}
    )

    def plan_done(state: PlanExecuteState) -> bool:
        return state.get("current_step", 0) >= len(state.get("plan") or [])

    def step_iterations(state: PlanExecuteState, runtime: LoopRuntime) -> int:
        """ReAct iterations the next step gets: an even share of the calls the run has left
        for its remaining steps (after the synthesis and the revisions that may still
        come), at most the run's ``max_iterations``; 0 when not even one iteration fits."""
        run = react.settings.for_run(runtime)
        index = state.get("current_step", 0)
        to_go = len(state.get("plan") or []) - index
        selects = len(run.tools) > TOOL_SELECTION_THRESHOLD
        budget = call_budget(
            max_steps=max_steps,
            max_step_iterations=run.max_iterations,
            replan=replan,
            tool_selection=selects,
        )
        revisions = REPLAN_CALLS * max(0, max_steps - 1 - index) if replan else 0
        left = budget - int(state.get("llm_calls") or 0) - SYNTHESIS_CALLS - revisions
        overhead = 1 + (SELECTION_CALLS if selects else 0)  # the forced final answer
        wanted = min(run.max_iterations, left // max(to_go, 1) - overhead)
        if to_go <= 0 or wanted < 1:
            return 0
        iterations = react.iterations(runtime, wanted)
        return iterations if iterations + overhead <= left else 0

    def finished(state: PlanExecuteState, runtime: LoopRuntime) -> bool:
        return (
            plan_done(state)
            or not settings.budget.allows(state, steps=EXECUTE_STEPS)
            or not step_iterations(state, runtime)
        )

    def opening(state: PlanExecuteState, run: LoopSettings) -> PlanExecuteState:
        return {
            "request": question_text(state.get("messages", [])),
            "plan": [],
            "step_results": [],
            "current_step": 0,
        }

    def plan(state: PlanExecuteState, step: Step) -> LogicOf[PlanExecuteState]:
        run = step.run
        high = min(PLAN_MAX_ASKED, max_steps)

        def instructions(tools: ToolRegistry) -> str:
            listed = tools.describe() or prompts.PLANNER_NO_TOOLS
            return prompts.PLANNER_SYSTEM.format(high=high, tools=listed)

        result = yield from structured_call(
            step.ask(state),
            conversation(state, run),
            bounded(Plan, high),
            instructions=instructions,
            tools=run.tools.tools,
            with_system=True,
            regex_fallback=plan_from_text,
            max_calls=PLANNER_CALLS,
            purpose="plan",
        )
        steps = list(result.value.steps)[:max_steps] if result.value is not None else []
        steps = sized_plan(steps, request_of(state))
        return {**result.state_update(), "plan": steps or ["Answer the request."]}

    def review_plan(state: PlanExecuteState) -> PlanExecuteState:
        steps = list(state.get("plan") or [])
        decision = interrupt({"plan": steps, "question": request_of(state)})
        return review_decision(decision, steps, max_steps)

    def execute(state: PlanExecuteState, step: Step) -> LogicOf[PlanExecuteState]:
        iterations = step_iterations(state, step.runtime)
        if not iterations:
            return {}  # no calls left for a step: route_executed moves on to synthesize
        steps = state.get("plan") or []
        index = state.get("current_step", 0)
        done = list(state.get("step_results") or [])
        prompt = request_of(state)  # a plan of one step is the request: ReAct answers it
        if steps != [prompt]:
            room = results_room(step.run.chat_model)
            prompt = prompts.EXECUTE_STEP.format(
                request=request_of(state),
                plan=numbered(steps),
                results=results_text(done, room),
                number=index + 1,
                step=steps[index],
            )
        asked = [*earlier_turns(state, step.run), HumanMessage(prompt)]
        out, spent = yield from react.run(step, state, asked, iterations)
        status: Status = out.get("status") or "error"
        result = str(out.get("answer") or "")
        record = StepResult(step=steps[index], result=result, status=status)
        update: PlanExecuteState = {
            **spent,
            "step_results": [*done, record],
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
        # The step's tool calls and results join the transcript (its prompt and its own
        # answer stay out: the step's result message stands for them, under the id of
        # that answer, which a chat streaming the step showed).
        produced = out.get("messages") or []
        work = list(tool_work(produced))
        if ended_by_hook(out):  # a middleware limit ended the step: the run ends here
            previous = next((r["result"] for r in reversed(done) if r["result"]), "")
            return {
                **update,
                "answer": result or previous,
                "messages": [*work, *closing_message(out)],
            }
        if result:  # a step that gave nothing (stopped before the model answered) says nothing
            text = f"Step {index + 1}: {steps[index]}\nResult: {result}"
            work.append(AIMessage(text, name=settings.agent_name, id=answer_id(produced)))
        return {**update, "answer": result, "messages": work}

    def revise(state: PlanExecuteState, step: Step) -> LogicOf[PlanExecuteState]:
        run = step.run
        steps = list(state.get("plan") or [])
        index = state.get("current_step", 0)
        room = max_steps - index
        prompt = [
            *earlier_turns(state, run),
            HumanMessage(
                prompts.REPLAN_USER.format(
                    request=request_of(state),
                    results=results_text(
                        state.get("step_results") or [], results_room(run.chat_model)
                    ),
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

    def synthesize(state: PlanExecuteState, step: Step) -> LogicOf[PlanExecuteState]:
        run = step.run
        results = state.get("step_results") or []
        good = [r["result"] for r in results if not step_failed(r)]
        latest = (good or [r["result"] for r in results if r["result"]] or [""])[-1]
        room = results_room(run.chat_model)
        trace = results_text(results, room)
        request = [
            *earlier_turns(state, run),
            HumanMessage(
                prompts.SYNTHESIZE_USER.format(
                    question=request_of(state), trace=trace, draft=latest[:RESULT_CHARS]
                )
            ),
        ]
        ask, form = step.ask(state), RequestForm(prompts.SYNTHESIZE_SYSTEM)
        reply, update = yield from call_model(ask.call(request, form))
        reply, shown, update = yield from short_again(ask, request, form, reply, update)
        cut = cut_short(reply)
        answer = ("" if cut else final_answer_of(content_text(reply.content))) or latest
        return {
            **update,
            "answer": answer,
            "status": "completed" if plan_done(state) and not cut else "max_iterations",
            "messages": [*shown[:-1], answer_message(reply, answer)],
        }

    def route_planned(state: PlanExecuteState, runtime: LoopRuntime) -> str:
        if finished(state, runtime):
            return "synthesize"
        if not approve_plan:
            return "execute"
        # review, then at least one step and the synthesis must fit
        return "review_plan" if settings.budget.allows(state, steps=REVIEW_STEPS) else "synthesize"

    def route_reviewed(state: PlanExecuteState) -> str:
        # No check of remaining_steps here: review_plan only runs with room for a step,
        # and LangGraph's update_state (used to settle a review) reports too few steps.
        # Nor of the calls left (no runtime then either): execute checks them.
        return "synthesize" if plan_done(state) else "execute"

    def route_executed(state: PlanExecuteState, runtime: LoopRuntime) -> str:
        if finished(state, runtime):
            return "synthesize"
        results = state.get("step_results") or []
        failed = not results or step_failed(results[-1])
        return "replan" if replan and failed else "execute"

    def route_replanned(state: PlanExecuteState, runtime: LoopRuntime) -> str:
        return "synthesize" if finished(state, runtime) else "execute"

    builder = new_graph(
        PlanExecuteState, PlanExecuteOutput, options or {}, loop="plan_execute", settings=settings
    )
    add_step(builder, "plan", plan, settings, model_step=True)
    add_step(builder, "execute", execute, settings, subgraph=react.graph)
    add_step(builder, "synthesize", synthesize, settings, model_step=True)
    add_start(builder, settings, opening, lambda state: "plan", ["plan"])
    review = ["review_plan"] if approve_plan else []
    route(builder, "plan", route_planned, [*review, "execute", "synthesize"])
    if approve_plan:
        builder.add_node("review_plan", node_callable(review_plan, None, name="review_plan"))
        route(builder, "review_plan", route_reviewed, ["execute", "synthesize"])
    revise_node = ["replan"] if replan else []
    route(builder, "execute", route_executed, ["execute", *revise_node, "synthesize"])
    if replan:
        add_step(builder, "replan", revise, settings, model_step=True)
        route(builder, "replan", route_replanned, ["execute", "synthesize"])
    builder.add_edge("synthesize", END)
    return builder


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


def create_plan_execute_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_steps: int = 7,
    max_step_iterations: int = 5,
    replan: bool = False,
    approve_plan: bool = False,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> PlanExecuteGraph[ContextT, ResponseT]:
    """Build Plan-and-Execute: plan numbered steps, run each as a ReAct loop, synthesise.

    Call budget (model replies, whatever the model says), ``call_budget``::

        2                                     planner (one reformat retry)
        + max_step_iterations + 1             the steps' calls: one step's full ReAct run
        + 2 × (max_steps − 1)                 and one iteration and its forced answer for
                                              each other step
        + 2 × (max_steps − 1)                 with replan=True (a revision after each
                                              failed step that has steps after it)
        + 2                                   synthesis (once more if its reply was cut)

    plus 2 × max_steps when more than 12 tools are given (ReAct's tool selection). The plan
    has as few steps as the request needs; a plan of one step is the request itself, which
    its ReAct run gets as it is. Each step's ReAct loop gets an even share of the calls the
    run has left for its remaining steps (after the synthesis and the revisions that may
    still come), at most ``max_step_iterations`` iterations and its forced final answer, so
    a one-step plan gets them all. A run's ``context`` ``max_iterations`` replaces
    ``max_step_iterations`` in the formula; a context of a type without a
    ``max_iterations`` field cannot pass a smaller share on, so such a step runs only when
    its full budget fits. A step that ends with ``max_iterations`` is recorded and the plan
    goes on; if the graph runs low on steps (``recursion_limit``) or calls, the remaining
    steps are skipped, the answer is synthesised from the results so far and the status
    is ``max_iterations``. A synthesis reply cut at the token cap is never the answer: it
    is asked for once more, and when that is cut too, the run ends ``max_iterations`` with
    the latest result of a completed step. Earlier results in a prompt are cut (the oldest
    left out first) to fit the model's context window, read from its profile's
    ``max_input_tokens``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables for the steps. None or empty: reasoning only.
        max_steps: Most plan steps executed; a longer plan is cut.
        max_step_iterations: Most model calls in each step's ReAct loop (fewer when the
            run's calls run short, see the budget above).
        replan: After a step that failed (it did not complete, or gave no result), revise
            the remaining steps (may end the plan early). A completed step goes straight on.
        approve_plan: Pause after planning with ``interrupt({"plan": [...], "question":
            ...})``; resume with ``Command(resume={"type": "approve"})``, ``{"type":
            "edit", "steps": [...]}`` or ``{"type": "reject", "message": "..."}`` (the run
            then ends with ``status="error"``). Needs a checkpointer.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            the tool options apply to every step's ReAct loop. The planner, every
            step's ReAct run, the revisions and the synthesis read the user's earlier
            turns and the answers they got; ``max_history_tokens`` bounds them.

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

    def build(settings: LoopSettings) -> LoopBuilder:
        return build_plan_execute(
            settings,
            max_steps=max_steps,
            max_step_iterations=max_step_iterations,
            replan=check_flag("replan", replan),
            approve_plan=check_flag("approve_plan", approve_plan),
            options=options,
        )

    return compiled_loop("plan_execute", build, model, tools, options)
