"""Reflexion: answer with ReAct, judge the answer, reflect on a failure, try again.

Graph: ``prepare → generate → evaluate → (END | reflect → generate …)``. Each visit of
``generate`` is one episode: a full run of the compiled ReAct subgraph on the
conversation, with the reflections written so far placed in the user's turn. ``evaluate``
asks for a SATISFACTORY/UNSATISFACTORY verdict (``evaluate_answer``: structured output with
a text fallback); ``reflect`` turns the feedback into a lesson for the next episode
(``reflect_on``).

Where the reflections go: the ReAct subgraph's system prompt stays exactly the same in
every episode, and the reflections are written into the latest user message, ahead of the
question. A per-episode ``system_prompt`` would need a differently configured (and
recompiled) subgraph per episode and would change the first tokens of every prompt, which
defeats prompt caching; a separate user message before the question would give two user
turns in a row, which strict chat templates reject.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from functools import partial
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import compiled_loop
from loopgraphs.graphs.react import LOOP as REACT
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, add_step
from loopgraphs.nodes.generate import call_model
from loopgraphs.nodes.history import earlier_turns
from loopgraphs.nodes.inner import InnerLoop, ended_by_hook
from loopgraphs.nodes.model_call import ModelCall, ModelCaller, caller_for
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.answers import normalise_reflection, parse_verdict
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_positive
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import StructuredResult, structured_call
from loopgraphs.state import (
    LoopBuilder,
    LoopInput,
    LoopState,
    ModelSpend,
    ResponseT,
    RunResult,
    conversation_of,
    request_of,
)
from loopgraphs.text import question_text

EVALUATOR_CALLS = 2
EVALUATION_FAILED = "evaluation failed"
NO_ATTEMPT = "the attempt gave no answer"
FEEDBACK_CHARS = 300  # a few sentences; a schema-constrained decoder stops there
MAX_ATTEMPT_CHARS = 8000  # of an answer shown to the evaluator and the reflection
# Graph steps that must still follow evaluate for another episode (see ``RunBudget.allows``).
EPISODE_STEPS = 3  # reflect, generate, evaluate
LESSONS_ID = ":lessons"  # suffix of the id of a user message given with the reflections


class ReflexionFields(TypedDict, total=False):
    """The keys of its own that Reflexion's state and output hold (see ``ReflexionOutput``)."""

    episode: int
    reflections: list[str]
    evaluations: list[Verdict]
    episode_answers: list[str]


class ReflexionOutput(ReflexionFields, RunResult[ResponseT]):
    """Output of Reflexion: episodes run, their answers, evaluations and reflections."""


class ReflexionState(ReflexionFields, LoopState, total=False):
    """State of Reflexion."""

    request: str


ReflexionGraph: TypeAlias = CompiledStateGraph[
    ReflexionState, ContextT, LoopInput, ReflexionOutput[ResponseT]
]
"""The compiled graph ``create_reflexion_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


class Evaluation(BaseModel):
    """Verdict on an answer: is it satisfactory, and if not, what is wrong."""

    satisfactory: bool = Field(
        description="true when the answer fully and correctly answers the question"
    )
    feedback: str = Field(
        default="",
        description="what is wrong or missing; empty when satisfactory",
        json_schema_extra={"maxLength": FEEDBACK_CHARS},
    )


class Verdict(TypedDict):
    """The state record of an episode's evaluation."""

    satisfactory: bool
    feedback: str


def evaluation_record(evaluation: Evaluation | None) -> Verdict:
    """The state record of a verdict; no verdict counts as not satisfactory."""
    if evaluation is None:
        return Verdict(satisfactory=False, feedback=EVALUATION_FAILED)
    return Verdict(satisfactory=bool(evaluation.satisfactory), feedback=evaluation.feedback.strip())


def evaluate_answer(
    model: ModelCaller | BaseChatModel,
    question: str,
    answer: str,
    *,
    max_calls: int = 2,
    history: Sequence[BaseMessage] = (),
) -> Generator[ModelCall, Any, tuple[Evaluation | None, StructuredResult]]:
    """Judge ``answer`` to ``question``.

    Args:
        model: The node's ``ModelCaller`` (its model and middleware), or a chat model.
        question: The user's question.
        answer: The answer to judge (cut to 8,000 characters).
        max_calls: Most model replies spent (a reformat retry needs 2).
        history: The conversation's earlier turns, read before the question.

    Yields:
        Model calls.

    Returns:
        The verdict (None when the evaluator produced nothing usable; see
        ``evaluation_record``) and the ``StructuredResult`` holding the call counts.
    """
    check_positive("max_calls", max_calls)
    prompt: list[BaseMessage] = [
        *history,
        HumanMessage(
            prompts.EVALUATE_USER.format(question=question, answer=answer[:MAX_ATTEMPT_CHARS])
        ),
    ]
    result = yield from structured_call(
        model,
        prompt,
        Evaluation,
        instructions=prompts.EVALUATE_SYSTEM,
        regex_fallback=parse_verdict,
        max_calls=max_calls,
        purpose="evaluation",
    )
    return result.value, result


def reflect_on(
    model: ModelCaller | BaseChatModel,
    question: str,
    answer: str,
    feedback: str,
    *,
    history: Sequence[BaseMessage] = (),
) -> Generator[ModelCall, Any, tuple[str, ModelSpend]]:
    """Write a reflection on a rejected answer with one model call.

    Args:
        model: The node's ``ModelCaller`` (its model and middleware), or a chat model.
        question: The user's question.
        answer: The rejected answer (cut to 8,000 characters).
        feedback: The evaluator's feedback.
        history: The conversation's earlier turns, read before the question.

    Yields:
        One model call.

    Returns:
        The reflection text (never empty) and the ``llm_calls``/``usage`` update.
    """
    request = HumanMessage(
        prompts.REFLECT_USER.format(
            question=question,
            answer=answer[:MAX_ATTEMPT_CHARS],
            feedback=feedback.strip() or "none given",
        )
    )
    form = RequestForm(prompts.REFLECT_SYSTEM)
    call = caller_for(model).call(
        [*history, request], form, with_system=False, purpose="reflection"
    )
    reply, update = yield from call_model(call)
    text = normalise_reflection(content_text(reply.content))
    if not text:
        reason = normalise_reflection(feedback) or "no reason given"
        text = (
            f"The previous answer was judged unsatisfactory ({reason}); try a different approach."
        )
    return text, update


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


def build_reflexion(
    settings: LoopSettings, *, max_reflections: int = 3, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled Reflexion graph for ``settings``."""
    react = InnerLoop(REACT, settings, options or {}, max_iterations=settings.max_iterations)

    def opening(state: ReflexionState, step: Step) -> ReflexionState:
        return {
            "request": question_text(state.get("messages", [])),
            "episode": 0,
            "reflections": [],
            "evaluations": [],
            "episode_answers": [],
        }

    def generate(state: ReflexionState, step: Step) -> LogicOf[ReflexionState]:
        conversation = conversation_of(state)
        episode_input = with_reflections(conversation, state.get("reflections") or [])
        # The episode's turns are the chat's replies: they stream as this step's.
        out, spent = yield from react.run(step, state, episode_input, relay=True)
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

    def evaluate(state: ReflexionState, step: Step) -> LogicOf[ReflexionState]:
        answer = state.get("answer", "")
        update: ReflexionState = {}
        if answer.strip():
            verdict, result = yield from evaluate_answer(
                step.ask(state),
                request_of(state),
                answer,
                max_calls=EVALUATOR_CALLS,
                history=earlier_turns(state, step.run),
            )
            record, update = evaluation_record(verdict), {**result.state_update()}
        else:  # nothing to judge: not satisfactory, and no call spent on it
            record = Verdict(satisfactory=False, feedback=NO_ATTEMPT)
        update["evaluations"] = [*(state.get("evaluations") or []), record]
        if record["satisfactory"]:
            update["status"] = "completed"
        elif state.get("episode", 0) >= max_reflections or not step.run.budget.allows(
            state, steps=EPISODE_STEPS
        ):
            update["status"] = "max_iterations"
        return update

    def reflect(state: ReflexionState, step: Step) -> LogicOf[ReflexionState]:
        evaluations = state.get("evaluations") or []
        feedback = evaluations[-1]["feedback"] if evaluations else ""
        text, update = yield from reflect_on(
            step.ask(state),
            request_of(state),
            state.get("answer", ""),
            feedback,
            history=earlier_turns(state, step.run),
        )
        return {**update, "reflections": [*(state.get("reflections") or []), text]}

    builder = new_graph(
        ReflexionState, ReflexionOutput, options or {}, loop="reflexion", settings=settings
    )
    add_step(builder, "generate", generate, settings, subgraph=react.graph)
    add_step(builder, "evaluate", evaluate, settings, model_step=True)
    add_step(builder, "reflect", reflect, settings, model_step=True)
    add_start(builder, settings, opening, lambda state: "generate", ["generate"])
    route(builder, "generate", lambda state: "evaluate", ["evaluate"])
    route(builder, "evaluate", while_running("reflect"), ["reflect"])
    route(builder, "reflect", lambda state: "generate", ["generate"])
    return builder


def call_budget(
    *, max_reflections: int = 3, max_iterations: int = 10, tool_selection: bool = False
) -> int:
    """Most model replies one run can take (see ``create_reflexion_graph``)."""
    per_episode = max_iterations + 1 + (2 if tool_selection else 0)
    return max_reflections * per_episode + max_reflections * EVALUATOR_CALLS + max_reflections - 1


def create_reflexion_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_reflections: int = 3,
    max_iterations: int = 10,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> ReflexionGraph[ContextT, ResponseT]:
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
    no usable verdict counts as "not satisfactory"; an episode with no answer is not
    satisfactory and is not sent to the evaluator.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables. None or empty: plain chat episodes.
        max_reflections: Most episodes (attempts) in a run.
        max_iterations: Model calls allowed in each episode's ReAct loop.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            the tool options apply to every episode's ReAct loop. Each episode reads the
            thread as ReAct does; the evaluator and the reflection read the user's
            earlier turns and the answers they got; ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``episode`` (episodes run),
        ``reflections``, ``evaluations`` (``{"satisfactory", "feedback"}`` per episode),
        ``episode_answers`` and, in ``messages``, every episode's transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_reflections", max_reflections)
    build = partial(build_reflexion, max_reflections=max_reflections, options=options)
    return compiled_loop("reflexion", build, model, tools, options, max_iterations=max_iterations)
