"""Every use loopgraphs makes of LangGraph's and LangChain's internals, in one place.

Each function here stands in for a public API the libraries lack; its comment says what is
missing and what the function assumes of the installed release. ``tests/unit/test_internals.py``
checks each assumption against the installed versions, so that a release that breaks one
fails there first, and checks that no other module of the package reaches past these
functions (no ``_internal`` import, no private attribute).

The module imports nothing from the rest of the package: ``loopgraphs.state`` uses it too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from langchain.agents.middleware.types import OmitFromSchema
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool
from langgraph._internal._constants import CONFIG_KEY_STREAM, OVERWRITE
from langgraph._internal._runnable import RunnableCallable
from langgraph._internal._typing import StateLike
from langgraph.channels import BaseChannel
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.last_value import LastValue
from langgraph.graph import StateGraph
from langgraph.managed.base import is_managed_value
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from langgraph.typing import ContextT

# What a graph's run context may be (a TypedDict, a dataclass, a pydantic model or None),
# the bound of LangGraph's ``ContextT``; ``langgraph.typing`` uses it without exporting it.
ContextLike = StateLike | None

# The channels of a graph's state keys, by key: opaque outside this module.
Channels = Mapping[str, BaseChannel]

StateT = TypeVar("StateT")
ResultT = TypeVar("ResultT")


def untraced_callable(
    sync: Callable[..., object] | None,
    asynchronous: Callable[..., Awaitable[object]] | None = None,
    *,
    name: str,
    subgraph: object = None,
) -> Runnable[Any, Any]:
    """A graph node (or router) with a sync and an async path, traced as one run.

    Missing public API: LangGraph's own node callable is private. ``RunnableLambda``
    traces every call as a child run of the node's, and runs a sync-only function in a
    worker thread under ``ainvoke``; a router must run in the caller's thread, where the
    node's config is the current one.

    Assumes: ``RunnableCallable(func, afunc, name=..., trace=False)`` passes ``config``
    (a parameter typed ``RunnableConfig``) and ``runtime`` to the functions by parameter
    name, runs ``func`` under ``invoke``
    and ``afunc`` under ``ainvoke`` (``func`` in the calling thread when there is no
    ``afunc``), and starts no run of its own.

    Args:
        sync: The function run under ``invoke`` (None: the node has only an async path).
        asynchronous: The coroutine function run under ``ainvoke``.
        name: The node's (or router's) name.
        subgraph: A compiled graph the node runs; see ``showing_subgraph``.

    Returns:
        The runnable to add with ``add_node`` or ``add_conditional_edges``.
    """
    if subgraph is not None and sync is not None:
        sync = showing_subgraph(sync, subgraph)
    return RunnableCallable(sync, asynchronous, name=name, trace=False)


def showing_subgraph(
    node: Callable[[StateT, RunnableConfig, Runtime[ContextT]], ResultT], subgraph: object
) -> Callable[[StateT, RunnableConfig, Runtime[ContextT]], ResultT]:
    """A node's sync function ``node(state, config, runtime)`` that also names the compiled
    ``subgraph`` the node runs, so that LangGraph finds it.

    Missing public API: a node cannot declare the subgraph it runs. LangGraph finds it
    for ``get_graph(xray=True)`` and ``get_state(subgraphs=True)`` only when the compiled
    graph is the node itself or a name the node's function reads.

    Assumes: LangGraph looks among the names the node's sync function reads (its source
    and closure), so ``subgraph`` read here is found; the other names it reads are no
    graphs.
    """

    def shown(state: StateT, config: RunnableConfig, runtime: Runtime[ContextT]) -> ResultT:
        _ = subgraph  # the name LangGraph finds the subgraph by; not an assert (python -O)
        return node(state, config, runtime)

    return shown


def state_channels(builder: StateGraph[Any, Any, Any, Any]) -> Channels:
    """The channel of each key of a graph's state, as the builder holds them so far.

    Missing public API: a ``StateGraph`` does not say how it applies a write to a key
    (whether the key has a reducer, and what the reducer makes of a write).

    Assumes: ``StateGraph.channels`` maps every key of the schemas added so far to the
    channel LangGraph applies its writes with (managed values are not among them).
    """
    return builder.channels


def has_reducer(channels: Channels, key: str) -> bool:
    """Whether writes to ``key`` go through a reducer (``Annotated[T, reducer]``).

    Assumes: a key with a reducer has a ``BinaryOperatorAggregate`` channel.
    """
    return isinstance(channels.get(key), BinaryOperatorAggregate)


def takes_last_write(channels: Channels, key: str) -> bool:
    """Whether a write to ``key`` simply replaces its value: the key has no reducer, or is
    not a channel of the graph at all.

    Assumes: a key without a reducer has a ``LastValue`` channel.
    """
    spec = channels.get(key)
    return spec is None or isinstance(spec, LastValue)


def reduced(
    channels: Channels, key: str, state: Mapping[str, object], writes: list[object]
) -> object:
    """The value ``key`` takes when one step's ``writes`` to it are applied to ``state``,
    as LangGraph applies them (None when the channel is left empty).

    Missing public API: LangGraph applies a step's writes only after the step, and a node
    deciding on the state its writes leave (its router) needs that state before.

    Assumes: a fresh copy of the key's channel (``copy``, or ``from_checkpoint`` with the
    key's current value) applies ``update(writes)`` as the running graph does, and
    ``get`` then reads the value (``is_available`` false: no value). A reducer's channel
    (``BinaryOperatorAggregate``) holding a value applies plain writes (no ``Overwrite``,
    in any of its forms) as ``operator(value, write)``, one write after the other, which
    is done here without the copy.
    """
    spec = channels[key]
    if (
        isinstance(spec, BinaryOperatorAggregate)
        and key in state
        and not any(_overwrites(write) for write in writes)
    ):
        value = state[key]
        for write in writes:
            value = spec.operator(value, write)
        return value
    channel = spec.from_checkpoint(state[key]) if key in state else spec.copy()
    channel.update(writes)
    return channel.get() if channel.is_available() else None


def _overwrites(write: object) -> bool:
    """Whether a write replaces a reducer's value (an ``Overwrite``, or its dict forms)."""
    if isinstance(write, Overwrite):
        return True
    return isinstance(write, dict) and (OVERWRITE in write or write.get("type") == OVERWRITE)


def declared_jumps(method: object) -> list[str]:
    """Where a middleware's hook method may jump, as ``can_jump_to`` declared it (with
    ``@hook_config`` or a hook decorator's argument); empty when it declared nothing.

    Missing public API: LangChain's decorators record the declaration, and only
    create_agent's private helpers read it back.

    Assumes: the declaration is kept in the method's ``__can_jump_to__`` attribute, a
    list of ``"model"``, ``"tools"`` and ``"end"``.
    """
    return list(getattr(method, "__can_jump_to__", None) or ())


def runs_in_thread_when_awaited(tool: BaseTool) -> bool:
    """Whether an awaited tool runs a synchronous function (in a worker thread): it has no
    async implementation of its own.

    Missing public API: a tool does not say whether ``ainvoke`` awaits code of its own.

    Assumes: a tool class implements its async path by overriding ``_arun``, whose
    versions in ``BaseTool``, ``StructuredTool`` and ``Tool`` run the sync function in an
    executor unless the tool holds a ``coroutine``.
    """
    default = type(tool)._arun in (BaseTool._arun, StructuredTool._arun, Tool._arun)
    return default and getattr(tool, "coroutine", None) is None


def omits_from(marker: object, schema: str) -> bool:
    """Whether a state field's ``Annotated`` marker leaves the field out of an agent's
    ``"input"`` or ``"output"`` schema (``OmitFromInput``, ``OmitFromOutput``,
    ``PrivateStateAttr``).

    Missing public API: the markers are public, the class they share (which says which
    schema each leaves the field out of) is not exported.

    Assumes: every such marker is an ``OmitFromSchema`` whose boolean ``input`` and
    ``output`` fields name the schemas it leaves the field out of.
    """
    return isinstance(marker, OmitFromSchema) and bool(getattr(marker, schema))


def is_managed(marker: object) -> bool:
    """Whether a state field's ``Annotated`` marker makes it a managed value (LangGraph
    fills it in, as ``RemainingSteps``): no input or output schema may hold it.

    Missing public API: ``langgraph.managed`` exports the managed values, not the test.

    Assumes: ``is_managed_value`` tells a managed value's class from any other marker.
    """
    return bool(is_managed_value(marker))


def streams_subgraphs(config: RunnableConfig) -> bool:
    """Whether the run a node's ``config`` belongs to streams its subgraphs' output
    (``stream(..., subgraphs=True)``): a graph run inside the node then streams its own
    ``custom`` events to the caller itself.

    Missing public API: nothing tells a node how its run is streamed.

    Assumes: LangGraph puts its stream in the config under ``CONFIG_KEY_STREAM`` only when
    subgraphs are streamed, and a graph run inside a node finds it there.
    """
    return CONFIG_KEY_STREAM in (config.get("configurable") or {})


def is_cut_reply_error(exc: BaseException) -> bool:
    """Whether ``exc`` is OpenAI's error for a structured reply cut at ``max_tokens``.

    Not an internal: ``openai.LengthFinishReasonError`` is public, and langchain-openai
    lets it escape a structured-output call (LangChain has no exception of its own for
    it). Looked up when an error is raised, so that importing loopgraphs does not import
    the OpenAI SDK, which may not be installed: then no such error is raised either.
    """
    try:
        from openai import LengthFinishReasonError
    except ImportError:
        return False
    return isinstance(exc, LengthFinishReasonError)


__all__ = [
    "Channels",
    "declared_jumps",
    "has_reducer",
    "is_cut_reply_error",
    "is_managed",
    "omits_from",
    "reduced",
    "runs_in_thread_when_awaited",
    "showing_subgraph",
    "state_channels",
    "takes_last_write",
    "untraced_callable",
]
