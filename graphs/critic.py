"""CRITIC: draft an answer, find its checkable claims, verify them with tools, revise.

Graph: ``prepare → generate → critique → parse → call_tool → revise → critique ...``.
``generate`` writes the draft; ``critique`` lists the claims to check (or says
``VERIFIED``); ``parse`` reads them; ``call_tool`` runs every check of a round
concurrently; ``revise`` rewrites the draft from the results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field
from typing_extensions import Unpack

from loopgraphs import prompts
from loopgraphs.context import LoopContext
from loopgraphs.graphs.critic_guided import critique_schema, evidence, revision_of, revision_schema
from loopgraphs.nodes.build import compile_loop, new_graph
from loopgraphs.nodes.call_tool import call_key, fence_output, unfence
from loopgraphs.nodes.generate import (
    answer_message,
    asker,
    call_model,
    short_again,
    spent_together,
)
from loopgraphs.nodes.grounding import guides, tool_for, words_of
from loopgraphs.nodes.model_send import Form
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.parsing.critic import MAX_CLAIMS, Critique, make_claim, parse_critique
from loopgraphs.nodes.parsing.text import content_text, cut_short
from loopgraphs.nodes.routing import route, steps_left, while_running
from loopgraphs.nodes.runner import Logic, add_step
from loopgraphs.nodes.settings import (
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    check_positive,
    make_settings,
)
from loopgraphs.nodes.structured import Level, structured_call
from loopgraphs.nodes.tool_modes import resolve_mode
from loopgraphs.nodes.tool_step import ToolStep
from loopgraphs.state import (
    LoopState,
    OutputState,
    conversation_of,
    extend_list,
    request_of,
    scratch_of,
    start_run,
)
from loopgraphs.toolkits.registry import ToolRegistry

# Graph steps that must still follow a node (see ``steps_left``).
DRAFT_STEPS = 1  # generate
ROUND_STEPS = 4  # critique, parse, call_tool, revise
CHECK_STEPS = 2  # call_tool, revise


class ClaimCheck(BaseModel):
    """One claim of the draft and how to verify it."""

    claim: str = Field(default="", description="The claim, as the draft states it.")
    tool: str = Field(default="", description="Name of the tool that can verify the claim.")
    tool_input: str | dict[str, Any] = Field(
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


class CriticOutput(OutputState, total=False):
    """Output of the CRITIC loop.

    ``draft`` is the current answer, ``round`` the number of critiques made,
    ``claims`` every claim checked so far (``{"claim", "tool", "tool_input",
    "observation", "round"}``), ``verified`` whether the last critique accepted the
    draft.
    """

    draft: str
    claims: list[dict[str, Any]]
    round: int
    verified: bool


class CriticState(CriticOutput, LoopState, total=False):
    """State of the CRITIC loop: ``critique`` is the last critique's text, ``pending``
    the claims of the current round waiting for their checks and ``tool_log`` the run's
    checks and results (for the loop-break and ``max_tool_calls``)."""

    critique: str
    critique_data: dict[str, Any] | None
    pending: list[dict[str, Any]]
    tool_log: Annotated[list[AnyMessage], extend_list]


def _input_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _results(claims: Sequence[dict[str, Any]], fence: str, limit: int) -> str:
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


def _critique_of(data: dict[str, Any] | None, text: str) -> Critique:
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


def _json_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_JSON_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def _text_critique_text(tools: ToolRegistry) -> str:
    return prompts.CRITIQUE_TEXT_SYSTEM.format(
        tools=tools.describe(), fence_note=prompts.FENCE_NOTE
    )


def build_critic(settings: LoopSettings, options: Any = None) -> StateGraph[Any, Any, Any, Any]:
    """The uncompiled CRITIC graph for ``settings``."""
    tools = ToolStep(settings)

    def prepare(state: CriticState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
        from loopgraphs.nodes.tool_loop import check_history

        check_history(state.get("messages") or [])  # before any model call
        run = settings.for_run(runtime)
        update: dict[str, Any] = {
            **start_run(dict(state)),
            "tool_mode": resolve_mode(run),
            "draft": "",
            "claims": [],
            "round": 0,
            "verified": False,
            "critique": "",
            "critique_data": None,
            "pending": [],
            "tool_log": None,
        }
        if update["status"] == "running" and not steps_left(state, DRAFT_STEPS):
            update.update(status="max_iterations", answer="")
        return update

    def generate(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        ask = asker(run, state, runtime)
        history, form = conversation_of(state), Form(prompts.CHAT_SYSTEM)
        first, update = yield from call_model(ask.call(history, form))
        reply, shown, update = yield from short_again(ask, history, form, first, update)
        if cut_short(reply):  # asked again and still cut: no draft to check
            return {**update, "messages": shown, "status": "max_iterations", "answer": ""}
        draft = content_text(reply.content).strip()
        done: dict[str, Any] = {}
        if not run.tools or state.get("tool_mode") == "none":
            done = {"status": "completed"}
        elif not steps_left(state, ROUND_STEPS):
            done = {"status": "max_iterations"}
        shown = [*shown[:-1], answer_message(reply, draft)]
        return {**update, "messages": shown, "draft": draft, "answer": draft, **done}

    def critique(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        ask = asker(run, state, runtime)
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
        round_update = {"round": state.get("round", 0) + 1}
        if mode in ("native", "json"):
            levels: list[Level] = ["native"] if mode == "native" else ["json"]
            schema: Any = RequiredCritique if require else CritiqueReport
            if guided:
                words = words_of(request_of(state), draft)
                schema = critique_schema(run.tools, words, required=require)
            result = yield from structured_call(
                ask,
                [*conversation_of(state), request],
                schema,
                instructions=_json_critique_text,
                tools=run.tools.tools,
                with_system=True,
                levels=levels,
                max_calls=1,
            )
            if result.calls:
                text = content_text(result.replies[0].content) if result.replies else ""
                if not text and result.replies and result.replies[0].tool_calls:
                    text = json.dumps(result.replies[0].tool_calls[0].get("args"), default=str)
                value = result.value
                data = value.model_dump() if isinstance(value, BaseModel) else value
                return {
                    **result.state_update(),
                    **round_update,
                    "critique": text,
                    "critique_data": data,
                }
        form = Form(_text_critique_text, tools="prompt")
        asked = [*conversation_of(state), request]
        reply, update = yield from call_model(ask.call(asked, form, tools=run.tools.tools))
        if require and not parse_critique(content_text(reply.content)).claims:
            again = HumanMessage(prompts.CRITIQUE_REQUIRED_AGAIN.format(tool=which))
            reply, second = yield from call_model(
                ask.call([*asked, reply, again], form, tools=run.tools.tools)
            )
            update = spent_together(update, second)
        data = None
        if require and guides(run) and not parse_critique(content_text(reply.content)).claims:
            # A small model that names no claim when asked twice: its draft is the claim,
            # checked with the tool for the question, as its first ReAct step would be.
            request_text = request_of(state)
            tool = tool_for(run.tools, request_text, choice or "required")
            data = {"claims": [{"claim": draft, "tool": tool, "tool_input": request_text}]}
        return {
            **update,
            **round_update,
            "critique": content_text(reply.content),
            "critique_data": data,
        }

    def parse(state: CriticState) -> dict[str, Any]:
        found = _critique_of(state.get("critique_data"), state.get("critique", ""))
        draft = state.get("draft", "")
        if found.verified or not found.claims:
            return {
                "status": "completed",
                "answer": draft,
                "verified": found.verified,
                "pending": [],
            }
        if not steps_left(state, CHECK_STEPS):
            return {"status": "max_iterations", "answer": draft, "verified": False, "pending": []}
        number = state.get("round", 1)
        pending = [
            {**claim, "id": f"claim_{number}_{index}"} for index, claim in enumerate(found.claims)
        ]
        return {"pending": pending, "verified": False}

    def call_tool(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        pending = state.get("pending", [])
        calls: list[ToolCall] = []
        slots: list[int] = []  # claims sharing a check share its result
        seen: dict[str, int] = {}
        for item in pending:
            call = ToolCall(
                name=item["tool"],
                args=coerce_args(run.tools, item["tool"], item["tool_input"]),
                id=item["id"],
            )
            slots.append(seen.setdefault(call_key(call), len(calls)))
            if slots[-1] == len(calls):
                calls.append(call)
        results, extra = yield from tools.run_calls(run, state, calls, state.get("tool_log") or [])
        fence = scratch_of(state).get("fence", "")
        checked = [
            {
                "claim": item["claim"],
                "tool": item["tool"],
                "tool_input": item["tool_input"],
                "observation": unfence(content_text(results[slot].content), fence),
                "round": state.get("round", 1),
            }
            for item, slot in zip(pending, slots, strict=True)
        ]
        return {
            **extra,
            "claims": [*state.get("claims", []), *checked],
            "pending": [],
            "tool_log": [AIMessage(content="", tool_calls=calls), *results],
        }

    def revise(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
        number = state.get("round", 1)
        checked = [item for item in state.get("claims", []) if item.get("round") == number]
        guided = state.get("tool_mode") == "json" and guides(run)
        if guided:
            checked = evidence(checked)
        results = _results(checked, scratch_of(state).get("fence", ""), run.max_tool_output_chars)
        system = prompts.REVISE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
        earlier = state.get("draft", "")
        request = HumanMessage(prompts.REVISE_REQUEST.format(draft=earlier, results=results))
        form, offered = Form(system), []
        if guided:
            schema = revision_schema(request_of(state), earlier, checked)
            form = Form(system, tools="schema", schema=lambda tools, require: schema)
            offered = run.tools.tools
        ask = asker(run, state, runtime)
        history = [*conversation_of(state), request]
        first, update = yield from call_model(ask.call(history, form, tools=offered))
        reply, shown, update = yield from short_again(ask, history, form, first, update)
        more = number < run.max_iterations and steps_left(state, ROUND_STEPS)
        if cut_short(reply):  # asked again and still cut: the earlier draft stands
            done = {} if more else {"status": "max_iterations"}
            return {**update, "messages": shown, "answer": earlier, **done}
        text = content_text(reply.content)
        draft = (revision_of(text) if guided else text.strip()) or earlier
        done = {} if more else {"status": "completed"}
        shown = [*shown[:-1], answer_message(reply, draft)]
        return {**update, "messages": shown, "draft": draft, "answer": draft, **done}

    policy = settings.retry_policy
    builder = new_graph(
        CriticState,
        CriticOutput,
        options or {},
        loop="critic",
        settings=settings,
        tools_node="call_tool",
    )
    builder.add_node("prepare", prepare)
    add_step(builder, "generate", generate, policy, model_step=True)
    add_step(builder, "critique", critique, policy, model_step=True)
    builder.add_node("parse", parse)
    add_step(builder, "call_tool", call_tool, None)
    add_step(builder, "revise", revise, policy, model_step=True)
    builder.add_edge(START, "prepare")
    route(builder, "prepare", while_running("generate"), ["generate"])
    route(builder, "generate", while_running("critique"), ["critique"])
    route(builder, "critique", while_running("parse"), ["parse"])
    route(
        builder, "parse", lambda state: "call_tool" if state.get("pending") else END, ["call_tool"]
    )
    builder.add_edge("call_tool", "revise")
    route(builder, "revise", while_running("critique"), ["critique"])
    return builder


def create_critic_graph(
    model: Any,
    tools: ToolsArg = None,
    *,
    max_critique_rounds: int = 2,
    **options: Unpack[ToolLoopOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the CRITIC loop: draft, critique into checkable claims, verify, revise.

    The critique lists claims as ``CLAIM: / TOOL: / TOOL INPUT:`` blocks (text mode) or
    as a structured ``{"verified", "claims": [{"claim", "tool", "tool_input"}]}`` object
    (native and json modes, falling back to reading the text); a JSON list of claims is
    accepted in any mode. All claims of a round are checked concurrently; an unknown tool
    or a failing check becomes an observation. ``VERIFIED``, or a critique with no
    readable claim, accepts the current draft. Without tools the draft is the answer.

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
            native and json modes, text blocks in text mode).

    Returns:
        The compiled graph. Input ``{"messages": [...]}``; output adds ``answer``,
        ``status``, ``llm_calls``, ``usage``, ``tool_mode``, ``draft``, ``claims``,
        ``round`` and ``verified``; ``messages`` gains the draft and each revision.

    Raises:
        TypeError, ValueError: an argument is of the wrong type or out of range.
    """
    check_positive("max_critique_rounds", max_critique_rounds)
    settings = make_settings("critic", model, tools, options, max_iterations=max_critique_rounds)
    builder = build_critic(settings, options)
    return compile_loop(builder, settings, options, default_name="critic")
