"""ReWOO's plans: the schema the planner answers in, the reader of the classic text form
("Plan: ... #E1 = Tool[input]"), and the evidence names a step's input refers to.

A step is a tool call whose input may name the evidence of earlier steps (``#E1``,
``#E2``, ...). A name refers to the latest step before the referring one that stores its
result under it (two steps may write the same name); a name that no earlier step writes
is missing, never passed on as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic.json_schema import JsonDict

from loopgraphs.graphs.rewoo.state import PlannedStep
from loopgraphs.nodes.parsing.json_text import ToolInput, json_objects, tool_input_value
from loopgraphs.nodes.parsing.text import clip
from loopgraphs.toolkits import ToolRegistry

EVIDENCE_RE = re.compile(r"#E\s*(\d+)", re.IGNORECASE)
"""An evidence name as a step's input refers to it (``#E1``; ``#e1`` and ``#E 1`` too)."""
NAME_RE = re.compile(r"^\s*#?\s*E\s*(\d+)\s*$", re.IGNORECASE)
"""An evidence name as a step stores its result under it (``#E1``, ``E1``)."""
STEP_RE = re.compile(
    r"(#E\s*\d{1,4})\s*[:=]\s*`?([A-Za-z_][\w.-]{0,99})`?\s*([\[(])", re.IGNORECASE
)
"""The head of a step of the classic text form: ``#E1 = Tool[`` (or ``Tool(``); the input
runs to the last closing bracket of the line."""
CLOSING = {"[": "]", "(": ")"}
PLAN_LABEL_RE = re.compile(r"^\W*(?:\d+[.)]\s*)?plan\s*\d*\s*[:.-]\s*", re.IGNORECASE)
"""The label in front of a step's plan text: ``Plan:``, ``Plan 2:``, ``1. Plan:``."""
PLAN_CHARS = 300
"""Longest plan text a schema-constrained decoder writes for one step."""
SMALL_CHARS = 100
"""Longest plan text and tool input a small model's grammar lets it write for one step."""
NAMED: JsonDict = {"pattern": "^#E[1-9][0-9]?$"}
"""An evidence name as a schema-constrained decoder writes it."""
MAX_PLAN_OBJECTS = 40
"""Most JSON objects the text reader looks at in one reply."""


class PlanStep(BaseModel):
    """One step of the plan: one tool call."""

    plan: str = Field(default="", description="What this step finds out, in a few words.")
    evidence: str = Field(
        default="",
        description="The name of this step's result: #E1 for the first step, #E2 for the next.",
    )
    tool: str = Field(default="", description="The tool this step calls.")
    tool_input: ToolInput = Field(
        default="",
        description="The tool's input: text, or its arguments as an object; it may use an "
        "earlier step's result by its name (#E1).",
    )

    @field_validator("plan", "tool", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return "" if value is None else value if isinstance(value, str) else str(value)

    @field_validator("evidence", mode="before")
    @classmethod
    def _name(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"#E{value}"
        return "" if value is None else value if isinstance(value, str) else str(value)

    @field_validator("tool_input", mode="before")
    @classmethod
    def _input(cls, value: object) -> object:
        if value is None:
            return ""
        if isinstance(value, (str, dict)):
            return value
        return json.dumps(value, ensure_ascii=False)


def _all_required(schema: JsonDict) -> None:
    """A step's JSON schema asks for every field (a decoder may not leave one out)."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["required"] = list(properties)


class WrittenStep(PlanStep):
    """One step of the plan: one tool call."""

    model_config = ConfigDict(json_schema_extra=_all_required)


class Plan(BaseModel):
    """The whole plan, written before any tool runs."""

    steps: list[PlanStep] = Field(
        description="The steps in order; empty when the request needs no tool."
    )


@lru_cache(maxsize=64)
def plan_schema(limit: int, tools: tuple[str, ...], required: bool, small: bool) -> type[Plan]:
    """``Plan`` for a run: its JSON schema bounds the steps to ``limit``, writes each
    evidence name as ``#E<n>``, names the run's ``tools`` and keeps each plan text short,
    so that a schema-constrained decoder (llama.cpp's grammar) ends where a small model
    would write on; for a ``small`` model each tool input is one short text too. With
    ``required`` the plan has at least one step. Reading stays as lenient as ``Plan``'s:
    a longer plan is cut afterwards, a tool of another name is answered by the tool
    step."""
    bounds: JsonDict = {"maxItems": limit}
    short: JsonDict = {"maxLength": SMALL_CHARS if small else PLAN_CHARS}
    named: JsonDict = {"enum": list(tools)} if tools else {}
    step: type[PlanStep] = create_model(  # type: ignore[call-overload]
        "PlanStep",
        __base__=WrittenStep,
        __doc__=PlanStep.__doc__,
        plan=(str, Field(default="", description=_about("plan"), json_schema_extra=short)),
        evidence=(str, Field(default="", description=_about("evidence"), json_schema_extra=NAMED)),
        tool=(str, Field(default="", description=_about("tool"), json_schema_extra=named)),
        tool_input=(
            ToolInput,
            Field(
                default="",
                description=_about("tool_input"),
                json_schema_extra=_one_text if small else None,
            ),
        ),
    )
    steps = Field(
        min_length=1 if required else 0,
        description=Plan.model_fields["steps"].description,
        json_schema_extra=bounds,
    )
    listed: Any = list[step]  # type: ignore[valid-type]
    made: type[Plan] = create_model(  # type: ignore[call-overload]
        "Plan", __base__=Plan, __doc__=Plan.__doc__, steps=(listed, steps)
    )
    return made


def _about(field: str) -> str | None:
    return PlanStep.model_fields[field].description


def _one_text(schema: JsonDict) -> None:
    """A tool input's JSON schema as one short text (a small model's grammar)."""
    described = schema.get("description")
    schema.clear()
    schema.update({"type": "string", "maxLength": SMALL_CHARS})
    if described is not None:
        schema["description"] = described


def plan_from_text(text: str) -> dict[str, Any] | None:
    """A plan read from a reply that holds no ``Plan`` object: JSON step objects (a bare
    list of them, in a code fence or not, with the evidence flat or as NeMo Agent
    Toolkit's ``{"placeholder", "tool", "tool_input"}``), or the classic text form, one
    ``#E<n> = Tool[input]`` line per step after its ``Plan:`` line."""
    text = clip(text)
    steps = steps_from_json(text) or steps_from_lines(text)
    return {"steps": steps} if steps else None


def steps_from_json(text: str) -> list[dict[str, Any]]:
    """The step objects among the JSON objects of a reply (those of a ``steps`` list
    included), flattened."""
    found: list[dict[str, Any]] = []
    for item in json_objects(text, MAX_PLAN_OBJECTS):
        listed = item.get("steps")
        if isinstance(listed, list):
            found += [flat_step(entry) for entry in listed if isinstance(entry, dict)]
        elif "tool" in item or isinstance(item.get("evidence"), dict):
            found.append(flat_step(item))
    return [step for step in found if step.get("tool")]


def flat_step(item: Mapping[str, Any]) -> dict[str, Any]:
    """A step object with its evidence flat: NeMo Agent Toolkit nests the placeholder,
    the tool and its input under ``evidence``."""
    nested = item.get("evidence")
    if not isinstance(nested, dict):
        return dict(item)
    return {
        "plan": item.get("plan", ""),
        "evidence": nested.get("placeholder", ""),
        "tool": nested.get("tool", ""),
        "tool_input": nested.get("tool_input", ""),
    }


def steps_from_lines(text: str) -> list[dict[str, Any]]:
    """The steps of the classic text form: each ``#E<n> = Tool[input]`` with the plan
    text of the ``Plan:`` line before it (or in front of it on its own line)."""
    steps: list[dict[str, Any]] = []
    plan = ""
    for line in text.strip().strip("`").splitlines():
        found = STEP_RE.search(line)
        if found is None:
            if PLAN_LABEL_RE.match(line):
                plan = PLAN_LABEL_RE.sub("", line).strip()
            continue
        before = PLAN_LABEL_RE.sub("", line[: found.start()]).strip()
        end = line.rfind(CLOSING[found.group(3)])
        raw = line[found.end() : end] if end >= found.end() else line[found.end() :]
        steps.append(
            {
                "plan": before or plan,
                "evidence": found.group(1),
                "tool": found.group(2),
                "tool_input": tool_input_value(raw),
            }
        )
        plan = ""
    return steps


def evidence_name(written: str, index: int) -> str:
    """The name a step stores its result under: ``#E<n>`` as written (``E2``, ``#e2``),
    ``#E<index + 1>`` when the planner gave none, else the name as written."""
    found = NAME_RE.match(written)
    if found:
        return f"#E{int(found.group(1))}"
    return written.strip() or f"#E{index + 1}"


def planned_steps(steps: Sequence[PlanStep], tools: ToolRegistry) -> list[PlannedStep]:
    """The plan as the run keeps it: steps that name a tool, each with its evidence name
    and the tool's name as the run knows it (matched regardless of case)."""
    kept: list[PlannedStep] = []
    for step in steps:
        if not step.tool.strip():
            continue
        kept.append(
            PlannedStep(
                plan=step.plan.strip(),
                evidence=evidence_name(step.evidence, len(kept)),
                tool=tool_name(tools, step.tool),
                tool_input=step.tool_input,
            )
        )
    return kept


def tool_name(tools: ToolRegistry, written: str) -> str:
    """The run's name of the tool a step calls: the name as written when the run has a
    tool of that name, else the one whose name differs only in case (or the name as
    written, which the tool step answers as an unknown tool)."""
    name = written.strip().strip("`")
    if name in tools:
        return name
    return next((known for known in tools.names if known.lower() == name.lower()), name)


def references(tool_input: ToolInput) -> list[str]:
    """The evidence names a step's input refers to, in order, each once."""
    texts = [tool_input] if isinstance(tool_input, str) else list(_texts(tool_input))
    names = (f"#E{int(n)}" for text in texts for n in EVIDENCE_RE.findall(text))
    return list(dict.fromkeys(names))


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _texts(item)]
    return []


def producer(plan: Sequence[PlannedStep], index: int, name: str) -> int | None:
    """The step whose evidence a reference of step ``index`` to ``name`` reads: the latest
    step before it that stores its result under ``name`` (None: missing)."""
    return next((j for j in range(index - 1, -1, -1) if plan[j]["evidence"] == name), None)


def waits_on(plan: Sequence[PlannedStep], index: int) -> list[int]:
    """The earlier steps whose evidence step ``index`` needs before it runs."""
    found = (producer(plan, index, name) for name in references(plan[index]["tool_input"]))
    return sorted({j for j in found if j is not None})


def filled(
    plan: Sequence[PlannedStep],
    index: int,
    evidence: Callable[[int], str],
    missing: Callable[[str], str],
) -> ToolInput:
    """Step ``index``'s input with each evidence name replaced: by ``evidence(j)`` of the
    step ``j`` it refers to, or by ``missing(name)`` when no earlier step writes it."""

    def value(found: re.Match[str]) -> str:
        name = f"#E{int(found.group(1))}"
        source = producer(plan, index, name)
        return missing(name) if source is None else evidence(source)

    def fill(item: Any) -> Any:
        if isinstance(item, str):
            return EVIDENCE_RE.sub(value, item)
        if isinstance(item, Mapping):
            return {key: fill(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [fill(inner) for inner in item]
        return item

    filled_input: ToolInput = fill(plan[index]["tool_input"])
    return filled_input


def input_text(tool_input: object) -> str:
    """A tool's input as a step line shows it: the text, or the one argument's value, or
    the arguments as JSON."""
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, Mapping) and len(tool_input) == 1:
        (only,) = tool_input.values()
        if isinstance(only, str):
            return only
    return json.dumps(tool_input, ensure_ascii=False, default=str)


__all__ = [
    "Plan",
    "PlanStep",
    "evidence_name",
    "filled",
    "input_text",
    "plan_from_text",
    "plan_schema",
    "planned_steps",
    "producer",
    "references",
    "tool_name",
    "waits_on",
]
