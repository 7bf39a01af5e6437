"""Reflexion: answer with ReAct, judge the answer, reflect on a failure, try again.

Graph: ``prepare → generate → evaluate → (END | reflect → generate …)``. Each visit of
``generate`` is one episode: a full run of the compiled ReAct subgraph on the
conversation, with the reflections written so far placed in the user's turn. ``evaluate``
asks for a SATISFACTORY/UNSATISFACTORY verdict (structured output with a text fallback);
``reflect`` turns the feedback into a lesson for the next episode.

Where the reflections go: the ReAct subgraph's system prompt stays exactly the same in
every episode, and the reflections are written into the latest user message, ahead of the
question. A per-episode ``system_prompt`` would need a differently configured (and
recompiled) subgraph per episode and would change the first tokens of every prompt, which
defeats prompt caching; a separate user message before the question would give two user
turns in a row, which strict chat templates reject.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import Unpack

from loopgraphs.context import LoopContext
from loopgraphs.graphs.plan_execute import ReactCall
from loopgraphs.graphs.react import build_react
from loopgraphs.nodes.build import caller_keys, compile_loop, new_graph, route, subgraph_options
from loopgraphs.nodes.call_tool import new_fence
from loopgraphs.nodes.evaluate import evaluate_answer, evaluation_record, question_text
from loopgraphs.nodes.reflect import reflect_on
from loopgraphs.nodes.runner import Logic, add_step
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    check_positive,
    make_settings,
)
from loopgraphs.nodes.tool_loop import resolve_mode
from loopgraphs.state import LoopState, OutputState, empty_usage, start_run

REFLECTIONS_BLOCK = """Lessons from your earlier attempts at this question (judged unsatisfactory):
{lessons}
Apply them in this attempt.

Question:
"""

EVALUATOR_CALLS = 2
EPISODE_STEPS = 3


class ReflexionOutput(OutputState, total=False):
    """Output of Reflexion: episodes run, their answers, evaluations and reflections."""

    episode: int
    reflections: list[str]
    evaluations: list[dict[str, Any]]
    episode_answers: list[str]


class ReflexionState(ReflexionOutput, LoopState, total=False):
    """State of Reflexion."""

    request: str
    transcript_start: int


def call_budget(
    *, max_reflections: int = 3, max_iterations: int = 10, tool_selection: bool = False
) -> int:
    """Most model replies one run can take (see ``create_reflexion_graph``)."""
    per_episode = max_iterations + 1 + (2 if tool_selection else 0)
    return max_reflections * per_episode + max_reflections * EVALUATOR_CALLS + max_reflections - 1


def with_reflections(
    conversation: Sequence[AnyMessage], reflections: Sequence[str]
) -> list[AnyMessage]:
    """The episode's input: the conversation with the lessons written into the latest user
    message, ahead of its text (a new message; the caller's is left untouched)."""
    messages = list(conversation)
    if not reflections:
        return messages
    block = REFLECTIONS_BLOCK.format(lessons="\n".join(f"- {text}" for text in reflections))
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, str):
                merged: Any = block + content
            else:
                merged = [{"type": "text", "text": block}, *content]
            messages[index] = message.model_copy(update={"content": merged, "id": None})
            return messages
    return [*messages, HumanMessage(block.rstrip())]


def build_reflexion(
    settings: LoopSettings, *, max_reflections: int = 3, options: Any = None
) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled Reflexion graph for ``settings``."""
    react_graph = build_react(
        dataclasses.replace(settings, response_format=None), subgraph_options(options or {})
    ).compile(name="react")
    extra = caller_keys(options or {})

    def prepare(state: ReflexionState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
        run = settings.for_run(runtime)
        messages = state.get("messages", [])
        return {
            **start_run(state, new_fence()),
            "request": question_text(messages),
            "transcript_start": len(messages),
            "episode": 0,
            "reflections": [],
            "evaluations": [],
            "episode_answers": [],
            "tool_mode": resolve_mode(run),
        }

    def generate(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        messages = state["messages"]
        conversation = messages[: state.get("transcript_start", len(messages))]
        episode_input = with_reflections(conversation, state.get("reflections") or [])
        run = settings.for_run(runtime)
        carried = {k: state[k] for k in extra if k in state}
        out = yield ReactCall(
            react_graph, {"messages": episode_input, **carried}, run.max_iterations
        )
        answers = list(state.get("episode_answers") or [])
        status = out.get("status") or "error"
        update: dict[str, Any] = {
            "llm_calls": out.get("llm_calls", 0),
            "retries": out.get("retries", 0),
            "usage": out.get("usage") or empty_usage(),
            "episode": state.get("episode", 0) + 1,
            "messages": list(out.get("messages", []))[len(episode_input) :],
            "tool_mode": out.get("tool_mode") or state.get("tool_mode", ""),
            **{k: out[k] for k in extra if k in out},
        }
        if status == "error":
            return {
                **update,
                "status": "error",
                "error": out.get("error") or "the episode failed",
                "answer": out.get("answer") or (answers[-1] if answers else ""),
            }
        answer = str(out.get("answer") or "")
        return {**update, "episode_answers": [*answers, answer], "answer": answer}

    def evaluate(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        answer = state.get("answer", "")
        verdict, result = yield from evaluate_answer(
            run.chat_model, state.get("request", ""), answer, max_calls=EVALUATOR_CALLS
        )
        record = evaluation_record(verdict)
        update: dict[str, Any] = {
            **result.state_update(),
            "evaluations": [*(state.get("evaluations") or []), record],
        }
        if record["satisfactory"]:
            update["status"] = "completed"
        elif (
            state.get("episode", 0) >= max_reflections
            or state.get("remaining_steps", EPISODE_STEPS + 1) <= EPISODE_STEPS
        ):
            update["status"] = "max_iterations"
        return update

    def reflect(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        evaluations = state.get("evaluations") or []
        feedback = evaluations[-1]["feedback"] if evaluations else ""
        text, update = yield from reflect_on(
            run.chat_model, state.get("request", ""), state.get("answer", ""), feedback
        )
        return {**update, "reflections": [*(state.get("reflections") or []), text]}

    policy = settings.retry_policy
    builder = new_graph(ReflexionState, ReflexionOutput, options or {})
    builder.add_node("prepare", prepare)
    add_step(builder, "generate", generate, policy)
    add_step(builder, "evaluate", evaluate, policy)
    add_step(builder, "reflect", reflect, policy)
    builder.add_edge(START, "prepare")
    route(builder, "prepare", lambda state: "generate", ["generate"])
    route(builder, "generate", lambda state: "evaluate", ["evaluate"])
    route(
        builder,
        "evaluate",
        lambda state: "reflect" if state.get("status") == "running" else END,
        ["reflect"],
    )
    route(builder, "reflect", lambda state: "generate", ["generate"])
    return builder


def create_reflexion_graph(
    model: Any,
    tools: ToolsArg = None,
    *,
    max_reflections: int = 3,
    max_iterations: int = 10,
    **options: Unpack[ToolLoopOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build Reflexion: ReAct episodes, each judged; failures are reflected on and retried.

    Call budget (model replies, whatever the model says)::

        max_reflections × (max_iterations + 1)   one ReAct run per episode
        + max_reflections × 2                    evaluator (one reformat retry)
        + (max_reflections − 1)                  reflections (none after the last episode)

    plus 2 per episode when more than 12 tools are given (ReAct's tool selection); a run's
    ``context`` ``max_iterations`` replaces ``max_iterations``. The run ends
    ``completed`` at the first satisfactory answer; after ``max_reflections`` episodes
    without one (or when the graph runs low on ``recursion_limit`` steps) it ends with
    ``status="max_iterations"`` and the last episode's answer. An evaluator that produces
    no usable verdict counts as "not satisfactory".

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat episodes.
        max_reflections: Most episodes (attempts) in a run.
        max_iterations: Model calls allowed in each episode's ReAct loop.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            the tool options apply to every episode's ReAct loop.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``episode`` (episodes run),
        ``reflections``, ``evaluations`` (``{"satisfactory", "feedback"}`` per episode),
        ``episode_answers`` and, in ``messages``, every episode's transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_reflections", max_reflections)
    settings = make_settings("reflexion", model, tools, options, max_iterations=max_iterations)
    builder = build_reflexion(settings, max_reflections=max_reflections, options=options)
    return compile_loop(builder, settings, options, default_name="reflexion")
