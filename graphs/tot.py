"""Tree-of-Thoughts: beam search over lines of reasoning.

Graph: ``prepare → expand (one task per beam branch, concurrent) → score_branches →
expand ... → final_answer``. A branch is a list of thoughts. Each level expands every
branch of the beam at once (LangGraph ``Send``), scores the new candidates, and keeps
the best ``beam_width``. A thought holding ``ANSWER:`` ends the search at once; when
``max_depth`` levels pass without one, ``final_answer`` asks the best branch for it.

Every model request carries the run's state and is built from the conversation as it is
when the request is made, so middleware sees and shapes all of them: each step (a level's
expansion, its scoring, the final answer) gets the ``before_model`` and ``after_model``
hooks once, a level's expansion tasks starting after its ``before_model`` hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Literal, TypeAlias, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy, Send
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.graphs.tot_scoring import in_parallel, render_path, score_all, score_each
from loopgraphs.models import needs_guided_steps
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicFactory, LogicOf, add_step, as_node, guard
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import answer_message, call_model
from loopgraphs.nodes.history import earlier_turns
from loopgraphs.nodes.hooks import LoopGraph
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.parsing.thoughts import MAX_THOUGHT_CHARS, answer_in, parse_thoughts
from loopgraphs.nodes.routing import route
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopOptions, LoopSettings, check_positive
from loopgraphs.nodes.step import Step
from loopgraphs.state import (
    LoopBuilder,
    LoopInput,
    LoopState,
    ResponseT,
    RunResult,
    Status,
    add_usage,
    empty_usage,
    request_of,
)
from loopgraphs.text import question_text

SCORINGS = ("batched", "per_branch")
GENERATIONS = ("propose", "sample")
# Graph steps that must still follow a node (see ``RunBudget.allows``).
LEVEL_STEPS = 3  # expand, score_branches, then final_answer
ANSWER_STEPS = 1  # final_answer
# Reply cap per proposed thought on the embedded small model, which otherwise writes on
# to its token cap after the last step asked for (512 tokens for three short steps).
THOUGHT_TOKENS = 32

# A reply ends where its thoughts do: at a blank line (SmolLM2 wrote on after its list
# with "Step 3: ..." and "The next step is ..." until the cap).
THOUGHT_END = "\n\n"


def proposal_settings(count: int) -> dict[str, object]:
    """Request settings of a proposal of ``count`` thoughts on the embedded small model:
    ``THOUGHT_TOKENS`` per thought, and the reply ends where the list does (a blank line,
    or the item after the last one asked for)."""
    return {"max_tokens": count * THOUGHT_TOKENS, "stop": [THOUGHT_END, f"\n{count + 1}."]}


StopReason = Literal["", "answer", "max_depth", "dead_end", "step_limit"]


class Branch(TypedDict):
    """One line of reasoning kept in the beam."""

    thoughts: list[str]
    score: float


class Candidate(TypedDict):
    """A next step proposed for a branch of the beam: the branch's thoughts with the new
    one, its ``score`` (None until scored), the beam index of the branch it grew from
    (``parent``), its place among that branch's proposals (``index``) and the answer it
    reaches ("" if none)."""

    thoughts: list[str]
    score: float | None
    parent: int
    index: int
    answer: str


class Growing(TypedDict):
    """The branch an ``expand`` task grows: its thoughts and its index in the beam."""

    thoughts: list[str]
    parent: int


def extend_candidates(
    left: list[Candidate] | None, right: list[Candidate] | None
) -> list[Candidate]:
    """Reducer: concurrent ``expand`` tasks add their (unscored) candidates; the scored
    candidates of a level replace them; ``None`` empties the list."""
    if right is None:
        return []
    if right and all(c["score"] is not None for c in right):
        return right
    return [*(left or []), *right]


def add_failures(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer: failures of concurrent tasks add up (one task's error never clobbers
    another); ``None`` empties the list (a run's first step)."""
    if right is None:
        return []
    return [*(left or []), *right]


class ToTFields(TypedDict, total=False):
    """The keys of its own that Tree-of-Thoughts' state and output hold (see ``ToTOutput``)."""

    problem: str
    branches: list[Branch]
    depth: int
    candidates: Annotated[list[Candidate], extend_candidates]
    best_path: list[str]
    stop_reason: StopReason


class ToTOutput(ToTFields, RunResult[ResponseT]):
    """Output of the Tree-of-Thoughts loop.

    ``branches`` is the beam (best first); ``candidates`` the last level's candidates
    (``thoughts``, ``score`` (None if unscored), ``parent``, ``index``, ``answer``);
    ``depth`` the levels expanded; ``best_path`` the thoughts of the best branch (or of
    the answering one); ``stop_reason`` why the search stopped; ``problem`` the question
    as the run's last request showed it (after the hooks: a redacted address stays
    redacted).
    """


class ToTState(ToTFields, LoopState, total=False):
    """State of the Tree-of-Thoughts loop: the output plus failures of concurrent tasks."""

    failures: Annotated[list[str], add_failures]


ToTGraph: TypeAlias = CompiledStateGraph[ToTState, ContextT, LoopInput, ToTOutput[ResponseT]]
"""The compiled graph ``create_tot_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


class Expansion(ToTState, total=False):
    """What an ``expand`` task is sent: the run's state and the branch it grows."""

    branch: Growing


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


def build_tot(
    settings: LoopSettings,
    *,
    n_branches: int,
    beam_width: int,
    max_depth: int,
    scoring: str,
    generation: str,
    options: Mapping[str, object] | None = None,
) -> LoopBuilder:
    """The uncompiled Tree-of-Thoughts graph."""
    policy: RetryPolicy | None = settings.retry_policy

    def opening(state: ToTState, run: LoopSettings) -> dict[str, object]:
        update: dict[str, object] = {
            "problem": question_text(state.get("messages", [])),
            "branches": [Branch(thoughts=[], score=0.0)],
            "depth": 0,
            "candidates": None,
            "best_path": [],
            "stop_reason": "",
            "failures": None,
        }
        if not update["problem"]:
            update.update(status="error", error="the last user message has no text")
        elif not settings.budget.allows(state, steps=LEVEL_STEPS):
            update["stop_reason"] = "step_limit"
            if not settings.budget.allows(state, steps=ANSWER_STEPS):
                update["status"] = "max_iterations"
        return update

    def expand(payload: Expansion, step: Step) -> LogicOf[ToTState]:
        run = step.run
        state = {key: value for key, value in payload.items() if key != "branch"}
        branch = payload["branch"]
        problem = request_of(state)
        ask = step.ask(state)
        form = RequestForm(prompts.TOT_SYSTEM)
        path = list(branch["thoughts"])
        shown = render_path(path)
        small = needs_guided_steps(run.chat_model)
        history = earlier_turns(state, run)
        if generation == "propose":
            text = prompts.TOT_PROPOSE.format(problem=problem, path=shown, n=n_branches)
            capped = proposal_settings(n_branches) if small else None
            reply, update = yield from call_model(
                ask.call(
                    [*history, HumanMessage(text)], form, model_settings=capped, purpose="proposal"
                )
            )
            thoughts = parse_thoughts(content_text(reply.content), n_branches)
            cut = cut_short(reply)
        else:
            requests = [
                HumanMessage(
                    prompts.TOT_SAMPLE.format(problem=problem, path=shown, k=k, n=n_branches)
                )
                for k in range(1, n_branches + 1)
            ]
            capped = {"max_tokens": THOUGHT_TOKENS, "stop": [THOUGHT_END]} if small else None
            outcomes = yield from in_parallel(
                [
                    call_model(
                        ask.call([*history, r], form, model_settings=capped, purpose="proposal")
                    )
                    for r in requests
                ]
            )
            answered = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
            if not answered:
                raise all_failed(outcomes)
            replies = [reply for reply, _ in answered if not cut_short(reply)]
            cut = False
            update = {
                "llm_calls": sum(part["llm_calls"] for _, part in answered),
                "usage": empty_usage(),
            }
            for _, part in answered:
                update["usage"] = add_usage(update["usage"], part["usage"])
            update["llm_calls"] += failed_requests(outcomes)
            thoughts = [
                text[:MAX_THOUGHT_CHARS]
                for text in (content_text(reply.content).strip() for reply in replies)
                if text
            ]
        candidates = [
            Candidate(
                thoughts=[*path, thought],
                score=None,
                parent=branch["parent"],
                index=index,
                answer="" if cut else answer_in(thought) or "",
            )
            for index, thought in enumerate(thoughts)
        ]
        return {**update, "candidates": candidates}

    def score_branches(state: ToTState, step: Step) -> LogicOf[ToTState]:
        depth = state.get("depth", 0) + 1
        candidates = sorted(state.get("candidates") or [], key=lambda c: (c["parent"], c["index"]))
        for candidate in candidates:
            if candidate.get("answer"):
                answer = candidate["answer"]
                return {
                    "status": "completed",
                    "answer": answer,
                    "problem": request_of(state),
                    "messages": [AIMessage(answer, name=settings.agent_name)],
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
        ask, history = step.ask(state), earlier_turns(state, step.run)
        if scoring == "batched":
            scores, update = yield from score_all(ask, request_of(state), paths, history=history)
        else:
            scores, update = yield from score_each(ask, request_of(state), paths, history=history)
        scored = [
            Candidate(**{**c, "score": float(s)}) for c, s in zip(candidates, scores, strict=True)
        ]
        order = sorted(range(len(scored)), key=lambda i: -float(scores[i]))
        beam = [
            Branch(thoughts=scored[i]["thoughts"], score=float(scores[i]))
            for i in order[:beam_width]
        ]
        result: ToTState = {
            **update,
            "branches": beam,
            "depth": depth,
            "best_path": beam[0]["thoughts"],
        }
        if depth >= max_depth:
            return {**result, "candidates": scored, "stop_reason": "max_depth"}
        if not settings.budget.allows(state, steps=LEVEL_STEPS):
            return {**result, "candidates": scored, "stop_reason": "step_limit"}
        # None empties the list (see ``extend_candidates``): an update the state's type
        # does not name.
        return {**result, "candidates": None}  # type: ignore[typeddict-item]

    def final_answer(state: ToTState, step: Step) -> LogicOf[ToTState]:
        beam = state.get("branches") or [Branch(thoughts=[], score=0.0)]
        path = beam[0]["thoughts"]
        text = prompts.TOT_FORCE_ANSWER.format(problem=request_of(state), path=render_path(path))
        asked = [*earlier_turns(state, step.run), HumanMessage(text)]
        reply, update = yield from call_model(
            step.ask(state).call(asked, RequestForm(prompts.TOT_SYSTEM))
        )
        said = "" if cut_short(reply) else content_text(reply.content).strip()
        answer = answer_in(said) or said
        status: Status = (
            "completed" if answer and state.get("stop_reason") != "step_limit" else "max_iterations"
        )
        if not answer:
            answer = path[-1] if path else ""
        return {
            **update,
            "answer": answer,
            "status": status,
            # The streamed reply, kept under its id with the answer as its text.
            "messages": [answer_message(reply, answer)],
            "best_path": path,
            "problem": request_of(state),
        }

    def contained(logic: Callable[[Expansion, Step], LogicOf[ToTState]]) -> LogicFactory:
        """Guard a concurrent task: its error becomes a failure record, not a status write."""
        guarded = guard(logic, policy)

        def run(state: ToTState, step: Step) -> LogicOf[ToTState]:
            # The task's own update, or the guard's (its error, or the task's update with
            # the retries counted): keys of the loop's state either way.
            update = cast(ToTState, (yield from guarded(state, step)))
            if update.get("status") == "error":
                failed: ToTState = {
                    "failures": [update.get("error") or "expansion failed"],
                    "llm_calls": update.get("llm_calls", 0),
                    "retries": update.get("retries", 0),
                }
                if "messages" in update:  # a refusal's reply, which the chat shows
                    failed["messages"] = update["messages"]
                return failed
            return update

        return run

    def expansions(state: ToTState) -> list[Send]:
        """One ``expand`` task per branch of the beam, each given the run's state (as the
        ``before_model`` hooks left it) and its branch."""
        return [
            Send(
                "expand", Expansion(**state, branch=Growing(thoughts=branch["thoughts"], parent=i))
            )
            for i, branch in enumerate(state.get("branches") or [])
        ]

    # With ``before_model`` hooks a level enters them once, and their last node sends
    # the tasks (see ``LoopGraph.add_model_step``).
    hooked = bool(settings.middleware.with_hook("before_model"))

    def next_level(state: ToTState) -> str | list[Send]:
        """Expand the beam again, or answer once the search has stopped (after ``prepare``
        the only stop reason is "step_limit")."""
        if state.get("status") != "running":
            return END
        if state.get("stop_reason"):
            return "final_answer"
        return "expand" if hooked else expansions(state)

    builder = new_graph(ToTState, ToTOutput, options or {}, loop="tot", settings=settings)
    builder.add_node(
        "expand", as_node("expand", contained(expand), settings, guarded=False), retry_policy=policy
    )
    if isinstance(builder, LoopGraph):
        builder.add_model_step("expand", fan_out=expansions)
    add_step(builder, "score_branches", score_branches, settings, model_step=True)
    add_step(builder, "final_answer", final_answer, settings, model_step=True)
    # ``prepare`` reads the whole state, so the first level's tasks get the caller's keys.
    add_start(builder, settings, opening, next_level, ["expand", "final_answer"])
    builder.add_edge("expand", "score_branches")
    route(builder, "score_branches", next_level, ["expand", "final_answer"])
    builder.add_edge("final_answer", END)
    return builder


def create_tot_graph(
    model: BaseChatModel | str | None,
    *,
    n_branches: int = 3,
    beam_width: int = 2,
    max_depth: int = 3,
    scoring: Literal["batched", "per_branch"] = "batched",
    generation: Literal["propose", "sample"] = "propose",
    **options: Unpack[LoopOptions[ResponseT, ContextT]],
) -> ToTGraph[ContextT, ResponseT]:
    """Build the Tree-of-Thoughts loop: a beam search over lines of reasoning.

    Level by level, every branch of the beam (the root alone at level 0) is expanded
    concurrently into ``n_branches`` candidate next thoughts, the candidates are scored
    0..10, and the ``beam_width`` best are kept (ties go to the earlier candidate). A
    thought holding ``ANSWER:`` ends the search at once with ``status="completed"``.
    After ``max_depth`` levels without one, one ``final_answer`` call asks the best
    branch for the answer: ``status="completed"`` when it gives text (the search ended
    by design), else ``"max_iterations"`` with the best branch's last thought as the
    answer. A reply cut at the token cap (``finish_reason="length"``, or text repeating
    itself until the cap) gives no answer: its thoughts are scored, not taken as the
    answer, and a cut ``final_answer`` reply counts as no text. A level with no
    candidates at all also goes to ``final_answer``. When the run's ``recursion_limit``
    is too low for another level, the search stops early and
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
            ``system_prompt``, ``retry_policy``, ``max_history_tokens``). Every proposal,
            scoring and final-answer call reads the user's earlier turns and the answers
            they got before its prompt; ``max_history_tokens`` bounds them (None: all).

    Returns:
        The compiled graph. Input ``{"messages": [...]}`` (the last user message is the
        problem); output adds ``answer``, ``status``, ``llm_calls``, ``usage``,
        ``branches`` (the beam: ``{"thoughts", "score"}``, best first), ``depth``,
        ``candidates`` (of the last level), ``best_path`` and ``stop_reason``.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """

    def build(settings: LoopSettings) -> LoopBuilder:
        for name, count in (
            ("n_branches", n_branches),
            ("beam_width", beam_width),
            ("max_depth", max_depth),
        ):
            check_positive(name, count)
        if beam_width > n_branches:
            raise ValueError(
                f"beam_width must be <= n_branches ({n_branches}); got {beam_width}: the first "
                "level has only n_branches candidates"
            )
        for name, value, known in (
            ("scoring", scoring, SCORINGS),
            ("generation", generation, GENERATIONS),
        ):
            if value not in known:
                raise ValueError(f"{name} must be one of {', '.join(known)}; got {value!r}")
        return build_tot(
            settings,
            n_branches=n_branches,
            beam_width=beam_width,
            max_depth=max_depth,
            scoring=scoring,
            generation=generation,
            options=options,
        )

    return compiled_loop("tot", build, model, None, options, takes_tools=False)


__all__ = ["Branch", "ToTOutput", "ToTState", "call_budget", "create_tot_graph"]
