"""How each tool mode shows tools to the model: the mode a run starts in, the loop's
instructions and the one worked example for json- and text-mode models, and the
transcript as those models read it (tool calls as their own text, results as
``Observation:`` user messages)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)

from loopgraphs import prompts
from loopgraphs.models import capabilities, default_tool_choice
from loopgraphs.nodes.model_send import RAW_REPLY, RequestForm, ToolsForm, as_written
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_guard import (
    calls_since,
    fence_output,
)
from loopgraphs.state import messages_of, scratch_of
from loopgraphs.text import media_kinds, media_of, with_media
from loopgraphs.toolkits.registry import ToolRegistry
from loopgraphs.toolkits.search import STOP_WORDS


def resolve_mode(settings: LoopSettings) -> str:
    """The tool mode a run starts in; ``auto`` reads the model's profile. Without tools it
    is ``"none"`` (plain chat), unless a ``wrap_model_call`` middleware may offer tools of
    its own in a request (which a ``wrap_tool_call`` middleware then runs)."""
    if not settings.tools and settings.model_chain is None:
        # Provider tools alone (dicts the provider runs) can only be bound natively.
        return "native" if settings.provider_tools else "none"
    if settings.tool_mode != "auto":
        return settings.tool_mode
    caps = capabilities(settings.chat_model)
    if caps.tool_calling is False:
        return "json" if caps.structured_output is not False else "text"
    return "native"


def run_registry(settings: LoopSettings, state: Mapping[str, object]) -> ToolRegistry:
    """The tools of this run, narrowed by tool selection when it ran."""
    selected = scratch_of(state).get("selected_tools")
    return _subset(settings.tools, tuple(selected)) if selected else settings.tools


@lru_cache(maxsize=64)
def _subset(registry: ToolRegistry, names: tuple[str, ...]) -> ToolRegistry:
    """One registry per selection from a tool set (what is made per registry, such as the
    model with the tools bound, is then made once)."""
    return registry.subset(names)


@lru_cache(maxsize=64)
def react_instructions(registry: ToolRegistry, mode: str, *, thoughts: bool = True) -> str:
    """The ReAct loop's own system instructions for one mode (stable, for prompt caching);
    ``thoughts=False`` describes json steps without the ``thought`` field. Made once per
    tool set, mode and form (a registry does not change)."""
    if mode == "none" or not registry:
        return prompts.CHAT_SYSTEM
    if mode == "native":
        return prompts.REACT_NATIVE_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    if mode == "json":
        template = prompts.REACT_JSON_SYSTEM if thoughts else prompts.REACT_JSON_COMPACT_SYSTEM
    else:
        template = prompts.REACT_TEXT_SYSTEM
    return template.format(tools=registry.describe(), fence_note=prompts.FENCE_NOTE)


def required_tool(
    settings: LoopSettings, state: Mapping[str, object], *, model_default: bool = False
) -> str | None:
    """``"required"`` or a tool name while the run must still call a tool, else None."""
    choice = settings.tool_choice
    if choice is None and model_default:
        choice = default_tool_choice(settings.chat_model)
    if choice in (None, "auto") or not settings.tools:
        return None
    start = scratch_of(state).get("transcript_start") or 0
    made = next(calls_since(messages_of(state), start), None)
    return None if made is not None else choice


def model_view(messages: Sequence[AnyMessage], mode: str) -> list[BaseMessage]:
    """The transcript as a json- or text-mode model reads it: tool calls as the model's own
    text (re-written from the calls after a reviewer edited them), tool results as one
    ``Observation:`` user message per step. Native mode and plain chat read the transcript
    as it is, with each reply's own text (see ``as_written``)."""
    if mode not in ("json", "text"):
        return as_written(messages)
    view: list[BaseMessage] = []
    results: list[ToolMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            results.append(message)
            continue
        if results:
            text, media = observed(results)
            view.append(with_media(prompts.OBSERVATION.format(content=text), media))
            results = []
        if isinstance(message, AIMessage) and message.tool_calls:
            text = message.additional_kwargs.get(RAW_REPLY) or _action_text(
                message.tool_calls, mode
            )
            view.append(AIMessage(content=text))
        elif isinstance(message, AIMessage) and RAW_REPLY in message.additional_kwargs:
            view.append(AIMessage(content=message.additional_kwargs[RAW_REPLY]))
        else:
            view.append(message)
    if results:
        text, media = observed(results)
        view.append(with_media(prompts.OBSERVATION.format(content=text), media))
    return view


def observed(results: Sequence[ToolMessage]) -> tuple[str, list[dict[str, object]]]:
    """Tool results as a user message of a json- or text-mode transcript carries them: their
    texts, one paragraph each (a result of media alone reads as ``prompts.ATTACHED``), and
    the images and files the tools returned, as they are, to send after the text (see
    ``loopgraphs.text.with_media``).

    Args:
        results: The tool results of one step, in order.

    Returns:
        The results' text and their media blocks.
    """
    texts: list[str] = []
    media: list[dict[str, object]] = []
    for result in results:
        text, blocks = content_text(result.content), media_of(result.content)
        texts.append(text or (prompts.ATTACHED.format(kinds=media_kinds(blocks)) if blocks else ""))
        media.extend(blocks)
    return "\n\n".join(texts), media


MAX_EXAMPLES = 1
EXAMPLE_FENCE = "example"


def example_turns(registry: ToolRegistry, question: str, mode: str) -> list[BaseMessage]:
    """The tools' worked examples as solved exchanges in the mode's own form, shown to
    json- and text-mode models before the conversation.

    At most ``MAX_EXAMPLES`` are shown (one: the closest only), ordered by how many words
    they share with the question, the closest last (ties: the first registered last): a
    small model copies what it saw last, and with more examples SmolLM2 copied an earlier
    example's answer into its call. Their results are fenced with the fixed ``EXAMPLE_FENCE``
    marker, not the run's, so that with the same question they are the same text in every
    run (a prefix the server's prompt cache keeps across the runs of a conversation).
    """
    if mode not in ("json", "text"):
        return []
    words = _words(question)
    ranked = sorted(
        enumerate(registry.examples()),
        key=lambda item: (len(words & _words(item[1][1].question)), -item[0]),
    )[-MAX_EXAMPLES:]
    turns: list[BaseMessage] = []
    for position, (name, example) in ranked:
        call = ToolCall(name=name, args=dict(example.args), id=f"example_{position}")
        result = fence_output(example.result, EXAMPLE_FENCE)
        turns += [
            HumanMessage(example.question),
            AIMessage(_action_text([call], mode)),
            HumanMessage(prompts.OBSERVATION.format(content=result)),
            AIMessage(_answer_text(example.answer, mode)),
        ]
    return turns


@lru_cache(maxsize=64)
def example_answers(registry: ToolRegistry) -> tuple[str, ...]:
    """The answers of the tools' worked examples (a reply copying one did not answer)."""
    return tuple(example.answer for _, example in registry.examples())


def _words(text: str) -> set[str]:
    """What a question is about: its words cut to five letters (so "founder" meets
    "founded") without the search tool's stop words, numbers as ``#``, capitalised words
    after the first as ``Name``, and symbols other than sentence punctuation (``*``, ``(``)."""
    features = set()
    for position, token in enumerate(re.findall(r"\w+|[^\w\s]", text)):
        if token.isdigit():
            features.add("#")
        elif token[0].isupper() and position:
            features.add("Name")
        elif token.isalnum() and token.lower() not in STOP_WORDS:
            features.add(token.lower()[:5])
        elif not token.isalnum() and token not in "?.,!;:'\"":
            features.add(token)
    return features


def _answer_text(answer: str, mode: str) -> str:
    if mode == "json":
        return json.dumps({"action": "final_answer", "action_input": answer}, ensure_ascii=False)
    return f"FINAL_ANSWER: {answer}"


def first_question(state: Mapping[str, object], history: Sequence[AnyMessage]) -> str:
    """The conversation's first user message: the worked examples are chosen for it and
    stay the same for the later runs on the thread, which keeps them cacheable."""
    messages = cast("Sequence[AnyMessage]", state.get("messages", history))
    asked = (m for m in messages if isinstance(m, HumanMessage))
    first = next(asked, None)
    return content_text(first.content) if first is not None else ""


def _action_text(calls: Sequence[ToolCall], mode: str) -> str:
    if mode == "json":
        return "\n".join(
            json.dumps({"action": c["name"], "action_input": c["args"]}, ensure_ascii=False)
            for c in calls
        )
    return "\n".join(
        f"Action: {c['name']}\nAction Input: {json.dumps(c['args'], ensure_ascii=False)}"
        for c in calls
    )


@lru_cache(maxsize=64)
def mode_form(mode: str, *, thoughts: bool, question: str, constrained: bool = True) -> RequestForm:
    """How a ReAct turn in ``mode`` is sent: native mode binds the request's tools; json
    mode constrains the reply to one action over them (``constrained``; else it asks for
    JSON in words); json and text modes render the instructions and the one worked
    example from the request's tools and show the transcript in the mode's form."""
    if mode == "native":
        return RequestForm(lambda registry: react_instructions(registry, mode), tools="bind")
    if mode not in ("json", "text"):
        return RequestForm(prompts.CHAT_SYSTEM)

    def instructions(registry: ToolRegistry) -> str:
        return react_instructions(registry, mode, thoughts=thoughts)

    def render(messages: Sequence[AnyMessage], registry: ToolRegistry) -> list[BaseMessage]:
        return [*example_turns(registry, question, mode), *model_view(messages, mode)]

    kind: ToolsForm = "schema" if mode == "json" and constrained else "prompt"
    return RequestForm(instructions, tools=kind, render=render, thoughts=thoughts)
