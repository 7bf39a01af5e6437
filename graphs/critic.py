"""CRITIC: draft an answer, find its checkable claims, verify them with tools, revise.

Graph: ``prepare → generate → critique → [review] → call_tool → revise → critique ...``.
``generate`` writes the draft; ``critique`` asks for the claims to check (or
``VERIFIED``) in an internal call, reads its reply and writes the round's checks as one
assistant message (the claims it checks as its text) with a tool call per distinct
check, which the ``after_model`` hooks see (so approval middleware works unchanged);
``call_tool`` is the shared tool step, each call sent on its own as in ReAct; ``revise``
reads each claim's observation from the ``ToolMessage`` answering its call and rewrites
the draft.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from pydantic import BaseModel, Field
from pydantic.json_schema import JsonDict
from typing_extensions import TypedDict, Unpack

from loopgraphs import prompts
from loopgraphs.context import ContextT
from loopgraphs.graphs.assembly import add_review, add_tool_turn, compiled_loop
from loopgraphs.graphs.critic_guided import critique_schema, evidence, revision_of, revision_schema
from loopgraphs.nodes.answer_check import unusable
from loopgraphs.nodes.build import new_graph
from loopgraphs.nodes.driver import LogicOf, add_step
from loopgraphs.nodes.errors import failed_calls, is_form_rejection
from loopgraphs.nodes.generate import answer_message, call_model, short_again, spent_together
from loopgraphs.nodes.grounding import guides, tool_for, words_of
from loopgraphs.nodes.history import conversation
from loopgraphs.nodes.model_call import JSON_TURN
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.parsing.critic import (
    MAX_CLAIMS,
    CheckedClaim,
    Claim,
    Critique,
    ToolInput,
    make_claim,
    parse_critique,
)
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.routing import route, while_running
from loopgraphs.nodes.run_start import add_start
from loopgraphs.nodes.settings import LoopSettings, ToolLoopOptions, ToolsArg, check_positive
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import Level, structured_call
from loopgraphs.nodes.tool_guard import call_key, fence_output, unfence
from loopgraphs.nodes.tool_loop import pending_step
from loopgraphs.nodes.tool_step import ToolStep, dispatch, pending_calls
from loopgraphs.state import (
    LoopBuilder,
    LoopInput,
    LoopRuntime,
    LoopState,
    ResponseT,
    RunResult,
    request_of,
    scratch_of,
)
from loopgraphs.toolkits.registry import ToolRegistry

NO_RESULT = "Error: the tool returned no result."


class ClaimCheck(BaseModel):
    """One claim of the draft and how to verify it."""

    claim: str = Field(default="", description="The claim, as the draft states it.")
    tool: str = Field(default="", description="Name of the tool that can verify the claim.")
    tool_input: ToolInput = Field(
        default="", description="Input for the tool: text, or the tool's JSON arguments."
    )


class CritiqueReport(BaseModel):
    """The critique of a draft answer."""

    verified: bool = Field(default=False, description="True when no claim needs checking.")
    claims: list[ClaimCheck] = Field(
        default_factory=list, description="Claims to verify with tools."
    )


class RequiredCritique(BaseModel):
    """The critique of a draft answer when a tool must check it (``tool_choice``)."""

    claims: list[ClaimCheck] = Field(
        min_length=1, description="Claims to verify with tools (at least one)."
    )


class PendingClaim(Claim):
    """A claim of the current round waiting for its check: the ``id`` of the tool call
    that checks it (claims sharing a check share its call) and the ``args`` it was given."""

    id: str
    args: dict[str, Any]


class CriticFields(TypedDict, total=False):
    """The keys of its own that CRITIC's state and output hold (see ``CriticOutput``)."""

    draft: str
    claims: list[CheckedClaim]
    round: int
    verified: bool


class CriticOutput(CriticFields, RunResult[ResponseT]):
    """Output of the CRITIC loop.

    ``draft`` is the current answer, ``round`` the number of critiques made,
    ``claims`` every claim checked so far, ``verified`` whether the last critique
    accepted the draft.
    """


class CriticState(CriticFields, LoopState, total=False):
    """State of the CRITIC loop: ``pending`` holds the claims of the current round. The
    calls and their results are in ``messages``."""

    pending: list[PendingClaim]


CriticGraph: TypeAlias = CompiledStateGraph[
    CriticState, ContextT, LoopInput, CriticOutput[ResponseT]
]
"""The compiled graph ``create_critic_graph`` returns: its state, run context, input
and output (``structured_response`` typed as its ``response_format``)."""


def _input_text(value: ToolInput) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _results(claims: Sequence[CheckedClaim], fence: str, limit: int) -> str:
    lines = []
    for number, item in enumerate(claims, 1):
        observation = fence_output(
            item.get("observation", ""), fence, max(limit, len(item.get("observation", "")))
        )
        lines.append(
            f"{number}. Claim: {item['claim']}\n"
            f"   Check: {item['tool']}({_input_text(item['tool_input'])})\n"
            f"   Result:\n{observation}"
        )
    return "\n".join(lines)


def checks_text(pending: Sequence[PendingClaim]) -> str:
    """A round's checks as a chat shows them: each claim with its check (the tool and
    its input: an only argument's value, else ``name=value`` pairs), one a line."""

    def shown(args: Mapping[str, Any]) -> str:
        if len(args) == 1:
            return _input_text(next(iter(args.values())))
        return ", ".join(f"{name}={_input_text(value)}" for name, value in args.items())

    return "\n".join(
        prompts.CRITIQUE_CHECK_LINE.format(
            claim=item["claim"], tool=item["tool"], tool_input=shown(item["args"])
        )
        for item in pending
    )


def _critique_of(data: Mapping[str, Any] | None, text: str) -> Critique:
    """The structured critique when there is one, else the critique text parsed."""
    if data is not None:
        if data.get("verified"):
            return Critique(verified=True)
        claims = [
            found
            for item in data.get("claims") or []
            if (found := make_claim(item.get("claim"), item.get("tool"), item.get("tool_input")))
        ]
        if claims:
            return Critique(claims=claims[:MAX_CLAIMS])
    return parse_critique(text)


def _round_checks(
    tools: ToolRegistry, claims: Sequence[Claim], number: int
) -> tuple[list[ToolCall], list[PendingClaim]]:
    """The tool calls checking a round's claims, one per distinct check (ids unique to
    the run, so that no other run's result in a shared transcript is taken for theirs),
    and the claims each with the id of its call and the args it was given."""
    tag = uuid.uuid4().hex[:8]
    calls: list[ToolCall] = []
    ids: dict[str, str] = {}
    pending: list[PendingClaim] = []
    for index, claim in enumerate(claims):
        args = coerce_args(tools, claim["tool"], claim["tool_input"])
        call = ToolCall(name=claim["tool"], args=args, id=f"claim_{number}_{index}_{tag}")
        key = call_key(call)
        if key not in ids:
            ids[key] = call["id"] or ""
            calls.append(call)
        pending.append(PendingClaim(**claim, id=ids[key], args=args))
    return calls, pending


def _checked(state: CriticState, fence: str) -> list[CheckedClaim]:
    """The round's claims with the observations of their checks: each read from the
    ``ToolMessage`` answering its call (a call a reviewer edited is recorded as it ran; a
    rejected one has the rejection as its observation)."""
    messages: Sequence[AnyMessage] = state.get("messages") or []
    start = scratch_of(state).get("transcript_start") or 0
    ran: dict[str, ToolCall] = {}
    results: dict[str, ToolMessage] = {}
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            ran.update((call["id"] or "", call) for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
    checked: list[CheckedClaim] = []
    for item in state.get("pending") or []:
        call = ran.get(item["id"])
        tool, tool_input = item["tool"], item["tool_input"]
        if call is not None and (call["name"], call["args"]) != (tool, item["args"]):
            tool, tool_input = call["name"], call["args"]
        result = results.get(item["id"])
        observation = unfence(content_text(result.content), fence) if result else NO_RESULT
        checked.append(
            CheckedClaim(
                claim=item["claim"],
                tool=tool,
                tool_input=tool_input,
                observation=observation,
                round=state.get("round", 1),
            )
        )
    return checked


def _json_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_JSON_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def _text_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_TEXT_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def critique_levels(tool_mode: str, mode: str) -> list[Level]:
    """The structured-output levels a critique tries in a run in ``mode`` (the run's
    ``tool_mode`` option being ``tool_mode``), before its text form: native function
    calling, which steps down to provider-enforced JSON in ``auto`` mode; provider JSON in
    json mode; none in text mode."""
    if mode == "native":
        return ["native", "json"] if tool_mode == "auto" else ["native"]
    return ["json"] if mode == "json" else []


def steps_down(tool_mode: str, mode: str) -> bool:
    """Whether a critique whose structured levels the provider refused goes on in the text
    form: in ``auto`` mode, and in json mode (which reads JSON from free text when the
    provider enforces none); a run in native mode by choice ends instead, as ReAct's does."""
    return tool_mode == "auto" or mode == "json"


def stepped_down(tool_mode: str, mode: str, refused: Sequence[Level]) -> CriticState:
    """The run's new ``tool_mode`` after the provider refused the critique's ``refused``
    levels, in ``auto`` mode (the next rounds start where the provider accepts the form);
    no update otherwise."""
    if tool_mode != "auto" or mode not in refused:
        return {}
    below = "json" if mode == "native" and "json" not in refused else "text"
    return {"tool_mode": below}


def build_critic(
    settings: LoopSettings, options: Mapping[str, object] | None = None
) -> LoopBuilder:
    """The uncompiled CRITIC graph for ``settings``."""
    # Graph steps that must still follow a node (see ``RunBudget.allows``): each model step
    # comes with the middleware's before_model and after_model hook nodes.
    before = len(settings.middleware.with_hook("before_model"))
    after = len(settings.middleware.with_hook("after_model"))
    draft_steps = before + 1 + after

    def check_steps(run: LoopSettings) -> int:
        """After a critique: its hooks, the review, the checks and the revision."""
        return after + bool(run.review) + 1 + draft_steps

    def round_steps(run: LoopSettings) -> int:
        """After a draft or a revision: its hooks, then a critique and its checks."""
        return after + before + 1 + check_steps(run)

    def opening(state: CriticState, run: LoopSettings) -> CriticState:
        update: CriticState = {
            "draft": "",
            "claims": [],
            "round": 0,
            "verified": False,
            "pending": [],
        }
        if not run.budget.allows(state, steps=draft_steps):
            update.update({"status": "max_iterations", "answer": ""})
        return update

    def generate(state: CriticState, step: Step) -> LogicOf[CriticState]:
        run = step.run
        ask = step.ask(state)
        history, form = conversation(state, run), RequestForm(prompts.CHAT_SYSTEM)
        first, update = yield from call_model(ask.call(history, form))
        reply, shown, update = yield from short_again(ask, history, form, first, update)
        if cut_short(reply):  # asked again and still cut: no draft to check
            return {**update, "messages": shown, "status": "max_iterations", "answer": ""}
        draft = content_text(reply.content).strip()
        done: CriticState = {}
        if not run.tools or state.get("tool_mode") == "none":
            done = {"status": "completed"}
        elif not run.budget.allows(state, steps=round_steps(run)):
            done = {"status": "max_iterations"}
        shown = [*shown[:-1], answer_message(reply, draft)]
        return {**update, "messages": shown, "draft": draft, "answer": draft, **done}

    def critique(state: CriticState, step: Step) -> LogicOf[CriticState]:
        run = step.run
        ask = step.ask(state)
        mode = state.get("tool_mode", "text")
        earlier = state.get("claims", [])
        choice = run.tool_choice or ("required" if guides(run) else None)
        require = choice not in (None, "auto") and not earlier
        which = f"the {choice} tool" if choice in run.tools.names else "a tool"
        fence = scratch_of(state).get("fence", "")
        guided = mode == "json" and guides(run)
        shown = evidence(earlier) if guided else earlier
        found = (
            prompts.CRITIQUE_EVIDENCE.format(
                results=_results(shown, fence, run.max_tool_output_chars)
            )
            if earlier
            else ""
        )
        draft = state.get("draft", "")
        request = HumanMessage(
            prompts.CRITIQUE_REQUIRED.format(draft=draft, tool=which)
            if require
            else prompts.CRITIQUE_REQUEST.format(draft=draft, evidence=found)
        )
        round_update: CriticState = {"round": state.get("round", 0) + 1}
        rejected = 0  # requests the provider refused before a form of the critique worked
        levels = critique_levels(run.tool_mode, mode)
        if levels:
            schema: type[BaseModel] | JsonDict = RequiredCritique if require else CritiqueReport
            if guided:
                words = words_of(request_of(state), draft)
                schema = critique_schema(run.tools, words, required=require)
            try:
                result = yield from structured_call(
                    ask,
                    [*conversation(state, run), request],
                    schema,
                    instructions=_json_critique_text,
                    tools=run.tools.tools,
                    with_system=True,
                    levels=levels,
                    max_calls=1,
                    purpose="critique",
                )
            except Exception as exc:
                if not (is_form_rejection(exc) and steps_down(run.tool_mode, mode)):
                    raise
                rejected = failed_calls(exc)  # every level refused: the text form follows
                round_update.update(stepped_down(run.tool_mode, mode, levels))
            else:
                round_update.update(stepped_down(run.tool_mode, mode, result.refused))
                if result.calls:
                    text = content_text(result.replies[0].content) if result.replies else ""
                    if not text and result.replies and result.replies[0].tool_calls:
                        args = result.replies[0].tool_calls[0].get("args")
                        text = json.dumps(args, default=str)
                    value = result.value
                    data = value.model_dump() if isinstance(value, BaseModel) else value
                    written = checks(state, run, _critique_of(data, text))
                    return {**result.state_update(), **round_update, **written}
        form = RequestForm(_text_critique_text, tools="prompt")
        asked = [*conversation(state, run), request]
        tools = run.tools.tools
        reply, update = yield from call_model(
            ask.call(asked, form, tools=tools, purpose="critique")
        )
        if require and not parse_critique(content_text(reply.content)).claims:
            again = HumanMessage(prompts.CRITIQUE_REQUIRED_AGAIN.format(tool=which))
            reply, second = yield from call_model(
                ask.call([*asked, reply, again], form, tools=tools, purpose="critique")
            )
            update = spent_together(update, second)
        text = content_text(reply.content)
        data = None
        if require and guides(run) and not parse_critique(text).claims:
            # A small model that names no claim when asked twice: its draft is the claim,
            # checked with the tool for the question, as its first ReAct step would be.
            request_text = request_of(state)
            tool = tool_for(run.tools, request_text, choice or "required")
            data = {"claims": [{"claim": draft, "tool": tool, "tool_input": request_text}]}
        written = checks(state, run, _critique_of(data, text))
        update["llm_calls"] += rejected
        return {**update, **round_update, **written}

    def checks(state: CriticState, run: LoopSettings, found: Critique) -> CriticState:
        """What a critique writes: the end of the run when it accepts the draft (or names
        no claim, or no steps are left for a check), else the round's checks as one
        assistant message (the claims it checks as its text, see ``checks_text``), and
        the claims waiting for them."""
        draft = state.get("draft", "")
        if found.verified or not found.claims:
            return {"status": "completed", "answer": draft, "verified": found.verified}
        if not run.budget.allows(state, steps=check_steps(run)):
            return {"status": "max_iterations", "answer": draft, "verified": False}
        calls, pending = _round_checks(run.tools, found.claims, state.get("round", 0) + 1)
        message = AIMessage(checks_text(pending), tool_calls=calls, name=run.agent_name)
        return {"messages": [message], "pending": pending, "verified": False}

    def route_critique(state: CriticState, runtime: LoopRuntime) -> str | list[Send]:
        if state.get("status") != "running":
            return END
        # "revise" when a middleware answered every check (rejected them, say)
        return pending_step(settings.for_run(runtime), state) or "revise"

    def revise(state: CriticState, step: Step) -> LogicOf[CriticState]:
        fence = scratch_of(state).get("fence", "")
        checked = _checked(state, fence)
        claims: CriticState = {"claims": [*state.get("claims", []), *checked], "pending": []}
        if scratch_of(state).get("tool_ended"):  # a check's tool ended the run
            return {**claims, "status": "completed"}
        run = step.run
        number = state.get("round", 1)
        guided = state.get("tool_mode") == "json" and guides(run)
        if guided:
            checked = evidence(checked)
        results = _results(checked, fence, run.max_tool_output_chars)
        system = prompts.REVISE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
        earlier = state.get("draft", "")
        request = HumanMessage(prompts.REVISE_REQUEST.format(draft=earlier, results=results))
        form, offered, purpose = RequestForm(system), [], None
        if guided:  # a JSON revision: the chat shows the draft read from it
            schema = revision_schema(request_of(state), earlier, checked)
            form = RequestForm(system, tools="schema", schema=lambda tools, require: schema)
            offered, purpose = run.tools.tools, JSON_TURN
        ask = step.ask(state)
        history = [*conversation(state, run), request]
        call = ask.call(history, form, tools=offered, purpose=purpose)
        first, spent = yield from call_model(call)
        reply, shown, spent = yield from short_again(ask, history, form, first, spent)
        update: CriticState = {**spent, **claims}
        more = number < run.max_iterations and run.budget.allows(state, steps=round_steps(run))
        if cut_short(reply):  # asked again and still cut: the earlier draft stands
            done: CriticState = {} if more else {"status": "max_iterations"}
            return {**update, "messages": shown, "answer": earlier, **done}
        text = content_text(reply.content)
        draft = revision_of(text) if guided else text.strip()
        start = scratch_of(state).get("transcript_start") or 0
        if unusable(draft, [*state["messages"], *shown], start):
            draft = earlier  # empty, or a copied tool result: the earlier draft stands
        done = {} if more else {"status": "completed"}
        shown = [*shown[:-1], answer_message(reply, draft)]
        return {**update, "messages": shown, "draft": draft, "answer": draft, **done}

    builder = new_graph(
        CriticState,
        CriticOutput,
        options or {},
        loop="critic",
        settings=settings,
        tools_node="call_tool",
    )
    add_step(builder, "generate", generate, settings, model_step=True)
    add_tool_turn(
        builder,
        settings,
        "critique",
        critique,
        targets=["revise"],
        router=route_critique,
    )
    builder.add_node("call_tool", ToolStep(settings).graph_node())
    add_step(builder, "revise", revise, settings, model_step=True)
    add_start(builder, settings, opening, while_running("generate"), ["generate"])
    route(builder, "generate", while_running("critique"), ["critique"])
    builder.add_edge("call_tool", "revise")
    add_review(
        builder,
        settings,
        lambda state: dispatch(pending_calls(state["messages"])) or "revise",
        ["revise"],
    )
    route(builder, "revise", while_running("critique"), ["critique"])
    return builder


def create_critic_graph(
    model: BaseChatModel | str | None,
    tools: ToolsArg = None,
    *,
    max_critique_rounds: int = 2,
    **options: Unpack[ToolLoopOptions[ResponseT, ContextT]],
) -> CriticGraph[ContextT, ResponseT]:
    """Build the CRITIC loop: draft, critique into checkable claims, verify, revise.

    The critique lists claims as ``CLAIM: / TOOL: / TOOL INPUT:`` blocks (text mode) or
    as a structured ``{"verified", "claims": [{"claim", "tool", "tool_input"}]}`` object
    (native and json modes, falling back to reading the text); a JSON list of claims is
    accepted in any mode. The critique step writes a round's checks as one ``AIMessage``
    (the claims it checks as its text, one a line with its check: never the model's raw
    critique, which ``claims`` and ``pending`` hold as records) with a tool call per
    distinct check (claims naming the same check share it), so ``after_model``
    middleware sees them: approval
    (``HumanInTheLoopMiddleware`` or ``interrupt_before_tools``) works as in ReAct, an
    edited call runs as edited and a rejected one is not run (the rejection is the
    claim's observation). The checks run concurrently through the same tool step as
    ReAct's calls (``wrap_tool_call``, ``Command`` returns including
    ``Command.PARENT``); the loop-break and ``max_tool_calls`` count the whole run's
    calls; an unknown tool or a failing check becomes an observation; a tool that ends
    the run (``return_direct``, ``Command(goto=END)``) ends it with its result as the
    answer. ``VERIFIED``, or a critique with no readable claim, accepts the current draft
    (and writes no message). Without tools the draft is the answer.

    With ``tool_choice`` ("required" or a tool name) the first critique must list at least
    one claim to check: native and json modes ask for a schema with at least one claim,
    text mode asks once more after a reply naming none.

    Call budget: at most ``1 + 2 * max_critique_rounds`` model calls (the draft, then per
    round one critique and one revision; +1 when text mode asks again under
    ``tool_choice``); exactly 1 without tools. The status is
    ``"completed"`` when a critique accepts the draft, and also when the rounds run out
    after a revision: the last revision is then the answer, unchecked. ``"max_iterations"``
    only when the recursion limit stops the loop before the draft could be checked.
    ``context={"max_iterations": n}`` replaces ``max_critique_rounds`` for one run.

    Args:
        model: A LangChain chat model, or a spec string for ``loopgraphs.models.load_model``.
        tools: LangChain tools or typed callables used to verify claims. None: draft only.
        max_critique_rounds: Critique-verify-revise rounds allowed.
        **options: The shared options of ``ToolLoopOptions`` (see ``create_react_graph``);
            ``tool_mode`` chooses how the critique is asked for (structured output in
            native and json modes, text blocks in text mode). The draft, each critique
            and each revision read the user's earlier turns and the answers they got,
            then the request; ``max_history_tokens`` bounds the earlier turns.

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``draft``, ``claims``,
        ``round`` and ``verified``; ``messages`` gains the draft, each round's checks
        (the critique message with its tool calls, then one ``ToolMessage`` per call)
        and each revision. Requests to the model are built from the caller's
        conversation and CRITIC's own prompts, not from this transcript.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_critique_rounds", max_critique_rounds)
    build = partial(build_critic, options=options)
    return compiled_loop("critic", build, model, tools, options, max_iterations=max_critique_rounds)
