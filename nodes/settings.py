"""Validated loop settings, fixed by a factory and adjusted per run by the context."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from loopgraphs.models import load_model
from loopgraphs.nodes.call_tool import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TOOL_TIMEOUT
from loopgraphs.nodes.errors import default_retry_policy
from loopgraphs.state import TOOL_MODES
from loopgraphs.toolkits.registry import ToolRegistry, get_tools

ToolsArg = Sequence[BaseTool | Callable[..., Any]] | None


@dataclass(frozen=True)
class LoopSettings:
    """Everything a loop's nodes need besides the state.

    ``model`` is None for graphs whose model comes from the run's context (Studio).
    """

    model: BaseChatModel | None
    tools: ToolRegistry
    tool_mode: str = "auto"
    max_iterations: int = 10
    max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    retry_policy: RetryPolicy | None = field(default_factory=default_retry_policy)
    interrupt_before_tools: bool | frozenset[str] = False
    system_prompt: str | None = None

    @property
    def chat_model(self) -> BaseChatModel:
        """The model, loading the default when the graph was built without one."""
        return self.model if self.model is not None else _cached_model("local")

    def for_run(self, runtime: Runtime[Any] | None) -> LoopSettings:
        """Apply the run's context (``LoopContext``) on top of the factory settings."""
        context = getattr(runtime, "context", None)
        if context is None:
            return self
        if isinstance(context, dict):
            values = context
        elif dataclasses.is_dataclass(context):
            values = dataclasses.asdict(context)  # type: ignore[arg-type]
        else:
            return self
        changes: dict[str, Any] = {}
        if values.get("model"):
            changes["model"] = _cached_model(str(values["model"]))
        if values.get("tool_mode"):
            changes["tool_mode"] = check_tool_mode(values["tool_mode"])
        if values.get("tools") is not None:
            changes["tools"] = ToolRegistry(_cached_tools(tuple(values["tools"])))
        if values.get("max_iterations") is not None:
            changes["max_iterations"] = check_positive("max_iterations", values["max_iterations"])
        return dataclasses.replace(self, **changes) if changes else self

    def needs_review(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` pauses for human approval."""
        if isinstance(self.interrupt_before_tools, frozenset):
            return tool_name in self.interrupt_before_tools
        return bool(self.interrupt_before_tools)


@lru_cache(maxsize=16)
def _cached_model(spec: str) -> BaseChatModel:
    return load_model(spec)


@lru_cache(maxsize=16)
def _cached_tools(names: tuple[str, ...]) -> tuple[BaseTool, ...]:
    return tuple(get_tools(list(names)))


def check_tool_mode(value: Any) -> str:
    """Validate a tool mode name."""
    if value not in TOOL_MODES:
        raise ValueError(f"tool_mode must be one of {', '.join(TOOL_MODES)}; got {value!r}")
    return str(value)


def check_positive(name: str, value: Any, *, minimum: int = 1) -> int:
    """Validate an integer option such as ``max_iterations``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return value


def check_model(model: Any) -> BaseChatModel | None:
    """Accept a chat model, a model spec string, or None (resolved per run)."""
    if model is None or isinstance(model, BaseChatModel):
        return model
    if isinstance(model, str):
        return load_model(model)
    raise TypeError(
        "model must be a LangChain BaseChatModel or a model spec string such as "
        f"'local' or 'openai:gpt-4o-mini'; got {type(model).__name__}"
    )


def make_settings(
    model: Any,
    tools: ToolsArg,
    *,
    tool_mode: str = "auto",
    max_iterations: int = 10,
    max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    retry_policy: RetryPolicy | None = None,
    interrupt_before_tools: bool | Sequence[str] = False,
    system_prompt: str | None = None,
) -> LoopSettings:
    """Validate factory arguments into ``LoopSettings``; errors name the argument."""
    if tools is not None and (isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence)):
        raise TypeError(f"tools must be a list of tools or callables; got {type(tools).__name__}")
    registry = ToolRegistry(list(tools or ()))
    check_positive("max_tool_output_chars", max_tool_output_chars, minimum=100)
    if tool_timeout is not None and (
        not isinstance(tool_timeout, (int, float)) or tool_timeout <= 0
    ):
        raise ValueError(
            f"tool_timeout must be a positive number of seconds or None; got {tool_timeout!r}"
        )
    if retry_policy is not None and not isinstance(retry_policy, RetryPolicy):
        raise TypeError(
            f"retry_policy must be a langgraph RetryPolicy; got {type(retry_policy).__name__}"
        )
    if isinstance(interrupt_before_tools, bool):
        review: bool | frozenset[str] = interrupt_before_tools
    elif isinstance(interrupt_before_tools, Sequence) and not isinstance(
        interrupt_before_tools, str
    ):
        unknown = sorted(set(interrupt_before_tools) - set(registry.names))
        if unknown:
            raise ValueError(
                f"interrupt_before_tools names unknown tools {unknown}; tools are {registry.names}"
            )
        review = frozenset(interrupt_before_tools)
    else:
        raise TypeError("interrupt_before_tools must be a bool or a list of tool names")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise TypeError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    return LoopSettings(
        model=check_model(model),
        tools=registry,
        tool_mode=check_tool_mode(tool_mode),
        max_iterations=check_positive("max_iterations", max_iterations),
        max_tool_output_chars=max_tool_output_chars,
        tool_timeout=tool_timeout,
        retry_policy=retry_policy if retry_policy is not None else default_retry_policy(model),
        interrupt_before_tools=review,
        system_prompt=system_prompt,
    )


def compile_loop(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    checkpointer: Any,
    name: str | None,
    default_name: str,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile a loop's graph after checking the arguments every factory forwards."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string or None; got {type(name).__name__}")
    if checkpointer not in (None, True, False) and not isinstance(
        checkpointer, BaseCheckpointSaver
    ):
        raise TypeError(
            "checkpointer must be a LangGraph checkpointer (e.g. InMemorySaver, SqliteSaver, "
            f"PostgresSaver) or None; got {type(checkpointer).__name__}"
        )
    return builder.compile(checkpointer=checkpointer, name=name or default_name)


def check_flag(name: str, value: Any) -> bool:
    """Validate a boolean option such as ``synthesize_answer``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return value
