"""Assemble and compile a loop's graph: schemas, extension points, routers, compile options.

``new_graph`` makes a loop's ``StateGraph`` from its state and output schemas, merged with
the caller's ``state_schema`` (extra keys flow in and out) and ``context_schema``.
``compile_loop`` adds the structured response when ``response_format`` is set and
forwards ``checkpointer``, ``store`` and ``name`` to ``compile()``. ``route`` adds a
conditional edge whose router first ends the run on an error.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import typing_extensions
from langchain.agents.middleware.types import OmitFromSchema
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.managed.base import is_managed_value
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Send
from typing_extensions import TypedDict

from loopgraphs import prompts
from loopgraphs.context import LoopContext
from loopgraphs.nodes.generate import asker
from loopgraphs.nodes.hooks import LoopGraph, Wiring, wire
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.runner import Logic, RunnableCallable, add_step
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.structured import schema_name, structured_call
from loopgraphs.state import InputState, OutputState, StructuredOutput

Router = Callable[..., str | list[Send]]


def _fields(schema: type[Any] | None) -> dict[str, Any]:
    if schema is None:
        return {}
    return typing.get_type_hints(schema, include_extras=True)


def merged(
    name: str,
    base: type[Any],
    extra: type[Any] | None,
    more: Mapping[str, Any] | None = None,
    *,
    managed: bool = True,
) -> type[Any]:
    """A TypedDict with the fields of ``base``, the caller's ``extra`` fields and ``more``
    (middleware fields); the loop's own fields win on equal names, so its reducers stay
    in force. ``managed=False`` leaves out managed values (an input or output schema may
    not hold them; a state built on LangGraph's prebuilt ``AgentState`` has
    ``remaining_steps``)."""
    if extra is None and not more:
        return base
    fields = {**(more or {}), **_fields(extra), **_fields(base)}
    if not managed:
        fields = {
            key: hint
            for key, hint in fields.items()
            if not any(is_managed_value(m) for m in _metadata(hint))
        }
    return TypedDict(name, fields, total=False)  # type: ignore[operator]


# Fields of LangChain's AgentState, which every middleware schema extends: loopgraphs'
# state has its own ``messages`` and ``structured_response``; ``jump_to`` comes along.
AGENT_STATE_FIELDS = ("messages", "structured_response")


def middleware_fields(options: Mapping[str, Any], *, leave_out: str = "") -> dict[str, Any]:
    """The state keys the middleware's ``state_schema``s add, in list order; with
    ``leave_out="input"`` (or ``"output"``) without those their annotation leaves out of
    that schema (``OmitFromInput``, ``OmitFromOutput``, ``PrivateStateAttr``)."""
    fields: dict[str, Any] = {}
    for middleware in options.get("middleware") or ():
        for key, hint in _fields(middleware.state_schema).items():
            if key in AGENT_STATE_FIELDS:
                continue
            omitted = [m for m in _metadata(hint) if isinstance(m, OmitFromSchema)]
            if leave_out and any(getattr(m, leave_out) for m in omitted):
                continue
            fields[key] = hint
    return fields


def _metadata(hint: Any) -> tuple[Any, ...]:
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


def subgraph_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's schemas and middleware, for a loop's inner ReAct subgraph."""
    keys = ("state_schema", "context_schema", "middleware")
    return {key: options[key] for key in keys if options.get(key)}


def caller_keys(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The caller's own state keys (from ``state_schema``) and the middleware's, which a
    loop passes into its inner ReAct runs and copies back from them, so tools and hooks
    can read and update them."""
    own = set(_fields(OutputState)) | set(_fields(InputState)) | {"jump_to"}
    hints = {**middleware_fields(options), **_fields(options.get("state_schema"))}
    managed = {k for k, hint in hints.items() if any(map(is_managed_value, _metadata(hint)))}
    keys = [*_fields(options.get("state_schema")), *middleware_fields(options)]
    return tuple(dict.fromkeys(key for key in keys if key not in own | managed))


def caller_reducers(options: Mapping[str, Any]) -> dict[str, Callable[[Any, Any], Any]]:
    """The reducers of the caller's own state keys that have one (``Annotated[T, f]``)."""
    reducers = {}
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
) -> StateGraph[Any, Any, Any, Any]:
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


def route(
    builder: StateGraph[Any, Any, Any, Any],
    source: str,
    router: Router,
    targets: Sequence[str],
) -> None:
    """Add a conditional edge from ``source``: the run ends when its status is "error",
    otherwise ``router(state)`` (or ``router(state, runtime)``) names the next node, or
    returns ``Send`` packets for a fan-out into ``targets``.

    The router runs as LangGraph's own callable without tracing, in the caller's thread
    also under ``ainvoke`` (a plain function would be sent to a worker thread there)."""

    def with_runtime(state: dict[str, Any], runtime: Runtime[Any]) -> str | list[Send]:
        return END if state.get("status") == "error" else router(state, runtime)

    def without_runtime(state: dict[str, Any]) -> str | list[Send]:
        return END if state.get("status") == "error" else router(state)

    # LangGraph has no runtime to give when it routes an update_state write, so a router
    # that does not need one must not ask for it.
    guarded: Router = with_runtime if router.__code__.co_argcount > 1 else without_runtime
    wiring = getattr(builder, "wiring", None)
    if wiring is not None:
        guarded = _through_hooks(guarded, wiring, source)
        targets = [*targets, *wiring.jump_targets(source).values()]
    path = RunnableCallable(guarded, None, name=router.__name__, trace=False)
    builder.add_conditional_edges(source, path, list(dict.fromkeys([*targets, END])))


def add_routed_step(
    builder: StateGraph[Any, Any, Any, Any],
    name: str,
    logic: Any,
    policy: Any,
    router: Router,
    targets: Sequence[str],
    **step: Any,
) -> None:
    """Add a step (see ``add_step``, which takes ``step``'s options) and its way out:
    ``router`` names the next step among ``targets`` as ``route`` describes.

    When no middleware has model hooks (so no hook node stands after the step or before
    a target), the step's node runs the router itself on the state its writes leave and
    returns the answer as a ``Command(goto=...)``, its ``targets`` declared for the drawn
    graph. A conditional edge would instead have LangGraph copy every channel of the state
    to read it again after each step, a cost that grows with the state's keys. Otherwise
    the router is a conditional edge from the step's last hook node."""
    wiring: Wiring | None = getattr(builder, "wiring", None)
    if wiring is not None and (
        wiring.middleware.with_hook("before_model") or wiring.middleware.with_hook("after_model")
    ):
        add_step(builder, name, logic, policy, **step)
        route(builder, name, router, targets)
        return
    takes_runtime = router.__code__.co_argcount > 1

    def next_step(state: dict[str, Any], runtime: Runtime[Any]) -> Any:
        if state.get("status") == "error":
            return wiring.entry(END) if wiring is not None else END
        chosen = router(state, runtime) if takes_runtime else router(state)
        return wiring.route_to(chosen) if wiring is not None else chosen

    ends = [*targets, END]
    destinations = [wiring.entry(t) for t in ends] if wiring is not None else ends
    add_step(builder, name, logic, policy, next_step=next_step, destinations=destinations, **step)


def _through_hooks(router: Router, wiring: Wiring, source: str) -> Router:
    """A router whose answers lead through the middleware's hook nodes (see
    ``loopgraphs.nodes.hooks``), after a ``jump_to`` the step's last hook left."""

    def with_runtime(state: dict[str, Any], runtime: Runtime[Any]) -> str | list[Send]:
        return wiring.jumped(source, state) or wiring.route_to(router(state, runtime))

    def without_runtime(state: dict[str, Any]) -> str | list[Send]:
        return wiring.jumped(source, state) or wiring.route_to(router(state))

    return with_runtime if router.__code__.co_argcount > 1 else without_runtime


def while_running(target: str) -> Router:
    """A router to ``target`` while the run's status is "running", and to the end after."""

    def running(state: Mapping[str, Any]) -> str:
        return target if state.get("status") == "running" else END

    return running


def steps_left(state: Mapping[str, Any], needed: int) -> bool:
    """Whether LangGraph's remaining step budget still allows ``needed`` more steps."""
    return int(state.get("remaining_steps", needed + 1)) > needed


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
    builder: StateGraph[Any, Any, Any, Any],
    settings: LoopSettings,
    options: Mapping[str, Any],
    *,
    default_name: str,
) -> CompiledStateGraph[Any, Any, Any, Any]:
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
    return builder.compile(
        checkpointer=options.get("checkpointer"), store=options.get("store"), name=name
    )


def _with_structured_response(
    loop: StateGraph[Any, Any, Any, Any], settings: LoopSettings, name: str
) -> StateGraph[Any, Any, Any, Any]:
    state, output = loop.state_schema, loop.output_schema
    outer: StateGraph[Any, Any, Any, Any] = StateGraph(
        merged(state.__name__, state, StructuredOutput),
        context_schema=loop.context_schema,
        input_schema=loop.input_schema,
        output_schema=merged(output.__name__, output, StructuredOutput),
    )
    outer.add_node(name, loop.compile(name=name))

    def respond(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Logic:
        run = settings.for_run(runtime)
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
            asker(run, state, runtime),
            prompt,
            settings.response_format,
            instructions=prompts.RESPOND_SYSTEM,
            max_calls=3,
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

    add_step(outer, "respond", respond, settings.retry_policy)
    outer.add_edge(START, name)
    route(outer, name, lambda state: "respond" if state.get("answer") else END, ["respond"])
    outer.add_edge("respond", END)
    return outer
