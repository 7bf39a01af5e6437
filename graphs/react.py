"""ReAct: reason, act with a tool, observe, repeat until a final answer.

Graph: ``prepare → [select_tools] → generate → [review] → call_tool → generate ...``.
``generate`` calls the model and reads its reply in the run's tool mode; ``call_tool``
runs the calls through LangGraph's ``ToolNode``; ``final_answer`` asks once for an answer
when the budget is spent; an optional ``synthesize`` node writes the user-facing answer
as a separate streamed call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from pydantic import BaseModel, Field, create_model
from typing_extensions import Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import add_review, add_tool_turn, compiled_loop
from loopgraphs.nodes.answer_check import unusable
from loopgraphs.nodes.answer_repair import restated_answer, says_nothing
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, add_step
from loopgraphs.nodes.generate import answer_message, call_model, reasked
from loopgraphs.nodes.history import bounded_thread, earlier_turns
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.model_turn import (
    Reading,
    interpret,
    model_turn,
    read_reply,
    without_tool_calls,
)
from loopgraphs.nodes.parsing.text import (
    best_effort_answer,
    content_text,
    cut_short,
    final_answer_of,
)
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_flag
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import structured_call
from loopgraphs.nodes.tool_loop import pending_step
from loopgraphs.nodes.tool_modes import example_answers, required_tool, run_registry
from loopgraphs.nodes.tool_step import ToolStep, dispatch, pending_calls
from loopgraphs.state import (
    InnerReActOutput,
    LoopBuilder,
    LoopInput,
    LoopRuntime,
    ReActState,
    ResponseT,
    RunResult,
    request_of,
    scratch_of,
)

TOOL_SELECTION_THRESHOLD = 12
TOOL_SELECTION_MAX = 6
SYNTHESIS_TOOL_CHARS = 2000
STEPS_TO_FINISH = 4


class ReActOutput(RunResult[ResponseT]):
    """Output of ReAct: the answer, status and counters every loop returns, with
    ``structured_response`` when the graph was built with ``response_format``."""


ReActGraph: TypeAlias = CompiledStateGraph[ReActState, ContextT, LoopInput, ReActOutput[ResponseT]]
"""The compiled graph ``create_react_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


@dataclass(frozen=True)
class ReActBuild:
    """What ReAct's router reads of how its graph was built.

    Attributes:
        settings: The loop's settings (each run applies its context to them).
        synthesize_answer: Whether an answer the model wrote after using tools is
            rewritten by the ``synthesize`` step.
    """

    settings: LoopSettings
    synthesize_answer: bool = False


def build_react(
    settings: LoopSettings,
    options: Mapping[str, object] | None = None,
    *,
    synthesize_answer: bool = False,
    agent_hooks: bool = True,
) -> LoopBuilder:
    """The uncompiled ReAct graph for ``settings`` (reused inside other loops, where
    ``agent_hooks=False``: the middleware's ``before_agent``/``after_agent`` hooks run
    around the outer loop, and the run also returns its ``scratch``, which says whether
    a hook ended it)."""
    builder = new_graph(
        ReActState,
        ReActOutput if agent_hooks else InnerReActOutput,
        options or {},
        loop="react",
        settings=settings,
        tools_node="call_tool",
        main_step="generate",
        agent_hooks=agent_hooks,
    )
    finish = ["synthesize"] if synthesize_answer else []
    add_step(builder, "select_tools", select_tools, settings, model_step=True)
    add_tool_turn(
        builder,
        settings,
        "generate",
        generate,
        targets=["select_tools", "generate", "final_answer", *finish],
        router=functools.partial(route_generated, ReActBuild(settings, synthesize_answer)),
        settles_answer=True,
    )
    builder.add_node("call_tool", ToolStep(settings).graph_node())
    add_start(
        builder,
        settings,
        lambda state, run: {},
        while_running("generate"),
        ["generate"],
        scratch={"iterations": 0},
    )
    add_step(builder, "final_answer", final_answer, settings, model_step=True, settles_answer=True)
    route(builder, "select_tools", lambda state: "generate", ["generate"])
    builder.add_edge("call_tool", "generate")
    add_review(builder, settings, route_reviewed)
    if synthesize_answer:
        add_step(builder, "synthesize", synthesize, settings, model_step=True, settles_answer=True)
        route(builder, "final_answer", lambda state: "synthesize", ["synthesize"])
        builder.add_edge("synthesize", END)
    else:
        builder.add_edge("final_answer", END)
    return builder


def select_tools(state: ReActState, step: Step) -> LogicOf[ReActState]:
    """Pick up to 6 of the run's tools for the request from a compact catalog of them
    (a run with more than 12 tools does this before its first turn).

    Args:
        state: The run's state.
        step: The step's run settings and runtime.

    Returns:
        The call's counts and ``scratch["selected_tools"]``: the names chosen, none
        when the selection failed (the run then keeps all of its tools).
    """
    run = step.run
    allowed: Any = Literal[tuple(run.tools.names)]
    choice: type[BaseModel] = create_model(
        "ToolSelection",
        tools=(list[allowed], Field(description="names of the tools to use")),
    )
    prompt = prompts.SELECT_TOOLS.format(
        limit=TOOL_SELECTION_MAX, catalog=run.tools.catalog(), request=request_of(state)
    )
    asked = [*earlier_turns(state, run), HumanMessage(prompt)]
    result = yield from structured_call(
        step.ask(state), asked, choice, max_calls=2, purpose="tool_selection"
    )
    chosen = list(dict.fromkeys(getattr(result.value, "tools", []) or []))
    return {**result.state_update(), "scratch": {"selected_tools": chosen[:TOOL_SELECTION_MAX]}}


def generate(state: ReActState, step: Step) -> LogicOf[ReActState]:
    """One ReAct turn: ask the model in the run's tool mode and read its reply.

    Writes nothing when the run must select its tools first or has no turns left
    (``route_generated`` then moves on to ``select_tools`` or ``final_answer``).

    Args:
        state: The run's state.
        step: The step's run settings and runtime.

    Returns:
        The turn's update: its reply, with tool calls to run, or a final answer
        (``status="completed"``), or a re-ask for the next turn (``scratch["reask"]``).
    """
    run = step.run
    scratch = scratch_of(state)
    if scratch.get("tool_ended"):
        return {"status": "completed"}
    if needs_selection(state, run) or turns_spent(state, run):
        return {}
    require = required_tool(run, state, model_default=True)
    history = reasked(bounded_thread(state, run), scratch.get("reask"))
    update = yield from model_turn(run, state, history, require=require, runtime=step.runtime)
    mode = update["tool_mode"]
    if mode == state.get("tool_mode"):
        del update["tool_mode"]
    reply = cast(AIMessage, update["messages"][0])  # the turn's reply, as model_turn sent it
    reading = read_reply(mode, reply, run_registry(run, state), require=require)
    iterations = scratch.get("iterations", 0) + 1
    update["scratch"] = {"iterations": iterations, "reformat": False, "reask": ""}
    update["messages"] = [reading.message]
    if reading.outcome == "final":
        return {**update, **final_reply(state, run, reading, iterations)}
    if reading.outcome == "tools":
        return update
    if require:
        update["scratch"]["reask"] = prompts.REQUIRE_TOOL
        return update
    if mode == "json" and not scratch.get("reformat"):
        update["scratch"].update({"reformat": True, "reask": prompts.REFORMAT_ACTION})
        return update
    if mode == "json" and run.tool_mode == "auto":
        return {**update, "tool_mode": "text"}
    return {**update, **plain_reply(state, run, reading, iterations)}


def final_reply(
    state: ReActState, run: LoopSettings, reading: Reading, iterations: int
) -> ReActState:
    """A reply read as a final answer: the answer, restated where it only points at an
    earlier one, or a re-ask when it was cut short or says nothing usable (see
    ``unread_reply``)."""
    if cut_short(reading.message):
        return unread_reply(state, run, reading.message, iterations)
    scratch = scratch_of(state)
    fence, start = scratch.get("fence", ""), scratch.get("transcript_start", 0)
    examples = example_answers(run_registry(run, state))
    answer = restated_answer(reading.answer, state["messages"], start, fence, examples=examples)
    # A step's result inside another loop may be a tool result; that loop checks its own
    # answer.
    checked = not run.step_run and unusable(answer, state["messages"], start)
    if says_nothing(answer, fence) or checked:
        return unread_reply(state, run, reading.message, iterations, prompts.NO_ANSWER)
    return {
        "messages": [answer_message(reading.message, answer)],
        "status": "completed",
        "answer": answer,
    }


def plain_reply(
    state: ReActState, run: LoopSettings, reading: Reading, iterations: int
) -> ReActState:
    """A reply in no tool grammar, taken as the answer as it is, or a re-ask when it
    was cut short or says nothing (see ``unread_reply``)."""
    if cut_short(reading.message):
        return unread_reply(state, run, reading.message, iterations)
    if not reading.answer:
        return unread_reply(state, run, reading.message, iterations, prompts.NO_ANSWER)
    return {
        "messages": [answer_message(reading.message, reading.answer)],
        "status": "completed",
        "answer": reading.answer,
    }


def unread_reply(
    state: ReActState,
    run: LoopSettings,
    reply: AIMessage,
    iterations: int,
    again: str = prompts.SHORT_ANSWER,
) -> ReActState:
    """A reply cut at the token cap, or a final answer that says nothing (see
    ``says_nothing``), is not an answer: ask once more (``again``, in the next request)
    while turns are left; else end, not completed, without an answer (see
    ``answer_check``)."""
    if not scratch_of(state).get("shortened") and iterations < run.max_iterations:
        return {"messages": [reply], "scratch": {"shortened": True, "reask": again}}
    return {"messages": [answer_message(reply, "")], "answer": "", "status": "max_iterations"}


def final_answer(state: ReActState, step: Step) -> LogicOf[ReActState]:
    """The run's best-effort finish when its turns or budget run out: ask once, with no
    tools, for the answer; failing one, take the best answer the transcript holds.

    Args:
        state: The run's state.
        step: The step's run settings and runtime.

    Returns:
        The call's update with the answer and ``status="max_iterations"``.
    """
    run = step.run
    # A re-ask still due gives way to this one: no more tool calls, the answer now.
    history = reasked(bounded_thread(state, run), prompts.FORCE_FINAL_ANSWER)
    update = yield from model_turn(run, state, history, require="none", runtime=step.runtime)
    reply = without_tool_calls(cast(AIMessage, update["messages"][0]))
    read = interpret(update.get("tool_mode", "none"), reply)
    cut = cut_short(reply)
    answer = read.answer if read.kind == "final" and not cut else ""
    if not answer and read.kind == "none" and not cut:
        answer = final_answer_of(content_text(reply.content))
    scratch = scratch_of(state)
    start, fence = scratch.get("transcript_start", 0), scratch.get("fence", "")
    examples = example_answers(run_registry(run, state))
    answer = restated_answer(answer, state["messages"], start, fence, examples=examples)
    if not answer:
        answer = best_effort_answer([m for m in state["messages"] if not cut_short(m)])
    reply = answer_message(reply, answer)
    return {**update, "messages": [reply], "answer": answer, "status": "max_iterations"}


def synthesize(state: ReActState, step: Step) -> LogicOf[ReActState]:
    """Write the user-facing answer in a separate (streamed) call that reads the run's
    transcript (see ``synthesis_trace``) and its draft answer.

    Args:
        state: The run's state, with its draft ``answer``.
        step: The step's run settings and runtime.

    Returns:
        The call's update with the written answer (the draft when the reply was cut
        short or empty).
    """
    start = scratch_of(state).get("transcript_start", 0)
    trace = synthesis_trace(state["messages"][start:])
    request = HumanMessage(
        prompts.SYNTHESIZE_USER.format(
            question=request_of(state), trace=trace, draft=state.get("answer", "")
        )
    )
    asked = [*earlier_turns(state, step.run), request]
    call = step.ask(state).call(asked, RequestForm(prompts.SYNTHESIZE_SYSTEM), with_system=False)
    reply, update = yield from call_model(call)
    text = "" if cut_short(reply) else content_text(reply.content).strip()
    text = text or state.get("answer", "")
    return {**update, "answer": text, "messages": [answer_message(reply, text)]}


def turns_spent(state: ReActState, run: LoopSettings) -> bool:
    """Whether the run has used its ``max_iterations`` turns, or the run budget leaves
    no room for another turn with tools and the final answer."""
    iterations = scratch_of(state).get("iterations", 0)
    spent = iterations >= run.max_iterations
    return spent or not run.budget.allows(state, steps=STEPS_TO_FINISH, tools=True)


def needs_selection(state: ReActState, run: LoopSettings) -> bool:
    """Above 12 tools a run picks its tools first (before its first model turn)."""
    return len(run.tools) > TOOL_SELECTION_THRESHOLD and ("selected_tools" not in scratch_of(state))


def route_generated(build: ReActBuild, state: ReActState, runtime: LoopRuntime) -> str | list[Send]:
    """The step after ``generate``.

    Args:
        build: How the graph was built (its settings, whether it synthesizes answers).
        state: The run's state after the turn.
        runtime: The run's runtime (its context applies to the settings).

    Returns:
        The end, once the run has an answer or gave up on one (``synthesize`` first for
        an answer the model wrote after using tools, when the graph synthesizes); else
        the turn's pending tool calls, ``select_tools``, ``final_answer`` when the turns
        are spent, or ``generate`` for another turn.
    """
    if state.get("status") == "max_iterations":  # a reply cut again (see unread_reply)
        return END
    if state.get("status") == "completed":
        # An answer the model wrote after using tools may be rewritten by synthesis;
        # one a tool ended the run with stands as it is.
        scratch = scratch_of(state)
        used_tools = scratch.get("iterations", 0) > 1 and not scratch.get("tool_ended")
        return "synthesize" if build.synthesize_answer and used_tools else END
    run = build.settings.for_run(runtime)
    calls = pending_step(run, state)
    if calls:
        return calls
    if needs_selection(state, run):
        return "select_tools"
    return "final_answer" if turns_spent(state, run) else "generate"


def route_reviewed(state: ReActState) -> list[Send]:
    """After the review: one ``call_tool`` task per tool call the reviewer let through."""
    return dispatch(pending_calls(state["messages"]))


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
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_iterations: int = 10,
    synthesize_answer: bool = False,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> ReActGraph[ContextT, ResponseT]:
    """Build the ReAct loop: think, call tools, observe, until a final answer.

    Call budget: at most ``max_iterations`` model calls in the loop, plus one call
    asking for a final answer when the loop (or ``max_tool_calls``) runs out, plus up to
    2 tool-selection calls when more than 12 tools are given, plus one synthesis call with
    ``synthesize_answer=True``, plus up to 3 with ``response_format``. Reaching the budget
    ends with ``status="max_iterations"``.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat.
        max_iterations: Model calls allowed in the loop.
        synthesize_answer: Write the final answer in a separate (streamable) call that
            reads the whole transcript.
        **options: The shared options of ``ToolLoopOptions`` (``tool_mode``,
            ``checkpointer``, ``store``, ``name``, ``state_schema``, ``context_schema``,
            ``response_format``, ``system_prompt``, ``interrupt_before_tools``,
            ``max_tool_calls``, ``loop_break``, ``tool_choice``, ``tool_timeout``,
            ``max_tool_output_chars``, ``retry_policy``, ``max_history_tokens``). Each turn
            and the final-answer request read the thread as it is (earlier tool calls and
            results too); tool selection and synthesis read the user's earlier turns and
            the answers they got. ``max_history_tokens`` bounds what comes before the
            request (None: all of it; the request and the run's own messages are always
            read).

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and the transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """

    def build(settings: LoopSettings) -> LoopBuilder:
        synthesize = check_flag("synthesize_answer", synthesize_answer)
        return build_react(settings, options, synthesize_answer=synthesize)

    return compiled_loop("react", build, model, tools, options, max_iterations=max_iterations)
