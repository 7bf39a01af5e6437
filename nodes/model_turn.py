"""One ReAct model turn in the run's tool mode, and reading its reply.

``model_turn`` sends the turn through the one model-call path
(``loopgraphs.nodes.model_call``) in the run's mode, with ``auto`` mode's fallbacks.
``read_reply`` classifies the reply: tool calls to run (in json and text modes the parsed
action is attached as an ordinary tool call, so the same ``ToolNode`` path runs it in every
mode), a final answer, or an unreadable reply."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    ToolCall,
)
from langchain_core.tools import BaseTool

from loopgraphs.models import capabilities, writes_thoughts
from loopgraphs.nodes.generate import node_caller, shown_as
from loopgraphs.nodes.json_stream import REACT_ANSWER
from loopgraphs.nodes.model_call import JSON_TURN, ModelCall, first_accepted
from loopgraphs.nodes.parsing.react import (
    ParsedReply,
    final_answer_of,
    parse_json_text,
    parse_react_text,
)
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_modes import (
    first_question,
    mode_form,
    resolve_mode,
    run_registry,
)
from loopgraphs.state import LoopRuntime, TotalsState
from loopgraphs.toolkits.registry import ToolRegistry


def model_turn(
    settings: LoopSettings,
    state: Mapping[str, object],
    history: Sequence[AnyMessage],
    *,
    require: str | None = None,
    runtime: LoopRuntime | None = None,
    purpose: str | None = None,
    model_settings: Mapping[str, object] | None = None,
) -> Generator[ModelCall, Any, TotalsState]:
    """One model call in the run's tool mode, with ``auto`` mode's fallbacks (native →
    json → text when the provider refuses the form). Models that think better without a
    written thought (``writes_thoughts``) get json steps without one.

    Returns the state update: the reply (as sent), ``llm_calls``, ``usage``, ``tool_mode``.
    A json-mode turn is an internal call (``JSON_TURN``): its JSON never streams, the
    node stores the reply as the chat shows it. With a ``purpose`` the turn is internal
    in every mode (a candidate of a search: nothing of it streams). ``model_settings``
    go with the request in every mode.
    """
    model = settings.chat_model
    registry = run_registry(settings, state)
    mode = cast("str | None", state.get("tool_mode")) or resolve_mode(settings)
    auto = settings.tool_mode == "auto"
    thoughts = writes_thoughts(model)
    ask = node_caller(settings, state, runtime)

    def call(mode: str, *, constrained: bool = True) -> ModelCall:
        # Only json and text modes show a worked example, chosen for the first question.
        question = first_question(state, history) if mode in ("json", "text") else ""
        form = mode_form(mode, thoughts=thoughts, question=question, constrained=constrained)
        tools: Sequence[BaseTool | dict[str, Any]] = (
            registry.tools if mode in ("native", "json", "text") else []
        )
        if mode == "native":
            tools = [*tools, *settings.provider_tools]
        choice = None if mode == "native" and require == "none" else require
        # A json step is JSON: the chat shows it once stored (its thought, its answer).
        internal, answer = (JSON_TURN, REACT_ANSWER) if mode == "json" else (None, None)
        if purpose is not None:
            internal, answer = purpose, None
        return ask.call(
            history,
            form,
            tools=tools,
            tool_choice=choice,
            purpose=internal,
            answer=answer,
            model_settings=model_settings,
        )

    # The forms to try, in order: native tool calls (the only one when the user chose
    # native mode), JSON under the provider's schema enforcement, then JSON or text
    # described in the prompt only.
    forms: list[tuple[str, Callable[[], ModelCall]]] = []
    native_only = mode == "native" and not auto
    if mode == "native":
        forms.append(("native", partial(call, "native")))
        mode = "json"
    if not native_only:
        if mode == "json" and capabilities(model).structured_output is not False:
            forms.append(("json", partial(call, "json")))
        forms.append((mode, partial(call, mode, constrained=False)))
    index, outcome = yield from first_accepted([make for _, make in forms])
    return {**outcome.update, "messages": [outcome.reply], "tool_mode": forms[index][0]}


def interpret(mode: str, reply: AIMessage) -> ParsedReply:
    """Read one reply in the run's tool mode; the other grammar is tried as a fallback."""
    text = content_text(reply.content)
    if mode == "native":
        if reply.tool_calls:
            return ParsedReply("action")
        return ParsedReply("final", answer=final_answer_of(text))
    primary, secondary = (
        (parse_json_text, parse_react_text)
        if mode == "json"
        else (parse_react_text, parse_json_text)
    )
    step = primary(text)
    return step if step.kind != "none" else secondary(text)


def coerce_args(registry: ToolRegistry, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    """Keyword arguments from a parsed action input: a bare string becomes the value of
    the tool's only (or only required) parameter, or is decoded as a JSON object. An
    optional parameter given as ``null`` is left out (a strict schema makes every
    parameter required and the optional ones nullable), so the tool's default applies.

    A loop that makes tool calls itself (from a plan or a critique it parsed) builds each
    ``ToolCall``'s ``args`` with it.

    Args:
        registry: The run's tools (``step.run.tools``).
        name: The tool called.
        args: Its input as the model wrote it: the arguments, or one text.

    Returns:
        The call's keyword arguments (``{"input": text}`` when the tool is unknown and the
        text is no JSON object).
    """
    tool = registry.get(name)
    schema = registry.parameters(name) if tool is not None else {}
    if isinstance(args, dict):
        required = set(schema.get("required") or [])
        return {key: value for key, value in args.items() if value is not None or key in required}
    fields = list(schema.get("properties", {}))
    if tool is not None and not fields:
        return {}
    if len(fields) == 1:
        return {fields[0]: args}
    try:
        decoded = json.loads(args)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        return decoded
    required = schema.get("required", [])
    if len(required) == 1:
        return {required[0]: args}
    return {"input": args}


def with_action(reply: AIMessage, step: ParsedReply, registry: ToolRegistry) -> AIMessage:
    """The model's text reply with its parsed action attached as a tool call; its content
    is the step's thought (what a chat view shows next to the call), the text the model
    wrote is kept in ``additional_kwargs[RAW_REPLY]`` (what the model reads back)."""
    call = ToolCall(
        name=step.action,
        args=coerce_args(registry, step.action, step.action_input),
        id=f"call_{uuid.uuid4().hex[:16]}",
    )
    return shown_as(reply, step.thought).model_copy(update={"tool_calls": [call]})


def without_tool_calls(message: AIMessage) -> AIMessage:
    """A reply with its tool calls removed (a final answer must not leave calls open)."""
    if not message.tool_calls and "tool_calls" not in message.additional_kwargs:
        return message
    extra = {k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
    return message.model_copy(
        update={"tool_calls": [], "invalid_tool_calls": [], "additional_kwargs": extra}
    )


Outcome = Literal["tools", "final", "retry", "give_up"]


@dataclass(frozen=True)
class Reading:
    """What one model reply means for the loop."""

    outcome: Outcome
    message: AIMessage
    answer: str = ""


def read_reply(
    mode: str, reply: AIMessage, registry: ToolRegistry, *, require: str | None = None
) -> Reading:
    """Classify a reply: tool calls to run, a final answer, or an unreadable reply."""
    if mode == "none":
        return Reading("final", reply, content_text(reply.content).strip())
    if mode == "native" and reply.tool_calls:
        return Reading("tools", reply)
    step = interpret(mode, reply)
    if step.kind == "action" and mode != "native":
        return Reading("tools", with_action(reply, step, registry))
    if step.kind == "none" and not registry and not require:
        # No tool of the loop's own: a reply in no tool grammar is plain chat (a
        # middleware that offers tools of its own made the run use a tool mode).
        return Reading("final", without_tool_calls(reply), content_text(reply.content).strip())
    if step.kind == "final" and not (require and mode != "native"):
        return Reading("final", without_tool_calls(reply), step.answer)
    return Reading("retry", reply, content_text(reply.content).strip())
