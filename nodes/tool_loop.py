"""The tool loop every tool-using loop shares: mode, model turn, parsing, review, tools.

A run's tool mode is resolved once (``resolve_mode``). Each model turn
(``model_turn``) calls the model the mode's way and falls back in ``auto`` mode when
the provider rejects tools (native → json) or JSON schemas (json → text). In json and
text modes the parsed action is attached to the model's reply as an ordinary tool call
(``read_reply``), so the same ``ToolNode`` path runs it in every mode and the transcript
always holds ``AIMessage.tool_calls`` and ``ToolMessage``s; ``model_view`` renders that
transcript back into the mode's text form (observations as user messages) for the model.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import re
import selectors
import threading
import uuid
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel

from loopgraphs import prompts
from loopgraphs.models import capabilities, default_tool_choice, writes_thoughts
from loopgraphs.nodes.call_tool import (
    ToolGuard,
    fence_output,
    guarded_options,
    make_tool_node,
    run_calls,
    tool_threads,
    unfence,
)
from loopgraphs.nodes.errors import is_form_rejection
from loopgraphs.nodes.generate import RAW_REPLY, as_written, call_model, shown_as, system_message
from loopgraphs.nodes.parsing.react import Step, parse_json_text, parse_react_text
from loopgraphs.nodes.parsing.text import content_text, final_answer_of
from loopgraphs.nodes.review import ask_reviewer, flagged_calls, reviewed_call
from loopgraphs.nodes.runner import Call, ModelCall, failed_calls, mark_sent
from loopgraphs.nodes.settings import LoopSettings, load_context
from loopgraphs.state import counted, scratch_of
from loopgraphs.toolkits.registry import ToolRegistry
from loopgraphs.toolkits.search import STOP_WORDS


def resolve_mode(settings: LoopSettings) -> str:
    """The tool mode a run starts in; ``auto`` reads the model's profile."""
    if not settings.tools:
        return "none"
    if settings.tool_mode != "auto":
        return settings.tool_mode
    caps = capabilities(settings.chat_model)
    if caps.tool_calling is False:
        return "json" if caps.structured_output is not False else "text"
    return "native"


def run_registry(settings: LoopSettings, state: Mapping[str, Any]) -> ToolRegistry:
    """The tools of this run, narrowed by tool selection when it ran."""
    selected = scratch_of(state).get("selected_tools")
    return _subset(settings.tools, tuple(selected)) if selected else settings.tools


@lru_cache(maxsize=64)
def _subset(registry: ToolRegistry, names: tuple[str, ...]) -> ToolRegistry:
    """One registry per selection from a tool set (what is made per registry, such as the
    model with the tools bound, is then made once)."""
    return registry.subset(names)


@lru_cache(maxsize=64)
def react_instructions(registry: ToolRegistry, mode: str, *, thoughts: bool = True) -> str:
    """The ReAct loop's own system instructions for one mode (stable, for prompt caching);
    ``thoughts=False`` describes json steps without the ``thought`` field. Made once per
    tool set, mode and form (a registry does not change)."""
    if mode == "none" or not registry:
        return prompts.CHAT_SYSTEM
    if mode == "native":
        return prompts.REACT_NATIVE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    if mode == "json":
        template = prompts.REACT_JSON_SYSTEM if thoughts else prompts.REACT_JSON_COMPACT_SYSTEM
    else:
        template = prompts.REACT_TEXT_SYSTEM
    return template.format(tools=registry.describe(), fence_note=prompts.FENCE_NOTE)


def action_schema(
    registry: ToolRegistry, *, require: str | None = None, thoughts: bool = True
) -> dict[str, Any]:
    """JSON schema of one step: one alternative per tool, linking ``action`` to that tool's
    arguments, plus the final answer unless a tool call is required (``require`` is
    ``"required"`` or a tool name); ``require="none"`` leaves only the final answer.
    Constrained decoding against it lets even a very small model produce only valid
    actions. ``thoughts=False`` leaves out the ``thought`` field."""

    def step(action: str, action_input: dict[str, Any]) -> dict[str, Any]:
        properties = {"action": {"const": action}, "action_input": action_input}
        if thoughts:
            properties = {"thought": {"type": "string"}, **properties}
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    schemas = [] if require == "none" else registry.schemas()
    if require and require not in ("required", "none"):
        schemas = [s for s in schemas if s["name"] == require]
    alternatives = [step(s["name"], s["parameters"]) for s in schemas]
    if not require or require == "none":
        alternatives.append(step("final_answer", {"type": "string"}))
    return {
        "name": "react_step",
        "description": "One step: call a tool, or give the final answer.",
        "schema": {"anyOf": alternatives},
    }


def required_tool(
    settings: LoopSettings, state: Mapping[str, Any], *, model_default: bool = False
) -> str | None:
    """``"required"`` or a tool name while the run must still call a tool, else None."""
    choice = settings.tool_choice
    if choice is None and model_default:
        choice = default_tool_choice(settings.chat_model)
    if choice in (None, "auto") or not settings.tools:
        return None
    start = scratch_of(state).get("transcript_start") or 0
    made = next(run_calls(state.get("messages") or [], start), None)
    return None if made is not None else choice


def model_view(messages: Sequence[AnyMessage], mode: str) -> list[BaseMessage]:
    """The transcript as a json- or text-mode model reads it: tool calls as the model's own
    text (re-written from the calls after a reviewer edited them), tool results as one
    ``Observation:`` user message per step. Native mode and plain chat read the transcript
    as it is, with each reply's own text (see ``as_written``)."""
    if mode not in ("json", "text"):
        return as_written(messages)
    view: list[BaseMessage] = []
    results: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            results.append(content_text(message.content))
            continue
        if results:
            view.append(HumanMessage(prompts.OBSERVATION.format(content="\n\n".join(results))))
            results = []
        if isinstance(message, AIMessage) and message.tool_calls:
            text = message.additional_kwargs.get(RAW_REPLY) or _action_text(
                message.tool_calls, mode
            )
            view.append(AIMessage(content=text))
        elif isinstance(message, AIMessage) and RAW_REPLY in message.additional_kwargs:
            view.append(AIMessage(content=message.additional_kwargs[RAW_REPLY]))
        else:
            view.append(message)
    if results:
        view.append(HumanMessage(prompts.OBSERVATION.format(content="\n\n".join(results))))
    return view


MAX_EXAMPLES = 1
EXAMPLE_FENCE = "example"


def example_turns(registry: ToolRegistry, question: str, mode: str) -> list[BaseMessage]:
    """The tools' worked examples as solved exchanges in the mode's own form, shown to
    json- and text-mode models before the conversation.

    At most ``MAX_EXAMPLES`` are shown (one: the closest only), ordered by how many words
    they share with the question, the closest last (ties: the first registered last): a
    small model copies what it saw last, and with more examples SmolLM2 copied an earlier
    example's answer into its call. Their results are fenced with the fixed ``EXAMPLE_FENCE``
    marker, not the run's, so that with the same question they are the same text in every
    run (a prefix the server's prompt cache keeps across the runs of a conversation).
    """
    if mode not in ("json", "text"):
        return []
    words = _words(question)
    ranked = sorted(
        enumerate(registry.examples()),
        key=lambda item: (len(words & _words(item[1][1].question)), -item[0]),
    )[-MAX_EXAMPLES:]
    turns: list[BaseMessage] = []
    for position, (name, example) in ranked:
        call = ToolCall(name=name, args=dict(example.args), id=f"example_{position}")
        result = fence_output(example.result, EXAMPLE_FENCE)
        turns += [
            HumanMessage(example.question),
            AIMessage(_action_text([call], mode)),
            HumanMessage(prompts.OBSERVATION.format(content=result)),
            AIMessage(_answer_text(example.answer, mode)),
        ]
    return turns


@lru_cache(maxsize=64)
def example_answers(registry: ToolRegistry) -> tuple[str, ...]:
    """The answers of the tools' worked examples (a reply copying one did not answer)."""
    return tuple(example.answer for _, example in registry.examples())


def _words(text: str) -> set[str]:
    """What a question is about: its words cut to five letters (so "founder" meets
    "founded") without the search tool's stop words, numbers as ``#``, capitalised words
    after the first as ``Name``, and symbols other than sentence punctuation (``*``, ``(``)."""
    features = set()
    for position, token in enumerate(re.findall(r"\w+|[^\w\s]", text)):
        if token.isdigit():
            features.add("#")
        elif token[0].isupper() and position:
            features.add("Name")
        elif token.isalnum() and token.lower() not in STOP_WORDS:
            features.add(token.lower()[:5])
        elif not token.isalnum() and token not in "?.,!;:'\"":
            features.add(token)
    return features


def _answer_text(answer: str, mode: str) -> str:
    if mode == "json":
        return json.dumps({"action": "final_answer", "action_input": answer}, ensure_ascii=False)
    return f"FINAL_ANSWER: {answer}"


def _first_question(state: Mapping[str, Any], history: Sequence[AnyMessage]) -> str:
    """The conversation's first user message: the worked examples are chosen for it and
    stay the same for the later runs on the thread, which keeps them cacheable."""
    asked = (m for m in state.get("messages", history) if isinstance(m, HumanMessage))
    first = next(asked, None)
    return content_text(first.content) if first is not None else ""


def _action_text(calls: Sequence[ToolCall], mode: str) -> str:
    if mode == "json":
        return "\n".join(
            json.dumps({"action": c["name"], "action_input": c["args"]}, ensure_ascii=False)
            for c in calls
        )
    return "\n".join(
        f"Action: {c['name']}\nAction Input: {json.dumps(c['args'], ensure_ascii=False)}"
        for c in calls
    )


def _json_reply(output: Any) -> AIMessage:
    raw = output.get("raw") if isinstance(output, dict) else output
    parsed = output.get("parsed") if isinstance(output, dict) else None
    reply = raw if isinstance(raw, AIMessage) else AIMessage(content="")
    if not content_text(reply.content).strip() and parsed is not None:
        data = parsed.model_dump() if isinstance(parsed, BaseModel) else parsed
        reply = reply.model_copy(update={"content": json.dumps(data, ensure_ascii=False)})
    return reply


_bound: dict[tuple[int, int, str | None], tuple[Any, ToolRegistry, Any]] = {}


def bound_model(model: Any, registry: ToolRegistry, require: str | None) -> Any:
    """``model.bind_tools(tools)``, made once per model, tool registry and tool choice
    (the entry holds both, so their ids stay theirs)."""
    key = (id(model), id(registry), require)
    cached = _bound.get(key)
    if cached is None or cached[0] is not model or cached[1] is not registry:
        if len(_bound) >= 256:
            _bound.clear()
        choice = {"tool_choice": require} if require else {}
        cached = _bound[key] = (model, registry, model.bind_tools(registry.tools, **choice))
    return cached[2]


def model_turn(
    settings: LoopSettings,
    state: Mapping[str, Any],
    history: Sequence[AnyMessage],
    *,
    require: str | None = None,
) -> Generator[Any, Any, dict[str, Any]]:
    """One model call in the run's tool mode, with ``auto`` mode's fallbacks. Models that
    think better without a written thought (``writes_thoughts``) get json steps without one.

    Returns the state update: the reply (as sent), ``llm_calls``, ``usage``, ``tool_mode``.
    """
    model = settings.chat_model
    registry = run_registry(settings, state)
    mode = state.get("tool_mode") or resolve_mode(settings)
    auto = settings.tool_mode == "auto"
    thoughts = writes_thoughts(model)

    def prompt(mode: str) -> list[BaseMessage]:
        system = system_message(
            settings, state, react_instructions(registry, mode, thoughts=thoughts)
        )
        if mode not in ("json", "text"):
            return [system, *as_written(history)]
        examples = example_turns(registry, _first_question(state, history), mode)
        return [system, *examples, *model_view(history, mode)]

    rejected = 0  # requests the provider refused before a mode worked
    if mode == "native":
        try:
            bound = bound_model(model, registry, None if require == "none" else require)
            reply, update = yield from call_model(bound, prompt(mode))
            return {**update, "messages": [reply], "tool_mode": mode}
        except Exception as exc:
            if not (auto and is_form_rejection(exc)):
                raise
            rejected += failed_calls(exc)
            mode = "json"
    if mode == "json" and capabilities(model).structured_output is not False:
        try:
            structured = model.with_structured_output(
                action_schema(registry, require=require, thoughts=thoughts),
                method="json_schema",
                include_raw=True,
            )
            output = yield ModelCall(structured, prompt(mode))
        except Exception as exc:
            if not is_form_rejection(exc):
                mark_sent(exc, failed_calls(exc) + rejected)
                raise
            rejected += failed_calls(exc)
        else:
            reply = _json_reply(output)
            update = counted(reply)
            update["llm_calls"] += rejected
            return {**update, "messages": [reply], "tool_mode": mode}
    try:
        reply, update = yield from call_model(model, prompt(mode))
    except Exception as exc:
        mark_sent(exc, failed_calls(exc) + rejected)
        raise
    update["llm_calls"] += rejected
    return {**update, "messages": [reply], "tool_mode": mode}


def interpret(mode: str, reply: AIMessage) -> Step:
    """Read one reply in the run's tool mode; the other grammar is tried as a fallback."""
    text = content_text(reply.content)
    if mode == "native":
        if reply.tool_calls:
            return Step("action")
        return Step("final", answer=final_answer_of(text))
    primary, secondary = (
        (parse_json_text, parse_react_text)
        if mode == "json"
        else (parse_react_text, parse_json_text)
    )
    step = primary(text)
    return step if step.kind != "none" else secondary(text)


def coerce_args(registry: ToolRegistry, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    """Keyword arguments from a parsed action input: a bare string becomes the value of
    the tool's only (or only required) parameter, or is decoded as a JSON object."""
    if isinstance(args, dict):
        return args
    tool = registry.get(name)
    schema = registry.parameters(name) if tool is not None else {}
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


def with_action(reply: AIMessage, step: Step, registry: ToolRegistry) -> AIMessage:
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
    if step.kind == "final" and not (require and mode != "native"):
        return Reading("final", without_tool_calls(reply), step.answer)
    return Reading("retry", reply, content_text(reply.content).strip())


_MARKER = re.compile(r"<<(?:end_)?tool_output[^>]*>>")


_NOT_KEPT = re.compile(r"[^\w+\-*/^%().]|_")  # \w is a letter, digit or underscore


def _squashed(text: str) -> str:
    """The text lower-cased, with only its letters, digits and ``+-*/^%().`` kept."""
    return _NOT_KEPT.sub("", text.lower())


def _expression(text: str) -> bool:
    return any(ch.isdigit() for ch in text) and any(op in text for op in "+-*/^%")


def _held(observed: str, call: ToolCall) -> str:
    """What a tool result says (squashed) without its quotes of the call's own arguments
    (a search echoing its query: "No results for 'Ada Quinlan'.")."""
    for value in map(str, call["args"].values()):
        for left, right in ("''", '""', "\u2018\u2019", "\u201c\u201d"):
            observed = observed.replace(f"{left}{value}{right}", " ")
    return _squashed(observed)


def _last_call(
    messages: Sequence[AnyMessage], start: int
) -> tuple[ToolCall | None, ToolMessage | None]:
    """The run's last tool call that succeeded, and its result (None, None when none did):
    a repeated call answered from history, say, is an error and is passed over."""
    calls: dict[str, ToolCall] = {}
    found: tuple[ToolCall | None, ToolMessage | None] = (None, None)
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            calls.update((call["id"] or "", call) for call in message.tool_calls)
        elif isinstance(message, ToolMessage) and message.status != "error":
            call = calls.get(message.tool_call_id)
            if call is not None:
                found = (call, message)
    return found


def restated_answer(
    answer: str,
    messages: Sequence[AnyMessage],
    start: int,
    fence: str,
    *,
    examples: Sequence[str] = (),
) -> str:
    """The final answer, or the last tool result when the answer merely restates it (it
    is that result, markers included, or is empty, the run's fence marker or the
    ``final_answer`` keyword) or restates the expression the tool was asked to compute (a
    small model answering "17 * 19 + 4" after the calculator said 323) or copies one of
    the worked ``examples``' answers that the result does not hold (beyond quoting the
    call's own arguments, as in "No results for 'Ada Quinlan'.")."""
    last_call, result = _last_call(messages, start)
    if last_call is None or result is None:
        return answer
    observed = unfence(content_text(result.content), fence)
    asked = {_squashed(str(v)) for v in last_call["args"].values() if _expression(str(v))}
    unmarked = _MARKER.sub("", unfence(answer, fence).replace(fence or "\0", ""))
    said = _squashed(unmarked).removeprefix("finalanswer")
    copied = said in {_squashed(e) for e in examples} and said not in _held(observed, last_call)
    if not said or said == _squashed(observed) or said in asked or copied:
        return observed or answer
    return answer


def last_result(state: Mapping[str, Any]) -> str:
    """The run's last successful tool result, without its fence markers ("" if none)."""
    messages = state.get("messages") or []
    scratch = scratch_of(state)
    for message in reversed(messages[scratch.get("transcript_start") or 0 :]):
        if isinstance(message, ToolMessage) and message.status != "error":
            return unfence(content_text(message.content), scratch.get("fence", ""))
    return ""


def check_history(messages: Sequence[AnyMessage]) -> None:
    """Raise ``ValueError`` when an assistant message's tool calls have no results.

    Providers reject such a history; the caller must add a ``ToolMessage`` per call (or
    drop the calls) before starting a run.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    open_calls = [
        f"{call['name']} (id {call['id']})"
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["id"] not in answered
    ]
    if open_calls:
        raise ValueError(
            "the chat history has tool calls without a ToolMessage result: "
            f"{', '.join(open_calls)}. Add a ToolMessage for each call (or remove the "
            "calls) before invoking, or resume the interrupted run with Command(resume=...)."
        )


def tool_budget_spent(settings: LoopSettings, state: Mapping[str, Any]) -> bool:
    """Whether the run has made all the tool calls ``max_tool_calls`` allows."""
    if settings.max_tool_calls is None:
        return False
    start = scratch_of(state).get("transcript_start") or 0
    made = sum(1 for _ in run_calls(state.get("messages") or [], start))
    return made >= settings.max_tool_calls


def review_node(settings: LoopSettings) -> Callable[..., dict[str, Any]]:
    """The node that pauses for human review of the last reply's flagged tool calls."""

    def review(state: dict[str, Any], runtime: Runtime[Any]) -> dict[str, Any]:
        run = settings.for_run(runtime)
        about = {
            tool.name: (tool.description.splitlines() or ["unknown tool"])[0] for tool in run.tools
        }
        reply = state["messages"][-1]
        reviews = ask_reviewer(run.review, reply, about)
        update: dict[str, Any] = {"scratch": {"reviews": reviews}}
        edited = with_edits(reply, reviews)
        if edited is not reply:
            update["messages"] = [edited]
        return update

    return review


def with_edits(reply: AIMessage, reviews: Mapping[str, Mapping[str, Any]]) -> AIMessage:
    """The reply with the reviewer's edits written into its tool calls (ids kept, so the
    stored reply is replaced): the transcript, and the model on its next turn, show the
    call that ran. A json- or text-mode reply then reads back as its edited action."""
    calls = [reviewed_call(call, reviews.get(call["id"] or "")) for call in reply.tool_calls]
    if calls == reply.tool_calls:
        return reply
    extra = {k: v for k, v in reply.additional_kwargs.items() if k != RAW_REPLY}
    return reply.model_copy(update={"tool_calls": calls, "additional_kwargs": extra})


def needs_review(settings: LoopSettings, state: Mapping[str, Any]) -> bool:
    """Whether the last reply has tool calls that pause for review."""
    messages = state.get("messages") or []
    return bool(messages) and bool(flagged_calls(settings.review, messages[-1]))


class ToolStep:
    """Runs tool calls through a ``ToolNode`` for the run's tools, guarded by ``ToolGuard``.

    ``graph_node()`` is the ``call_tool`` node of a loop whose transcript holds the calls
    (ReAct); ``run_calls()`` runs calls a loop keeps outside its transcript (Self-Ask's
    text-mode follow-ups, CRITIC's claim checks) from inside one of its nodes, with the
    node's config, so interrupts, injection, callbacks and the stream writer still work.
    """

    def __init__(self, settings: LoopSettings) -> None:
        self.settings = settings
        self._nodes: dict[tuple[int, ...], ToolNode] = {}

    def guard_for(self, run: LoopSettings) -> ToolGuard:
        """The checks and limits around each of a run's tool calls."""
        return ToolGuard(
            registry=run.tools,
            timeout=run.tool_timeout,
            max_output_chars=run.max_tool_output_chars,
            loop_break=run.loop_break,
            max_tool_calls=run.max_tool_calls,
        )

    def node_for(self, run: LoopSettings) -> ToolNode:
        """The ``ToolNode`` for a run's tools (built once per set of tools)."""
        key = tuple(id(tool) for tool in run.tools)
        if key not in self._nodes:
            self._nodes[key] = make_tool_node(self.guard_for(run))
        return self._nodes[key]

    def graph_node(self, name: str = "call_tool") -> ToolNode:
        """The node running the last reply's tool calls: LangGraph's ``ToolNode`` itself,
        which also ends the run after a successful ``return_direct`` tool."""
        return RunToolNode(self, name)

    def run_calls(
        self,
        run: LoopSettings,
        state: Mapping[str, Any],
        calls: Sequence[ToolCall],
        log: Sequence[AnyMessage] = (),
    ) -> Generator[Call, Any, tuple[list[ToolMessage], dict[str, Any]]]:
        """Review (when configured) and run ``calls``; ``log`` holds the run's earlier
        calls and results (for the loop-break and ``max_tool_calls``).

        Returns:
            One ``ToolMessage`` per call, in order, and the other state updates that
            tools returned in ``Command``s (a tool that ended the run sets ``answer`` and
            ``status="completed"``).
        """
        request = AIMessage(content="", tool_calls=list(calls))
        about = {tool.name: (tool.description.splitlines() or [""])[0] for tool in run.tools}
        reviews = ask_reviewer(run.review, request, about) if run.review else {}
        scratch = {**scratch_of(state), "transcript_start": 0, "reviews": reviews}
        view = {**state, "messages": [*log, request], "scratch": scratch}
        output = yield ToolsCall(self.node_for(run), view, run)
        results: dict[str, ToolMessage] = {}
        extra: dict[str, Any] = {}
        for update in output if isinstance(output, list) else [output]:
            values = update.update if isinstance(update, Command) else update
            for key, value in (values or {}).items():
                if key != "messages":
                    extra[key] = value
                    continue
                for message in value:
                    if isinstance(message, ToolMessage):
                        results[message.tool_call_id] = message
        if scratch_of(extra).get("tool_ended"):
            del extra["scratch"]
            extra["status"] = "completed"
        ordered = [
            results.get(call["id"] or "")
            or ToolMessage(
                "Error: the tool returned no result.",
                tool_call_id=call["id"] or "",
                name=call["name"],
                status="error",
            )
            for call in calls
        ]
        return ordered, extra


class RunToolNode(ToolNode):
    """The ``call_tool`` node: a ``ToolNode`` for the factory's tools (so the graph holds
    LangGraph's own node, one runnable layer), which hands a run whose context brings
    other tools to the ``ToolNode`` for those, runs tool steps under ``invoke`` as
    ``invoke_tools`` does, ends the run after a successful ``return_direct`` tool, and
    notes a human message that a tool added as part of the run."""

    def __init__(self, step: ToolStep, name: str) -> None:
        guard = step.guard_for(step.settings)
        super().__init__(guard.registry.tools, name=name, **guarded_options(guard))
        self.step = step

    def _func(self, input: Any, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        run = self.step.settings.for_run(runtime)
        if run.tools is not self.step.settings.tools:
            output = invoke_tools(self.step.node_for(run), run, input, config)
        elif (loop := sync_step_loop(run, input)) is not None:
            output = run_step(loop, super()._afunc(input, config, runtime))
        elif _calls_async_only(run, input):
            output = invoke_tools(self.step.node_for(run), run, input, config)
        else:
            output = super()._func(input, config, runtime)
        return _noted_human(_return_direct(run, input, output))

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        await load_context(runtime)
        run = self.step.settings.for_run(runtime)
        if run.tools is self.step.settings.tools:
            output = await super()._afunc(input, config, runtime)
        else:
            output = await self.step.node_for(run).ainvoke(input, config)
        return _noted_human(_return_direct(run, input, output))


def _async_only(tool: Any) -> bool:
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def _calls_async_only(run: LoopSettings, state: Mapping[str, Any]) -> bool:
    messages = state.get("messages") or []
    calls = messages[-1].tool_calls if messages and isinstance(messages[-1], AIMessage) else []
    return any(_async_only(run.tools.get(call["name"])) for call in calls)


_thread_loops = threading.local()


def _forget_thread_loops() -> None:
    """In a forked child: the parent's event loops (and their threads) are not its own."""
    global _thread_loops
    _thread_loops = threading.local()


if hasattr(os, "register_at_fork"):  # POSIX only; there is no fork elsewhere
    os.register_at_fork(after_in_child=_forget_thread_loops)


def _sync_function(tool: Any) -> bool:
    """Whether a tool runs a synchronous function also when awaited (LangChain then runs it
    in a worker thread): it has no async implementation of its own."""
    if tool is None:  # an unknown tool: the guard answers without running anything
        return True
    runs_sync = type(tool)._arun in (BaseTool._arun, StructuredTool._arun, Tool._arun)
    return runs_sync and getattr(tool, "coroutine", None) is None


def sync_step_loop(run: LoopSettings, state: Mapping[str, Any]) -> asyncio.AbstractEventLoop | None:
    """This thread's event loop for a tool step under ``invoke`` whose tools are all
    synchronous functions, or None (a tool of the step has an async implementation, which
    may be bound to another event loop; or an event loop already runs in this thread, as
    in a notebook).

    Run there, the step takes ``ToolNode``'s async path, as under ``ainvoke``: each sync
    tool runs in a worker thread and the guard's timeout is asyncio's. ``ToolNode``'s sync
    path starts a thread pool per step, and a timeout would need one more thread per call.
    """
    messages = state.get("messages") or []
    calls = messages[-1].tool_calls if messages and isinstance(messages[-1], AIMessage) else []
    if not all(_sync_function(run.tools.get(call["name"])) for call in calls):
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop: asyncio.AbstractEventLoop | None = getattr(_thread_loops, "loop", None)
        if loop is None or loop.is_closed():
            loop = _thread_loops.loop = _new_loop()
        return loop
    return None


def _new_loop() -> asyncio.AbstractEventLoop:
    """An event loop for tool steps, with a pool of tool threads of its own (closing the
    loop shuts its pool down).

    Its watch list lives in this process (``poll``, not ``epoll``): an epoll set is shared
    with forked children, and a child dropping its copy of the loop would take the
    parent's wake-up socket out of it, so the parent's loop would no longer hear its
    worker threads."""
    if hasattr(selectors, "PollSelector"):
        loop: asyncio.AbstractEventLoop = asyncio.SelectorEventLoop(selectors.PollSelector())
    else:
        loop = asyncio.new_event_loop()
    loop.set_default_executor(tool_threads())
    return loop


def run_step(loop: asyncio.AbstractEventLoop, step: Coroutine[Any, Any, Any]) -> Any:
    """Run a tool step on this thread's event loop (see ``sync_step_loop``). When it stops
    early (a tool's ``interrupt()``), the step's other calls are still run to their end
    before it returns, as with ``ToolNode``'s threads, so that nothing of the step is left
    to finish later, in another step's time."""
    try:
        return loop.run_until_complete(step)
    except Exception:
        if left := asyncio.all_tasks(loop):
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        raise


def invoke_tools(
    node: ToolNode, run: LoopSettings, state: Mapping[str, Any], config: RunnableConfig
) -> Any:
    """Run a tool node under ``invoke``: a step of synchronous tools on this thread's event
    loop (see ``sync_step_loop``); calls of async-only tools on an event loop of their own
    in a worker thread (with the caller's context, so interrupts and callbacks still reach
    the graph); any other step on ``ToolNode``'s threads."""
    loop = sync_step_loop(run, state)
    if loop is not None:
        return run_step(loop, node.ainvoke(state, config))
    if not _calls_async_only(run, state):
        return node.invoke(state, config)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, node.ainvoke(state, config)).result()


@dataclass(frozen=True)
class ToolsCall(Call):
    """A tool node run on a prepared state from inside another node."""

    run: LoopSettings | None = None

    def invoke(self, config: RunnableConfig) -> Any:
        assert self.run is not None
        return invoke_tools(self.runnable, self.run, self.input, config)  # type: ignore[arg-type]


@lru_cache(maxsize=64)
def _direct_tools(registry: ToolRegistry) -> frozenset[str]:
    """The names of a tool set's ``return_direct`` tools (a registry does not change)."""
    return frozenset(tool.name for tool in registry if tool.return_direct)


def _return_direct(run: LoopSettings, state: Mapping[str, Any], output: Any) -> Any:
    direct = _direct_tools(run.tools)
    if not direct:
        return output
    updates = output if isinstance(output, list) else [output]
    for update in updates:
        messages = update.get("messages", []) if isinstance(update, dict) else []
        for message in messages:
            if getattr(message, "name", None) in direct and message.status != "error":
                answer = unfence(content_text(message.content), scratch_of(state).get("fence", ""))
                finish = {"scratch": {"tool_ended": True}, "answer": answer}
                if isinstance(output, dict):
                    return {**output, **finish}
                return [*updates, Command(update=finish)]
    return output


def _noted_human(output: Any) -> Any:
    """A tool step's output, noting a human message that a tool added (in a ``Command``)
    as taken in by the run (``scratch.seen``), so that the next step continues the run
    instead of taking the message for new input (see ``loopgraphs.state.starts_run``)."""
    updates = output if isinstance(output, list) else [output]
    seen = None
    for update in updates:
        values = update.update if isinstance(update, Command) else update
        for message in values.get("messages") or [] if isinstance(values, dict) else []:
            if isinstance(message, HumanMessage):
                # LangGraph gives a message without an id one in place when it stores it;
                # giving it now lets the run know which one it is.
                message.id = message.id or str(uuid.uuid4())
                seen = message.id
    if seen is None:
        return output
    note = {"scratch": {"seen": seen}}
    return {**output, **note} if isinstance(output, dict) else [*updates, Command(update=note)]
