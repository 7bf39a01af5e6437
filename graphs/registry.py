"""The registry of loops: one ``LoopSpec`` per loop, read by everything that lists loops
(the command line, the evaluation, Studio's graphs and ``langgraph.json``, the docs, the
tests parametrised over loops). Adding a loop is one entry here: its spec in
``BUILT_IN``, its name in ``LoopName`` and its ``build_loop`` overload."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs import cot, lats, react
from loopgraphs.graphs.cot import CoTGraph
from loopgraphs.graphs.cot.state import CoTOptions
from loopgraphs.graphs.critic import CriticGraph, create_critic_graph
from loopgraphs.graphs.lats import LATSGraph
from loopgraphs.graphs.lats.state import LATSOptions
from loopgraphs.graphs.plan_execute import PlanExecuteGraph, create_plan_execute_graph
from loopgraphs.graphs.react import ReActGraph
from loopgraphs.graphs.react.state import ReActOptions
from loopgraphs.graphs.reflexion import ReflexionGraph, create_reflexion_graph
from loopgraphs.graphs.self_ask import SelfAskGraph, create_self_ask_graph
from loopgraphs.graphs.tot import ToTGraph, create_tot_graph
from loopgraphs.nodes import LoopSpec
from loopgraphs.nodes.settings import LoopOptions, ToolLoopOptions, ToolsArg
from loopgraphs.state import CompiledLoop, ResponseT

Factory = Callable[..., CompiledLoop]


@dataclass(frozen=True)
class _Legacy:
    """A loop not yet built as a ``LoopSpec`` of the kit: its factory and what the
    registry reads of it."""

    name: str
    public_factory: Factory
    summary: str
    takes_tools: bool
    budget_option: str
    studio_options: Mapping[str, object] = field(default_factory=dict)

    def build(
        self, model: BaseChatModel | str | None, tools: ToolsArg = (), **options: object
    ) -> CompiledLoop:
        """Build the loop; ``tools`` are dropped for loops that take none."""
        if self.takes_tools:
            return self.public_factory(model, list(tools or ()), **options)
        return self.public_factory(model, **options)


Spec = LoopSpec[Any] | _Legacy

BUILT_IN: tuple[Spec, ...] = (
    cot.LOOP,
    react.LOOP,
    _Legacy(
        "plan_execute",
        create_plan_execute_graph,
        "multi-step tasks with distinct sub-goals; an auditable plan first",
        takes_tools=True,
        budget_option="max_step_iterations",
        studio_options={"max_steps": 3},
    ),
    _Legacy(
        "reflexion",
        create_reflexion_graph,
        "correctness matters and a first attempt may fail: retry with self-critique",
        takes_tools=True,
        budget_option="max_iterations",
    ),
    _Legacy(
        "self_ask",
        create_self_ask_graph,
        "multi-hop questions answered by chaining simple look-ups",
        takes_tools=True,
        budget_option="max_follow_ups",
    ),
    _Legacy(
        "critic",
        create_critic_graph,
        "answers with checkable facts: draft, verify claims with tools, revise",
        takes_tools=True,
        budget_option="max_critique_rounds",
    ),
    _Legacy(
        "tot",
        create_tot_graph,
        "several competing strategies: explore branches, keep the best (beam search)",
        takes_tools=False,
        budget_option="max_depth",
        studio_options={"n_branches": 2, "beam_width": 1, "max_depth": 2},
    ),
    lats.LOOP,
)
"""The loops loopgraphs ships, in the order lists show them (one entry per loop)."""

LOOP_SPECS: dict[str, Spec] = {spec.name: spec for spec in BUILT_IN}
"""Every loop by registry name: the built-in ones, then those ``register_loop`` added."""
LOOPS: dict[str, Factory] = {name: spec.public_factory for name, spec in LOOP_SPECS.items()}
"""Each loop's factory by registry name (``LoopName``, and the names ``register_loop``
added)."""
TOOL_LOOPS: tuple[str, ...] = tuple(spec.name for spec in BUILT_IN if spec.takes_tools)
"""The built-in loops that take tools, in the registry's order."""

OptionsT = TypeVar("OptionsT", bound=Mapping[str, Any])


def register_loop(spec: LoopSpec[OptionsT]) -> LoopSpec[OptionsT]:
    """Add a loop of your own to the registry: ``build_loop`` (by name or by ``spec``),
    ``LOOPS``, the command line (``loopgraphs --use your_module ...``), the evaluation and
    Studio's factories find it by its name from then on.

    Args:
        spec: The loop (see ``loopgraphs.nodes.LoopSpec``).

    Returns:
        ``spec``, which ``build_loop`` also takes in place of a name (a type checker then
        sees the loop's keywords).

    Raises:
        TypeError: ``spec`` is not a ``LoopSpec``.
        ValueError: another loop has its name already (the same loop defined again, by
            a notebook cell or a module run a second time, replaces it).
    """
    if not isinstance(spec, LoopSpec):
        raise TypeError(
            f"register_loop takes a loopgraphs.nodes.LoopSpec; got {type(spec).__name__}"
        )
    known = LOOP_SPECS.get(spec.name)
    if known is not None and not _redefines(known, spec):
        raise ValueError(
            f"a loop named {spec.name!r} is registered already; give yours another name"
        )
    LOOP_SPECS[spec.name] = spec
    LOOPS[spec.name] = spec.public_factory
    return spec


def _redefines(known: Spec, spec: LoopSpec[Any]) -> bool:
    """Whether ``spec`` is ``known`` defined again: the same wiring function of the same
    module (a notebook cell or a file run again), which replaces it."""
    wire = getattr(known, "wire", None)
    same = (getattr(wire, "__module__", None), getattr(wire, "__qualname__", None))
    return same == (spec.wire.__module__, spec.wire.__qualname__)


def get_spec(name: str) -> Spec:
    """The spec of a loop by name.

    Raises:
        ValueError: ``name`` is not a known loop.
    """
    if name not in LOOP_SPECS:
        raise ValueError(f"unknown loop {name!r}; choose one of {', '.join(LOOP_SPECS)}")
    return LOOP_SPECS[name]


LoopName = Literal["cot", "react", "plan_execute", "reflexion", "self_ask", "critic", "tot", "lats"]
"""The loops' registry names (``LOOPS``'s keys), which ``build_loop`` takes."""


class PlanExecuteOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("plan_execute", ...)``'s keywords: ``create_plan_execute_graph``'s."""

    max_steps: int
    max_step_iterations: int
    replan: bool
    approve_plan: bool


class ReflexionOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("reflexion", ...)``'s keywords: ``create_reflexion_graph``'s."""

    max_reflections: int
    max_iterations: int


class SelfAskOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("self_ask", ...)``'s keywords: ``create_self_ask_graph``'s."""

    max_follow_ups: int


class CriticOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("critic", ...)``'s keywords: ``create_critic_graph``'s."""

    max_critique_rounds: int


class ToTOptions(LoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("tot", ...)``'s keywords: ``create_tot_graph``'s."""

    n_branches: int
    beam_width: int
    max_depth: int
    scoring: Literal["batched", "per_branch"]
    generation: Literal["propose", "sample"]


Model = BaseChatModel | str | None


@overload
def build_loop(
    loop: Literal["cot"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[CoTOptions[ResponseT, ContextT]],
) -> CoTGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["react"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[ReActOptions[ResponseT, ContextT]],
) -> ReActGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["plan_execute"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[PlanExecuteOptions[ResponseT, ContextT]],
) -> PlanExecuteGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["reflexion"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[ReflexionOptions[ResponseT, ContextT]],
) -> ReflexionGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["self_ask"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[SelfAskOptions[ResponseT, ContextT]],
) -> SelfAskGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["critic"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[CriticOptions[ResponseT, ContextT]],
) -> CriticGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["tot"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[ToTOptions[ResponseT, ContextT]],
) -> ToTGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: Literal["lats"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[LATSOptions[ResponseT, ContextT]],
) -> LATSGraph[ContextT, ResponseT]: ...
@overload
def build_loop(
    loop: LoopSpec[Any], model: Model, tools: ToolsArg = (), /, **options: Any
) -> CompiledLoop: ...
def build_loop(
    loop: LoopName | LoopSpec[Any], model: Model, tools: ToolsArg = (), /, **options: Any
) -> Any:
    """Build a loop by name, e.g. ``build_loop("react", model, [calculator])``.

    The first three arguments are positional only, so that every option, the compile
    option ``name=`` included, passes through to the loop's factory. A type checker sees
    the loop's own graph and keywords for each name (``ReActOptions``, ...); a name only
    known at run time goes through ``get_spec(name).build(...)``.

    Args:
        loop: One of ``LOOPS``, or a ``LoopSpec`` (a loop of your own, registered or not).
        model: A chat model or a model spec string.
        tools: Tools for the loops that use them (ignored by ``cot`` and ``tot``).
        **options: The loop's keyword options.

    Raises:
        ValueError: ``loop`` is not a known loop.
    """
    spec = loop if isinstance(loop, LoopSpec) else get_spec(loop)
    return spec.build(model, tools, **options)
