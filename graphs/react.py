"""ReAct: reason, act with a tool, observe, repeat until a final answer.

Graph: ``prepare → [select_tools] → generate → parse → call_tool → generate ...``, with
``final_answer`` asking once for an answer when the budget is spent and an optional
``synthesize`` node writing the user-facing answer as a separate streamed call.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, RetryPolicy, interrupt
from pydantic import BaseModel, Field, create_model

from loopgraphs import prompts
from loopgraphs.context import LoopContext
from loopgraphs.models import capabilities
from loopgraphs.nodes.call_tool import (
    DEFAULT_MAX_OUTPUT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    Observation,
    ToolRequest,
    history_update,
    new_fence,
    run_tools,
)
from loopgraphs.nodes.errors import is_permanent_rejection
from loopgraphs.nodes.generate import best_effort_answer, call_model, guard
from loopgraphs.nodes.parse import (
    Step,
    content_text,
    final_answer_of,
    parse_json_text,
    parse_react_text,
)
from loopgraphs.nodes.runner import Logic, ModelCall, as_node
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolsArg,
    check_flag,
    compile_loop,
    make_settings,
)
from loopgraphs.nodes.structured import structured_call
from loopgraphs.state import InputState, ReActState, counted, start_run
from loopgraphs.toolkits.registry import ToolRegistry

TOOL_SELECTION_THRESHOLD = 12
TOOL_SELECTION_MAX = 6
SYNTHESIS_TOOL_CHARS = 2000
STEPS_TO_FINISH = 4
DECISION_TYPES = ("approve", "edit", "reject")


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


def run_registry(settings: LoopSettings, state: dict[str, Any]) -> ToolRegistry:
    """The tools of this run, narrowed by tool selection when it ran."""
    selected = state.get("selected_tools")
    return settings.tools.subset(selected) if selected else settings.tools


def system_prompt(settings: LoopSettings, registry: ToolRegistry, mode: str) -> SystemMessage:
    """The stable system prompt of one mode (first in every call, for prompt caching)."""
    if mode == "none" or not registry:
        text = prompts.CHAT_SYSTEM
    elif mode == "native":
        text = prompts.REACT_NATIVE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    else:
        template = prompts.REACT_JSON_SYSTEM if mode == "json" else prompts.REACT_TEXT_SYSTEM
        text = template.format(tools=registry.describe(), fence_note=prompts.FENCE_NOTE)
    if settings.system_prompt:
        text = f"{settings.system_prompt}\n\n{text}"
    return SystemMessage(text)


def action_schema(registry: ToolRegistry) -> dict[str, Any]:
    """JSON schema of one ReAct step: one alternative per tool, linking ``action`` to that
    tool's arguments, plus the final answer. Constrained decoding against it lets even a
    very small model produce only valid actions."""
    thought = {"type": "string"}

    def step(action: str, action_input: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "thought": thought,
                "action": {"const": action},
                "action_input": action_input,
            },
            "required": ["thought", "action", "action_input"],
            "additionalProperties": False,
        }

    tools = [step(schema["name"], schema["parameters"]) for schema in registry.schemas()]
    return {
        "name": "react_step",
        "description": "One step: call a tool, or give the final answer.",
        "schema": {"anyOf": [*tools, step("final_answer", {"type": "string"})]},
    }


def _rejected(exc: BaseException) -> bool:
    return isinstance(exc, NotImplementedError) or is_permanent_rejection(exc)


def _json_reply(output: Any) -> AIMessage:
    raw = output.get("raw") if isinstance(output, dict) else output
    parsed = output.get("parsed") if isinstance(output, dict) else None
    reply = raw if isinstance(raw, AIMessage) else AIMessage(content="")
    if not content_text(reply.content).strip() and parsed is not None:
        data = parsed.model_dump() if isinstance(parsed, BaseModel) else parsed
        reply = reply.model_copy(update={"content": json.dumps(data, ensure_ascii=False)})
    return reply


def react_turn(
    settings: LoopSettings, state: dict[str, Any], history: Sequence[AnyMessage]
) -> Generator[Any, Any, dict[str, Any]]:
    """One model call of the loop in the run's tool mode, falling back in ``auto`` mode
    when the provider rejects tools (native → json) or JSON schemas (json → text)."""
    model = settings.chat_model
    registry = run_registry(settings, state)
    mode = state.get("tool_mode") or resolve_mode(settings)
    auto = settings.tool_mode == "auto"
    if mode == "native":
        try:
            reply, update = yield from call_model(
                model.bind_tools(registry.tools),
                [system_prompt(settings, registry, mode), *history],
            )
            return {**update, "messages": [reply], "tool_mode": mode}
        except Exception as exc:
            if not (auto and _rejected(exc)):
                raise
            mode = "json"
    if mode == "json" and capabilities(model).structured_output is not False:
        try:
            structured = model.with_structured_output(
                action_schema(registry), method="json_schema", include_raw=True
            )
            output = yield ModelCall(
                structured, [system_prompt(settings, registry, mode), *history]
            )
        except Exception as exc:
            if not _rejected(exc):
                raise
        else:
            reply = _json_reply(output)
            return {**counted(reply), "messages": [reply], "tool_mode": mode}
    reply, update = yield from call_model(
        model, [system_prompt(settings, registry, mode), *history]
    )
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


def review_requests(
    settings: LoopSettings, requests: list[ToolRequest], registry: ToolRegistry
) -> tuple[list[ToolRequest], dict[int, str]]:
    """Pause for human approval of flagged calls (langchain's human-in-the-loop format).

    Returns the requests to run (edited where the reviewer edited them) and, by position,
    the messages of rejected calls.
    """
    flagged = [i for i, request in enumerate(requests) if settings.needs_review(request.name)]
    if not flagged:
        return requests, {}
    request = {
        "action_requests": [
            {
                "name": requests[i].name,
                "args": requests[i].args,
                "description": _describe_call(requests[i], registry),
            }
            for i in flagged
        ],
        "review_configs": [
            {"action_name": requests[i].name, "allowed_decisions": list(DECISION_TYPES)}
            for i in flagged
        ],
    }
    problem = ""
    while True:
        payload = interrupt({**request, "error": problem} if problem else request)
        decisions: Any = payload.get("decisions") if isinstance(payload, dict) else None
        problem = decision_problem(decisions, len(flagged))
        if not problem:
            break
    reviewed = list(requests)
    rejected: dict[int, str] = {}
    for index, decision in zip(flagged, decisions, strict=True):
        kind = decision.get("type")
        if kind == "edit":
            edited = decision.get("edited_action") or {}
            reviewed[index] = ToolRequest(
                name=edited.get("name", requests[index].name),
                args=edited.get("args", requests[index].args),
                id=requests[index].id,
            )
        elif kind == "reject":
            rejected[index] = decision.get("message") or "The user rejected this tool call."
    return reviewed, rejected


def decision_problem(decisions: Any, expected: int) -> str:
    """What is wrong with a resume value, or an empty string when it is valid."""
    if not isinstance(decisions, list) or len(decisions) != expected:
        count = len(decisions) if isinstance(decisions, list) else 0
        return (
            "resume with {'decisions': [...]} holding one decision per tool call: "
            f"expected {expected}, got {count}"
        )
    for decision in decisions:
        kind = decision.get("type") if isinstance(decision, dict) else None
        if kind not in DECISION_TYPES:
            return f"decision type must be one of {', '.join(DECISION_TYPES)}; got {kind!r}"
        if kind == "edit" and not isinstance(decision.get("edited_action"), dict):
            return "an edit decision needs 'edited_action': {'name': ..., 'args': {...}}"
    return ""


def _describe_call(request: ToolRequest, registry: ToolRegistry) -> str:
    tool = registry.get(request.name)
    about = tool.description.splitlines()[0] if tool and tool.description else "unknown tool"
    args = json.dumps(request.args, ensure_ascii=False, default=str)
    return f"Tool call {request.name}({args}): {about}"


def execute_requests(
    settings: LoopSettings,
    state: dict[str, Any],
    requests: list[ToolRequest],
) -> Generator[Any, Any, tuple[list[Observation], dict[str, str]]]:
    """Review (if configured) and run tool requests; return observations in order."""
    registry = run_registry(settings, state)
    reviewed, rejected = review_requests(settings, requests, registry)
    runnable = [request for i, request in enumerate(reviewed) if i not in rejected]
    ran = yield from run_tools(
        runnable,
        registry,
        history=state.get("tool_history") or {},
        fence=state.get("fence") or new_fence(),
        max_output_chars=settings.max_tool_output_chars,
        timeout=settings.tool_timeout,
    )
    results = iter(ran)
    ordered = [
        Observation(request, f"Rejected by the user: {rejected[i]}", ok=False, ran=False)
        if i in rejected
        else next(results)
        for i, request in enumerate(reviewed)
    ]
    return ordered, history_update(ordered)


def build_react(
    settings: LoopSettings, *, synthesize_answer: bool = False
) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled ReAct graph for ``settings`` (reused inside other loops)."""

    def prepare(state: ReActState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
        run = settings.for_run(runtime)
        reset: dict[str, Any] = {
            **start_run(state, new_fence()),
            "tool_history": Overwrite({}),
            "iterations": 0,
            "pending": [],
            "selected_tools": [],
            "reformat": False,
            "tool_mode": resolve_mode(run),
            "transcript_start": len(state.get("messages", [])),
        }
        return reset

    def select_tools(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        names = run.tools.names
        allowed: Any = Literal[tuple(names)]
        choice: type[BaseModel] = create_model(
            "ToolSelection",
            tools=(list[allowed], Field(description="names of the tools to use")),
        )
        request = content_text(state["messages"][-1].content)
        prompt = prompts.SELECT_TOOLS.format(
            limit=TOOL_SELECTION_MAX, catalog=run.tools.catalog(), request=request
        )
        result = yield from structured_call(
            run.chat_model, [HumanMessage(prompt)], choice, max_calls=2
        )
        chosen = [name for name in dict.fromkeys(getattr(result.value, "tools", []) or [])]
        return {**result.state_update(), "selected_tools": chosen[:TOOL_SELECTION_MAX]}

    def generate(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        update = yield from react_turn(run, state, state["messages"])
        return {**update, "iterations": state.get("iterations", 0) + 1}

    def parse(state: ReActState, runtime: Runtime[Any]) -> dict[str, Any]:
        reply = state["messages"][-1]
        mode = state.get("tool_mode", "none")
        if not isinstance(reply, AIMessage):
            return {"status": "error", "error": "the last message is not a model reply"}
        if mode == "none":
            return {"status": "completed", "answer": content_text(reply.content).strip()}
        step = interpret(mode, reply)
        if mode == "native" and reply.tool_calls:
            pending = [
                {"id": c.get("id") or "", "name": c["name"], "args": c["args"]}
                for c in reply.tool_calls
            ]
            return {"pending": pending, "reformat": False}
        if step.kind == "final":
            return {"status": "completed", "answer": step.answer, "reformat": False}
        if step.kind == "action":
            call_id = f"call_{state.get('iterations', 0)}"
            return {
                "pending": [{"id": call_id, "name": step.action, "args": step.action_input}],
                "reformat": False,
            }
        if mode == "json" and not state.get("reformat"):
            return {"messages": [HumanMessage(prompts.REFORMAT_ACTION)], "reformat": True}
        if mode == "json" and settings.for_run(runtime).tool_mode == "auto":
            return {"tool_mode": "text", "reformat": False}
        return {"status": "completed", "answer": content_text(reply.content).strip()}

    def call_tool(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        requests = [
            ToolRequest(p["name"], p["args"], p.get("id", "")) for p in state.get("pending", [])
        ]
        observations, history = yield from execute_requests(run, state, requests)
        messages: list[AnyMessage]
        if state.get("tool_mode") == "native":
            messages = [
                ToolMessage(
                    content=obs.content,
                    tool_call_id=obs.request.id,
                    name=obs.request.name,
                    status="success" if obs.ok else "error",
                )
                for obs in observations
            ]
        else:
            text = "\n\n".join(obs.content for obs in observations)
            messages = [HumanMessage(prompts.OBSERVATION.format(content=text))]
        return {"messages": messages, "pending": [], "tool_history": history}

    def final_answer(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        ask = HumanMessage(prompts.FORCE_FINAL_ANSWER)
        update = yield from react_turn(run, state, [*state["messages"], ask])
        reply = update["messages"][0]
        step = interpret(update.get("tool_mode", "none"), reply)
        answer = step.answer if step.kind == "final" else ""
        if not answer and step.kind == "none":
            answer = final_answer_of(content_text(reply.content))
        if not answer:
            answer = best_effort_answer(state["messages"]) or answer
        return {
            **update,
            "messages": [ask, reply],
            "answer": answer,
            "status": "max_iterations",
        }

    def synthesize(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        start = state.get("transcript_start", 0)
        trace = synthesis_trace(state["messages"][start:])
        question = content_text(state["messages"][start - 1].content) if start else ""
        prompt = [
            SystemMessage(prompts.SYNTHESIZE_SYSTEM),
            HumanMessage(
                prompts.SYNTHESIZE_USER.format(
                    question=question, trace=trace, draft=state.get("answer", "")
                )
            ),
        ]
        reply, update = yield from call_model(run.chat_model, prompt)
        text = content_text(reply.content).strip()
        return {**update, "answer": text or state.get("answer", "")}

    def route_start(
        state: dict[str, Any], runtime: Runtime[Any]
    ) -> Literal["select_tools", "generate", "__end__"]:
        if state.get("status") == "error":
            return "__end__"
        if len(settings.for_run(runtime).tools) > TOOL_SELECTION_THRESHOLD:
            return "select_tools"
        return "generate"

    def route_generated(state: dict[str, Any]) -> Literal["parse", "__end__"]:
        return "__end__" if state.get("status") == "error" else "parse"

    def route_parsed(
        state: dict[str, Any], runtime: Runtime[Any]
    ) -> Literal["call_tool", "generate", "final_answer", "synthesize", "__end__"]:
        if state.get("status") == "completed":
            return (
                "synthesize" if synthesize_answer and state.get("iterations", 0) > 1 else "__end__"
            )
        if state.get("status") == "error":
            return "__end__"
        if state.get("pending"):
            return "call_tool"
        return _next_turn(state, runtime)

    def route_tools(
        state: dict[str, Any], runtime: Runtime[Any]
    ) -> Literal["generate", "final_answer"]:
        return _next_turn(state, runtime)

    def _next_turn(
        state: dict[str, Any], runtime: Runtime[Any]
    ) -> Literal["generate", "final_answer"]:
        run = settings.for_run(runtime)
        if state.get("iterations", 0) >= run.max_iterations:
            return "final_answer"
        if state.get("remaining_steps", STEPS_TO_FINISH + 1) <= STEPS_TO_FINISH:
            return "final_answer"
        return "generate"

    def route_final(state: dict[str, Any]) -> Literal["synthesize", "__end__"]:
        return "synthesize" if synthesize_answer and state.get("status") != "error" else "__end__"

    policy: RetryPolicy | None = settings.retry_policy
    builder = StateGraph(ReActState, input_schema=InputState, context_schema=LoopContext)
    builder.add_node("prepare", prepare)
    builder.add_node(
        "select_tools", as_node("select_tools", guard(select_tools, policy)), retry_policy=policy
    )
    builder.add_node("generate", as_node("generate", guard(generate, policy)), retry_policy=policy)
    builder.add_node("parse", parse)
    builder.add_node("call_tool", as_node("call_tool", call_tool))
    builder.add_node(
        "final_answer", as_node("final_answer", guard(final_answer, policy)), retry_policy=policy
    )
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges("prepare", route_start)
    builder.add_edge("select_tools", "generate")
    builder.add_conditional_edges("generate", route_generated)
    finish = ["synthesize"] if synthesize_answer else []
    builder.add_conditional_edges(
        "parse", route_parsed, ["call_tool", "generate", "final_answer", *finish, END]
    )
    builder.add_conditional_edges("call_tool", route_tools)
    if synthesize_answer:
        builder.add_node(
            "synthesize", as_node("synthesize", guard(synthesize, policy)), retry_policy=policy
        )
        builder.add_conditional_edges("final_answer", route_final)
        builder.add_edge("synthesize", END)
    else:
        builder.add_edge("final_answer", END)
    return builder


def synthesis_trace(messages: Sequence[AnyMessage]) -> str:
    """The run's transcript for answer synthesis, each tool result cut to 2,000 characters."""
    lines = []
    for message in messages:
        text = content_text(message.content)
        if isinstance(message, ToolMessage) or text.startswith("Observation:"):
            lines.append(f"Tool result: {text[:SYNTHESIS_TOOL_CHARS]}")
        elif isinstance(message, AIMessage):
            calls = ", ".join(
                f"{c['name']}({json.dumps(c['args'], default=str)})" for c in message.tool_calls
            )
            lines.append(f"Assistant: {text}" + (f" [calls: {calls}]" if calls else ""))
    return "\n".join(lines)


def create_react_graph(
    model: Any,
    tools: ToolsArg = None,
    *,
    tool_mode: str = "auto",
    max_iterations: int = 10,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str | None = None,
    max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    retry_policy: RetryPolicy | None = None,
    interrupt_before_tools: bool | Sequence[str] = False,
    system_prompt: str | None = None,
    synthesize_answer: bool = False,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the ReAct loop: think, call tools, observe, until a final answer.

    Call budget: at most ``max_iterations`` model calls in the loop, plus one call
    asking for a final answer when the loop runs out, plus up to 2 tool-selection calls
    when more than 12 tools are given, plus one synthesis call with
    ``synthesize_answer=True``. Reaching the budget ends with ``status="max_iterations"``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat.
        tool_mode: ``auto`` (from the model's profile, falling back when tools are
            rejected), ``native`` (function calling), ``json`` (JSON actions,
            schema-constrained where the provider supports it) or ``text``.
        max_iterations: Model calls allowed in the loop.
        checkpointer: Passed to ``compile()``; enables threads, resume and interrupts.
        name: Name of the compiled graph.
        max_tool_output_chars: Tool output longer than this is truncated.
        tool_timeout: Seconds a tool call may take before it becomes an error observation.
        retry_policy: LangGraph retry policy for model calls; default retries transient
            provider failures (429, 5xx, timeouts, dropped connections) 3 times.
        interrupt_before_tools: True, or a list of tool names, to pause for approval.
        system_prompt: Extra instructions placed before the loop's own system prompt.
        synthesize_answer: Write the final answer in a separate (streamable) call that
            reads the whole transcript.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and the transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    settings = make_settings(
        model,
        tools,
        tool_mode=tool_mode,
        max_iterations=max_iterations,
        max_tool_output_chars=max_tool_output_chars,
        tool_timeout=tool_timeout,
        retry_policy=retry_policy,
        interrupt_before_tools=interrupt_before_tools,
        system_prompt=system_prompt,
    )
    builder = build_react(
        settings, synthesize_answer=check_flag("synthesize_answer", synthesize_answer)
    )
    return compile_loop(builder, checkpointer=checkpointer, name=name, default_name="react")
