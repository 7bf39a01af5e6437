"""CRITIC's steps: the draft, the critique that writes a round's checks, the revision
that reads their results, the routers after a draft or a revision and after a
critique, and ``finish``, the one way a run ends when it may not go on.

Each step is ``logic(state, step)``; ``loopgraphs.graphs.critic.graph`` wires them. The
graph steps a run still needs are the kit's count (``step.may_continue`` before another
round, ``step.may_finish`` before a round's checks).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.types import Send
from pydantic import BaseModel
from pydantic.json_schema import JsonDict

from loopgraphs import prompts
from loopgraphs.graphs.critic.checks import (
    CritiqueReport,
    RequiredCritique,
    checked_claims,
    checks_media,
    checks_text,
    critique_levels,
    critique_of,
    reported_critique,
    results_text,
    round_checks,
    stepped_down,
    steps_down,
)
from loopgraphs.graphs.critic.guided import (
    critique_schema,
    evidence,
    revision_of,
    revision_schema,
)
from loopgraphs.graphs.critic.state import CriticOptions, CriticState
from loopgraphs.nodes import (
    END,
    JSON_TURN,
    Level,
    LogicOf,
    LoopSettings,
    Parsed,
    RequestForm,
    Step,
    answer_message,
    content_text,
    conversation,
    cut_short,
    final_action_answer,
    generate,
    guides,
    parse,
    reask_for,
    reasked,
    request_of,
    scratch_of,
    spent_together,
    tool_calls,
    tool_for,
    unusable,
    with_media,
    words_of,
)
from loopgraphs.nodes.parsing.critic import Critique, parse_critique
from loopgraphs.toolkits.registry import ToolRegistry

CriticStep = Step[CriticOptions[Any, Any]]


def finish(answer: str, *, revised: bool = False) -> CriticState:
    """How a run ends when it may not go on: its rounds or its step budget are spent, or
    a draft or a revision was cut off again.

    Args:
        answer: The best answer the run has: the draft (none when the draft was cut),
            the revision, or the earlier draft when the revision was cut.
        revised: Whether the run ends on a revision written in full (its rounds or steps
            spent after it): the revision is then the answer, unchecked, and the run is
            ``completed``. Any other end stops short, ``max_iterations``.

    Returns:
        The run's answer and status.
    """
    return {"answer": answer, "status": "completed" if revised else "max_iterations"}


def opening(state: CriticState, step: CriticStep) -> CriticState:
    """CRITIC's starting values: no draft, claims or round yet (the kit's ``prepare``
    ends the run at once when too few graph steps are left for a draft)."""
    return {"draft": "", "claims": [], "round": 0, "verified": False, "pending": []}


def write_draft(state: CriticState, step: CriticStep) -> LogicOf[CriticState]:
    """Write the draft, the run's answer until a revision replaces it. Without tools the
    draft is the answer; the run finishes when no steps are left for a round, or when the
    draft is cut off again after the ask for a short one."""
    history = conversation(state, step.run)
    turn = yield from generate(step, state, history, instructions=prompts.CHAT_SYSTEM)
    if turn.cut:  # asked again and still cut: no draft to check
        return {**turn.spent, "messages": turn.messages, **finish("")}
    text = final_action_answer(turn.text) or turn.text
    done: CriticState = {}
    if not step.run.tools or state.get("tool_mode") == "none":
        done = {"status": "completed"}
    elif not step.may_continue(state):
        done = finish(text)
    shown = [*turn.messages[:-1], answer_message(turn.reply, text)]
    return {**turn.spent, "messages": shown, "draft": text, "answer": text, **done}


def route_draft(state: CriticState) -> str:
    """After a draft or a revision: the critique while the run goes on, else the end."""
    return "critique" if state.get("status") == "running" else END


@dataclass(frozen=True)
class CritiqueRequest:
    """What a round's critique asks the model.

    Attributes:
        message: The request: the draft, with the evidence gathered so far, or, when a
            claim must be named, the tool that must check it.
        required: Whether the critique must name a claim to check (``tool_choice``, on a
            guided run "required" by default, before any check).
        choice: The tool choice to honour ("required" or a tool name), if any.
        tool: How the request names that tool ("the search tool", or "a tool").
        guided: Whether the critique is decoded under a grounded schema (json mode, on a
            guided run; see ``loopgraphs.graphs.critic.guided``).
    """

    message: HumanMessage
    required: bool
    choice: str | None
    tool: str
    guided: bool


def critique_request(state: CriticState, run: LoopSettings) -> CritiqueRequest:
    """The request of the round's critique, on the draft and the claims checked so far."""
    earlier = state.get("claims", [])
    choice = run.tool_choice or ("required" if guides(run) else None)
    required = choice not in (None, "auto") and not earlier
    tool = f"the {choice} tool" if choice in run.tools.names else "a tool"
    guided = state.get("tool_mode", "text") == "json" and guides(run)
    draft = state.get("draft", "")
    if required:
        text = prompts.CRITIQUE_REQUIRED.format(draft=draft, tool=tool)
    else:
        fence = scratch_of(state).get("fence", "")
        shown = evidence(earlier) if guided else earlier
        results = results_text(shown, fence, run.max_tool_output_chars)
        found = prompts.CRITIQUE_EVIDENCE.format(results=results) if earlier else ""
        text = prompts.CRITIQUE_REQUEST.format(draft=draft, evidence=found)
    media = checks_media(state) if earlier and not required else []
    return CritiqueRequest(with_media(text, media), required, choice, tool, guided)


def critique(state: CriticState, step: CriticStep) -> LogicOf[CriticState]:
    """Ask which claims of the draft to check, and write them as the round's checks (see
    ``write_checks``).

    The critique is asked for as structured output in native and json modes (see
    ``critique_levels``); where the provider refuses that form, an ``auto`` or json-mode
    run asks for it in text instead (and an ``auto`` run's later rounds start there).
    """
    run = step.run
    request = critique_request(state, run)
    mode = state.get("tool_mode", "text")
    update: CriticState = {"round": state.get("round", 0) + 1}
    rejected = 0  # requests the provider refused before a form of the critique worked
    levels = critique_levels(run.tool_mode, mode)
    if levels:
        result = yield from structured_critique(state, step, request, levels)
        if result.level == "refused":  # every level refused: the text form follows
            rejected = result.spent["llm_calls"]
            update.update(stepped_down(run.tool_mode, mode, levels))
        else:
            update.update(stepped_down(run.tool_mode, mode, result.refused))
            if result.spent["llm_calls"]:
                written = write_checks(state, step, reported_critique(result))
                return {**result.spent, **update, **written}
    found, spent = yield from text_critique(state, step, request)
    spent["llm_calls"] = spent.get("llm_calls", 0) + rejected
    return {**spent, **update, **write_checks(state, step, found)}


def structured_critique(
    state: CriticState, step: CriticStep, request: CritiqueRequest, levels: list[Level]
) -> Generator[Any, Any, Parsed[Any]]:
    """Ask for the critique as structured output at ``levels`` (one request): a
    ``CritiqueReport``, a ``RequiredCritique`` when a claim must be named, or the grounded
    critique of a guided run (see ``critique_schema``). A run that may step down to the
    text form gets the provider's refusal of every level back (``level="refused"``);
    any other run ends on it."""
    run = step.run
    schema: type[BaseModel] | JsonDict = RequiredCritique if request.required else CritiqueReport
    if request.guided:
        words = words_of(request_of(state), state.get("draft", ""))
        schema = critique_schema(run.tools, words, required=request.required)
    mode = state.get("tool_mode", "text")
    return (
        yield from parse(
            step,
            state,
            [*conversation(state, run), request.message],
            schema=schema,
            instructions=_json_critique_text,
            tools=run.tools.tools,
            with_system=True,
            levels=levels,
            max_calls=1,
            purpose="critique",
            raise_refused=not steps_down(run.tool_mode, mode),
        )
    )


def text_critique(
    state: CriticState, step: CriticStep, request: CritiqueRequest
) -> Generator[Any, Any, tuple[Critique, CriticState]]:
    """Ask for the critique in text (``CLAIM: / TOOL: / TOOL INPUT:`` blocks), once more
    when a claim must be named and the reply names none.

    Returns:
        The critique read, and the ``llm_calls``/``usage`` update of its requests.
    """
    run = step.run
    form = RequestForm(_text_critique_text, tools="prompt")
    asked = [*conversation(state, run), request.message]
    tools = run.tools.tools
    turn = yield from generate(
        step, state, asked, instructions=form, tools=tools, purpose="critique", again=False
    )
    reply, spent = turn.reply, turn.spent
    if request.required and not parse_critique(content_text(reply.content)).claims:
        again = prompts.CRITIQUE_REQUIRED_AGAIN.format(tool=request.tool)
        more = yield from generate(
            step,
            state,
            reasked([*asked, reply], again),
            instructions=form,
            tools=tools,
            purpose="critique",
            again=False,
        )
        reply, spent = more.reply, spent_together(spent, more.spent)
    text = content_text(reply.content)
    data = None
    if request.required and guides(run) and not parse_critique(text).claims:
        # A small model that names no claim when asked twice: its draft is the claim,
        # checked with the tool for the question, as its first ReAct step would be.
        question = request_of(state)
        tool = tool_for(run.tools, question, request.choice or "required")
        data = {"claims": [{"claim": state.get("draft", ""), "tool": tool, "tool_input": question}]}
    return critique_of(data, text), {**spent}


def _json_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_JSON_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def _text_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_TEXT_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def write_checks(state: CriticState, step: CriticStep, found: Critique) -> CriticState:
    """What a critique writes.

    Args:
        state: The state the critique read.
        step: The critique's step.
        found: The critique.

    Returns:
        The end of the run when the critique accepts the draft or names no claim
        (``completed``), or when no steps are left for the checks and the revision (see
        ``finish``); else the round's checks as one assistant message (the claims it
        checks as its text, see ``checks_text``) and the claims waiting for them.
    """
    draft = state.get("draft", "")
    if found.verified or not found.claims:
        return {"status": "completed", "answer": draft, "verified": found.verified}
    if not step.may_finish(state, longest=True):
        return {**finish(draft), "verified": False}
    run = step.run
    calls, pending = round_checks(run.tools, found.claims, state.get("round", 0) + 1)
    message = AIMessage(checks_text(pending), tool_calls=calls, name=run.agent_name)
    return {"messages": [message], "pending": pending, "verified": False}


def route_critique(state: CriticState, step: CriticStep) -> str | list[Send]:
    """After a critique: the end when it ended the run; else its checks (the review when
    some pause for a human, else one ``Send`` per check to ``call_tool``), or ``revise``
    when a middleware answered every check (rejected them, say)."""
    if state.get("status") != "running":
        return END
    return tool_calls(state, step) or "revise"


def revise(state: CriticState, step: CriticStep) -> LogicOf[CriticState]:
    """Record the round's checked claims and rewrite the draft from their results.

    The revision is the run's new draft and answer (the earlier draft stands when it is
    empty, copies a tool result, or is cut off again). A check's tool that ended the run
    ends it here; when the rounds or the steps run out, the run finishes on the revision
    (see ``finish``).
    """
    fence = scratch_of(state).get("fence", "")
    checked = checked_claims(state, fence)
    media = checks_media(state, {item["id"] for item in state.get("pending") or []})
    claims: CriticState = {"claims": [*state.get("claims", []), *checked], "pending": []}
    if scratch_of(state).get("tool_ended"):  # a check's tool ended the run
        return {**claims, "status": "completed"}
    run = step.run
    guided = state.get("tool_mode") == "json" and guides(run)
    if guided:
        checked = evidence(checked)
    results = results_text(checked, fence, run.max_tool_output_chars)
    system = prompts.REVISE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    earlier = state.get("draft", "")
    request = with_media(prompts.REVISE_REQUEST.format(draft=earlier, results=results), media)
    history = [*conversation(state, run), request]
    if guided:  # a JSON revision: the chat shows the draft read from it
        schema = revision_schema(request_of(state), earlier, checked)
        form = RequestForm(system, tools="schema", schema=lambda tools, require: schema)
        reply, shown, spent = yield from guided_revision(state, step, history, form)
    else:
        turn = yield from generate(step, state, history, instructions=system)
        reply, shown, spent = turn.reply, turn.messages, {**turn.spent}
    update: CriticState = {**spent, **claims}
    more = state.get("round", 1) < run.max_iterations and step.may_continue(state)
    if cut_short(reply):  # asked again and still cut: the earlier draft stands
        ending: CriticState = {} if more else finish(earlier)
        return {**update, "messages": shown, "answer": earlier, **ending}
    text = content_text(reply.content)
    revised = revision_of(text) if guided else final_action_answer(text) or text.strip()
    start = scratch_of(state).get("transcript_start") or 0
    if unusable(revised, [*state["messages"], *shown], start):
        revised = earlier  # empty, or a copied tool result: the earlier draft stands
    ending = {} if more else finish(revised, revised=True)
    shown = [*shown[:-1], answer_message(reply, revised)]
    return {**update, "messages": shown, "draft": revised, "answer": revised, **ending}


def guided_revision(
    state: CriticState, step: CriticStep, history: Sequence[AnyMessage], form: RequestForm
) -> Generator[Any, Any, tuple[AIMessage, list[AnyMessage], CriticState]]:
    """A guided run's revision: one JSON turn under the revision's grounded schema (the
    chat shows the draft the step reads from it), asked once more in the same form when
    it is cut at the token cap or says nothing (see ``reask_for``).

    Returns:
        The reply to read, the replies the transcript keeps and the ``llm_calls``/
        ``usage`` update of the requests.
    """
    turn = yield from generate(
        step,
        state,
        history,
        instructions=form,
        tools=step.run.tools.tools,
        purpose=JSON_TURN,
        again=False,
    )
    again = reask_for(turn.reply)
    if again is None:
        return turn.reply, [turn.reply], {**turn.spent}
    retold = reasked([*history, turn.reply], again)
    more = yield from generate(step, state, retold, instructions=form, again=False)
    return more.reply, [turn.reply, more.reply], {**spent_together(turn.spent, more.spent)}
