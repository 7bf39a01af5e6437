"""The registry of loops: one ``LoopSpec`` per loop, read by the CLI, eval, Studio and docs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from langchain_core.language_models import BaseChatModel
from typing_extensions import Unpack

from loopgraphs.context import ContextT
from loopgraphs.graphs.cot import CoTGraph, create_cot_graph
from loopgraphs.graphs.critic import CriticGraph, create_critic_graph
from loopgraphs.graphs.plan_execute import PlanExecuteGraph, create_plan_execute_graph
from loopgraphs.graphs.react import ReActGraph, create_react_graph
from loopgraphs.graphs.reflexion import ReflexionGraph, create_reflexion_graph
from loopgraphs.graphs.self_ask import SelfAskGraph, create_self_ask_graph
from loopgraphs.graphs.tot import ToTGraph, create_tot_graph
from loopgraphs.nodes.settings import LoopOptions, ToolLoopOptions, ToolsArg, declare_loop
from loopgraphs.state import CompiledLoop, ResponseT

Factory = Callable[..., CompiledLoop]


@dataclass(frozen=True)
class LoopSpec:
    """What the rest of the library needs to know about one loop.

    Attributes:
        name: The loop's registry name (``react``, ``tot``, ...).
        factory: Its ``create_*_graph`` function.
        summary: One line saying when to use it.
        takes_tools: Whether the factory accepts ``tools`` (and ``tool_mode``).
        budget_option: The keyword that bounds the loop's main cycle.
        studio_options: Options of the graph served to LangGraph Studio (sized for the
            small local model).

    Making a spec declares the loop's own keywords to ``make_settings``, which lists them
    when a factory is given a keyword it does not know.
    """

    name: str
    factory: Factory
    summary: str
    takes_tools: bool
    budget_option: str
    studio_options: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        declare_loop(self.name, self.factory)

    def build(
        self, model: BaseChatModel | str | None, tools: ToolsArg = (), **options: object
    ) -> CompiledLoop:
        """Build the loop; ``tools`` are dropped for loops that take none."""
        if self.takes_tools:
            return self.factory(model, list(tools or ()), **options)
        return self.factory(model, **options)


LOOP_SPECS: dict[str, LoopSpec] = {
    spec.name: spec
    for spec in (
        LoopSpec(
            "cot",
            create_cot_graph,
            "no tools needed: arithmetic, logic, step-by-step reasoning; the cheapest (1 call)",
            takes_tools=False,
            budget_option="self_consistency",
        ),
        LoopSpec(
            "react",
            create_react_graph,
            "general assistant that uses tools, one decision at a time",
            takes_tools=True,
            budget_option="max_iterations",
        ),
        LoopSpec(
            "plan_execute",
            create_plan_execute_graph,
            "multi-step tasks with distinct sub-goals; an auditable plan first",
            takes_tools=True,
            budget_option="max_step_iterations",
            studio_options={"max_steps": 3},
        ),
        LoopSpec(
            "reflexion",
            create_reflexion_graph,
            "correctness matters and a first attempt may fail: retry with self-critique",
            takes_tools=True,
            budget_option="max_iterations",
        ),
        LoopSpec(
            "self_ask",
            create_self_ask_graph,
            "multi-hop questions answered by chaining simple look-ups",
            takes_tools=True,
            budget_option="max_follow_ups",
        ),
        LoopSpec(
            "critic",
            create_critic_graph,
            "answers with checkable facts: draft, verify claims with tools, revise",
            takes_tools=True,
            budget_option="max_critique_rounds",
        ),
        LoopSpec(
            "tot",
            create_tot_graph,
            "several competing strategies: explore branches, keep the best (beam search)",
            takes_tools=False,
            budget_option="max_depth",
            studio_options={"n_branches": 2, "beam_width": 1, "max_depth": 2},
        ),
    )
}

LOOPS: dict[str, Factory] = {name: spec.factory for name, spec in LOOP_SPECS.items()}
"""Each loop's factory by registry name (``LoopName``)."""
TOOL_LOOPS: tuple[str, ...] = tuple(name for name, spec in LOOP_SPECS.items() if spec.takes_tools)
"""The loops that take tools, in the registry's order."""


def get_spec(name: str) -> LoopSpec:
    """The spec of a loop by name.

    Raises:
        ValueError: ``name`` is not a known loop.
    """
    if name not in LOOP_SPECS:
        raise ValueError(f"unknown loop {name!r}; choose one of {', '.join(LOOP_SPECS)}")
    return LOOP_SPECS[name]


LoopName = Literal["cot", "react", "plan_execute", "reflexion", "self_ask", "critic", "tot"]
"""The loops' registry names (``LOOPS``'s keys), which ``build_loop`` takes."""


class CoTOptions(LoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("cot", ...)``'s keywords: ``create_cot_graph``'s."""

    self_consistency: int


class ReActOptions(ToolLoopOptions[ResponseT, ContextT], total=False):
    """``build_loop("react", ...)``'s keywords: ``create_react_graph``'s."""

    max_iterations: int
    synthesize_answer: bool


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
def build_loop(loop: LoopName, model: Model, tools: ToolsArg = (), /, **options: Any) -> Any:
    """Build a loop by name, e.g. ``build_loop("react", model, [calculator])``.

    The first three arguments are positional only, so that every option, the compile
    option ``name=`` included, passes through to the loop's factory. A type checker sees
    the loop's own graph and keywords for each name (``ReActOptions``, ...); a name only
    known at run time goes through ``get_spec(name).build(...)``.

    Args:
        loop: One of ``LOOPS``.
        model: A chat model or a model spec string.
        tools: Tools for the loops that use them (ignored by ``cot`` and ``tot``).
        **options: The loop's keyword options.

    Raises:
        ValueError: ``loop`` is not a known loop.
    """
    return get_spec(loop).build(model, tools, **options)
