"""The registry of loops: one ``LoopSpec`` per loop, read by everything that lists loops
(the command line, the evaluation, Studio's graphs and ``langgraph.json``, the docs, the
tests parametrised over loops). Adding a loop is one entry here: its spec in
``BUILT_IN``, its name in ``LoopName`` and its ``build_loop`` overload."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, overload

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs import (
    cot,
    critic,
    lats,
    plan_execute,
    react,
    reflexion,
    rewoo,
    self_ask,
    tot,
)
from loopgraphs.graphs.cot import CoTGraph
from loopgraphs.graphs.cot.state import CoTOptions
from loopgraphs.graphs.critic import CriticGraph
from loopgraphs.graphs.critic.state import CriticOptions
from loopgraphs.graphs.lats import LATSGraph
from loopgraphs.graphs.lats.state import LATSOptions
from loopgraphs.graphs.plan_execute import PlanExecuteGraph
from loopgraphs.graphs.plan_execute.state import PlanExecuteOptions
from loopgraphs.graphs.react import ReActGraph
from loopgraphs.graphs.react.state import ReActOptions
from loopgraphs.graphs.reflexion import ReflexionGraph
from loopgraphs.graphs.reflexion.state import ReflexionOptions
from loopgraphs.graphs.rewoo import ReWOOGraph
from loopgraphs.graphs.rewoo.state import ReWOOOptions
from loopgraphs.graphs.self_ask import SelfAskGraph
from loopgraphs.graphs.self_ask.state import SelfAskOptions
from loopgraphs.graphs.tot import ToTGraph
from loopgraphs.graphs.tot.state import ToTOptions
from loopgraphs.nodes import LoopSpec
from loopgraphs.nodes.settings import ToolsArg
from loopgraphs.state import CompiledLoop, ResponseT

Factory = Callable[..., CompiledLoop]


Spec = LoopSpec[Any]

BUILT_IN: tuple[Spec, ...] = (
    cot.LOOP,
    react.LOOP,
    plan_execute.LOOP,
    reflexion.LOOP,
    self_ask.LOOP,
    critic.LOOP,
    tot.LOOP,
    lats.LOOP,
    rewoo.LOOP,
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
    same = (known.wire.__module__, known.wire.__qualname__)
    return same == (spec.wire.__module__, spec.wire.__qualname__)


def get_spec(name: str) -> Spec:
    """The spec of a loop by name.

    Raises:
        ValueError: ``name`` is not a known loop.
    """
    if name not in LOOP_SPECS:
        raise ValueError(f"unknown loop {name!r}; choose one of {', '.join(LOOP_SPECS)}")
    return LOOP_SPECS[name]


LoopName = Literal[
    "cot", "react", "plan_execute", "reflexion", "self_ask", "critic", "tot", "lats", "rewoo"
]
"""The loops' registry names (``LOOPS``'s keys), which ``build_loop`` takes."""


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
    loop: Literal["rewoo"],
    model: Model,
    tools: ToolsArg = (),
    /,
    **options: Unpack[ReWOOOptions[ResponseT, ContextT]],
) -> ReWOOGraph[ContextT, ResponseT]: ...
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
