"""Graphs the test ``langgraph dev`` server serves next to the loops of langgraph.json.

Each tool loop of the registry is built as graphs/studio.py builds it (model, tool mode,
tools and budget from the run's context; the Studio tools and history bound), but pauses
for human approval before every tool call (``interrupt_before_tools=True``). They are
served as ``<loop>_approval`` (see ``tests.support.langgraph_server.served_config``): this
module has a factory of that name for every tool loop of the registry.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

from loopgraphs.graphs import registry
from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.graphs.studio import STUDIO_HISTORY_TOKENS, STUDIO_TOOLS
from loopgraphs.state import CompiledLoop
from loopgraphs.toolkits import get_tools

TOOL_LOOPS = registry.TOOL_LOOPS

_built: dict[str, CompiledLoop] = {}
_building = threading.Lock()


def approval_graph(loop: str) -> CompiledLoop:
    """The Studio build of a tool loop that asks before each tool call, built once."""
    with _building:
        if loop not in _built:
            spec = LOOP_SPECS[loop]
            _built[loop] = spec.build(
                None,
                get_tools(STUDIO_TOOLS),
                name=f"{loop}_approval",
                max_history_tokens=STUDIO_HISTORY_TOKENS,
                interrupt_before_tools=True,
                **spec.studio_options,
            )
        return _built[loop]


def _factory(loop: str) -> Callable[[], Awaitable[CompiledLoop]]:
    """A factory of no arguments, which ``langgraph dev`` awaits for the graph (built in a
    worker thread: building the search tool's index blocks)."""

    async def factory() -> CompiledLoop:
        return await asyncio.to_thread(approval_graph, loop)

    factory.__name__ = f"{loop}_approval"
    return factory


# ``<loop>_approval`` for every tool loop: ``langgraph dev`` reads the module's variables.
globals().update({f"{loop}_approval": _factory(loop) for loop in TOOL_LOOPS})
