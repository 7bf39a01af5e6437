"""Graphs for LangGraph Studio and ``langgraph dev`` (listed in langgraph.json).

Each graph is built without a model: the model, tool mode, tools and budget come from the
run's context (``LoopContext``), defaulting to the embedded local model and the
calculator and search tools, so every loop can be picked and configured in Studio. Each
model call reads at most ``STUDIO_HISTORY_TOKENS`` of a thread's earlier conversation
(``max_history_tokens``; the run's context may set another bound). The
default model is loaded in a worker thread on the first run that needs it, so that
``langgraph dev``, which fails blocking calls on its event loop, serves a run without any
context. The budgets are sized for a small local model; build your own graph for larger
ones.

There is one module-level graph factory per loop of the registry, named as the loop
(``studio.react``, ...; made from the registry when the module is imported), which is what
langgraph.json points at. ``langgraph dev`` calls
a factory of no arguments for the graph and awaits what it returns, so importing this
module builds nothing, and each graph is built on its first request, in a worker thread
(building the search tool's index blocks), and kept (``studio_graph``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.state import CompiledLoop
from loopgraphs.toolkits import get_tools

STUDIO_TOOLS = ("calculator", "search")
STUDIO_HISTORY_TOKENS = 2000
"""The Studio graphs' ``max_history_tokens``: a quarter of the 8,192-token window the
embedded server gives each request, which also holds the loop's instructions, the run's
own transcript (tool results up to 4,000 characters each) and the reply."""

StudioGraph = CompiledLoop

_built: dict[str, StudioGraph] = {}
_building = threading.Lock()


def studio_graph(loop: str) -> StudioGraph:
    """The Studio graph of a loop, built on first use and the same one after that.

    Args:
        loop: The loop's registry name.

    Returns:
        The compiled graph, named as the loop.
    """
    with _building:
        if loop not in _built:
            spec = LOOP_SPECS[loop]
            tools = get_tools(STUDIO_TOOLS)
            options = {"max_history_tokens": STUDIO_HISTORY_TOKENS, **spec.studio_options}
            _built[loop] = spec.build(None, tools, name=loop, **options)
        return _built[loop]


def _factory(loop: str) -> Callable[[], Awaitable[StudioGraph]]:
    """A graph factory of no arguments for langgraph.json, named as the loop."""

    async def factory() -> StudioGraph:
        return await asyncio.to_thread(studio_graph, loop)

    factory.__name__ = factory.__qualname__ = loop
    factory.__doc__ = f"The {loop} loop for Studio (``studio_graph({loop!r})``)."
    return factory


FACTORIES = {name: _factory(name) for name in LOOP_SPECS}
"""The graph factory of every loop of the registry, by its name, as langgraph.json names
them (``studio.react``, ...): ``langgraph dev`` reads them from the module's variables."""
globals().update(FACTORIES)

__all__ = ["FACTORIES", "STUDIO_HISTORY_TOKENS", "STUDIO_TOOLS", "studio_graph", *FACTORIES]
