"""Self-Ask: decompose a question into follow-up questions answered one at a time.

Graph: ``prepare → generate → [review] → call_tool → generate ...``. ``generate`` calls
the model and reads its own reply: a follow-up question answered by a tool (the first
tool, or the one named with ``Tool:``/``Tool Input:``, or the tools the model calls
natively) is written as an assistant message with the tool calls, so the ``after_model``
hooks see them (approval middleware works unchanged). ``call_tool`` is the shared tool
step, each call sent on its own as in ReAct; the next turn reads each intermediate answer
from the ``ToolMessage`` answering its call. Without tools the model answers its own
follow-ups on its next turn. ``final_answer`` asks once for the answer when the follow-up
budget is spent.

A model that cannot be trusted to write the grammar (json and text modes on the embedded
small model) is guided instead: see ``loopgraphs.graphs.self_ask_guided`` for its turns
and their grounded schemas; the nodes below dispatch to it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import add_review, add_tool_turn, compiled_loop
from loopgraphs.graphs.self_ask_guided import (
    GUIDED_MAX_CHARS,
    FollowUp,
    as_shown,
    asked_before,
    copies_example,
    fact_of,
    final_of,
    grounding,
    guided,
    guided_choice,
    guided_fallback,
    guided_form,
    guided_steps,
    next_follow_up,
    read_of,
    read_request,
    scratchpad,
    worked_example,
)
from loopgraphs.models import capabilities
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, add_step
from loopgraphs.nodes.errors import failed_calls, is_form_rejection, mark_sent
from loopgraphs.nodes.generate import (
    answer_message,
    call_model,
    node_caller,
    reasked,
    short_again,
    spent_together,
)
from loopgraphs.nodes.grounding import tool_for
from loopgraphs.nodes.history import bounded_thread, earlier_turns
from loopgraphs.nodes.model_call import JSON_TURN, ModelCall
from loopgraphs.nodes.model_send import RequestForm, as_written
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.parsing.self_ask import (
    SelfAskTurn,
    asked_part,
    open_json_field,
    parse_self_ask,
    read_answer,
)
from loopgraphs.nodes.parsing.text import best_effort_answer, content_text, cut_short
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_positive
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_guard import unfence
from loopgraphs.nodes.tool_loop import pending_step
from loopgraphs.nodes.tool_step import ToolStep, dispatch, pending_calls
from loopgraphs.state import (
    Bookkeeping,
    LoopBuilder,
    LoopInput,
    LoopRuntime,
    LoopState,
    ModelSpend,
    ResponseT,
    RunResult,
    empty_usage,
    request_of,
    scratch_of,
)
from loopgraphs.toolkits.registry import ToolRegistry

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


class PendingFollowUp(TypedDict):
    """A follow-up of the current turn waiting for its tool result: the ``id`` of the tool
    call that answers it, the tool's ``name`` and the follow-up ``question``."""

    id: str
    name: str
    question: str


class SelfAskFields(TypedDict, total=False):
    """The keys of its own that Self-Ask's state and output hold (see ``SelfAskOutput``)."""

    follow_ups: list[FollowUp]


class SelfAskOutput(SelfAskFields, RunResult[ResponseT]):
    """Output of the Self-Ask loop: ``follow_ups`` lists every follow-up question with its
    answer and the tool that gave it (None when the model answered itself)."""


class SelfAskState(SelfAskFields, LoopState, total=False):
    """State of the Self-Ask loop: ``pending`` holds the follow-ups of the current turn
    waiting for their tool results, each with the ``id`` of the tool call that answers
    it (the calls and their results are in ``messages``); ``scratch.iterations`` counts
    the loop's model calls. In a guided run ``unread`` says the last tool result has not
    been read yet, and ``finishing`` that the model asked nothing new (``"asked"``) or
    that the budget ran out before it could ask (``"budget"``), or, in any run, that a
    reply was cut at the token cap after the one request for a short answer (``"cut"``):
    ``final_answer`` comes next."""

    pending: list[PendingFollowUp]
    unread: bool
    finishing: str


SelfAskGraph: TypeAlias = CompiledStateGraph[
    SelfAskState, ContextT, LoopInput, SelfAskOutput[ResponseT]
]
"""The compiled graph ``create_self_ask_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""

NO_RESULT = "Error: the tool returned no result."


def _without_calls(message: AIMessage) -> AIMessage:
    """The same message (same id, so it replaces the stored one) with no tool calls."""
    extra = {
        k: v
        for k, v in message.additional_kwargs.items()
        if k not in ("tool_calls", "function_call")
    }
    return message.model_copy(
        update={"tool_calls": [], "invalid_tool_calls": [], "additional_kwargs": extra}
    )


def _counts(spent: ModelSpend) -> SelfAskState:
    """The ``llm_calls``/``usage`` update of model calls (``call_model``'s, say) as an
    update of the loop's state."""
    return {"llm_calls": spent["llm_calls"], "usage": spent["usage"]}


def _args_text(args: dict[str, object] | str) -> str:
    if isinstance(args, dict) and len(args) == 1:
        return str(next(iter(args.values())))
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


@lru_cache(maxsize=64)
def self_ask_form(mode: str) -> RequestForm:
    """How a Self-Ask turn in ``mode`` is sent: native mode binds the tools; json and text
    modes describe them in the instructions, rendered from the request's tools, and show
    the transcript in the grammar (see ``self_ask_view``)."""
    if mode == "native":
        return RequestForm(lambda tools: self_ask_text(tools, mode), tools="bind")
    return RequestForm(
        lambda tools: self_ask_text(tools, mode),
        tools="prompt",
        render=lambda messages, tools: self_ask_view(messages),
    )


def self_ask_view(messages: Sequence[AnyMessage]) -> list[BaseMessage]:
    """The transcript as a json- or text-mode model reads it: each follow-up as the text
    the model wrote, without its tool calls, and the results answering it as one
    ``Intermediate answer:`` user message."""
    view: list[BaseMessage] = []
    results: list[str] = []
    for message in as_written(messages):
        if isinstance(message, ToolMessage):
            results.append(content_text(message.content))
            continue
        if results:
            text = "\n\n".join(results)
            view.append(HumanMessage(prompts.SELF_ASK_INTERMEDIATE.format(content=text)))
            results = []
        if isinstance(message, AIMessage) and message.tool_calls:
            view.append(AIMessage(content=message.content))
        else:
            view.append(message)
    if results:
        text = "\n\n".join(results)
        view.append(HumanMessage(prompts.SELF_ASK_INTERMEDIATE.format(content=text)))
    return view


def _with_calls(reply: AIMessage, calls: Sequence[ToolCall]) -> AIMessage:
    """The reply (its text as the model wrote it) with the follow-up's tool calls."""
    return reply.model_copy(update={"tool_calls": list(calls), "invalid_tool_calls": []})


def _call_id() -> str:
    """A tool call id unique to the run, so that no other run's result in a shared
    transcript is taken for its own."""
    return f"call_{uuid.uuid4().hex[:16]}"


def _answered(state: SelfAskState) -> list[FollowUp]:
    """The run's follow-ups with those of the last turn answered: each by the
    ``ToolMessage`` answering its call (a call a reviewer edited is recorded with the
    tool it ran; a rejected one has the rejection as its answer)."""
    pending = state.get("pending") or []
    messages: Sequence[AnyMessage] = state.get("messages") or []
    scratch = scratch_of(state)
    ran: dict[str, str] = {}
    results: dict[str, ToolMessage] = {}
    for message in messages[scratch.get("transcript_start") or 0 :]:
        if isinstance(message, AIMessage):
            ran.update((call["id"] or "", call["name"]) for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
    fence = scratch.get("fence", "")
    answered: list[FollowUp] = []
    for item in pending:
        result = results.get(item["id"])
        answer = unfence(content_text(result.content), fence) if result else NO_RESULT
        tool = ran.get(item["id"], item["name"])
        answered.append(FollowUp(question=item["question"], answer=answer, tool=tool))
    return [*state.get("follow_ups", []), *answered]


def self_ask_text(tools: ToolRegistry, mode: str) -> str:
    """The loop's own system text in one tool mode, for a set of tools."""
    if mode == "none" or not tools:
        text = prompts.SELF_ASK_SOLO.format(format=prompts.SELF_ASK_FORMAT)
    elif mode == "native":
        text = prompts.SELF_ASK_NATIVE.format(
            format=prompts.SELF_ASK_FORMAT, fence_note=prompts.FENCE_NOTE
        )
    else:
        text = prompts.SELF_ASK_TOOLS.format(
            format=prompts.SELF_ASK_FORMAT,
            first=tools.names[0],
            input_note=prompts.SELF_ASK_JSON_INPUT
            if mode == "json"
            else prompts.SELF_ASK_TEXT_INPUT,
            tools=tools.describe(),
            fence_note=prompts.FENCE_NOTE,
        )
    return text


def _record_intermediate(follow_ups: list[FollowUp], turn: SelfAskTurn) -> list[FollowUp]:
    """Give the model's own intermediate answer to its open follow-up question."""
    if (
        turn.intermediate
        and follow_ups
        and follow_ups[-1]["tool"] is None
        and not follow_ups[-1]["answer"]
    ):
        last = follow_ups[-1]
        return [
            *follow_ups[:-1],
            FollowUp(question=last["question"], answer=turn.intermediate, tool=None),
        ]
    return follow_ups


def _open(turn: SelfAskTurn, follow_ups: Sequence[FollowUp]) -> bool:
    """Whether a turn asks a follow-up that no earlier follow-up of the run asked."""
    return bool(turn.question.strip()) and not asked_before(turn.question, follow_ups)


def _best_effort(follow_ups: Sequence[FollowUp], messages: Sequence[AnyMessage]) -> str:
    for item in reversed(follow_ups):
        if item.get("answer"):
            return str(item["answer"])
    kept = [m for m in messages if not (isinstance(m, AIMessage) and cut_short(m))]
    found = best_effort_answer(kept)
    if not found:
        replies = (m for m in reversed(kept) if isinstance(m, AIMessage))
        found = next((text for m in replies if (text := content_text(m.content).strip())), "")
    return found


@dataclass(frozen=True)
class TurnSteps:
    """The graph steps that must still follow a Self-Ask turn (see ``RunBudget.allows``).

    Attributes:
        answer: For the answer to come.
        turn: For another turn and the answer.
        tools: For a turn asking follow-ups, with the run's settings (a review is one more).
    """

    answer: int
    turn: int
    tools: Callable[[LoopSettings], int]


@dataclass(frozen=True)
class GuidedTurns:
    """Self-Ask's turns on a model it guides (json and text modes on a small model, see
    ``guided``): each turn reads a short scratchpad after one worked example, each tool
    result is read in a call of its own, and replies are decoded under grounded schemas.
    The graph is the same as the plain path's; its steps hand their turn to these
    methods when the run is guided.

    Attributes:
        settings: The loop's settings (each step resolves them for its run).
        steps: The graph steps a turn must leave for what follows it.
    """

    settings: LoopSettings
    steps: TurnSteps

    def call(
        self,
        run: LoopSettings,
        state: SelfAskState,
        messages: Sequence[AnyMessage],
        runtime: LoopRuntime,
        *,
        final: bool,
    ) -> Generator[ModelCall, Any, tuple[AIMessage, ModelSpend]]:
        """One guided turn: constrained in json mode (falling back to the text form when
        the provider refuses the schema); its first follow-up honours the tool choice."""
        mode = state.get("tool_mode") or "text"
        choice = guided_choice(run)
        tool = tool_for(run.tools, request_of(state), choice)
        ask = node_caller(run, state, runtime)
        answered = any(f.get("tool") for f in state.get("follow_ups", []))
        require = None if final or answered else choice
        purpose = JSON_TURN if mode == "json" else None
        rejected = 0
        if mode == "json" and capabilities(run.chat_model).structured_output is not False:
            follow_ups = state.get("follow_ups", [])
            grounded = grounding(request_of(state), follow_ups, final=final)
            form = guided_form(mode, tool, final=final, grounded=grounded)
            call = ask.call(
                messages, form, tools=run.tools.tools, tool_choice=require, purpose=purpose
            )
            try:
                return (yield from call_model(call))
            except Exception as exc:
                if not is_form_rejection(exc):
                    raise
                rejected = failed_calls(exc)
        form = guided_form(mode, tool, final=final, grounded=None)
        call = ask.call(messages, form, tools=run.tools.tools, purpose=purpose)
        try:
            reply, update = yield from call_model(call)
        except Exception as exc:
            mark_sent(exc, failed_calls(exc) + rejected)
            raise
        update["llm_calls"] += rejected
        return reply, update

    def turn_messages(
        self, run: LoopSettings, state: SelfAskState, follow_ups: Sequence[FollowUp]
    ) -> list[AnyMessage]:
        """The worked example, the conversation's earlier turns, then the run's
        scratchpad."""
        mode = state.get("tool_mode") or "text"
        question = request_of(state)
        tool = tool_for(run.tools, question, guided_choice(run))
        fence = scratch_of(state).get("fence", "")
        steps = guided_steps(follow_ups, bool(state.get("unread")), fence)
        return [
            *worked_example(mode, run.tools, tool),
            *earlier_turns(state, run),
            HumanMessage(scratchpad(question, steps)),
        ]

    def generate(self, state: SelfAskState, runtime: LoopRuntime) -> LogicOf[SelfAskState]:
        """Read the last tool result (when unread), then ask the next follow-up while the
        budget allows; each is one model call."""
        run = self.settings.for_run(runtime)
        made = scratch_of(state).get("iterations", 0)
        follow_ups = list(state.get("follow_ups", []))
        update: SelfAskState = {"llm_calls": 0, "usage": empty_usage()}
        replies: list[AnyMessage] = []
        if state.get("unread") and follow_ups:
            last = follow_ups[-1]
            fence = scratch_of(state).get("fence", "")
            mode = state.get("tool_mode") or "text"
            question, result = str(last["question"]), str(last["answer"])
            request = request_of(state)
            read = read_request(mode, question, result, fence, request, follow_ups[:-1])
            call = node_caller(run, state, runtime).call(
                read.messages,
                read.form,
                tools=run.tools.tools,
                purpose=JSON_TURN if mode == "json" else None,
            )
            reply, spent = yield from call_model(call)
            said = read_of(reply)
            if copies_example(said, f"{last['question']} {last['answer']}"):
                said = ""
            said = fact_of(said, read.facts) or guided_fallback(follow_ups, unread=True)
            follow_ups[-1] = FollowUp(question=last["question"], answer=said, tool=last["tool"])
            together = _counts(spent_together(update, spent))
            update = {**together, "follow_ups": follow_ups, "unread": False}
            replies.append(reply)
            made += 1
        if made < run.max_iterations:
            view: SelfAskState = {**state, "follow_ups": follow_ups, "unread": False}
            messages = self.turn_messages(run, view, follow_ups)
            reply, spent = yield from self.call(run, view, messages, runtime, final=False)
            update = {**update, **_counts(spent_together(update, spent))}
            replies.append(reply)
            made += 1
        else:
            update["finishing"] = "budget"
        return {**update, "messages": replies, "scratch": {"iterations": made}}

    def parse(self, state: SelfAskState, run: LoopSettings, reply: AIMessage) -> SelfAskState:
        """A guided reply: until a tool has answered a follow-up the reply is a follow-up
        (its question, else its first line, else the user's question); later a new
        follow-up goes to the tool, a final answer that was not cut ends the run, and
        anything else (a follow-up asked before, no question) moves on to the answer."""
        if state.get("finishing"):
            return {}
        follow_ups = list(state.get("follow_ups", []))
        answered = any(f.get("tool") for f in follow_ups)
        text = content_text(reply.content)
        turn = parse_self_ask(text)
        asks = turn.kind in ("tool", "follow_up") or bool(turn.kind == "final" and turn.question)
        new_question = bool(turn.question) and not asked_before(turn.question, follow_ups)
        final = turn.kind == "final" and bool(turn.answer) and not new_question
        if answered and final and not cut_short(reply):
            shown = answer_message(reply, turn.answer)
            return {"status": "completed", "answer": turn.answer, "messages": [shown]}
        question = (turn.question if asks else "") or open_json_field(text, "follow_up")
        rewritten = False
        if not answered:
            question = question or read_answer(text) or request_of(state)
        elif question and not asked_before(question, follow_ups):
            # asked of the answer found, the fact the question needs (not "Who is X?")
            needed = next_follow_up(request_of(state), question, follow_ups)
            rewritten, question = needed != question, needed
        question = question[:GUIDED_MAX_CHARS]
        if not question or (answered and asked_before(question, follow_ups)):
            if run.budget.allows(state, steps=self.steps.answer):
                return {"finishing": "asked"}
            answer = guided_fallback(follow_ups, bool(state.get("unread")))
            return {"status": "max_iterations", "answer": answer}
        default = tool_for(run.tools, request_of(state), guided_choice(run))
        name = turn.tool if asks and turn.tool else default
        given = asks and turn.tool and turn.tool_input and not rewritten
        args = turn.tool_input if given else question
        if run.budget.allows(state, steps=self.steps.tools(run)):
            call_id = _call_id()
            call = ToolCall(name=name, args=coerce_args(run.tools, name, args), id=call_id)
            return {
                "pending": [{"id": call_id, "name": name, "question": question}],
                "messages": [_with_calls(reply, [call])],
            }
        return {"status": "max_iterations", "answer": guided_fallback(follow_ups, False)}

    def final(self, state: SelfAskState, runtime: LoopRuntime) -> LogicOf[SelfAskState]:
        """Ask for the final answer on the scratchpad; a cut reply is asked once more for a
        short answer while the budget allows, and is never the answer: the run then ends,
        not completed, with the last intermediate answer."""
        run = self.settings.for_run(runtime)
        follow_ups = list(state.get("follow_ups", []))
        messages = self.turn_messages(run, state, follow_ups)
        reply, update = yield from self.call(run, state, messages, runtime, final=True)
        shown: list[AnyMessage] = [reply]
        answer = final_of(reply)
        finishing = state.get("finishing")
        made = scratch_of(state).get("iterations", 0)
        if not answer and cut_short(reply) and finishing == "asked" and made < run.max_iterations:
            mode = state.get("tool_mode") or "text"
            tool = tool_for(run.tools, request_of(state), guided_choice(run))
            form = guided_form(mode, tool, final=True, grounded=None)
            ask = node_caller(run, state, runtime)
            again, shown, update = yield from short_again(ask, messages, form, reply, update)
            answer = final_of(again)
        evidence = " ".join(f"{f['question']} {f['answer']}" for f in follow_ups)
        if copies_example(answer, f"{request_of(state)} {evidence}"):
            answer = ""
        done = bool(answer) and finishing == "asked"
        answer = answer or guided_fallback(follow_ups, bool(state.get("unread")))
        last = shown[-1]
        if isinstance(last, AIMessage):
            shown = [*shown[:-1], answer_message(last, answer)]
        shown = [as_shown(state.get("tool_mode") or "text", message) for message in shown]
        return {
            **_counts(update),
            "messages": shown,
            "answer": answer,
            "status": "completed" if done else "max_iterations",
        }


@dataclass(frozen=True)
class PlainTurns:
    """Self-Ask's turns in its own grammar (every run the model is not guided in): one
    call per turn in the run's tool mode, its follow-ups written as tool calls, a reply
    answering its own new question cut where the tool's answer belongs.

    Attributes:
        steps: The graph steps a turn must leave for what follows it.
    """

    steps: TurnSteps

    def call(
        self,
        run: LoopSettings,
        state: SelfAskState,
        history: Sequence[AnyMessage],
        runtime: LoopRuntime,
    ) -> LogicOf[SelfAskState]:
        """One call in the run's mode; ``auto`` falls back to text when tools are refused."""
        mode = state.get("tool_mode") or "none"
        ask = node_caller(run, state, runtime)
        tools = run.tools.tools if mode != "none" else []
        rejected = 0
        if mode == "native":
            call = ask.call(
                history, self_ask_form(mode), tools=tools, tool_choice=self.required(run, state)
            )
            try:
                reply, update = yield from call_model(call)
                return {**_counts(update), "messages": [reply], "tool_mode": mode}
            except Exception as exc:
                if not (run.tool_mode == "auto" and is_form_rejection(exc)):
                    raise
                rejected, mode = failed_calls(exc), "text"
        reply, update = yield from call_model(ask.call(history, self_ask_form(mode), tools=tools))
        update["llm_calls"] += rejected
        return {**_counts(update), "messages": [reply], "tool_mode": mode}

    def required(self, run: LoopSettings, state: SelfAskState) -> str | None:
        """The ``tool_choice`` still to honour ("required" or a tool name): until a tool
        has answered a follow-up of this run."""
        choice = run.tool_choice
        if choice in (None, "auto") or not run.tools:
            return None
        answered = any(f.get("tool") for f in state.get("follow_ups", []))
        return None if answered else choice

    def can_continue(self, state: SelfAskState, run: LoopSettings) -> bool:
        """Whether another turn fits: calls left in ``max_iterations`` and graph steps left
        for it and the answer."""
        made = scratch_of(state).get("iterations", 0)
        return made < run.max_iterations and run.budget.allows(state, steps=self.steps.turn)

    def parse(self, state: SelfAskState, run: LoopSettings, reply: AIMessage) -> SelfAskState:
        """Read a reply in the run's mode: the answer, a follow-up for the tools (the reply
        with its tool calls), a follow-up the model answers itself next turn, or a
        request to go on. ``messages`` starts with the reply as the run shows it."""
        mode = state.get("tool_mode", "none")
        native_calls = reply.tool_calls if mode == "native" else []
        text = content_text(reply.content)
        turn = parse_self_ask(text)
        follow_ups = _record_intermediate(list(state.get("follow_ups", [])), turn)
        written = reply
        has_tools = mode != "none" and len(run.tools) > 0
        if turn.kind == "final" and has_tools and mode != "native" and _open(turn, follow_ups):
            # The tools answer follow-ups: a reply answering its own new question is cut
            # where the tool's answer belongs, and its final line waits for that answer.
            turn = replace(turn, kind="tool" if turn.tool else "follow_up", answer="")
            written = reply.model_copy(update={"content": asked_part(text)})
        update: SelfAskState = {"follow_ups": follow_ups, "messages": [written]}
        require = self.required(run, state) if has_tools else None
        asks = turn.kind in ("tool", "follow_up")
        if require and not asks and not native_calls and self.can_continue(state, run):
            return {**update, "scratch": {"reask": prompts.SELF_ASK_REQUIRE_FOLLOW_UP}}
        answers = turn.kind == "final" or (turn.kind == "none" and not native_calls)
        said_nothing = not text.strip() and not native_calls
        if answers and (cut_short(reply) or said_nothing):
            # A reply cut at the token cap, or one that says nothing, is not an answer:
            # ask once more, for a short one or for the answer itself.
            if not scratch_of(state).get("shortened") and self.can_continue(state, run):
                again = prompts.NO_ANSWER if said_nothing else prompts.SHORT_ANSWER
                return {**update, "scratch": {"shortened": True, "reask": again}}
            if run.budget.allows(
                state, steps=self.steps.answer
            ):  # final_answer asks for it, as at the budget
                return {**update, "finishing": "cut"}
            answer = _best_effort(follow_ups, state["messages"][:-1])
            return {**update, "status": "max_iterations", "answer": answer}
        if answers:
            update.update({"status": "completed", "answer": turn.answer})
            shown = _without_calls(reply) if native_calls else reply
            update["messages"] = [answer_message(shown, turn.answer)]
            return update
        calls: list[ToolCall] = []
        questions: list[str] = []
        if has_tools and native_calls:
            for index, call in enumerate(native_calls):
                calls.append({**call, "id": call.get("id") or _call_id()})
                first = index == 0 and turn.question
                questions.append(turn.question if first else _args_text(call["args"]))
        elif has_tools and asks:
            first = require if require in run.tools.names else run.tools.names[0]
            name = turn.tool if turn.kind == "tool" else first
            args = turn.tool_input if turn.kind == "tool" else turn.question
            calls = [ToolCall(name=name, args=coerce_args(run.tools, name, args), id=_call_id())]
            questions = [turn.question or _args_text(args)]
        if calls and run.budget.allows(state, steps=self.steps.tools(run)):
            pending = [
                PendingFollowUp(id=call["id"] or "", name=call["name"], question=question)
                for call, question in zip(calls, questions, strict=True)
            ]
            shown = _with_calls(written, calls)
            return {**update, "pending": pending, "messages": [shown]}
        if native_calls:
            update["messages"] = [_without_calls(reply)]
        if not has_tools and asks:
            follow_ups.append(FollowUp(question=turn.question, answer="", tool=None))
        if not calls and self.can_continue(state, run):
            prompt = prompts.SELF_ASK_CONTINUE_SOLO if asks else prompts.SELF_ASK_CONTINUE
            update["scratch"] = {"reask": prompt}
        elif not run.budget.allows(state, steps=self.steps.answer):
            answer = _best_effort(follow_ups, state["messages"])
            update.update({"status": "max_iterations", "answer": answer})
        return update


def build_self_ask(
    settings: LoopSettings, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled Self-Ask graph for ``settings``."""
    # Graph steps that must still follow a node (see ``RunBudget.allows``): each model step
    # comes with the middleware's before_model and after_model hook nodes.
    after = len(settings.middleware.with_hook("after_model"))
    model_steps = len(settings.middleware.with_hook("before_model")) + 1 + after
    answer_steps = after + model_steps  # after a turn: its hooks, then final_answer
    turn_steps = after + 2 * model_steps  # after a turn or a tool step: a turn, final_answer

    def tool_steps(run: LoopSettings) -> int:
        """After a turn asking follow-ups: its hooks, the review, the tools, the answer."""
        return after + bool(run.review) + 1 + model_steps

    steps = TurnSteps(answer_steps, turn_steps, tool_steps)
    plain_turns = PlainTurns(steps)
    guided_turns = GuidedTurns(settings, steps)

    def opening(state: SelfAskState, run: LoopSettings) -> SelfAskState:
        update: SelfAskState = {
            "follow_ups": [],
            "pending": [],
            "unread": False,
            "finishing": "",
        }
        if not run.budget.allows(state, steps=model_steps):
            update.update({"status": "max_iterations", "answer": ""})
        return update

    def settled(state: SelfAskState, run: LoopSettings) -> SelfAskState:
        """The last turn's follow-ups answered from their tool results (see
        ``_answered``), when there are some; a guided run reads the last result next."""
        if not state.get("pending"):
            return {}
        mode = state.get("tool_mode") or "none"
        return {"follow_ups": _answered(state), "pending": [], "unread": guided(run, mode)}

    def generate(state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
        """One turn: the model's reply, read in the run's mode. A follow-up for the tools is
        written as the reply with its tool calls; the last turn's follow-ups are answered
        first from their tool results."""
        run = step.run
        done = settled(state, run)
        if scratch_of(state).get("tool_ended"):  # a tool ended the run
            return {**done, "status": "completed"}
        view: SelfAskState = {**state, **done}  # as the settled follow-ups leave it
        mode = state.get("tool_mode") or "none"
        if guided(run, mode):
            update = yield from guided_turns.generate(view, step.runtime)
            read = guided_turns.parse
        else:
            history = reasked(bounded_thread(state, run), scratch_of(state).get("reask"))
            update = yield from plain_turns.call(run, view, history, step.runtime)
            made = scratch_of(state).get("iterations", 0) + 1
            update["scratch"] = {"iterations": made, "reask": ""}
            read = plain_turns.parse
        replies = update.pop("messages")
        if not replies:  # a guided run out of budget before it could ask
            return {**done, **update}
        scratch: Bookkeeping = {**scratch_of(state), **update["scratch"]}
        after_turn: SelfAskState = {
            **view,
            **update,
            "messages": [*state["messages"], *replies],
            "scratch": scratch,
        }
        reply = replies[-1]
        assert isinstance(reply, AIMessage)  # the model's reply to the turn
        parsed = read(after_turn, run, reply)
        shown = [*replies[:-1], *parsed.pop("messages", replies[-1:])]
        if guided(run, mode):
            shown = [as_shown(mode, message) for message in shown]
        extra = parsed.pop("scratch", {})
        return {
            **done,
            **update,
            **parsed,
            "messages": shown,
            "scratch": {**update["scratch"], **extra},
        }

    def final_answer(state: SelfAskState, step: Step) -> LogicOf[SelfAskState]:
        """Ask once for the answer (the follow-up budget is spent, or a reply was cut),
        after answering the last turn's follow-ups from their tool results."""
        run = step.run
        done = settled(state, run)
        view: SelfAskState = {**state, **done}  # as the settled follow-ups leave it
        if guided(run, state.get("tool_mode") or "none"):
            return {**done, **(yield from guided_turns.final(view, step.runtime))}
        # A re-ask still due gives way to this one: no more follow-ups, the answer now.
        history = reasked(bounded_thread(state, run), prompts.SELF_ASK_FORCE_FINAL)
        update = yield from plain_turns.call(run, view, history, step.runtime)
        reply = update["messages"][0]
        assert isinstance(reply, AIMessage)  # the model's reply
        if reply.tool_calls:
            reply = _without_calls(reply)
        cut = cut_short(reply)  # a reply cut at the token cap is not an answer
        turn = parse_self_ask("" if cut else content_text(reply.content))
        follow_ups = _record_intermediate(list(view.get("follow_ups", [])), turn)
        answer = turn.answer if turn.kind in ("final", "none") else ""
        if not answer:
            answer = turn.intermediate or _best_effort(follow_ups, state["messages"])
        return {
            **done,
            **update,
            "messages": [answer_message(reply, answer)],
            "follow_ups": follow_ups,
            "answer": answer,
            "status": "max_iterations",
        }

    def route_generated(state: SelfAskState, runtime: LoopRuntime) -> str | list[Send]:
        if state.get("status") != "running":
            return END
        if state.get("pending"):
            # route_tools when a middleware answered every call
            return pending_step(settings.for_run(runtime), state) or route_tools(state, runtime)
        if state.get("finishing"):
            return "final_answer"
        return route_tools(state, runtime)

    def route_tools(state: SelfAskState, runtime: LoopRuntime) -> str:
        if scratch_of(state).get("tool_ended"):  # generate ends the run
            return "generate"
        return (
            "generate"
            if plain_turns.can_continue(state, settings.for_run(runtime))
            else "final_answer"
        )

    def route_reviewed(state: SelfAskState, runtime: LoopRuntime) -> str | list[Send]:
        return dispatch(pending_calls(state["messages"])) or route_tools(state, runtime)

    builder = new_graph(
        SelfAskState,
        SelfAskOutput,
        options or {},
        loop="self_ask",
        settings=settings,
        tools_node="call_tool",
    )
    # The steps a router leads to are added first, so that its answers lead through
    # their hook nodes.
    builder.add_node("call_tool", ToolStep(settings).graph_node())
    add_step(builder, "final_answer", final_answer, settings, model_step=True)
    add_review(builder, settings, route_reviewed, ["generate", "final_answer"])
    add_tool_turn(
        builder,
        settings,
        "generate",
        generate,
        targets=["generate", "final_answer"],
        router=route_generated,
    )
    add_start(
        builder,
        settings,
        opening,
        while_running("generate"),
        ["generate"],
        scratch={"iterations": 0},
    )
    route(builder, "call_tool", route_tools, ["generate", "final_answer"])
    builder.add_edge("final_answer", END)
    return builder


def create_self_ask_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_follow_ups: int = 5,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> SelfAskGraph[ContextT, ResponseT]:
    """Build the Self-Ask loop: follow-up questions, intermediate answers, final answer.

    The model writes ``Follow up: <question>``; the question goes to the first tool (its
    single argument), or to the tool named by ``Tool: X`` / ``Tool Input: Q``. In native
    mode the model's own tool calls answer its follow-ups, while the follow-up grammar
    still shapes its text. In every mode the reply is stored with its tool calls, which
    the ``after_model`` hooks see (``HumanInTheLoopMiddleware`` approves, edits or rejects
    them), they run on the shared tool step (``wrap_tool_call``, ``Command`` returns
    including ``Command.PARENT``, ``return_direct``), and each is answered by a
    ``ToolMessage`` in ``messages``; ``max_tool_calls`` and the loop-break count every
    call of the run. A json- or text-mode model reads each result back as
    ``Intermediate answer: <fenced result>``. Without tools the model answers its own follow-ups:
    it is asked to continue with ``Intermediate answer:``. ``So the final answer is:``
    ends the loop (it wins over anything else in the same reply); a reply with no
    marker is itself the answer.

    Call budget: at most ``max_follow_ups + 1`` model calls. Each turn that asks a
    follow-up costs one call; when ``max_follow_ups`` calls have been made and the last
    one still asked a question, one more call asks for the final answer (that call is
    part of the budget) and the run ends with ``status="max_iterations"`` and a
    best-effort answer (the forced reply, else the last intermediate answer).
    ``context={"max_iterations": n}`` replaces ``max_follow_ups`` for one run.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables; the first one answers plain follow-ups
            (a search or lookup tool with one argument fits best). None: the model
            answers its own follow-ups.
        max_follow_ups: Follow-up turns allowed before the answer is forced.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``).
            ``tool_mode``: ``auto`` (native when the model's profile allows, falling back
            to text when tools are refused), ``native``, ``json`` (the text grammar with
            JSON tool inputs) or ``text``. Each turn and the final-answer request read the
            thread as it is; a guided turn reads the user's earlier turns and the answers
            they got after its worked example (the read of a tool result reads none);
            ``max_history_tokens`` bounds them.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode`` and ``follow_ups`` (each
        ``{"question", "answer", "tool"}``).

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_follow_ups", max_follow_ups)
    build = partial(build_self_ask, options=options)
    return compiled_loop("self_ask", build, model, tools, options, max_iterations=max_follow_ups)
