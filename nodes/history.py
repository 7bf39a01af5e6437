"""What a model call reads of the conversation before the user's current request.

A thread holds the user's earlier turns, the answers they got and, from the tool loops,
the calls and results that led to them. Every model call that works on the request reads
the conversation as the state holds it when the call is made (a ``before_model`` hook
that trims or rewrites the messages is seen by every later call), within the run's
``max_history_tokens``: the oldest messages before the request are left out first, as
langchain-core's ``trim_messages`` counts them with ``count_tokens_approximately``, and
what is kept starts on a user turn. The request itself, and the run's own messages, are
always read.

- ``bounded_thread``: the state's messages, earlier tool calls and results included, for
  the calls that can carry them (ReAct's and Self-Ask's turns, which show tools to the
  model in every tool mode).
- ``conversation``: the user's turns and the answers they got, then the request, for the
  calls that answer the conversation itself without tools (Chain-of-Thought, CRITIC's
  draft, Plan-and-Execute's plan).
- ``earlier_turns``: the user's turns and the answers they got before the request, which
  go in front of a loop's own prompt around the request (a step, a proposal, a critique).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import messages_of, scratch_of


def request_at(messages: Sequence[AnyMessage], start: int) -> int:
    """Index of the user's current request among ``messages``: the last user message
    before the run's own messages, which begin at ``start`` (0 when there is none)."""
    for index in range(min(start, len(messages)) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return 0


def _parts(
    state: Mapping[str, object],
) -> tuple[list[AnyMessage], list[AnyMessage], list[AnyMessage]]:
    """The state's messages before the current request, from the request to the run's
    own messages, and the run's own messages."""
    messages = list(messages_of(state))
    start = scratch_of(state).get("transcript_start", len(messages))
    at = request_at(messages, start)
    return messages[:at], messages[at:start], messages[start:]


def bounded(messages: Sequence[AnyMessage], limit: int | None) -> list[AnyMessage]:
    """The latest of ``messages`` within ``limit`` tokens, starting on a user turn (a
    leading system message is kept when it fits); all of them when ``limit`` is None."""
    if limit is None:
        return list(messages)
    kept = trim_messages(
        messages,
        max_tokens=limit,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        include_system=True,
    )
    return cast("list[AnyMessage]", kept)  # the messages given, fewer of them


def turns_of(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user's turns and the answer each got: every user and system message, and after
    each user turn its last assistant message without tool calls, when that holds text.
    Tool calls, their results and the replies a run made on the way are left out."""
    kept: list[AnyMessage] = []
    answer: AIMessage | None = None
    for message in messages:
        if isinstance(message, AIMessage) and not message.tool_calls:
            answer = message
        elif isinstance(message, (HumanMessage, SystemMessage)):
            kept += _with_text(answer)
            kept.append(message)
            answer = None
    return kept + _with_text(answer)


def _with_text(answer: AIMessage | None) -> list[AnyMessage]:
    """The answer, when there is one that holds text."""
    return [answer] if answer is not None and content_text(answer.content).strip() else []


def bounded_thread(state: Mapping[str, object], run: LoopSettings) -> list[AnyMessage]:
    """The state's messages with those before the current request within the run's
    ``max_history_tokens`` (earlier tool calls and results included)."""
    if run.max_history_tokens is None:
        return list(messages_of(state))
    earlier, current, own = _parts(state)
    return [*bounded(earlier, run.max_history_tokens), *current, *own]


def earlier_turns(state: Mapping[str, object], run: LoopSettings) -> list[AnyMessage]:
    """The user's turns and the answers they got before the current request, within the
    run's ``max_history_tokens``."""
    earlier, _, _ = _parts(state)
    return bounded(turns_of(earlier), run.max_history_tokens)


def conversation(state: Mapping[str, object], run: LoopSettings) -> list[AnyMessage]:
    """The caller's conversation as a model answering it reads it: the earlier turns
    (``earlier_turns``), then the request and any message after it before the run's own."""
    _, current, _ = _parts(state)
    return [*earlier_turns(state, run), *current]
