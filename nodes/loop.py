"""A loop of the kit: ``LoopSpec`` declares it, ``LoopBuild`` wires its graph.

Every loop, built-in or a user's, is the same kind of thing::

    LOOP = LoopSpec(
        "self_refine",
        wire,  # wire(loop: LoopBuild[RefineOptions]) -> None: the graph's wiring only
        state=RefineState,  # extends LoopState
        output=RefineOutput,  # extends RunResult
        options=RefineOptions,  # extends LoopOptions: its keywords, each with an Option
        summary="draft, get feedback, revise",
        takes_tools=False,
    )
    graph = LOOP.create(model, max_rounds=3)

``create`` checks the model, the tools and every keyword (the loop's own against their
``Option``, the shared ones as every factory checks them), makes the run's settings,
hands a ``LoopBuild`` to ``wire`` and compiles the graph with the caller's
``checkpointer``, ``store``, ``name``, ``response_format`` and ``result_keys``. The
``LoopBuild`` adds the kit's steps: ``start`` (the run's ``prepare`` node), ``step`` (a
node of the loop's logic, with the middleware's hooks around a model step), the tool
step with its human review, and the routes between them; middleware, the run budget,
the answer checks and the chat rules come with them.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from langchain_core.runnables import Runnable
from langgraph.graph import START
from langgraph.runtime import Runtime
from langgraph.types import Send

from loopgraphs.nodes.build import compile_loop, merged, new_graph
from loopgraphs.nodes.driver import Begin, add_step, keeps_totals
from loopgraphs.nodes.fan_out import Tasks, add_fan_out, spreading
from loopgraphs.nodes.hooks import FINISH, STOPPED
from loopgraphs.nodes.kit_routing import (
    KitRouter,
    StepLogic,
    as_logic,
    kit_router,
    literal_targets,
    while_running,
)
from loopgraphs.nodes.options import OwnOption, own_options, resolved, signature_of
from loopgraphs.nodes.plan import GraphPlan
from loopgraphs.nodes.routing import Router, add_routed_step, route
from loopgraphs.nodes.run_start import add_start, starter
from loopgraphs.nodes.settings import (
    LoopOptions,
    LoopSettings,
    ToolLoopOptions,
    ToolsArg,
    make_settings,
)
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.tool_loop import pending_step, review_node
from loopgraphs.nodes.tool_step import call_tool, dispatch, pending_calls
from loopgraphs.state import (
    CommonState,
    CompiledLoop,
    InnerOutput,
    LoopBuilder,
    LoopRuntime,
)

OptionsT = TypeVar("OptionsT", bound=Mapping[str, Any])
FactoryT = TypeVar("FactoryT", bound=Callable[..., Any])

TOOL_STEP = "call_tool"
"""The name of the kit's tool step in every loop's graph."""
REVIEW = "review"
"""The name of the human review of tool calls, when a loop's calls are reviewed."""

# A loop's own starting values: ``opening(state, step)``, written by its ``prepare`` node.
Opening = Callable[[Any, Step[Any]], Mapping[str, object]]


@dataclass(frozen=True)
class LoopSpec(Generic[OptionsT]):
    """Everything the library needs to know about one loop.

    Attributes:
        name: The loop's registry name (an identifier: ``react``, ``self_refine``).
        wire: Wires the loop's graph on the ``LoopBuild`` it is given (and nothing else).
        state: The loop's state: a ``TypedDict`` extending ``LoopState``, every key declared.
        output: What a run returns: a ``TypedDict`` extending ``RunResult``.
        options: The loop's keywords: a ``TypedDict`` extending ``LoopOptions`` (or
            ``ToolLoopOptions`` when ``takes_tools``), each own keyword annotated with an
            ``Option`` (its default, meaning and bounds).
        summary: One line saying when to use the loop.
        takes_tools: Whether the factory takes ``tools`` (and the tool keywords).
        budget_option: The keyword that bounds the loop's main cycle.
        iterations_option: The keyword a run's ``context={"max_iterations": n}`` replaces
            (read by the steps as ``step.run.max_iterations``); None: the context's
            ``max_iterations`` does not change this loop's own keywords.
        main_step: The model step whose middleware hooks get create_agent's node names
            (default: the first model step the build adds).
        call_budget: The most model calls one run can make, from the loop's resolved
            keywords (documented on the loop's page, held by the tests; see
            ``loopgraphs.nodes.most_calls``).
        studio_options: Keywords of the graph served to LangGraph Studio.
        selects_tools_above: Above this many tools a run first picks the ones it uses
            (``call_budget(options, tool_selection=True)``); None: it never does.
        writes_tool_calls: The loop writes every tool call itself (from a plan it
            parsed), never in a model step's reply: a ``HumanInTheLoopMiddleware``, whose
            ``after_model`` hook reads model steps' replies only, then reviews them in the
            kit's review, as ``interrupt_before_tools`` does (see
            ``loopgraphs.nodes.review.middleware_review``).
    """

    name: str
    wire: Callable[[LoopBuild[OptionsT]], None]
    state: type[Any]
    output: type[Any]
    options: type[OptionsT]
    summary: str
    takes_tools: bool = True
    budget_option: str = "max_iterations"
    iterations_option: str | None = None
    main_step: str | None = None
    call_budget: Callable[..., int] | None = None
    studio_options: Mapping[str, object] = field(default_factory=dict)
    selects_tools_above: int | None = None
    writes_tool_calls: bool = False
    _factory: list[Callable[..., Any]] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a loop's name must be an identifier; got {self.name!r}")
        if not callable(self.wire):
            raise TypeError(
                f"loop {self.name}: wire must be a function of the LoopBuild; got {self.wire!r}"
            )
        check_schema(self.name, "state", self.state, LOOP_STATE_KEYS, "LoopState")
        check_schema(self.name, "output", self.output, RUN_RESULT_KEYS, "RunResult")
        names = [own.name for own in self.own]
        for keyword in (self.budget_option, self.iterations_option):
            if keyword is not None and keyword not in names:
                raise ValueError(
                    f"loop {self.name}: {keyword!r} is not one of its keywords "
                    f"({', '.join(names) or 'none declared'}); declare it in "
                    f"{self.options.__name__} with an Option"
                )

    @functools.cached_property
    def own(self) -> tuple[OwnOption, ...]:
        """The loop's own keywords (besides the shared options), in declaration order."""
        return own_options(self.options, self.shared_options)

    @property
    def shared_options(self) -> type[Any]:
        """The shared options the loop takes: ``ToolLoopOptions`` or ``LoopOptions``."""
        return ToolLoopOptions if self.takes_tools else LoopOptions

    @property
    def defaults(self) -> dict[str, object]:
        """The loop's own keywords at their defaults (required ones left out)."""
        return {own.name: own.default for own in self.own if not own.required}

    def resolve(self, options: Mapping[str, object]) -> dict[str, object]:
        """The loop's own keywords as a run reads them: ``options`` checked, the rest at
        their defaults (see ``loopgraphs.nodes.options.resolved``)."""
        mine = {own.name for own in self.own}
        return resolved(self.name, self.own, {k: v for k, v in options.items() if k in mine})

    def create(self, model: object, tools: ToolsArg = None, /, **options: Any) -> CompiledLoop:
        """Build and compile the loop.

        Args:
            model: A chat model, a model spec string, or None (the run's context names it).
            tools: The loop's tools (only when it ``takes_tools``).
            **options: The loop's own keywords and the shared options.

        Raises:
            TypeError, ValueError: an argument is unknown, missing, of the wrong type or
                out of range (the message names it and what it takes).
        """
        loop = LoopBuild(self, *self._settings(model, tools, options))
        self.wire(loop)
        return loop.compile()

    def step(
        self,
        node: str,
        model: object,
        tools: ToolsArg = None,
        /,
        *,
        runtime: LoopRuntime | None = None,
        **options: Any,
    ) -> Step[OptionsT]:
        """The ``Step`` one of the loop's steps is handed, to call the step on its own (in
        a test, a notebook): the loop built with these arguments, its settings (the
        ``runtime``'s context applied) and the steps it counts.

        Args:
            node: The step's node name.
            model: The chat model.
            tools: The loop's tools.
            runtime: The runtime the step sees (default: one without a context).
            **options: The loop's keywords.
        """
        settings, shared = self._settings(model, tools, options)
        loop = LoopBuild(self, settings, shared)
        self.wire(loop)
        seen = runtime if runtime is not None else Runtime(context=None)
        return Step(settings.for_run(seen), seen, {}, node, loop.plan)

    def _settings(
        self, model: object, tools: ToolsArg, options: Mapping[str, Any]
    ) -> tuple[LoopSettings, dict[str, Any]]:
        if not self.takes_tools and tools:
            raise TypeError(f"{self.name} takes no tools; build it without them")
        own = self.resolve(options)
        shared = {k: v for k, v in options.items() if k not in own}
        budget = own.get(self.iterations_option) if self.iterations_option else None
        settings = make_settings(
            self.name,
            model,
            tools if self.takes_tools else None,
            shared,
            takes_tools=self.takes_tools,
            max_iterations=cast(int, budget) if budget is not None else 10,
            own_keywords=tuple(own),
            own=own,
            writes_tool_calls=self.writes_tool_calls,
        )
        return settings, shared

    def build_inner(
        self, settings: LoopSettings, options: Mapping[str, Any]
    ) -> tuple[CompiledLoop, GraphPlan]:
        """The loop compiled to run inside a step of another loop (see
        ``loopgraphs.nodes.inner.InnerLoop``): with ``settings`` as they are, the middleware's
        ``before_agent``/``after_agent`` hooks left to the outer loop, and its bookkeeping
        (``scratch``) returned besides its output. Also returns the loop's ``GraphPlan``."""
        loop = LoopBuild(self, settings, options, inner=True)
        self.wire(loop)
        loop.add_start()
        return loop.graph.compile(name=self.name), loop.plan

    def factory(self, function: FactoryT) -> FactoryT:
        """Mark ``function`` as the loop's public factory (``LOOPS[name]``), and give it a
        signature that shows the loop's keywords with their defaults (``help()``,
        notebooks). Use as a decorator."""
        self._factory[:] = [function]
        function.__signature__ = signature_of(  # type: ignore[attr-defined]
            self.takes_tools, self.own, self.shared_options
        )
        return function

    @property
    def public_factory(self) -> Callable[..., CompiledLoop]:
        """The loop's factory: the one marked with ``factory``, else ``create``."""
        return self._factory[0] if self._factory else self.create

    def build(self, model: object, tools: ToolsArg = (), **options: Any) -> CompiledLoop:
        """Build the loop through its factory, with ``tools`` (dropped when it takes none)."""
        if self.takes_tools:
            return self.public_factory(model, list(tools or ()), **options)
        return self.public_factory(model, **options)


LOOP_STATE_KEYS = ("messages", "answer", "status", "llm_calls", "usage", "scratch")
RUN_RESULT_KEYS = ("messages", "answer", "status", "error", "tool_mode", "llm_calls", "usage")


def check_schema(loop: str, role: str, schema: object, keys: Sequence[str], base: str) -> None:
    """Refuse a loop's state or output schema that lacks the keys the kit's nodes read.

    Raises:
        TypeError: naming the schema, what it lacks and the base to extend.
    """
    try:
        declared = set(typing.get_type_hints(schema))
    except TypeError:
        declared = set()
    missing = [key for key in keys if key not in declared]
    if missing:
        name = getattr(schema, "__name__", repr(schema))
        raise TypeError(
            f"loop {loop}: its {role} {name} lacks {', '.join(missing)}, which the kit's "
            f"nodes read; declare it as class {name}(..., {base}, total=False)"
        )


class LoopBuild(Generic[OptionsT]):
    """What a loop's ``build`` wires its graph with.

    Attributes:
        spec: The loop being built.
        settings: The run settings the factory's arguments made (each run applies its
            context to them).
        graph: The loop's ``StateGraph`` (with the caller's state keys and the
            middleware's hook wiring), for anything the methods below do not cover.
    """

    def __init__(
        self,
        spec: LoopSpec[OptionsT],
        settings: LoopSettings,
        options: Mapping[str, Any],
        *,
        inner: bool = False,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.caller_options = dict(options)
        self.graph: LoopBuilder = new_graph(
            spec.state,
            merged(spec.output.__name__, spec.output, InnerOutput) if inner else spec.output,
            options,
            loop=spec.name,
            settings=settings,
            tools_node=TOOL_STEP if spec.takes_tools else None,
            main_step=spec.main_step,
            agent_hooks=not inner,
        )
        self.plan = GraphPlan()
        self._start: Callable[[], None] | None = None
        # The steps added with ``step`` (a start can be made in one), and the start a
        # step makes (filled when the graph is compiled, see ``add_start``).
        self._steps: set[str] = set()
        self._begins: dict[str, Begin] = {}
        self._fan_outs: dict[str, Tasks] = {}

    @property
    def options(self) -> OptionsT:
        """The loop's own keywords, resolved (a run's context does not change them)."""
        return cast(OptionsT, self.settings.options)

    def start(
        self,
        then: str | KitRouter,
        *,
        opening: Opening | None = None,
        targets: Sequence[str] = (),
        scratch: Mapping[str, object] | None = None,
    ) -> None:
        """Start every run: check the input, reset the counters and the bookkeeping,
        record the tool mode, write the loop's ``opening(state, step)`` and lead to
        ``then`` (a step's name, or a router among ``targets``). A run whose graph has too
        few supersteps left to reach the end ends at once (``status="max_iterations"``).

        When ``then`` is a step the build adds with ``step``, no middleware hook runs before
        it and the state keeps running totals (``TotalsState``: the step writes them
        plainly), that step starts a new run itself, in the superstep it runs in; else the
        start is a node of its own, ``prepare``, which leads to ``then``."""

        def opened(state: CommonState, step: Step[Any]) -> Mapping[str, object]:
            update = dict(opening(state, step)) if opening is not None else {}
            if update.get("status") != "error" and not step.may_finish(state):
                update.update(status="max_iterations", answer="")
            return update

        router, leads_to = self._router(then, targets, "prepare")
        inline = isinstance(then, str) and not targets and keeps_totals(self.graph)
        inline = inline and getattr(self.graph, "wiring", None) is None
        if not inline:
            self.plan.lead("prepare", leads_to)

        # Made when the graph is compiled: the first step's node is added by then, and the
        # way on from ``prepare`` enters it through the step's hook nodes.
        def made() -> None:
            if inline and then in self._steps:
                first = str(then)
                self._begins[first] = starter(
                    self.graph, self.settings, opened, scratch=scratch, plan=self.plan, node=first
                )
                self.graph.add_edge(START, first)
                return
            if inline:
                self.plan.lead("prepare", leads_to)
            add_start(
                self.graph,
                self.settings,
                opened,
                while_running(router),
                leads_to,
                scratch=scratch,
                plan=self.plan,
            )

        self._start = made

    def step(
        self,
        name: str,
        logic: StepLogic,
        *,
        then: str | KitRouter | None = None,
        targets: Sequence[str] = (),
        model: bool = False,
        calls_tools: bool = False,
        settles_answer: bool = False,
        subgraph: Runnable[Any, Any] | None = None,
        fan_out: Tasks | None = None,
        guarded: bool = True,
    ) -> None:
        """Add a step of the loop's logic: ``logic(state, step)``, a function returning
        the keys it changes, or a generator that yields the kit's requests
        (``generate``, ``parse``, ...) and returns them.

        Args:
            name: The node's name.
            logic: The step's logic.
            then: Where the run goes next: a step's name, a router (``router(state)`` or
                ``router(state, step)``) naming one of ``targets``, or None (the build
                adds the step's edges itself).
            targets: The steps a router may name (the end and, for a step that
                ``calls_tools``, the tool step and the review are added).
            model: The step calls the model: the middleware's ``before_model`` and
                ``after_model`` hooks run around it.
            calls_tools: The step's replies may call tools (the router leads to them
                with ``tool_calls``).
            settles_answer: Read the run's answer again after the ``after_model`` hooks,
                which may rewrite it.
            subgraph: A compiled graph the step runs (drawn inside it).
            fan_out: Run the step as concurrent tasks, one per ``Send`` that
                ``fan_out(state)`` gives, joining at ``then`` (see ``nodes.fan_out``).
            guarded: An exception ends the run with ``status="error"`` (see ``guard``);
                False: it reaches the caller (a malformed value a human resumed with).
        """
        if name in (TOOL_STEP, REVIEW, "prepare", FINISH, STOPPED):
            raise ValueError(f"{name!r} is the name of a kit step; name the loop's step otherwise")
        driven = as_logic(logic)
        self._steps.add(name)
        if model:
            middleware = self.settings.middleware
            before = len(middleware.with_hook("before_model"))
            after = len(middleware.with_hook("after_model"))
            self.plan.weigh(name, before + 1 + after, after=after)
        if fan_out is not None:
            add_fan_out(self.graph, self.settings, self.plan, name, driven, fan_out, then, model)
            self._fan_outs[name] = fan_out
            return
        if then is None:
            add_step(
                self.graph,
                name,
                driven,
                self.settings,
                plan=self.plan,
                model_step=model,
                settles_answer=settles_answer,
                subgraph=subgraph,
                guarded=guarded,
                begins=self._begins,
            )
            return
        extra = [REVIEW, TOOL_STEP] if calls_tools and self.settings.review else []
        extra += [TOOL_STEP] if calls_tools and not self.settings.review else []
        router, leads_to = self._router(then, [*extra, *targets], name)
        self.plan.lead(name, leads_to)
        add_routed_step(
            self.graph,
            name,
            driven,
            self.settings,
            router,
            leads_to,
            plan=self.plan,
            model_step=model,
            settles_answer=settles_answer,
            subgraph=subgraph,
            guarded=guarded,
            begins=self._begins,
        )

    def tool_step(
        self,
        then: str | KitRouter,
        *,
        targets: Sequence[str] = (),
        after_review: str | None = None,
    ) -> None:
        """Add the kit's tool step (``call_tool``: the calls of the last reply run through
        LangGraph's ``ToolNode`` inside the guard) and, when tool calls are reviewed, the
        human review before it; after the tools the run goes to ``then`` (a step's name,
        or a router among ``targets``), and from the review to ``after_review`` when no
        call is left to run (None: the run stops there)."""
        if not self.spec.takes_tools:
            raise ValueError(
                f"loop {self.spec.name} takes no tools: declare it with takes_tools=True "
                "to add the tool step"
            )
        self.graph.add_node(TOOL_STEP, call_tool(self.settings))
        if isinstance(then, str):
            self.graph.add_edge(TOOL_STEP, then)
            self.plan.lead(TOOL_STEP, [then])
        else:
            router, leads_to = self._router(then, targets, TOOL_STEP)
            self.plan.lead(TOOL_STEP, leads_to)
            route(self.graph, TOOL_STEP, router, leads_to)
        if self.settings.review:
            self.graph.add_node(REVIEW, review_node(self.settings))
            after = [TOOL_STEP] if after_review is None else [TOOL_STEP, after_review]
            self.plan.lead(REVIEW, after)
            reviewed = functools.partial(reviewed_calls, otherwise=after_review)
            route(self.graph, REVIEW, reviewed, after)

    def route(self, source: str, then: str | KitRouter, targets: Sequence[str] = ()) -> None:
        """Lead from ``source`` (a node added with the graph's own ``add_node``, or a step
        added with ``then=None``) to ``then``: a step's name, or a router among
        ``targets``. The run ends instead when it is over (an error, a hook's end)."""
        router, leads_to = self._router(then, targets, source)
        self.plan.lead(source, leads_to)
        route(self.graph, source, router, leads_to)

    def node(self, name: str, step: Runnable[Any, Any] | Callable[..., Any]) -> None:
        """Add a node of LangGraph's own kind (a function of the state, a runnable, a
        compiled graph) with no kit guarantees of its own; lead out of it with ``route``."""
        self.graph.add_node(name, step)

    def compile(self) -> CompiledLoop:
        """The loop compiled with the caller's compile options (see ``compile_loop``).

        Raises:
            ValueError: the build added no start (``start``).
        """
        self.add_start()
        return compile_loop(
            self.graph, self.settings, self.caller_options, default_name=self.spec.name
        )

    def add_start(self) -> None:
        """Add the start the build declared (see ``start``).

        Raises:
            ValueError: the build declared none.
        """
        if self._start is None:
            raise ValueError(
                f"loop {self.spec.name}: its build added no start; call "
                "loop.start('<first step>') in it"
            )
        self._start()

    def _router(
        self, then: str | KitRouter, targets: Sequence[str], source: str
    ) -> tuple[Router, list[str]]:
        """A router of the graph's kind for ``then`` (a fan-out step's tasks: ``spreading``)."""
        if isinstance(then, str):
            target = then
            router, leads_to = cast(Router, lambda state: target), [target]
        else:
            leads_to = [*targets] or literal_targets(then)
            router = kit_router(then, self.settings, self.plan, source)
        return spreading(router, self._fan_outs, leads_to, self.graph), leads_to


def tool_calls(state: Mapping[str, object], step: Step[Any]) -> str | list[Send]:
    """Where the last reply's tool calls go: the review when some pause for a human, else
    one ``Send`` per call to the tool step; an empty list when none is pending."""
    return pending_step(step.run, state)


def reviewed_calls(state: Mapping[str, object], otherwise: str | None = None) -> str | list[Send]:
    """After the review: one tool-step task per call the reviewer let through; when none
    is left, ``otherwise`` (a step's name), or an empty list when it is None."""
    calls = dispatch(pending_calls(cast("Sequence[Any]", state.get("messages") or [])))
    return calls or otherwise or []


__all__ = [
    "REVIEW",
    "TOOL_STEP",
    "LoopBuild",
    "LoopSpec",
    "Opening",
    "reviewed_calls",
    "tool_calls",
]
