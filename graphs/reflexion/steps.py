"""Reflexion's steps and router: an episode (a whole ReAct run), its evaluation (the
kit's ``evaluate``), a reflection on a failed one (the kit's ``reflect``).

The episode needs the ReAct loop it runs: an ``InnerLoop`` compiled once, when the graph
is wired. The episode step is the method of ``Episodes``, the small frozen object that
holds it: ``wire`` makes one and hands its bound ``generate`` to the graph, and a test
makes one over the ``InnerLoop`` it wants. The other steps are functions of the state
and its ``Step``, which read the loop's keywords from ``step.options``.

Where the reflections go: the ReAct loop's system prompt stays exactly the same in every
episode, and the reflections are written into the latest user message, ahead of the
question. A per-episode ``system_prompt`` would need a differently configured (and
recompiled) inner loop per episode and would change the first tokens of every prompt,
which defeats prompt caching; a separate user message before the question would give two
user turns in a row, which strict chat templates reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from loopgraphs import prompts
from loopgraphs.graphs.reflexion.state import (
    EVALUATOR_CALLS,
    Evaluation,
    ReflexionOptions,
    ReflexionState,
)
from loopgraphs.nodes import (
    END,
    EVALUATION_FAILED,
    InnerLoop,
    LogicOf,
    Step,
    Verdict,
    content_text,
    conversation_of,
    ended_by_hook,
    evaluate,
    reflect,
)
from loopgraphs.text import question_text

NO_ATTEMPT = "the attempt gave no answer"
LESSONS_ID = ":lessons"  # suffix of the id of a user message given with the reflections

ReflexionStep = Step[ReflexionOptions[Any, Any]]


def opening(state: ReflexionState, step: ReflexionStep) -> ReflexionState:
    """The run's starting values: the request, and no episode yet."""
    return {
        "request": question_text(state.get("messages", [])),
        "episode": 0,
        "reflections": [],
        "evaluations": [],
        "episode_answers": [],
    }


@dataclass(frozen=True)
class Episodes:
    """The ReAct loop every episode runs, and the step that runs it.

    ``wire`` compiles the ``InnerLoop`` once (the run's ``max_iterations`` as its own) and
    binds ``generate`` as the graph's ``generate`` step.

    Attributes:
        react: The ReAct loop an episode runs.
    """

    react: InnerLoop

    def generate(self, state: ReflexionState, step: ReflexionStep) -> LogicOf[ReflexionState]:
        """One episode: a whole ReAct run on the conversation, with the lessons so far
        written into the latest user message; its turns stream as this step's."""
        conversation = conversation_of(state)
        episode_input = with_reflections(conversation, state.get("reflections") or [])
        out, spent = yield from self.react.run(step, state, episode_input, relay=True)
        answers = list(state.get("episode_answers") or [])
        status = out.get("status") or "error"
        carried, start = episode_update(conversation, episode_input, out.get("messages") or [])
        # ``carried`` may start with a ``RemoveMessage``: an update the messages reducer
        # takes, which the state's message type does not name.
        update: ReflexionState = {
            **spent,
            "episode": state.get("episode", 0) + 1,
            "messages": carried,  # type: ignore[typeddict-item]
        }
        if start is not None:
            update["scratch"] = {**spent.get("scratch", {}), "transcript_start": start}
        if status == "error":
            return {
                **update,
                "status": "error",
                "error": out.get("error") or "the episode failed",
                "answer": out.get("answer") or (answers[-1] if answers else ""),
            }
        answer = str(out.get("answer") or "")
        if ended_by_hook(out):  # a middleware limit ended the episode: the run ends here
            answer = answer or (answers[-1] if answers else "")
        return {**update, "episode_answers": [*answers, answer], "answer": answer}


def evaluation_record(verdict: Verdict | None) -> Evaluation:
    """The state record of a verdict; no verdict counts as not satisfactory."""
    if verdict is None:
        return Evaluation(satisfactory=False, feedback=EVALUATION_FAILED)
    return Evaluation(satisfactory=bool(verdict.satisfactory), feedback=verdict.feedback.strip())


def judge(state: ReflexionState, step: ReflexionStep) -> LogicOf[ReflexionState]:
    """Evaluate the episode's answer (an answer that says nothing is not satisfactory,
    without a call); end the run on a satisfactory one, or when the episodes or the run
    budget are spent (``status="max_iterations"``)."""
    answer = state.get("answer", "")
    update: ReflexionState = {}
    if answer.strip():
        result = yield from evaluate(step, state, answer, schema=Verdict, max_calls=EVALUATOR_CALLS)
        record, update = evaluation_record(result.value), {**result.spent}
    else:
        record = Evaluation(satisfactory=False, feedback=NO_ATTEMPT)
    update["evaluations"] = [*(state.get("evaluations") or []), record]
    if record["satisfactory"]:
        update["status"] = "completed"
    elif state.get("episode", 0) >= step.options["max_reflections"] or not step.may_continue(state):
        update["status"] = "max_iterations"
    return update


def learn(state: ReflexionState, step: ReflexionStep) -> LogicOf[ReflexionState]:
    """Write the lesson of the failed episode (the kit's ``reflect`` on its answer and
    the evaluator's feedback) for the next one."""
    evaluations = state.get("evaluations") or []
    feedback = evaluations[-1]["feedback"] if evaluations else ""
    reflection = yield from reflect(step, state, state.get("answer", ""), feedback)
    return {
        **reflection.spent,
        "reflections": [*(state.get("reflections") or []), reflection.text],
    }


def route_judged(state: ReflexionState) -> str:
    """After the evaluation: a reflection while the run goes on, else the end."""
    return "reflect" if state.get("status") == "running" else END


def with_reflections(
    conversation: Sequence[AnyMessage], reflections: Sequence[str]
) -> list[AnyMessage]:
    """The episode's input: the conversation with the lessons written into the latest user
    message, ahead of its text (a new message; the caller's is left untouched)."""
    messages = list(conversation)
    if not reflections:
        return messages
    block = prompts.REFLECTIONS_BLOCK.format(lessons="\n".join(f"- {text}" for text in reflections))
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, str):
                merged: str | list[str | dict[str, object]] = block + content
            else:
                merged = [{"type": "text", "text": block}, *content]
            copy_id = f"{message.id}{LESSONS_ID}" if message.id else None
            messages[index] = message.model_copy(update={"content": merged, "id": copy_id})
            return messages
    return [*messages, HumanMessage(block.rstrip())]


def episode_update(
    conversation: Sequence[AnyMessage],
    episode_input: Sequence[AnyMessage],
    produced: Sequence[AnyMessage],
) -> tuple[list[BaseMessage], int | None]:
    """The conversation's update for an episode that took ``episode_input`` and ended
    with ``produced``, and where the run's transcript now starts (None: unchanged).

    Usually the episode kept its input and added its transcript: the update is what it
    added, plus any input message a middleware changed in place (a redacted address).
    When a middleware rewrote the input (a summary replacing old messages), the
    conversation becomes the episode's messages (all replaced), and the transcript starts
    after the last input message that is left. A user message given with the reflections
    goes back as the user wrote it, with a middleware's change kept.
    """
    originals = {message.id: message for message in conversation if message.id}

    def restored(message: AnyMessage) -> AnyMessage:
        if not (message.id and message.id.endswith(LESSONS_ID)):
            return message
        original = originals.get(message.id[: -len(LESSONS_ID)])
        if original is None:
            return message
        given = next(m for m in episode_input if m.id == message.id)
        if message.content == given.content:
            return original
        content = message.content
        block, _, _ = content_text(given.content).partition(content_text(original.content))
        if isinstance(content, str) and block and content.startswith(block):
            content = content[len(block) :]
        return original.model_copy(update={"content": content})

    size = len(episode_input)
    if [m.id for m in produced[:size]] == [m.id for m in episode_input]:
        changed = [
            restored(after)
            for before, after in zip(episode_input, produced[:size], strict=True)
            if after != before
        ]
        return [*changed, *produced[size:]], None
    kept_ids = {message.id for message in episode_input}
    kept = [index for index, message in enumerate(produced) if message.id in kept_ids]
    if kept:
        start = kept[-1] + 1
    else:
        start = next(
            (i for i, m in enumerate(produced) if not isinstance(m, HumanMessage)), len(produced)
        )
    rewritten: list[BaseMessage] = [RemoveMessage(id=REMOVE_ALL_MESSAGES)]
    rewritten += [restored(message) for message in produced]
    return rewritten, start
