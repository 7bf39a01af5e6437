"""Run-time settings a caller (or LangGraph Studio) can set per run through ``context``."""

from __future__ import annotations

from typing import Annotated

from langchain_core.language_models import BaseChatModel
from pydantic import Field, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict, TypeVar

from loopgraphs.internals import ContextLike
from loopgraphs.state import ToolMode


class LoopContext(TypedDict, total=False):
    """Per-run overrides of a loop's settings; a missing key or ``None`` keeps the graph's
    own value.

    Pass it as ``graph.invoke(inputs, context={"model": "openai:gpt-4o-mini"})`` (or
    ``context=LoopContext(model=...)``, the same dict) or set it in LangGraph Studio's
    configuration panel. It is the graphs' default ``context_schema``, a ``TypedDict``: the
    context reaches nodes and tools as the dict that was passed, so keys of your own, such
    as ``{"user_id": "u1"}``, pass through unchanged and tools read them as
    ``runtime.context["user_id"]``.
    """

    model: Annotated[
        str | SkipJsonSchema[InstanceOf[BaseChatModel]] | None,
        Field(
            description="Model spec: 'local', 'openai:<model>', '<provider>:<model>' or an "
            "OpenAI-compatible base URL; in code also a chat model instance. Empty: the "
            "graph's own model (the local model for Studio graphs)."
        ),
    ]
    tool_mode: Annotated[
        ToolMode | None,
        Field(description="How tools are called: auto, native, json or text."),
    ]
    tools: Annotated[
        list[str] | None,
        Field(
            description="The tools of this run, by name: the graph's own tools first, then "
            "the built-in toolkits (calculator, search, files). An unknown name is an "
            "error that lists the available ones; an empty list gives no tools."
        ),
    ]
    max_iterations: Annotated[
        int | None,
        Field(description="Budget of model calls in the loop's main cycle."),
    ]
    max_history_tokens: Annotated[
        int | None,
        Field(
            description="Most tokens of the conversation before the current request that "
            "each model call reads (the oldest turns are left out first); 0 reads none. "
            "Empty: the graph's own bound."
        ),
    ]


ContextT = TypeVar("ContextT", bound=ContextLike, default=LoopContext)
"""The type of a graph's run context: its ``context_schema``, ``LoopContext`` by default."""
