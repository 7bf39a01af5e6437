"""Chain-of-Thought: reason step by step in one call, or vote over several samples.

Graph: ``prepare → generate → parse → END``, with ``vote`` after ``parse`` when
``self_consistency`` asks for more than one sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from loopgraphs.context import LoopContext
from loopgraphs.nodes.call_tool import new_fence
from loopgraphs.nodes.generate import call_model, guard
from loopgraphs.nodes.grammars import answer_key
from loopgraphs.nodes.parse import content_text, final_answer_of
from loopgraphs.nodes.runner import Logic, ModelBatch, ModelCall, as_node
from loopgraphs.nodes.settings import LoopSettings, check_positive, compile_loop, make_settings
from loopgraphs.state import InputState, LoopState, counted, start_run

COT_SYSTEM = """You are a careful problem solver. Work through the problem step by step:
write each step on its own line (Step 1:, Step 2:, ...), checking every intermediate value
before you use it. When you are done, write the result on a last line that starts with
FINAL ANSWER: followed only by the answer."""


class CoTState(LoopState, total=False):
    """State of the Chain-of-Thought loop.

    ``samples`` holds the raw replies, ``answers`` the answer read from each, and
    ``votes`` the number of samples per distinct answer (self-consistency only).
    """

    samples: list[str]
    answers: list[str]
    votes: dict[str, int]


def majority(answers: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Pick the majority answer.

    Answers are compared after ``answer_key`` normalisation (case, surrounding spaces,
    trailing punctuation, numbers by value); empty answers do not vote. A tie goes to
    the answer that appeared first.

    Args:
        answers: One answer per sample, in sample order.

    Returns:
        The index of the first sample giving the winning answer (0 when no answer has
        text, -1 when there are no answers) and the votes per answer, keyed by the
        answer's first spelling.
    """
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, answer in enumerate(answers):
        if not answer.strip():
            continue
        key = answer_key(answer)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, index)
    if not counts:
        return (0 if answers else -1), {}
    best = max(counts, key=lambda key: (counts[key], -first[key]))
    votes = {answers[first[key]].strip(): count for key, count in counts.items()}
    return first[best], votes


def _as_reply(value: Any) -> AIMessage:
    if isinstance(value, AIMessage):
        return value
    return AIMessage(content=content_text(getattr(value, "content", value)))


def build_cot(settings: LoopSettings, self_consistency: int) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled Chain-of-Thought graph."""
    voting = self_consistency > 1
    steps_needed = 4 if voting else 3

    def prepare(state: CoTState) -> dict[str, Any]:
        update: dict[str, Any] = {
            **start_run(dict(state), new_fence()),
            "tool_mode": "none",
            "samples": [],
            "answers": [],
            "votes": {},
        }
        if (
            update["status"] == "running"
            and state.get("remaining_steps", steps_needed) < steps_needed
        ):
            update.update(status="max_iterations", answer="")
        return update

    def generate(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        text = COT_SYSTEM if not run.system_prompt else f"{run.system_prompt}\n\n{COT_SYSTEM}"
        prompt = [SystemMessage(text), *state["messages"]]
        if not voting:
            reply, update = yield from call_model(run.chat_model, prompt)
            return {**update, "samples": [content_text(reply.content)], "messages": [reply]}
        results = yield ModelBatch(
            [ModelCall(run.chat_model, prompt) for _ in range(self_consistency)]
        )
        replies = [_as_reply(r) for r in results if not isinstance(r, BaseException)]
        if not replies:
            raise next(r for r in results if isinstance(r, BaseException))
        return {**counted(replies), "samples": [content_text(r.content) for r in replies]}

    def parse(state: CoTState) -> dict[str, Any]:
        answers = [final_answer_of(sample) for sample in state.get("samples", [])]
        if voting:
            return {"answers": answers}
        return {"answers": answers, "answer": answers[0] if answers else "", "status": "completed"}

    def vote(state: CoTState) -> dict[str, Any]:
        answers = state.get("answers", [])
        index, votes = majority(answers)
        if index < 0:
            return {"votes": votes, "answer": "", "status": "completed"}
        return {
            "votes": votes,
            "answer": answers[index],
            "status": "completed",
            "messages": [AIMessage(content=state["samples"][index])],
        }

    def route_start(state: dict[str, Any]) -> Literal["generate", "__end__"]:
        return "generate" if state.get("status") == "running" else "__end__"

    def route_generated(state: dict[str, Any]) -> Literal["parse", "__end__"]:
        return "__end__" if state.get("status") == "error" else "parse"

    def route_parsed(state: dict[str, Any]) -> Literal["vote", "__end__"]:
        return "vote" if voting else "__end__"

    policy: RetryPolicy | None = settings.retry_policy
    builder = StateGraph(CoTState, input_schema=InputState, context_schema=LoopContext)
    builder.add_node("prepare", prepare)
    builder.add_node("generate", as_node("generate", guard(generate, policy)), retry_policy=policy)
    builder.add_node("parse", parse)
    builder.add_node("vote", vote)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges("prepare", route_start)
    builder.add_conditional_edges("generate", route_generated)
    builder.add_conditional_edges("parse", route_parsed, ["vote", END])
    builder.add_edge("vote", END)
    return builder


def create_cot_graph(
    model: Any,
    *,
    self_consistency: int = 1,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str | None = None,
    retry_policy: RetryPolicy | None = None,
    system_prompt: str | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the Chain-of-Thought loop: step-by-step reasoning, no tools.

    The model is asked to reason step by step and end with ``FINAL ANSWER:``; the text
    after that marker (``FINAL_ANSWER:`` and any letter case accepted) is the answer, or
    the whole reply when the marker is missing. With ``self_consistency=n`` the same
    prompt is sampled n times concurrently and the most frequent answer wins (see
    ``majority``); samples that fail are ignored unless all of them fail. Sampling only
    helps when the model samples with a temperature above zero.

    Call budget: exactly ``self_consistency`` model calls (1 by default). The status is
    ``"completed"``, or ``"error"`` when the model fails permanently.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        self_consistency: Number of samples voted on; 1 is plain Chain-of-Thought.
        checkpointer: Passed to ``compile()``; enables threads.
        name: Name of the compiled graph.
        retry_policy: LangGraph retry policy for model calls; default retries transient
            provider failures (429, 5xx, timeouts, dropped connections) 3 times.
        system_prompt: Extra instructions placed before the loop's own system prompt.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``samples``, ``answers`` and ``votes``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("self_consistency", self_consistency)
    settings = make_settings(model, None, retry_policy=retry_policy, system_prompt=system_prompt)
    return compile_loop(
        build_cot(settings, self_consistency),
        checkpointer=checkpointer,
        name=name,
        default_name="cot",
    )
