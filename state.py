"""State schemas and reducers shared by every loop.

Every loop reads ``{"messages": [...]}`` and returns at least ``answer``, ``status``,
``llm_calls``, ``usage`` and ``messages``. Counters use reducers so that nodes running
concurrently (tool calls, branches, claims) add up instead of overwriting each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Generic, Literal, TypeAlias, cast

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    MessageLikeRepresentation,
)
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.managed import RemainingSteps
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite
from typing_extensions import NotRequired, TypedDict
from typing_extensions import TypeVar as DefaultTypeVar

from loopgraphs.internals import Channels, reduced, takes_last_write
from loopgraphs.text import PLAIN_KINDS, question_text

Status = Literal["running", "completed", "max_iterations", "error"]
"""How a run stands: ``running`` (also while it waits for approval), or how it ended."""
ToolMode = Literal["auto", "native", "json", "text"]

LoopBuilder: TypeAlias = StateGraph[Any, Any, Any, Any]
"""A loop's graph before it is compiled. Its state schema is made when the loop is built
(the loop's own keys, the caller's ``state_schema`` and the middleware's keys merged), so
the builder's type parameters stay open."""

CompiledLoop: TypeAlias = CompiledStateGraph[Any, Any, Any, Any]
"""A compiled loop, as the factories return it (see ``LoopBuilder`` for its schemas)."""

LoopRuntime: TypeAlias = Runtime[Any]
"""The runtime LangGraph hands a loop's nodes; its context is ``LoopContext`` or the
caller's ``context_schema``."""
TOOL_MODES: tuple[str, ...] = ("auto", "native", "json", "text")


class Usage(TypedDict):
    """Token usage summed over every model call of a run."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int


def empty_usage() -> Usage:
    """Return a usage record with every counter at zero."""
    return {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Reducer: add two usage records field by field (a missing record or count is 0);
    a ``None`` update resets the record (a run's first step writes it)."""
    if right is None:
        return empty_usage()
    a = left or empty_usage()
    b = right or empty_usage()
    return {
        "input_tokens": int(a.get("input_tokens") or 0) + int(b.get("input_tokens") or 0),
        "output_tokens": int(a.get("output_tokens") or 0) + int(b.get("output_tokens") or 0),
        "cached_tokens": int(a.get("cached_tokens") or 0) + int(b.get("cached_tokens") or 0),
    }


class ModelSpend(TypedDict):
    """The ``llm_calls``/``usage`` update of model calls: the requests they sent and the
    tokens those used, which a step adds to its own update."""

    llm_calls: int
    usage: Usage


def usage_of(message: object) -> Usage:
    """Read the provider's usage metadata from one model reply."""
    meta = getattr(message, "usage_metadata", None) or {}
    details = meta.get("input_token_details") or {}
    return {
        "input_tokens": int(meta.get("input_tokens") or 0),
        "output_tokens": int(meta.get("output_tokens") or 0),
        "cached_tokens": int(details.get("cache_read") or 0),
    }


class InputState(TypedDict):
    """What a caller passes in: the conversation so far."""

    messages: Annotated[list[AnyMessage], add_messages]


class LoopInput(TypedDict):
    """What a caller passes in, as type checkers see it: the conversation so far, in any
    form LangChain takes a message in (a message, a ``(role, text)`` pair, a dict, a
    string). ``InputState`` is the same at run time."""

    messages: Sequence[MessageLikeRepresentation]


class RunOutput(TypedDict, total=False):
    """What every loop returns besides its counters."""

    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    status: Status
    error: str
    tool_mode: str


def add_count(left: int | None, right: int | None) -> int:
    """Reducer: add a node's count to the run's; a ``None`` update resets it to 0 (a run's
    first step writes it, so that streamed updates hold plain values)."""
    if right is None:
        return 0
    return int(left or 0) + int(right)


class OutputState(RunOutput, total=False):
    """What every loop returns, with counters that add up what each node reports (the
    nodes of some loops run side by side: Tree-of-Thoughts' branches)."""

    llm_calls: Annotated[int, add_count]
    retries: Annotated[int, add_count]
    usage: Annotated[Usage, add_usage]


class TotalsOutput(RunOutput, total=False):
    """What a loop whose nodes run one at a time returns: each counter holds the run's
    running total, with no reducer to run on every write and every read of the state
    (the node runner turns what a node reports into totals, see ``add_totals``)."""

    llm_calls: int
    retries: int
    usage: Usage


ResponseT = DefaultTypeVar("ResponseT", default=Any)
"""The type of a loop's ``structured_response``: its ``response_format``'s (``Any``
without one, or with a JSON schema dict)."""


class StructuredOutput(TypedDict, Generic[ResponseT], total=False):
    """What a loop built with ``response_format`` also returns: the answer as an object of
    that type (a pydantic model's instance, a TypedDict's dict)."""

    structured_response: ResponseT


class RunResult(TypedDict, Generic[ResponseT]):
    """What a run of any loop returns, the keys every loop's output type (``CoTOutput``,
    ``ReActOutput``, ...) has: the conversation with the run's transcript, the answer,
    how the run ended, the tool mode it used and its counters, all written by every run;
    and ``structured_response``, the answer as an object of the ``response_format`` the
    graph was built with (only then)."""

    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    status: Status
    error: str
    tool_mode: str
    llm_calls: int
    retries: int
    usage: Usage
    structured_response: NotRequired[ResponseT]


DecisionType = Literal["approve", "edit", "reject", "respond"]
"""A reviewer's decision on a tool call (see ``loopgraphs.nodes.review``)."""


class EditedAction(TypedDict, total=False):
    """The call an ``edit`` decision runs instead of the model's."""

    name: str
    args: dict[str, Any]


class ReviewDecision(TypedDict, total=False):
    """A reviewer's decision on one tool call, as the ``review`` node stores it.

    Attributes:
        type: What to do with the call.
        edited_action: The call to run instead (``edit``).
        message: Why the call was rejected (``reject``), or the result the model gets
            in the tool's place (``respond``).
    """

    type: DecisionType
    edited_action: EditedAction
    message: str


class Bookkeeping(TypedDict, total=False):
    """A run's bookkeeping, kept in the single state key ``scratch`` (one channel instead
    of one per value: LangGraph copies every channel whenever a router reads the state).

    Attributes:
        fence: The run's random marker around tool output.
        transcript_start: Index of the run's first own message (earlier ones are the
            caller's conversation).
        iterations: Model turns of the loop's main cycle so far.
        reviews: Human review decisions for the pending tool calls, by call id.
        selected_tools: The tools picked by tool selection (empty: all of them).
        reformat: A json-mode reply was unreadable and the model was asked to reformat.
        reask: The loop's instruction that the run's next model request ends with, after
            a reply the loop could not use (a cut reply, no answer, no tool call where one
            is required, an unreadable action, ...); "" when none is due. It goes into
            that request only, never into ``messages``.
        tool_ended: A tool ended the run (``return_direct``, or ``Command(goto=END)``).
        shortened: A reply was cut at the token cap, or held no answer, and the model was
            asked once more (once per run).
        seen: Id of the last human message the run has taken in (its input, or one a tool
            added), see ``starts_run``.
        hook_ended: A middleware hook ended the run: a ``before_model`` hook's jump to
            the end (a model-call limit's), or an ``after_model`` hook's closing message
            of its own (a tool-call limit's), which is not the model's answer. A loop
            whose inner ReAct run a hook ended ends there too.
    """

    fence: str
    transcript_start: int
    seen: str
    iterations: int
    reviews: dict[str, ReviewDecision]
    selected_tools: list[str]
    reformat: bool
    reask: str
    tool_ended: bool
    shortened: bool
    hook_ended: bool


def merge_scratch(left: Bookkeeping | None, right: Bookkeeping | None) -> Bookkeeping:
    """Reducer: a node's ``scratch`` update replaces the values it names; one holding a
    ``fence`` (only a run's first step makes one) starts the new run's bookkeeping afresh."""
    if right and "fence" in right:
        return right
    return {**(left or {}), **(right or {})}  # type: ignore[typeddict-item]


def scratch_of(state: Mapping[str, object]) -> Bookkeeping:
    """The run's bookkeeping (empty before the run has started)."""
    return cast("Bookkeeping | None", state.get("scratch")) or {}


class RunState(TypedDict, total=False):
    """The run's bookkeeping and LangGraph's count of the steps it has left."""

    scratch: Annotated[Bookkeeping, merge_scratch]
    remaining_steps: RemainingSteps


class CommonState(RunOutput, RunState, total=False):
    """The keys every loop's state has, whatever its counters' reducers: the state the
    shared nodes (a run's start, middleware hooks, routers, the node driver) read."""


class LoopState(OutputState, RunState, total=False):
    """Fields shared by every loop; each loop extends it with its own."""


class TotalsState(TotalsOutput, RunState, total=False):
    """State of a loop whose nodes run one at a time (ReAct's): its counters are running
    totals, with no reducer to run on every write (see ``TotalsOutput``), its bookkeeping
    lives in ``scratch``. A loop whose nodes run side by side extends ``LoopState``."""


class InnerOutput(TotalsOutput, total=False):
    """What a loop run inside another loop's step returns to it: also the run's
    bookkeeping, which says whether a middleware hook ended it
    (``Bookkeeping.hook_ended``)."""

    scratch: Annotated[Bookkeeping, merge_scratch]


COUNTERS = ("llm_calls", "retries", "usage")


def add_totals(state: Mapping[str, object], update: dict[str, object]) -> dict[str, object]:
    """A node's update with the counts it reports added to the run's totals in ``state``
    (a count wrapped in ``Overwrite``, as a run's first step writes them, is the total)."""
    for key in COUNTERS:
        if key not in update:
            continue
        value = update[key]
        if isinstance(value, Overwrite):
            update[key] = value.value
        elif key == "usage":  # a usage record in the state and in the update
            update[key] = add_usage(
                cast("Usage | None", state.get("usage")), cast("Usage | None", value)
            )
        else:  # a count in the state and in the update
            total, count = cast("int | None", state.get(key)), cast("int | None", value)
            update[key] = int(total or 0) + int(count or 0)
    return update


def new_fence(messages: Sequence[object] = ()) -> str:
    """The marker of a thread's tool output fences: 12 hex digits of a hash of the
    thread's first message (its type, content and tool calls; not its id, which LangGraph
    draws at random).

    Every run of a thread fences tool output with the same marker, so each turn sends the
    earlier turns' tool results as the last turn did: a provider's prompt cache (and the
    embedded server's) reuses the whole earlier conversation, and a result fenced once is
    not fenced again (see ``loopgraphs.nodes.generate.fenced_result``). The same thread
    gives the same marker in every process, and so the same prompts; a random marker made
    every prompt of a run differ from the last run's, and a model at temperature 0 answer
    the same question differently. It need not be secret: ``fence_output`` removes every
    copy of it from the output it fences, so tool output cannot forge an end marker even
    when it knows the marker.

    Args:
        messages: The run's messages when it starts (the first one counts).
    """
    digest = hashlib.sha256(b"fence")
    for message in messages[:1]:
        seen = (
            getattr(message, "type", type(message).__name__),
            getattr(message, "content", message),
            getattr(message, "tool_calls", None),
        )
        digest.update(repr(seen).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:12]


def run_defaults(state: Mapping[str, object], **scratch: object) -> dict[str, object]:
    """The values every loop starts a run with: counters at zero, status "running" (or
    "error" when the input has no messages), no answer yet, and a new ``scratch`` with
    the fence marker of the input (see ``new_fence``), the transcript starting after the
    input, and the loop's own starting ``scratch`` values."""
    messages = messages_of(state)
    update: dict[str, object] = {
        "llm_calls": 0,
        "retries": 0,
        "usage": empty_usage(),
        "status": "running",
        "answer": "",
        "error": "",
        "scratch": {
            "fence": new_fence(messages),
            "transcript_start": len(messages),
            "seen": messages[-1].id if messages else "",
            **scratch,
        },
    }
    if not messages:
        update.update(
            status="error",
            error="the input has no messages: pass {'messages': [('user', 'your question')]}",
        )
    return update


def messages_of(state: Mapping[str, object]) -> Sequence[AnyMessage]:
    """The state's messages (none when it has no ``messages`` key yet)."""
    return cast("Sequence[AnyMessage] | None", state.get("messages")) or []


def conversation_of(state: Mapping[str, object]) -> list[AnyMessage]:
    """The caller's conversation: the messages before the run's own transcript (all of
    them before the run has set its transcript up)."""
    messages = messages_of(state)
    return list(messages[: scratch_of(state).get("transcript_start", len(messages))])


def transcript_of(state: Mapping[str, object]) -> Sequence[AnyMessage]:
    """The run's own messages: those after the caller's conversation (see
    ``conversation_of``; all of them before the run has set its transcript up); an earlier
    turn of the thread is none of them."""
    messages = messages_of(state)
    return messages[scratch_of(state).get("transcript_start", 0) :]


def request_of(state: Mapping[str, object]) -> str:
    """The user's request as the conversation holds it now: the latest user message
    before the run's own transcript. Read at each use rather than saved once, so that a
    middleware that rewrites the input (redaction, summarization) is seen by every later
    prompt; ``request`` (saved when the run started) is the fallback."""
    return question_text(conversation_of(state)) or str(state.get("request") or "")


def starts_run(state: Mapping[str, object]) -> bool:
    """Whether a loop's step starts a new run: when no run is going on (the thread is new,
    or its last run finished), and when the conversation ends with a human message the
    running one has not taken in (new input after a run that stopped without finishing,
    cancelled say)."""
    if state.get("status") != "running":
        return True
    messages = messages_of(state)
    last = messages[-1] if messages else None
    return isinstance(last, HumanMessage) and last.id != scratch_of(state).get("seen")


def start_run(state: Mapping[str, object], **scratch: object) -> dict[str, object]:
    """Update for a loop's first node: reset per-run counters (``None``, see ``add_count``)
    and the scratch (with the loop's own starting ``scratch`` values) and check the input."""
    return {
        **run_defaults(state, **scratch),
        "llm_calls": None,
        "retries": None,
        "usage": None,
    }


def state_after(
    channels: Channels, state: Mapping[str, Any], outputs: Sequence[Any]
) -> dict[str, Any]:
    """The state as a node's ``outputs`` (its update and commands) leave it, for what the
    node decides after them (its router, say): each key written goes through its
    channel's reducer, as LangGraph will apply it. Two writes skip the channel, with the
    same result: a key without a reducer takes its last value, and messages that are all
    new follow the state's (see ``_appended``)."""
    written: dict[str, list[object]] = {}
    for output in outputs:
        values = output.update if isinstance(output, Command) else output
        pairs = values.items() if isinstance(values, Mapping) else values or ()
        for key, value in pairs:
            written.setdefault(key, []).append(value)
    after = dict(state)
    for key, values in written.items():
        if takes_last_write(channels, key):
            after[key] = values[-1]
            continue
        appended = _appended(state.get(key), values) if key == "messages" else None
        if appended is not None:
            after[key] = appended
            continue
        after[key] = reduced(channels, key, state, values)
    return after


def _appended(
    current: Sequence[BaseMessage] | None, writes: Sequence[object]
) -> list[BaseMessage] | None:
    """``current`` followed by the written messages, when each is a plain message whose
    id (if it has one) ``current`` lacks: what ``add_messages`` makes of them, but for
    the ids it gives messages without one (the same objects get them when LangGraph
    applies the write). None for any other write (a removal, a replacement, a tuple or
    dict to convert, a chunk): the reducer reads those."""
    new = [m for value in writes for m in (value if isinstance(value, list) else [value])]
    if not all(type(m) in PLAIN_KINDS for m in new):
        return None
    plain = cast("list[BaseMessage]", new)
    have = {m.id for m in current or ()}
    if any(m.id is not None and m.id in have for m in plain):
        return None
    return [*(current or ()), *plain]
