"""Tree-of-Thoughts' steps: open the search, grow each branch of the beam (one ``expand``
task per branch, side by side), close a level (an answer, or the scores and the new
beam), and ask the best branch for the answer when the search stops without one.

Every model request carries the run's state and is built from the conversation as it is
when the request is made, so middleware sees and shapes all of them: each step (a level's
expansion, its scoring, the final answer) gets the ``before_model`` and ``after_model``
hooks once, a level's expansion tasks starting after its ``before_model`` hooks.
"""

from __future__ import annotations

from functools import partial

from langchain_core.messages import AIMessage
from langgraph.types import Send

from loopgraphs import prompts
from loopgraphs.graphs.tot.state import (
    Branch,
    Candidate,
    Expansion,
    Growing,
    ToTState,
    ToTStep,
)
from loopgraphs.graphs.tot.thoughts import (
    asked,
    level_prompt,
    next_thoughts,
    render_path,
    step_prompt,
)
from loopgraphs.nodes import (
    END,
    LogicOf,
    Status,
    answer_message,
    generate,
    request_of,
    score_branches,
)
from loopgraphs.nodes.parsing.thoughts import answer_in
from loopgraphs.text import question_text


def opening(state: ToTState, step: ToTStep) -> ToTState:
    """The search's starting values (the root alone in the beam), written by ``prepare``.

    A run whose last user message has no text ends with ``status="error"``; when the
    budget allows no level, the search stops at once (``stop_reason="step_limit"``; the
    kit ends the run ``"max_iterations"`` when it does not even allow ``final_answer``).
    """
    update: ToTState = {
        "problem": question_text(state.get("messages", [])),
        "branches": [Branch(thoughts=[], score=0.0)],
        "depth": 0,
        "candidates": None,  # type: ignore[typeddict-item]  # None empties the list
        "best_path": [],
        "stop_reason": "",
    }
    if not update["problem"]:
        update.update({"status": "error", "error": "the last user message has no text"})
    elif not step.may_continue(state):
        update["stop_reason"] = "step_limit"
    return update


def route_level(state: ToTState, step: ToTStep) -> str:
    """After ``prepare`` and after each level: expand the beam again (one ``expand`` task
    per branch, see ``expansions``), or answer once the search has stopped (after
    ``prepare`` the only stop reason is "step_limit"); the end once the run is over."""
    if state.get("status") != "running":
        return END
    return "final_answer" if state.get("stop_reason") else "expand"


def expansions(state: ToTState) -> list[Send]:
    """One ``expand`` task per branch of the beam, each given the run's state (as the
    ``before_model`` hooks left it) and its branch."""
    return [
        Send("expand", Expansion(**state, branch=Growing(thoughts=branch["thoughts"], parent=i)))
        for i, branch in enumerate(state.get("branches") or [])
    ]


def expand(payload: Expansion, step: ToTStep) -> LogicOf[ToTState]:
    """Grow one branch of the beam (an ``expand`` task): ask for ``n_branches`` next
    thoughts and make each a candidate, its ``answer`` the thought's ``ANSWER:`` (none when
    the reply was cut short)."""
    state: ToTState = {key: value for key, value in payload.items() if key != "branch"}  # type: ignore[assignment]
    branch = payload["branch"]
    thoughts = yield from next_thoughts(state, step, branch["thoughts"])
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
    return {**thoughts.spent, "candidates": candidates}


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


def close_level(state: ToTState, step: ToTStep) -> LogicOf[ToTState]:
    """Close a level (the ``score_branches`` step): the first candidate holding an answer
    ends the search (``finish``); a failed task ends the run with its error; otherwise the
    candidates are scored (one call for the level, or one each: ``scoring``) and the best
    ``beam_width`` kept. The search stops at ``max_depth`` levels, when the run's budget
    allows no further level, or (no candidates) at a dead end."""
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
    problem = request_of(state)
    scored = yield from score_branches(
        step,
        state,
        [c["thoughts"] for c in candidates],
        ask_all=partial(level_prompt, problem),
        ask_one=partial(step_prompt, problem),
        batched=step.options["scoring"] == "batched",
        instructions=prompts.TOT_SYSTEM,
    )
    kept, beam = ranked(candidates, scored.scores, step.options["beam_width"])
    result: ToTState = {
        **scored.spent,
        "branches": beam,
        "depth": depth,
        "best_path": beam[0]["thoughts"],
    }
    if depth >= step.options["max_depth"]:
        return {**result, "candidates": kept, "stop_reason": "max_depth"}
    if not step.may_continue(state):
        return {**result, "candidates": kept, "stop_reason": "step_limit"}
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


def final_answer(state: ToTState, step: ToTStep) -> LogicOf[ToTState]:
    """The search's best-effort finish (after ``max_depth`` levels, a dead end or the step
    limit): ask the best branch for the answer.

    ``status="completed"`` when the reply gives text and the step limit did not stop the
    search, else ``"max_iterations"``; a reply cut short counts as no text, and without
    text the best branch's last thought is the answer.
    """
    beam = state.get("branches") or [Branch(thoughts=[], score=0.0)]
    path = beam[0]["thoughts"]
    text = prompts.TOT_FORCE_ANSWER.format(problem=request_of(state), path=render_path(path))
    turn = yield from generate(
        step, state, asked(state, step, text), instructions=prompts.TOT_SYSTEM, again=False
    )
    answer = answer_in(turn.text) or turn.text
    status: Status = (
        "completed" if answer and state.get("stop_reason") != "step_limit" else "max_iterations"
    )
    if not answer:
        answer = path[-1] if path else ""
    # The streamed reply, kept under its id with the answer as its text.
    message = answer_message(turn.reply, answer)
    return {**turn.spent, **finish(state, path, answer, status, message)}


__all__ = [
    "close_level",
    "expand",
    "expansions",
    "final_answer",
    "finish",
    "opening",
    "ranked",
    "route_level",
]
