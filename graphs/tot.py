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

Each step is a function of its own: ``opening`` (``prepare``'s starting values), ``expand``
(one branch's task), ``score_branches`` (closing a level), ``final_answer`` (the
best-effort finish) and the router ``LevelRouter.next_level``; every ending with an answer
writes ``finish``'s update. The steps that read the graph's options take them as
``options`` (``SearchOptions``), bound by ``build_tot``, which only wires the graph. The
state's types are in ``loopgraphs.graphs.tot_state``, the scoring in ``tot_scoring``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, NamedTuple, TypeAlias, cast, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy, Send
from typing_extensions import Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.graphs.tot_scoring import in_parallel, render_path, score_all, score_each
from loopgraphs.graphs.tot_state import Branch, Candidate, Expansion, Growing, ToTOutput, ToTState
from loopgraphs.models import needs_guided_steps
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicFactory, LogicOf, Request, add_step, as_node, guard
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import answer_message, call_model, spent_together
from loopgraphs.nodes.history import earlier_turns
from loopgraphs.nodes.hooks import LoopGraph
from loopgraphs.nodes.model_call import ModelCall, ModelCaller
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
    ModelSpend,
    ResponseT,
    Status,
    empty_usage,
    request_of,
)
from loopgraphs.text import question_text

Scoring: TypeAlias = Literal["batched", "per_branch"]
Generation: TypeAlias = Literal["propose", "sample"]
SCORINGS: tuple[str, ...] = get_args(Scoring)
GENERATIONS: tuple[str, ...] = get_args(Generation)
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


ToTGraph: TypeAlias = CompiledStateGraph[ToTState, ContextT, LoopInput, ToTOutput[ResponseT]]
"""The compiled graph ``create_tot_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


@dataclass(frozen=True)
class SearchOptions:
    """The build-time options of a Tree-of-Thoughts graph (see ``create_tot_graph``),
    checked when made.

    Attributes:
        n_branches: Candidate thoughts generated per branch and level (b).
        beam_width: Branches kept per level (w), 1..n_branches.
        max_depth: Levels of thoughts before an answer is forced (d).
        scoring: ``"batched"`` (one call per level) or ``"per_branch"`` (one per candidate).
        generation: ``"propose"`` (one call lists b thoughts) or ``"sample"`` (b calls).

    Raises:
        TypeError, ValueError: an option is of the wrong type or out of range.
    """

    n_branches: int = 3
    beam_width: int = 2
    max_depth: int = 3
    scoring: Scoring = "batched"
    generation: Generation = "propose"

    def __post_init__(self) -> None:
        for name, count in (
            ("n_branches", self.n_branches),
            ("beam_width", self.beam_width),
            ("max_depth", self.max_depth),
        ):
            check_positive(name, count)
        if self.beam_width > self.n_branches:
            raise ValueError(
                f"beam_width must be <= n_branches ({self.n_branches}); got {self.beam_width}: "
                "the first level has only n_branches candidates"
            )
        for name, value, known in (
            ("scoring", self.scoring, SCORINGS),
            ("generation", self.generation, GENERATIONS),
        ):
            if value not in known:
                raise ValueError(f"{name} must be one of {', '.join(known)}; got {value!r}")


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


# --- starting the search and going on ---------------------------------------------------


def opening(state: ToTState, step: Step) -> dict[str, object]:
    """The search's starting values (the root alone in the beam), written by ``prepare``.

    A run whose last user message has no text ends with ``status="error"``; when the
    budget allows no level, the search stops at once (``stop_reason="step_limit"``), and
    when it does not even allow ``final_answer``, the run ends ``"max_iterations"``.
    """
    run = step.run
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
    elif not run.budget.allows(state, steps=LEVEL_STEPS):
        update["stop_reason"] = "step_limit"
        if not run.budget.allows(state, steps=ANSWER_STEPS):
            update["status"] = "max_iterations"
    return update


def expansions(state: ToTState) -> list[Send]:
    """One ``expand`` task per branch of the beam, each given the run's state (as the
    ``before_model`` hooks left it) and its branch."""
    return [
        Send("expand", Expansion(**state, branch=Growing(thoughts=branch["thoughts"], parent=i)))
        for i, branch in enumerate(state.get("branches") or [])
    ]


@dataclass(frozen=True)
class LevelRouter:
    """How the search goes on after ``prepare`` and after each level's scoring.

    Attributes:
        hooked: Whether ``before_model`` hooks run before a level: their last node then
            sends the level's tasks (see ``LoopGraph.add_model_step``).
    """

    hooked: bool

    def next_level(self, state: ToTState) -> str | list[Send]:
        """Expand the beam again, or answer once the search has stopped (after ``prepare``
        the only stop reason is "step_limit")."""
        if state.get("status") != "running":
            return END
        if state.get("stop_reason"):
            return "final_answer"
        return "expand" if self.hooked else expansions(state)


# --- expanding a branch -----------------------------------------------------------------


@dataclass(frozen=True)
class Asking:
    """How an ``expand`` task asks for the next thoughts of its branch.

    Attributes:
        ask: The step's model calls.
        history: The conversation's earlier turns, read before the prompt.
        problem: The problem as the run's last request shows it.
        shown: The branch's thoughts, numbered (``render_path``).
        small: Whether the model is a small one whose thought replies are capped.
    """

    ask: ModelCaller
    history: list[AnyMessage]
    problem: str
    shown: str
    small: bool

    def call(self, text: str, capped: Mapping[str, object]) -> ModelCall:
        """A proposal call with the prompt ``text``, its reply ``capped`` on a small model."""
        form = RequestForm(prompts.TOT_SYSTEM)
        model_settings = capped if self.small else None
        asked = [*self.history, HumanMessage(text)]
        return self.ask.call(asked, form, model_settings=model_settings, purpose="proposal")


class Thoughts(NamedTuple):
    """The next thoughts proposed for a branch: their ``texts``, whether the reply was
    ``cut`` short (none of them is then taken as an answer), and the calls' ``spend``."""

    texts: list[str]
    cut: bool
    spend: ModelSpend


def propose_thoughts(asking: Asking, count: int) -> Generator[Request, Any, Thoughts]:
    """The "propose" generation: one call lists ``count`` next thoughts."""
    text = prompts.TOT_PROPOSE.format(problem=asking.problem, path=asking.shown, n=count)
    reply, spend = yield from call_model(asking.call(text, proposal_settings(count)))
    return Thoughts(parse_thoughts(content_text(reply.content), count), cut_short(reply), spend)


def sample_thoughts(asking: Asking, count: int) -> Generator[Request, Any, Thoughts]:
    """The "sample" generation: ``count`` concurrent calls, one thought each. A reply cut
    short is left out, a failed call counts its requests; when every call failed, the
    first failure is raised."""
    texts = [
        prompts.TOT_SAMPLE.format(problem=asking.problem, path=asking.shown, k=k, n=count)
        for k in range(1, count + 1)
    ]
    capped = {"max_tokens": THOUGHT_TOKENS, "stop": [THOUGHT_END]}
    outcomes = yield from in_parallel([call_model(asking.call(text, capped)) for text in texts])
    answered = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
    if not answered:
        raise all_failed(outcomes)
    spend: ModelSpend = {"llm_calls": failed_requests(outcomes), "usage": empty_usage()}
    for _, part in answered:
        spend = spent_together(spend, part)
    said = (content_text(reply.content).strip() for reply, _ in answered if not cut_short(reply))
    return Thoughts([text[:MAX_THOUGHT_CHARS] for text in said if text], False, spend)


def expand(payload: Expansion, step: Step, *, options: SearchOptions) -> LogicOf[ToTState]:
    """Grow one branch of the beam (an ``expand`` task): ask for ``n_branches`` next
    thoughts and make each a candidate, its ``answer`` the thought's ``ANSWER:`` (none when
    the reply was cut short)."""
    state = {key: value for key, value in payload.items() if key != "branch"}
    branch = payload["branch"]
    asking = Asking(
        ask=step.ask(state),
        history=earlier_turns(state, step.run),
        problem=request_of(state),
        shown=render_path(branch["thoughts"]),
        small=needs_guided_steps(step.run.chat_model),
    )
    if options.generation == "propose":
        thoughts = yield from propose_thoughts(asking, options.n_branches)
    else:
        thoughts = yield from sample_thoughts(asking, options.n_branches)
    candidates = [
        Candidate(
            thoughts=[*branch["thoughts"], thought],
            score=None,
            parent=branch["parent"],
            index=index,
            answer="" if thoughts.cut else answer_in(thought) or "",
        )
        for index, thought in enumerate(thoughts.texts)
    ]
    return {**thoughts.spend, "candidates": candidates}


def as_failure(update: ToTState) -> ToTState:
    """A concurrent task's update as its level keeps it: an error becomes a failure record
    (the level's scoring ends the run with it), so no task's status write clobbers
    another's; any other update stays as it is."""
    if update.get("status") != "error":
        return update
    failed: ToTState = {
        "failures": [update.get("error") or "expansion failed"],
        "llm_calls": update.get("llm_calls", 0),
        "retries": update.get("retries", 0),
    }
    if "messages" in update:  # a refusal's reply, which the chat shows
        failed["messages"] = update["messages"]
    return failed


def contained(logic: LogicFactory, policy: RetryPolicy | None) -> LogicFactory:
    """Guard a concurrent task (see ``guard``): its error becomes a failure record
    (``as_failure``), not a status write."""
    guarded = guard(logic, policy)

    def run(state: ToTState, step: Step) -> LogicOf[ToTState]:
        # The task's own update, or the guard's (its error, or the task's update with the
        # retries counted): keys of the loop's state either way.
        return as_failure(cast(ToTState, (yield from guarded(state, step))))

    return run


# --- closing a level, and finishing -----------------------------------------------------


def ranked(
    candidates: list[Candidate], scores: list[int], beam_width: int
) -> tuple[list[Candidate], list[Branch]]:
    """The candidates with their scores, and the ``beam_width`` best as the new beam, best
    first (ties go to the earlier candidate)."""
    scored = [
        Candidate(**{**c, "score": float(s)}) for c, s in zip(candidates, scores, strict=True)
    ]
    order = sorted(range(len(scored)), key=lambda i: -float(scores[i]))
    beam = [
        Branch(thoughts=scored[i]["thoughts"], score=float(scores[i])) for i in order[:beam_width]
    ]
    return scored, beam


def score_branches(state: ToTState, step: Step, *, options: SearchOptions) -> LogicOf[ToTState]:
    """Close a level: the first candidate holding an answer ends the search (``finish``);
    a failed task ends the run with its error; otherwise the candidates are scored and
    the best ``beam_width`` kept. The search stops at ``max_depth`` levels, when the run's
    budget allows no further level, or (no candidates) at a dead end."""
    depth = state.get("depth", 0) + 1
    candidates = sorted(state.get("candidates") or [], key=lambda c: (c["parent"], c["index"]))
    answering = next((c for c in candidates if c.get("answer")), None)
    if answering is not None:
        answer = answering["answer"]
        said = AIMessage(answer, name=step.run.agent_name)
        found = finish(state, answering["thoughts"], answer, "completed", said)
        return {**found, "depth": depth, "stop_reason": "answer"}
    failures = state.get("failures") or []
    if failures:
        return {"status": "error", "error": failures[0], "depth": depth}
    if not candidates:
        return {"depth": depth, "stop_reason": "dead_end"}
    paths = [c["thoughts"] for c in candidates]
    ask, history = step.ask(state), earlier_turns(state, step.run)
    if options.scoring == "batched":
        scores, update = yield from score_all(ask, request_of(state), paths, history=history)
    else:
        scores, update = yield from score_each(ask, request_of(state), paths, history=history)
    scored, beam = ranked(candidates, scores, options.beam_width)
    result: ToTState = {
        **update,
        "branches": beam,
        "depth": depth,
        "best_path": beam[0]["thoughts"],
    }
    if depth >= options.max_depth:
        return {**result, "candidates": scored, "stop_reason": "max_depth"}
    if not step.run.budget.allows(state, steps=LEVEL_STEPS):
        return {**result, "candidates": scored, "stop_reason": "step_limit"}
    # None empties the list (see ``extend_candidates``): an update the state's type
    # does not name.
    return {**result, "candidates": None}  # type: ignore[typeddict-item]


def finish(
    state: ToTState, path: list[str], answer: str, status: Status, message: AIMessage
) -> ToTState:
    """The update every ending of the search with an answer writes: the ``answer`` reached
    along ``path`` (the best path), the run's ``status``, the ``message`` the chat shows,
    and the problem as the run's last request showed it."""
    return {
        "answer": answer,
        "status": status,
        "messages": [message],
        "best_path": path,
        "problem": request_of(state),
    }


def final_answer(state: ToTState, step: Step) -> LogicOf[ToTState]:
    """The search's best-effort finish (after ``max_depth`` levels, a dead end or the step
    limit): ask the best branch for the answer.

    ``status="completed"`` when the reply gives text and the step limit did not stop the
    search, else ``"max_iterations"``; a reply cut short counts as no text, and without
    text the best branch's last thought is the answer.
    """
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
    # The streamed reply, kept under its id with the answer as its text.
    return {**update, **finish(state, path, answer, status, answer_message(reply, answer))}


def build_tot(
    settings: LoopSettings, search: SearchOptions, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled Tree-of-Thoughts graph: its steps, bound to ``search``, wired."""
    policy: RetryPolicy | None = settings.retry_policy
    router = LevelRouter(hooked=bool(settings.middleware.with_hook("before_model"))).next_level
    expanding = contained(partial(expand, options=search), policy)
    builder = new_graph(ToTState, ToTOutput, options or {}, loop="tot", settings=settings)
    builder.add_node(
        "expand", as_node("expand", expanding, settings, guarded=False), retry_policy=policy
    )
    if isinstance(builder, LoopGraph):
        builder.add_model_step("expand", fan_out=expansions)
    scoring = partial(score_branches, options=search)
    add_step(builder, "score_branches", scoring, settings, model_step=True)
    add_step(builder, "final_answer", final_answer, settings, model_step=True)
    # ``prepare`` reads the whole state, so the first level's tasks get the caller's keys.
    add_start(builder, settings, opening, router, ["expand", "final_answer"])
    builder.add_edge("expand", "score_branches")
    route(builder, "score_branches", router, ["expand", "final_answer"])
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
        search = SearchOptions(n_branches, beam_width, max_depth, scoring, generation)
        return build_tot(settings, search, options)

    return compiled_loop("tot", build, model, None, options, takes_tools=False)


__all__ = ["Branch", "ToTOutput", "ToTState", "call_budget", "create_tot_graph"]
