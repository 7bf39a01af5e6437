"""What the loops assemble the same way: a factory's compiled graph, and a step whose
replies call tools together with the human review of those calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from langchain_core.language_models import BaseChatModel

from loopgraphs.nodes.build import compile_loop
from loopgraphs.nodes.driver import LogicFactory
from loopgraphs.nodes.routing import Router, add_routed_step, route
from loopgraphs.nodes.settings import LoopSettings, ToolsArg, make_settings
from loopgraphs.nodes.tool_loop import review_node
from loopgraphs.state import CompiledLoop, LoopBuilder


def compiled_loop(
    loop: str,
    build: Callable[[LoopSettings], LoopBuilder],
    model: BaseChatModel | str | None,
    tools: ToolsArg,
    options: Mapping[str, object],
    *,
    takes_tools: bool = True,
    max_iterations: int = 10,
) -> CompiledLoop:
    """A factory's loop: its arguments checked into settings (see ``make_settings``), its
    graph built for them by ``build`` and compiled with the caller's ``options``, named
    ``loop`` unless they name it."""
    settings = make_settings(
        loop, model, tools, options, takes_tools=takes_tools, max_iterations=max_iterations
    )
    return compile_loop(build(settings), settings, options, default_name=loop)


def add_tool_turn(
    builder: LoopBuilder,
    settings: LoopSettings,
    name: str,
    logic: LogicFactory,
    *,
    targets: Sequence[str],
    router: Router,
    settles_answer: bool = False,
) -> None:
    """Add the model step ``name`` (its ``logic``) whose replies call tools; it routes
    itself (see ``add_routed_step``).

    Args:
        builder: The loop's graph; the loop adds ``call_tool`` (the shared tool step) and
            the review (see ``add_review``).
        settings: The loop's settings.
        name: The step's node name.
        logic: The step's logic (see ``add_step``).
        targets: The steps it may lead to besides the review and ``call_tool``.
        router: Names the next step among all of those.
        settles_answer: Read the step's answer again after the ``after_model`` hooks,
            which may rewrite it (see ``LoopGraph.add_model_step``).
    """
    review = ["review"] if settings.review else []
    leads_to = [*review, "call_tool", *targets]
    add_routed_step(
        builder,
        name,
        logic,
        settings,
        router,
        leads_to,
        model_step=True,
        settles_answer=settles_answer,
    )


def add_review(
    builder: LoopBuilder, settings: LoopSettings, reviewed: Router, after: Sequence[str] = ()
) -> None:
    """Add the ``review`` step of the tool calls, when the loop's calls are reviewed
    (``settings.review``): ``reviewed`` names the step after it, ``call_tool`` or one of
    ``after``."""
    if settings.review:
        builder.add_node("review", review_node(settings))
        route(builder, "review", reviewed, ["call_tool", *after])
