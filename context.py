"""Run-time settings a caller (or LangGraph Studio) can set per run through ``context``."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopgraphs.state import ToolMode


@dataclass(kw_only=True)
class LoopContext:
    """Per-run overrides of a loop's settings; ``None`` keeps the graph's own value.

    Pass it as ``graph.invoke(inputs, context={"model": "openai:gpt-4o-mini"})`` or set
    it in LangGraph Studio's configuration panel.
    """

    model: str | None = field(
        default=None,
        metadata={
            "description": "Model spec: 'local', 'openai:<model>' or an OpenAI-compatible "
            "base URL. Empty: the graph's own model (the local model for Studio graphs)."
        },
    )
    tool_mode: ToolMode | None = field(
        default=None,
        metadata={"description": "How tools are called: auto, native, json or text."},
    )
    tools: list[str] | None = field(
        default=None,
        metadata={"description": "Built-in tools by name: calculator, search, files."},
    )
    max_iterations: int | None = field(
        default=None,
        metadata={"description": "Budget of model calls in the loop's main cycle."},
    )
