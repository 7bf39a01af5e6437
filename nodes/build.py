"""Assemble and compile a loop's graph: schemas, extension points, routers, compile options.

``new_graph`` makes a loop's ``StateGraph`` from its state and output schemas, merged with
the caller's ``state_schema`` (extra keys flow in and out) and ``context_schema``.
``compile_loop`` adds the structured response when ``response_format`` is set and
forwards ``checkpointer``, ``store`` and ``name`` to ``compile()``. How steps lead to the
next is ``loopgraphs.nodes.routing``'s.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any

import typing_extensions
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from loopgraphs import prompts
from loopgraphs.context import LoopContext
from loopgraphs.internals import is_managed, omits_from
from loopgraphs.nodes.driver import Logic, add_step
from loopgraphs.nodes.hooks import LoopGraph, wire
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.routing import route
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.strict_schema import schema_name
from loopgraphs.nodes.structured import structured_call
from loopgraphs.state import (
    CommonState,
    CompiledLoop,
    InputState,
    LoopBuilder,
    OutputState,
    StructuredOutput,
)

# A reducer of a caller's state key: it takes and returns values of the key's type, which
# the caller's schema declares.
Reducer = Callable[[Any, Any], Any]


def _fields(schema: type[Any] | None) -> dict[str, object]:
    if schema is None:
        return {}
    return typing.get_type_hints(schema, include_extras=True)


TYPED_ONLY = ("structured_response",)
"""Keys a loop's output type declares for type checkers that the graph has only when
asked for: ``structured_response``, with ``response_format`` (whose graph adds the key
itself, see ``_with_structured_response``)."""


def merged(
    name: str,
    base: type[Any],
    extra: type[Any] | None,
    more: Mapping[str, object] | None = None,
    *,
    managed: bool = True,
) -> type[Any]:
    """A TypedDict with the fields of ``base`` (but ``TYPED_ONLY``), the caller's ``extra``
    fields and ``more`` (middleware fields); the loop's own fields win on equal names, so
    its reducers stay in force. ``managed=False`` leaves out managed values (an input or
    output schema may not hold them; a state built on LangGraph's prebuilt
    ``AgentState`` has ``remaining_steps``)."""
    own = _fields(base)
    typed_only = [key for key in TYPED_ONLY if key in own]
    if extra is None and not more and not typed_only:
        return base
    own = {key: hint for key, hint in own.items() if key not in typed_only}
    fields = {**(more or {}), **_fields(extra), **own}
    if not managed:
        fields = {
            key: hint
            for key, hint in fields.items()
            if not any(is_managed(m) for m in _metadata(hint))
        }
    return TypedDict(name, fields, total=False)  # type: ignore[operator]


# Fields of LangChain's AgentState, which every middleware schema extends: loopgraphs'
# state has its own ``messages`` and ``structured_response``; ``jump_to`` comes along.
AGENT_STATE_FIELDS = ("messages", "structured_response")


def middleware_fields(options: Mapping[str, Any], *, leave_out: str = "") -> dict[str, object]:
    """The state keys the middleware's ``state_schema``s add, in list order; with
    ``leave_out="input"`` (or ``"output"``) without those their annotation leaves out of
    that schema (``OmitFromInput``, ``OmitFromOutput``, ``PrivateStateAttr``)."""
    fields: dict[str, object] = {}
    for middleware in options.get("middleware") or ():
        for key, hint in _fields(middleware.state_schema).items():
            if key in AGENT_STATE_FIELDS:
                continue
            if leave_out and any(omits_from(m, leave_out) for m in _metadata(hint)):
                continue
            fields[key] = hint
    return fields


def _metadata(hint: object) -> tuple[object, ...]:
    """The ``Annotated`` metadata of a field, inside ``Required``/``NotRequired`` too."""
    if typing.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
        hint = typing.get_args(hint)[0]
    return getattr(hint, "__metadata__", ())


def check_middleware_state(loop_state: type[Any], options: Mapping[str, Any], loop: str) -> None:
    """Refuse a middleware state key that is one of the loop's own keys.

    Raises:
        ValueError: the clash, naming the key and the middleware.
    """
    own = set(_fields(loop_state)) - {"messages", "jump_to"}
    for middleware in options.get("middleware") or ():
        for key in _fields(middleware.state_schema):
            if key in own and key not in AGENT_STATE_FIELDS:
                raise ValueError(
                    f"middleware {middleware.name} declares the state key {key!r}, which "
                    f"{loop} keeps for itself; rename the key in the middleware's state_schema"
                )


def subgraph_options(options: Mapping[str, Any]) -> dict[str, object]:
    """The caller's schemas and middleware, for a loop's inner ReAct subgraph."""
    keys = ("state_schema", "context_schema", "middleware")
    return {key: options[key] for key in keys if options.get(key)}


def caller_keys(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The caller's own state keys (from ``state_schema``) and the middleware's, which a
    loop passes into its inner ReAct runs and copies back from them, so tools and hooks
    can read and update them."""
    own = set(_fields(OutputState)) | set(_fields(InputState)) | {"jump_to"}
    hints = {**middleware_fields(options), **_fields(options.get("state_schema"))}
    managed = {k for k, hint in hints.items() if any(map(is_managed, _metadata(hint)))}
    keys = [*_fields(options.get("state_schema")), *middleware_fields(options)]
    return tuple(dict.fromkeys(key for key in keys if key not in own | managed))


def caller_reducers(options: Mapping[str, Any]) -> dict[str, Reducer]:
    """The reducers of the caller's own state keys that have one (``Annotated[T, f]``)."""
    reducers: dict[str, Reducer] = {}
    keys = caller_keys(options)
    hints = {**middleware_fields(options), **_fields(options.get("state_schema"))}
    for key, hint in hints.items():
        # A reducer is a function; a class there is a channel type (``UntrackedValue``).
        found = [m for m in _metadata(hint) if callable(m) and not isinstance(m, type)]
        if key in keys and found:
            reducers[key] = found[-1]
    return reducers


def new_graph(
    state: type[Any],
    output: type[Any],
    options: Mapping[str, Any],
    *,
    loop: str = "",
    settings: LoopSettings | None = None,
    tools_node: str | None = None,
    main_step: str | None = None,
    agent_hooks: bool = True,
) -> LoopBuilder:
    """The loop's ``StateGraph`` with the caller's state and context schemas and the
    middleware's state keys applied, and the middleware's hooks ready to be wired
    (``settings.middleware``; ``tools_node`` names the loop's tool step, where a hook may
    jump; ``main_step`` the model step whose hooks get create_agent's node names, where
    the agent hooks jump to with "model" (default: the first model step added);
    ``agent_hooks=False`` for a ReAct run inside another loop)."""
    extra = options.get("state_schema")
    # A ReAct run inside another loop takes in and hands back every middleware key (its
    # private ones too: a call limit's counters count across the outer loop's steps).
    inputs = middleware_fields(options, leave_out="input" if agent_hooks else "")
    outputs = middleware_fields(options, leave_out="output" if agent_hooks else "")
    check_middleware_state(state, options, loop or state.__name__)
    builder = LoopGraph(
        merged(state.__name__, state, extra, middleware_fields(options)),
        context_schema=options.get("context_schema") or LoopContext,
        input_schema=merged("Input", InputState, extra, inputs, managed=False),
        output_schema=merged(output.__name__, output, extra, outputs, managed=False),
    )
    if settings is not None:
        wire(
            builder,
            settings.middleware,
            loop=loop,
            tools_node=tools_node,
            main_step=main_step,
            agent_hooks=agent_hooks,
        )
    return builder


def _check_compile(options: Mapping[str, Any]) -> None:
    name = options.get("name")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string or None; got {type(name).__name__}")
    checkpointer = options.get("checkpointer")
    if checkpointer not in (None, True, False) and not isinstance(
        checkpointer, BaseCheckpointSaver
    ):
        raise TypeError(
            "checkpointer must be a LangGraph checkpointer (e.g. InMemorySaver, SqliteSaver, "
            f"PostgresSaver) or None; got {type(checkpointer).__name__}"
        )
    store = options.get("store")
    if store is not None and not isinstance(store, BaseStore):
        raise TypeError(
            f"store must be a LangGraph BaseStore (e.g. InMemoryStore); got {type(store).__name__}"
        )


def compile_loop(
    builder: LoopBuilder,
    settings: LoopSettings,
    options: Mapping[str, Any],
    *,
    default_name: str,
) -> CompiledLoop:
    """Compile a loop after checking the options every factory forwards to ``compile()``.

    With ``response_format`` the loop runs as a subgraph followed by one structured call
    that writes ``structured_response``.
    """
    _check_compile(options)
    name = options.get("name") or default_name
    if isinstance(builder, LoopGraph):
        builder.finish_hooks()
    if settings.response_format is not None:
        builder = _with_structured_response(builder, settings, name)
    renames = options.get("result_keys")
    if renames is not None:
        builder = _with_result_keys(builder, renames, name)
    return builder.compile(
        checkpointer=options.get("checkpointer"), store=options.get("store"), name=name
    )


def check_result_keys(renames: object, output: type[Any]) -> dict[str, str]:
    """Validate ``result_keys`` against the keys a loop returns (``output``, its output
    schema): each renamed key is one of them, each new name a new key, all distinct.

    Raises:
        TypeError, ValueError: naming the bad key.
    """
    if not isinstance(renames, Mapping):
        raise TypeError(
            f"result_keys must be a mapping of result key to new name; got {type(renames).__name__}"
        )
    returned = _fields(output)
    checked: dict[str, str] = {}
    for key, new in renames.items():
        if key not in returned:
            raise ValueError(
                f"result_keys: {key!r} is not a key the loop returns; it returns "
                f"{', '.join(sorted(returned))}"
            )
        if not isinstance(new, str) or not new.isidentifier():
            raise ValueError(
                f"result_keys[{key!r}] must be a key name (an identifier); got {new!r}"
            )
        if new in returned or new in checked.values():
            raise ValueError(
                f"result_keys[{key!r}] = {new!r} would clash with another key the loop returns"
            )
        checked[key] = new
    return checked


def _with_result_keys(loop: LoopBuilder, renames: object, name: str) -> LoopBuilder:
    """The loop as a subgraph followed by a node copying its renamed result keys to their
    new names; the graph returns them under the new names only."""
    checked = check_result_keys(renames, loop.output_schema)
    returned = _fields(loop.output_schema)
    renamed = {checked.get(key, key): hint for key, hint in returned.items()}
    added = {new: returned[key] for key, new in checked.items()}
    state = loop.state_schema
    outer: LoopBuilder = StateGraph(
        merged(state.__name__, state, None, added),
        context_schema=loop.context_schema,
        input_schema=loop.input_schema,
        output_schema=TypedDict(loop.output_schema.__name__, renamed, total=False),  # type: ignore[operator]
    )
    outer.add_node(name, loop.compile(name=name))

    def result_keys(state: Any) -> dict[str, object]:  # the graph's state, a TypedDict made here
        return {new: state[key] for key, new in checked.items() if key in state}

    outer.add_node("result_keys", result_keys)
    outer.add_edge(START, name)
    outer.add_edge(name, "result_keys")
    outer.add_edge("result_keys", END)
    return outer


def _with_structured_response(loop: LoopBuilder, settings: LoopSettings, name: str) -> LoopBuilder:
    state, output = loop.state_schema, loop.output_schema
    outer: LoopBuilder = StateGraph(
        merged(state.__name__, state, StructuredOutput),
        context_schema=loop.context_schema,
        input_schema=loop.input_schema,
        output_schema=merged(output.__name__, output, StructuredOutput),
    )
    outer.add_node(name, loop.compile(name=name))

    def respond(state: CommonState, step: Step) -> Logic:
        question = next(
            (
                content_text(m.content)
                for m in reversed(state.get("messages", []))
                if isinstance(m, HumanMessage)
            ),
            "",
        )
        prompt = [
            HumanMessage(prompts.RESPOND_USER.format(question=question, answer=state["answer"]))
        ]
        result = yield from structured_call(
            step.ask(state),
            prompt,
            settings.response_format,
            instructions=prompts.RESPOND_SYSTEM,
            max_calls=3,
            purpose="structured_response",
        )
        update = {**result.state_update(), "structured_response": result.value}
        if result.value is None:
            update["status"] = "error"
            wanted = schema_name(settings.response_format)
            update["error"] = (
                f"structured output failed: no reply matched {wanted} after {result.calls} "
                "model call(s); the answer is kept in 'answer'"
            )
        return update

    add_step(outer, "respond", respond, settings)
    outer.add_edge(START, name)
    route(outer, name, lambda state: "respond" if state.get("answer") else END, ["respond"])
    outer.add_edge("respond", END)
    return outer
