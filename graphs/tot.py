"""Tree-of-Thoughts: beam search over lines of reasoning.

Graph: ``prepare → expand (one task per beam branch, concurrent) → score_branches →
expand ... → final_answer``. A branch is a list of thoughts. Each level expands every
branch of the beam at once (LangGraph ``Send``), scores the new candidates, and keeps
the best ``beam_width``. A thought holding ``ANSWER:`` ends the search at once; when
``max_depth`` levels pass without one, ``final_answer`` asks the best branch for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, RetryPolicy, Send
from typing_extensions import TypedDict, Unpack

from loopgraphs.context import LoopContext
from loopgraphs.nodes.build import compile_loop, new_graph
from loopgraphs.nodes.call_tool import new_fence
from loopgraphs.nodes.generate import call_model, system_message, user_system
from loopgraphs.nodes.parse import clip, content_text, extract_json
from loopgraphs.nodes.runner import (
    Logic,
    LogicFactory,
    add_step,
    all_failed,
    as_node,
    failed_requests,
    guard,
)
from loopgraphs.nodes.score_branches import in_parallel, render_path, score_all, score_each
from loopgraphs.nodes.settings import LoopOptions, LoopSettings, check_positive, make_settings
from loopgraphs.state import LoopState, OutputState, counted, start_run

TOT_SYSTEM = (
    "You solve problems by exploring several lines of reasoning. Each step is one short, "
    "concrete thought that moves toward the solution. As soon as a step reaches the final "
    "solution, write it as ANSWER: <the final answer>."
)

PROPOSE_PROMPT = """Problem: {problem}

Steps so far:
{path}

Propose {n} different possible next steps. Reply with a numbered list, one step per item:
1. <step>
2. <step>
If a step solves the problem, write that item as ANSWER: <the final answer>."""

SAMPLE_PROMPT = """Problem: {problem}

Steps so far:
{path}

Write the single next step (attempt {k} of {n}; try something different from the obvious \
step). If it solves the problem, write it as ANSWER: <the final answer>."""

FORCE_ANSWER_PROMPT = """Problem: {problem}

Steps so far:
{path}

The exploration is over. Using these steps, give the final answer now, starting with ANSWER:"""

SCORINGS = ("batched", "per_branch")
GENERATIONS = ("propose", "sample")
MAX_THOUGHT_CHARS = 2000
STEPS_PER_LEVEL = 2  # expand, score_branches
# A node that sees remaining_steps == r can be followed by r - 1 more supersteps; another
# level needs STEPS_PER_LEVEL of them plus one for final_answer.
ANSWER_RE = re.compile(r"ANSWER\**[ \t]*:")
# The bullet alternatives never share a star with the optional bold prefix, so a long run
# of "*" is matched in linear time.
ITEM_RE = re.compile(
    r"(?:\**(?:(?:step|thought|option|idea)[ \t]*)?(?:\d{1,3}[ \t]*[.):]|[-\u2022])|\*)"
    r"\**(?:[ \t]+|$)",
    re.IGNORECASE,
)
StopReason = Literal["", "answer", "max_depth", "dead_end", "step_limit"]


class Branch(TypedDict):
    """One line of reasoning kept in the beam."""

    thoughts: list[str]
    score: float


def extend_candidates(
    left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Reducer: concurrent ``expand`` tasks add their candidates; ``Overwrite`` resets."""
    return [*(left or []), *(right or [])]


def add_failures(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer: failures of concurrent tasks add up (one task's error never clobbers another)."""
    return [*(left or []), *(right or [])]


class ToTOutput(OutputState, total=False):
    """Output of the Tree-of-Thoughts loop.

    ``branches`` is the beam (best first); ``candidates`` the last level's candidates
    (``thoughts``, ``score`` (None if unscored), ``parent``, ``index``, ``answer``);
    ``depth`` the levels expanded; ``best_path`` the thoughts of the best branch (or of
    the answering one); ``stop_reason`` why the search stopped.
    """

    problem: str
    branches: list[Branch]
    depth: int
    candidates: Annotated[list[dict[str, Any]], extend_candidates]
    best_path: list[str]
    stop_reason: StopReason


class ToTState(ToTOutput, LoopState, total=False):
    """State of the Tree-of-Thoughts loop: the output plus failures of concurrent tasks."""

    failures: Annotated[list[str], add_failures]


def answer_in(thought: str) -> str | None:
    """The text after ``ANSWER:`` in a thought, or None (no marker, or nothing after it)."""
    match = ANSWER_RE.search(clip(thought))
    if match is None:
        return None
    text = match.string[match.end() :].strip().strip("*").strip()
    return text or None


def parse_thoughts(text: str, limit: int) -> list[str]:
    """Read up to ``limit`` proposed thoughts from a reply.

    Accepts a JSON list (of strings or of objects with a ``thought``/``step`` field), a
    JSON object holding such a list, or a numbered/bulleted list (lines that follow an
    item continue it). A reply with no list at all is one thought; an empty one is none.
    """
    text = clip(text).strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        text = text.split("\n", 1)[1] if text.lower().startswith(("json\n", "text\n")) else text
    items = _json_items(text) if text[:1] in "[{" else None
    if items is None:
        items = _list_items(text)
    thoughts = [item.strip()[:MAX_THOUGHT_CHARS] for item in items if item and item.strip()]
    return thoughts[:limit]


def _json_items(text: str) -> list[str] | None:
    data: Any = None
    if text.startswith("["):
        try:
            data = json.loads(text[: text.rfind("]") + 1])
        except (ValueError, RecursionError):
            return None
    else:
        found = extract_json(text) or {}
        data = next(
            (found[key] for key in ("thoughts", "steps", "candidates", "options") if key in found),
            None,
        )
    if not isinstance(data, list):
        return None
    items = []
    for entry in data:
        if isinstance(entry, dict):
            entry = next((entry[k] for k in ("thought", "step", "text") if k in entry), "")
        items.append(entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False))
    return items


def _list_items(text: str) -> list[str]:
    items: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        match = ITEM_RE.match(stripped)
        if match is not None:
            items.append(stripped[match.end() :].strip().lstrip("*").strip())
        elif items and stripped:
            items[-1] = f"{items[-1]}\n{stripped}"
    if not items and text:
        items = [text]
    return items


def call_budget(
    n_branches: int = 3,
    beam_width: int = 2,
    max_depth: int = 3,
    scoring: str = "batched",
    generation: str = "propose",
) -> int:
    """The most model calls one run can make (see ``create_tot_graph``)."""
    expansions = 1 + beam_width * (max_depth - 1)
    per_expansion = 1 if generation == "propose" else n_branches
    if scoring == "batched":
        return expansions * per_expansion + max_depth + 1
    return expansions * (per_expansion + n_branches) + 1


def _problem_of(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return content_text(message.content).strip()
    return content_text(messages[-1].content).strip() if messages else ""


def build_tot(
    settings: LoopSettings,
    *,
    n_branches: int,
    beam_width: int,
    max_depth: int,
    scoring: str,
    generation: str,
    options: Any = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled Tree-of-Thoughts graph."""
    policy: RetryPolicy | None = settings.retry_policy

    def prepare(state: ToTState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
        update: dict[str, Any] = {
            **start_run(state, new_fence()),
            "tool_mode": "none",
            "problem": _problem_of(state.get("messages", [])),
            "branches": [Branch(thoughts=[], score=0.0)],
            "depth": 0,
            "candidates": Overwrite([]),
            "best_path": [],
            "stop_reason": "",
            "failures": Overwrite([]),
        }
        if update["status"] != "error" and not update["problem"]:
            update.update(status="error", error="the last user message has no text")
        elif update["status"] != "error" and state.get("remaining_steps", 0) <= STEPS_PER_LEVEL + 1:
            update["stop_reason"] = "step_limit"
            if state.get("remaining_steps", 0) <= 1:  # not even one more node can run
                update["status"] = "max_iterations"
        return update

    def expand(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        model = run.chat_model
        path = list(state["thoughts"])
        shown = render_path(path)
        if generation == "propose":
            text = PROPOSE_PROMPT.format(problem=state["problem"], path=shown, n=n_branches)
            reply, update = yield from call_model(
                model, [system_message(run, state, TOT_SYSTEM), HumanMessage(text)]
            )
            thoughts = parse_thoughts(content_text(reply.content), n_branches)
        else:
            prompts = [
                [
                    system_message(run, state, TOT_SYSTEM),
                    HumanMessage(
                        SAMPLE_PROMPT.format(
                            problem=state["problem"], path=shown, k=k, n=n_branches
                        )
                    ),
                ]
                for k in range(1, n_branches + 1)
            ]
            outcomes = yield from in_parallel([call_model(model, prompt) for prompt in prompts])
            answered = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
            if not answered:
                raise all_failed(outcomes)
            replies = [reply for reply, _ in answered]
            update = counted(replies)
            update["llm_calls"] += failed_requests(outcomes)
            thoughts = [
                text[:MAX_THOUGHT_CHARS]
                for text in (content_text(reply.content).strip() for reply in replies)
                if text
            ]
        candidates = [
            {
                "thoughts": [*path, thought],
                "score": None,
                "parent": state["parent"],
                "index": index,
                "answer": answer_in(thought),
            }
            for index, thought in enumerate(thoughts)
        ]
        return {**update, "candidates": candidates}

    def score_branches(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]
    ) -> Logic:
        run = settings.for_run(runtime)
        depth = state.get("depth", 0) + 1
        candidates = sorted(state.get("candidates") or [], key=lambda c: (c["parent"], c["index"]))
        for candidate in candidates:
            if candidate.get("answer"):
                answer = candidate["answer"]
                return {
                    "status": "completed",
                    "answer": answer,
                    "messages": [AIMessage(answer)],
                    "best_path": candidate["thoughts"],
                    "depth": depth,
                    "stop_reason": "answer",
                }
        failures = state.get("failures") or []
        if failures:
            return {"status": "error", "error": failures[0], "depth": depth}
        if not candidates:
            return {"depth": depth, "stop_reason": "dead_end"}
        paths = [c["thoughts"] for c in candidates]
        system = user_system(run, state)
        if scoring == "batched":
            scores, update = yield from score_all(
                run.chat_model, state["problem"], paths, system=system
            )
        else:
            scores, update = yield from score_each(
                run.chat_model, state["problem"], paths, system=system
            )
        scored = [{**c, "score": float(s)} for c, s in zip(candidates, scores, strict=True)]
        order = sorted(range(len(scored)), key=lambda i: -scored[i]["score"])
        beam = [
            Branch(thoughts=scored[i]["thoughts"], score=scored[i]["score"])
            for i in order[:beam_width]
        ]
        result: dict[str, Any] = {
            **update,
            "branches": beam,
            "depth": depth,
            "best_path": beam[0]["thoughts"],
        }
        if depth >= max_depth:
            return {**result, "candidates": Overwrite(scored), "stop_reason": "max_depth"}
        if state.get("remaining_steps", 0) <= STEPS_PER_LEVEL + 1:
            return {**result, "candidates": Overwrite(scored), "stop_reason": "step_limit"}
        return {**result, "candidates": Overwrite([])}

    def final_answer(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        beam = state.get("branches") or [Branch(thoughts=[], score=0.0)]
        path = beam[0]["thoughts"]
        text = FORCE_ANSWER_PROMPT.format(problem=state["problem"], path=render_path(path))
        reply, update = yield from call_model(
            run.chat_model, [system_message(run, state, TOT_SYSTEM), HumanMessage(text)]
        )
        said = content_text(reply.content).strip()
        answer = answer_in(said) or said
        status = (
            "completed" if answer and state.get("stop_reason") != "step_limit" else "max_iterations"
        )
        if not answer:
            answer = path[-1] if path else ""
        return {
            **update,
            "answer": answer,
            "status": status,
            "messages": [AIMessage(answer)] if answer else [],
            "best_path": path,
        }

    def contained(logic: LogicFactory) -> LogicFactory:
        """Guard a concurrent task: its error becomes a failure record, not a status write."""
        guarded = guard(logic, policy)

        def run(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
            update = yield from guarded(state, config, runtime)
            if update.get("status") == "error":
                return {
                    "failures": [update.get("error") or "expansion failed"],
                    "llm_calls": update.get("llm_calls", 0),
                    "retries": update.get("retries", 0),
                }
            return update

        return run

    def expansions(state: dict[str, Any]) -> list[Send]:
        return [
            Send(
                "expand", {"problem": state["problem"], "thoughts": branch["thoughts"], "parent": i}
            )
            for i, branch in enumerate(state.get("branches") or [])
        ]

    def route_start(state: dict[str, Any]) -> list[Send] | Literal["final_answer", "__end__"]:
        if state.get("status") != "running":
            return "__end__"
        if state.get("stop_reason") == "step_limit":
            return "final_answer"
        return expansions(state)

    def route_scored(state: dict[str, Any]) -> list[Send] | Literal["final_answer", "__end__"]:
        if state.get("status") != "running":
            return "__end__"
        if state.get("stop_reason"):
            return "final_answer"
        return expansions(state)

    builder = new_graph(ToTState, ToTOutput, options or {})
    builder.add_node("prepare", prepare)
    builder.add_node(
        "expand", as_node("expand", contained(expand), guarded=False), retry_policy=policy
    )
    add_step(builder, "score_branches", score_branches, policy)
    add_step(builder, "final_answer", final_answer, policy)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges("prepare", route_start, ["expand", "final_answer", END])
    builder.add_edge("expand", "score_branches")
    builder.add_conditional_edges("score_branches", route_scored, ["expand", "final_answer", END])
    builder.add_edge("final_answer", END)
    return builder


def create_tot_graph(
    model: Any,
    *,
    n_branches: int = 3,
    beam_width: int = 2,
    max_depth: int = 3,
    scoring: str = "batched",
    generation: str = "propose",
    **options: Unpack[LoopOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the Tree-of-Thoughts loop: a beam search over lines of reasoning.

    Level by level, every branch of the beam (the root alone at level 0) is expanded
    concurrently into ``n_branches`` candidate next thoughts, the candidates are scored
    0..10, and the ``beam_width`` best are kept (ties go to the earlier candidate). A
    thought holding ``ANSWER:`` ends the search at once with ``status="completed"``.
    After ``max_depth`` levels without one, one ``final_answer`` call asks the best
    branch for the answer: ``status="completed"`` when it gives text (the search ended
    by design), else ``"max_iterations"`` with the best branch's last thought as the
    answer. A level with no candidates at all also goes to ``final_answer``. When the
    run's ``recursion_limit`` is too low for another level, the search stops early and
    ends with ``status="max_iterations"``.

    Call budget, with b = ``n_branches``, w = ``beam_width``, d = ``max_depth`` and
    E = 1 + w·(d−1) branch expansions at most (level 0 expands the root only; the beam
    holds at most w branches), e = calls per expansion (1 for ``"propose"``, b for
    ``"sample"``):

    * ``scoring="batched"``: at most E·e + d + 1 calls (one scoring call per level,
      one ``final_answer``). propose: 1 + w·(d−1) + d + 1; defaults (b=3, w=2, d=3): 9.
      sample: b·(1 + w·(d−1)) + d + 1; defaults: 19.
    * ``scoring="per_branch"`` (the seed's one scoring call per candidate): at most
      E·(e + b) + 1. sample: 2·b·(1 + w·(d−1)) + 1; defaults: 31; with w = 1 this is the
      seed's d·b·2 + 1 (19 for b=3, d=3). propose: (1 + b)·(1 + w·(d−1)) + 1; defaults: 21.

    ``call_budget(...)`` computes the bound. It holds whatever the model replies:
    "propose" makes one call per branch and keeps at most b thoughts, "sample" makes b,
    each scoring request is capped at one call, the beam holds at most w branches.
    An ``ANSWER:`` stops before scoring its level, so runs that find one spend less.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        n_branches: Candidate thoughts generated per branch and level (b).
        beam_width: Branches kept per level (w), 1..n_branches.
        max_depth: Levels of thoughts before an answer is forced (d).
        scoring: ``"batched"`` (one call scores all candidates of a level) or
            ``"per_branch"`` (one call per candidate, concurrently).
        generation: ``"propose"`` (one call lists b thoughts) or ``"sample"`` (b
            concurrent calls, one thought each).
        **options: The shared options of ``LoopOptions`` (``checkpointer``, ``store``,
            ``name``, ``state_schema``, ``context_schema``, ``response_format``,
            ``system_prompt``, ``retry_policy``).

    Returns:
        The compiled graph. Input ``{"messages": [...]}`` (the last user message is the
        problem); output adds ``answer``, ``status``, ``llm_calls``, ``usage``,
        ``branches`` (the beam: ``{"thoughts", "score"}``, best first), ``depth``,
        ``candidates`` (of the last level), ``best_path`` and ``stop_reason``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    settings = make_settings("tot", model, None, options, takes_tools=False)
    check_positive("n_branches", n_branches)
    check_positive("beam_width", beam_width)
    check_positive("max_depth", max_depth)
    if beam_width > n_branches:
        raise ValueError(
            f"beam_width must be <= n_branches ({n_branches}); got {beam_width}: the first "
            "level has only n_branches candidates"
        )
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}; got {scoring!r}")
    if generation not in GENERATIONS:
        raise ValueError(f"generation must be one of {', '.join(GENERATIONS)}; got {generation!r}")
    builder = build_tot(
        settings,
        n_branches=n_branches,
        beam_width=beam_width,
        max_depth=max_depth,
        scoring=scoring,
        generation=generation,
        options=options,
    )
    return compile_loop(builder, settings, options, default_name="tot")


__all__ = ["Branch", "ToTOutput", "ToTState", "call_budget", "create_tot_graph", "parse_thoughts"]
