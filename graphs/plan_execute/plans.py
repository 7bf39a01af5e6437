"""Plan-and-Execute's plans and results: the schemas the planner fills, how the step
results read in a prompt, and a human's decision on the plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableBinding
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.json_schema import JsonDict

from loopgraphs import prompts
from loopgraphs.graphs.plan_execute.state import PlanExecuteState, StepResult
from loopgraphs.nodes import with_bounds
from loopgraphs.nodes.parsing.plans import clean_steps

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


def plan_done(state: PlanExecuteState) -> bool:
    """Whether every step of the plan has been executed."""
    return state.get("current_step", 0) >= len(state.get("plan") or [])


def numbered(steps: Sequence[str]) -> str:
    """The steps as a numbered list, one a line."""
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


def latest_result(results: Sequence[StepResult]) -> str:
    """The latest result any of ``results`` gave ("" when none gave one)."""
    return next((record["result"] for record in reversed(results) if record["result"]), "")


def fallback_answer(results: Sequence[StepResult]) -> str:
    """The answer when the synthesis gives none: the latest result of a step that did its
    work, else the latest result of any step ("" when no step gave one)."""
    return latest_result([r for r in results if not step_failed(r)]) or latest_result(results)


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
