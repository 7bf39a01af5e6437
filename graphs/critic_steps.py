"""CRITIC's steps: the draft, the critique that writes a round's checks, the revision
that reads their results, the routers after a critique and after the review, and
``finish``, the one way a run ends when it may not go on.

Each step is a function of the state and the step (``logic(state, step)``, see
``loopgraphs.nodes.driver.add_step``) with what it needs from the build bound before it:
the graph steps a round takes (``RoundSteps``), or the loop's settings for a router.
``loopgraphs.graphs.critic`` wires them into the graph.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.types import Send
from pydantic import BaseModel
from pydantic.json_schema import JsonDict

from loopgraphs import prompts
from loopgraphs.graphs.critic_checks import (
    CritiqueReport,
    RequiredCritique,
    checked_claims,
    checks_text,
    critique_levels,
    critique_of,
    reported_critique,
    results_text,
    round_checks,
    stepped_down,
    steps_down,
)
from loopgraphs.graphs.critic_guided import critique_schema, evidence, revision_of, revision_schema
from loopgraphs.graphs.critic_state import CriticState
from loopgraphs.nodes.answer_check import unusable
from loopgraphs.nodes.driver import LogicOf
from loopgraphs.nodes.errors import failed_calls, is_form_rejection
from loopgraphs.nodes.generate import answer_message, call_model, short_again, spent_together
from loopgraphs.nodes.grounding import guides, tool_for, words_of
from loopgraphs.nodes.history import conversation
from loopgraphs.nodes.model_call import JSON_TURN, ModelCall, ModelCaller
from loopgraphs.nodes.model_send import RequestForm
from loopgraphs.nodes.parsing.critic import Critique, parse_critique
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import Level, StructuredResult, structured_call
from loopgraphs.nodes.tool_loop import pending_step
from loopgraphs.nodes.tool_step import dispatch, pending_calls
from loopgraphs.state import LoopRuntime, ModelSpend, request_of, scratch_of
from loopgraphs.toolkits.registry import ToolRegistry


@dataclass(frozen=True)
class RoundSteps:
    """The graph steps that must still follow a CRITIC step (see ``RunBudget.allows``):
    each model step comes with the middleware's ``before_model`` and ``after_model`` hook
    nodes.

    Attributes:
        before: The ``before_model`` hook nodes before each model step.
        after: The ``after_model`` hook nodes after each model step.
    """

    before: int
    after: int

    @classmethod
    def of(cls, settings: LoopSettings) -> RoundSteps:
        """The steps of a round with the hooks of ``settings``'s middleware."""
        hooks = settings.middleware
        return cls(len(hooks.with_hook("before_model")), len(hooks.with_hook("after_model")))

    @property
    def draft(self) -> int:
        """For the draft: its hooks and the model step."""
        return self.before + 1 + self.after

    def checks(self, run: LoopSettings) -> int:
        """After a critique: its hooks, the review, the checks and the revision."""
        return self.after + bool(run.review) + 1 + self.draft

    def round(self, run: LoopSettings) -> int:
        """After a draft or a revision: its hooks, then a critique and its checks."""
        return self.after + self.before + 1 + self.checks(run)


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


def opening(steps: RoundSteps, state: CriticState, step: Step) -> CriticState:
    """CRITIC's starting values (see ``loopgraphs.nodes.run_start.add_start``): no draft,
    claims or round yet; the run ends at once when too few steps are left for a draft."""
    run = step.run
    update: CriticState = {
        "draft": "",
        "claims": [],
        "round": 0,
        "verified": False,
        "pending": [],
    }
    if not run.budget.allows(state, steps=steps.draft):
        update.update(finish(""))
    return update


def generate(steps: RoundSteps, state: CriticState, step: Step) -> LogicOf[CriticState]:
    """Write the draft, the run's answer until a revision replaces it. Without tools the
    draft is the answer; the run finishes when no steps are left for a round, or when the
    draft is cut off again after the ask for a short one."""
    run = step.run
    ask = step.ask(state)
    history, form = conversation(state, run), RequestForm(prompts.CHAT_SYSTEM)
    first, spent = yield from call_model(ask.call(history, form))
    reply, shown, spent = yield from short_again(ask, history, form, first, spent)
    if cut_short(reply):  # asked again and still cut: no draft to check
        return {**spent, "messages": shown, **finish("")}
    draft = content_text(reply.content).strip()
    done: CriticState = {}
    if not run.tools or state.get("tool_mode") == "none":
        done = {"status": "completed"}
    elif not run.budget.allows(state, steps=steps.round(run)):
        done = finish(draft)
    shown = [*shown[:-1], answer_message(reply, draft)]
    return {**spent, "messages": shown, "draft": draft, "answer": draft, **done}


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
            guided run; see ``loopgraphs.graphs.critic_guided``).
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
    return CritiqueRequest(HumanMessage(text), required, choice, tool, guided)


def critique(steps: RoundSteps, state: CriticState, step: Step) -> LogicOf[CriticState]:
    """Ask which claims of the draft to check, and write them as the round's checks (see
    ``write_checks``).

    The critique is asked for as structured output in native and json modes (see
    ``critique_levels``); where the provider refuses that form, an ``auto`` or json-mode
    run asks for it in text instead (and an ``auto`` run's later rounds start there).
    """
    run = step.run
    ask = step.ask(state)
    request = critique_request(state, run)
    mode = state.get("tool_mode", "text")
    update: CriticState = {"round": state.get("round", 0) + 1}
    rejected = 0  # requests the provider refused before a form of the critique worked
    levels = critique_levels(run.tool_mode, mode)
    if levels:
        try:
            result = yield from structured_critique(ask, state, run, request, levels)
        except Exception as exc:
            if not (is_form_rejection(exc) and steps_down(run.tool_mode, mode)):
                raise
            rejected = failed_calls(exc)  # every level refused: the text form follows
            update.update(stepped_down(run.tool_mode, mode, levels))
        else:
            update.update(stepped_down(run.tool_mode, mode, result.refused))
            if result.calls:
                written = write_checks(steps, state, run, reported_critique(result))
                return {**result.state_update(), **update, **written}
    found, spent = yield from text_critique(ask, state, run, request)
    spent["llm_calls"] += rejected
    return {**spent, **update, **write_checks(steps, state, run, found)}


def structured_critique(
    ask: ModelCaller,
    state: CriticState,
    run: LoopSettings,
    request: CritiqueRequest,
    levels: list[Level],
) -> Generator[ModelCall, object, StructuredResult]:
    """Ask for the critique as structured output at ``levels`` (one request): a
    ``CritiqueReport``, a ``RequiredCritique`` when a claim must be named, or the grounded
    critique of a guided run (see ``critique_schema``)."""
    schema: type[BaseModel] | JsonDict = RequiredCritique if request.required else CritiqueReport
    if request.guided:
        words = words_of(request_of(state), state.get("draft", ""))
        schema = critique_schema(run.tools, words, required=request.required)
    return (
        yield from structured_call(
            ask,
            [*conversation(state, run), request.message],
            schema,
            instructions=_json_critique_text,
            tools=run.tools.tools,
            with_system=True,
            levels=levels,
            max_calls=1,
            purpose="critique",
        )
    )


def text_critique(
    ask: ModelCaller, state: CriticState, run: LoopSettings, request: CritiqueRequest
) -> Generator[ModelCall, object, tuple[Critique, ModelSpend]]:
    """Ask for the critique in text (``CLAIM: / TOOL: / TOOL INPUT:`` blocks), once more
    when a claim must be named and the reply names none.

    Returns:
        The critique read, and the ``llm_calls``/``usage`` update of its requests.
    """
    form = RequestForm(_text_critique_text, tools="prompt")
    asked = [*conversation(state, run), request.message]
    tools = run.tools.tools
    reply, spent = yield from call_model(ask.call(asked, form, tools=tools, purpose="critique"))
    if request.required and not parse_critique(content_text(reply.content)).claims:
        again = HumanMessage(prompts.CRITIQUE_REQUIRED_AGAIN.format(tool=request.tool))
        reply, second = yield from call_model(
            ask.call([*asked, reply, again], form, tools=tools, purpose="critique")
        )
        spent = spent_together(spent, second)
    text = content_text(reply.content)
    data = None
    if request.required and guides(run) and not parse_critique(text).claims:
        # A small model that names no claim when asked twice: its draft is the claim,
        # checked with the tool for the question, as its first ReAct step would be.
        question = request_of(state)
        tool = tool_for(run.tools, question, request.choice or "required")
        data = {"claims": [{"claim": state.get("draft", ""), "tool": tool, "tool_input": question}]}
    return critique_of(data, text), spent


def _json_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_JSON_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def _text_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_TEXT_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def write_checks(
    steps: RoundSteps, state: CriticState, run: LoopSettings, found: Critique
) -> CriticState:
    """What a critique writes.

    Args:
        steps: The graph steps a round takes.
        state: The state the critique read.
        run: The run's settings.
        found: The critique.

    Returns:
        The end of the run when the critique accepts the draft or names no claim
        (``completed``), or when no steps are left for a check (see ``finish``); else the
        round's checks as one assistant message (the claims it checks as its text, see
        ``checks_text``) and the claims waiting for them.
    """
    draft = state.get("draft", "")
    if found.verified or not found.claims:
        return {"status": "completed", "answer": draft, "verified": found.verified}
    if not run.budget.allows(state, steps=steps.checks(run)):
        return {**finish(draft), "verified": False}
    calls, pending = round_checks(run.tools, found.claims, state.get("round", 0) + 1)
    message = AIMessage(checks_text(pending), tool_calls=calls, name=run.agent_name)
    return {"messages": [message], "pending": pending, "verified": False}


def route_critique(
    settings: LoopSettings, state: CriticState, runtime: LoopRuntime
) -> str | list[Send]:
    """After a critique: the end when it ended the run; else its checks (the review when
    some pause for a human, else one ``Send`` per check to ``call_tool``), or ``revise``
    when a middleware answered every check (rejected them, say).

    Args:
        settings: The loop's settings (the run's context applies to them).
        state: The state after the critique.
        runtime: The run's runtime.
    """
    if state.get("status") != "running":
        return END
    return pending_step(settings.for_run(runtime), state) or "revise"


def route_review(state: CriticState) -> str | list[Send]:
    """After the review: one ``Send`` per check left to run, to ``call_tool``, or
    ``revise`` when the reviewer rejected them all."""
    return dispatch(pending_calls(state["messages"])) or "revise"


def revise(steps: RoundSteps, state: CriticState, step: Step) -> LogicOf[CriticState]:
    """Record the round's checked claims and rewrite the draft from their results.

    The revision is the run's new draft and answer (the earlier draft stands when it is
    empty, copies a tool result, or is cut off again). A check's tool that ended the run
    ends it here; when the rounds or the steps run out, the run finishes on the revision
    (see ``finish``).
    """
    fence = scratch_of(state).get("fence", "")
    checked = checked_claims(state, fence)
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
    more = state.get("round", 1) < run.max_iterations and run.budget.allows(
        state, steps=steps.round(run)
    )
    if cut_short(reply):  # asked again and still cut: the earlier draft stands
        ending: CriticState = {} if more else finish(earlier)
        return {**update, "messages": shown, "answer": earlier, **ending}
    text = content_text(reply.content)
    draft = revision_of(text) if guided else text.strip()
    start = scratch_of(state).get("transcript_start") or 0
    if unusable(draft, [*state["messages"], *shown], start):
        draft = earlier  # empty, or a copied tool result: the earlier draft stands
    ending = {} if more else finish(draft, revised=True)
    shown = [*shown[:-1], answer_message(reply, draft)]
    return {**update, "messages": shown, "draft": draft, "answer": draft, **ending}
