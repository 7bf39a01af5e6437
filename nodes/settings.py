"""Loop options declared once, validated once, and adjusted per run by the context.

Every factory takes ``model`` (and ``tools``) positionally, its own budget keywords, and
the shared keywords of ``LoopOptions`` (``ToolLoopOptions`` for loops that call tools)
through ``**options: Unpack[...]``, so editors and type checkers see every keyword while
the checks live here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import RetryPolicy
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopgraphs.models import load_model
from loopgraphs.nodes.call_tool import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TOOL_TIMEOUT
from loopgraphs.nodes.errors import default_retry_policy
from loopgraphs.nodes.review import ReviewPolicy, review_policy
from loopgraphs.state import TOOL_MODES
from loopgraphs.toolkits.registry import ToolRegistry, get_tools

ToolsArg = Sequence[BaseTool | Callable[..., Any]] | None
SystemPrompt = str | SystemMessage | Callable[[Mapping[str, Any]], str | SystemMessage]
ToolChoice = Literal["auto", "required"] | str


class LoopOptions(TypedDict, total=False):
    """Keywords every factory accepts.

    Attributes:
        checkpointer: Passed to ``compile()``: threads, resume and interrupts.
        store: Passed to ``compile()``: long-term memory, ``InjectedStore`` in tools.
        name: Name of the compiled graph (default: the loop's name).
        state_schema: A TypedDict with extra keys; they flow in and out of the graph.
        context_schema: The run context's type (``graph.invoke(..., context=...)``);
            loopgraphs' own context fields (``LoopContext``) keep working when present.
        response_format: A pydantic model, TypedDict or JSON schema: the final answer is
            also returned as ``structured_response`` (one extra structured call).
        system_prompt: A string, a ``SystemMessage``, or a callable of the state returning
            either; placed before the loop's own instructions.
        retry_policy: LangGraph retry policy for model calls; the default retries
            transient provider failures (429, 5xx, dropped connections) 3 times.
    """

    checkpointer: BaseCheckpointSaver[Any] | bool | None
    store: BaseStore | None
    name: str | None
    state_schema: type[Any] | None
    context_schema: type[Any] | None
    response_format: type[Any] | dict[str, Any] | None
    system_prompt: SystemPrompt | None
    retry_policy: RetryPolicy | None


class ToolLoopOptions(LoopOptions, total=False):
    """Keywords of the loops that call tools, besides ``LoopOptions``.

    Attributes:
        tool_mode: ``auto`` (from the model's profile, falling back when tools are
            rejected), ``native`` (function calling), ``json`` (JSON actions,
            schema-constrained where the provider supports it) or ``text``.
        tool_choice: ``"auto"``; ``"required"`` to make the model call a tool before
            it may answer; or a tool name to require that tool first.
        max_tool_calls: Tool calls allowed per run; later calls are answered with an
            observation saying so and never run. None: no limit.
        loop_break: Answer a call identical to an earlier successful one of the run from
            history instead of running it again (failed calls always run again).
        tool_timeout: Seconds a tool call may take before it becomes an error observation.
        max_tool_output_chars: Tool output longer than this is truncated.
        interrupt_before_tools: Pause for human approval before tool calls: True (every
            tool), a list of tool names, or ``{name: True | False | {"allowed_decisions":
            [...], "description": ...}}`` in langchain's human-in-the-loop format.
    """

    tool_mode: Literal["auto", "native", "json", "text"]
    tool_choice: ToolChoice | None
    max_tool_calls: int | None
    loop_break: bool
    tool_timeout: float | None
    max_tool_output_chars: int
    interrupt_before_tools: bool | Sequence[str] | Mapping[str, Any]


LOOP_OPTION_NAMES = frozenset(LoopOptions.__annotations__)
TOOL_OPTION_NAMES = LOOP_OPTION_NAMES | frozenset(ToolLoopOptions.__annotations__)
COMPILE_OPTION_NAMES = frozenset({"checkpointer", "store", "name"})


@dataclass(frozen=True)
class LoopSettings:
    """Everything a loop's nodes need besides the state.

    ``model`` is None for graphs whose model comes from the run's context (Studio).
    """

    model: BaseChatModel | None
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    tool_mode: str = "auto"
    max_iterations: int = 10
    max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    retry_policy: RetryPolicy | None = field(default_factory=default_retry_policy)
    review: ReviewPolicy = field(default_factory=dict)
    system_prompt: SystemPrompt | None = None
    tool_choice: str | None = None
    max_tool_calls: int | None = None
    loop_break: bool = True
    response_format: Any = None

    @property
    def chat_model(self) -> BaseChatModel:
        """The model, loading the default when the graph was built without one."""
        return self.model if self.model is not None else _cached_model("local")

    def for_run(self, runtime: Runtime[Any] | None) -> LoopSettings:
        """Apply the run's context (``LoopContext`` fields) on top of the factory settings."""
        values = context_values(getattr(runtime, "context", None))
        if not values:
            return self
        changes: dict[str, Any] = {}
        if values.get("model"):
            changes["model"] = _cached_model(str(values["model"]))
        if values.get("tool_mode"):
            changes["tool_mode"] = check_tool_mode(values["tool_mode"])
        if values.get("tools") is not None:
            changes["tools"] = _cached_registry(tuple(values["tools"]))
        if values.get("max_iterations") is not None:
            changes["max_iterations"] = check_positive("max_iterations", values["max_iterations"])
        return dataclasses.replace(self, **changes) if changes else self


def context_values(context: Any) -> Mapping[str, Any]:
    """The run context as a mapping, whatever its type (dict, dataclass, pydantic)."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return context
    if dataclasses.is_dataclass(context) and not isinstance(context, type):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    if isinstance(context, BaseModel):
        return dict(context)
    return {}


async def load_context(runtime: Runtime[Any] | None) -> None:
    """Load the run context's model and tools in a worker thread, so that the sync loading
    (a server started, a profile read over HTTP, a search index built) never blocks the
    event loop of an async run; ``for_run`` then finds them cached."""
    context = getattr(runtime, "context", None)
    if context is None:
        return
    values = context_values(context)
    if values.get("model"):
        await asyncio.to_thread(_cached_model, str(values["model"]))
    if values.get("tools") is not None:
        await asyncio.to_thread(_cached_tools, tuple(values["tools"]))


@lru_cache(maxsize=16)
def _cached_model(spec: str) -> BaseChatModel:
    return load_model(spec)


@lru_cache(maxsize=16)
def _cached_tools(names: tuple[str, ...]) -> tuple[BaseTool, ...]:
    return tuple(get_tools(list(names)))


@lru_cache(maxsize=16)
def _cached_registry(names: tuple[str, ...]) -> ToolRegistry:
    """One registry per tool set named in a run context (so what is made per registry,
    such as the model with the tools bound, is made once)."""
    return ToolRegistry(_cached_tools(names))


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


def check_flag(name: str, value: Any) -> bool:
    """Validate a boolean option such as ``synthesize_answer``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return value


def check_model(model: Any) -> BaseChatModel | None:
    """Accept a chat model, a model spec string, or None (resolved per run)."""
    if model is None or isinstance(model, BaseChatModel):
        return model
    if isinstance(model, str):
        return load_model(model)
    raise TypeError(
        "model must be a LangChain BaseChatModel or a model spec string such as "
        f"'local', 'openai:gpt-4o-mini' or 'anthropic:claude-sonnet-4-5'; "
        f"got {type(model).__name__}"
    )


def _check_system_prompt(value: Any) -> SystemPrompt | None:
    if value is None or isinstance(value, (str, SystemMessage)) or callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(
        "system_prompt must be a string, a SystemMessage or a callable of the state; "
        f"got {type(value).__name__}"
    )


def _check_tool_choice(value: Any, registry: ToolRegistry) -> str | None:
    if value is None or value in ("auto", "required"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str) and value in registry:
        return value
    raise ValueError(
        f"tool_choice must be 'auto', 'required' or a tool name {registry.names}; got {value!r}"
    )


def _check_schema(name: str, value: Any) -> Any:
    if value is None or isinstance(value, (type, dict)):
        return value
    raise TypeError(f"{name} must be a class (TypedDict, dataclass, pydantic model); got {value!r}")


def _check_timeout(value: Any) -> float | None:
    if value is None or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    ):
        return value  # type: ignore[no-any-return]
    raise ValueError(f"tool_timeout must be a positive number of seconds or None; got {value!r}")


def make_settings(
    loop: str,
    model: Any,
    tools: ToolsArg,
    options: Mapping[str, Any],
    *,
    takes_tools: bool = True,
    max_iterations: int = 10,
) -> LoopSettings:
    """Validate a factory's arguments into ``LoopSettings``; errors name the argument.

    Args:
        loop: The factory's loop name, for error messages.
        model: A chat model, a model spec string, or None.
        tools: Tools or typed callables (tool-using loops only).
        options: The factory's ``**options``.
        takes_tools: Whether the loop accepts the tool keywords.
        max_iterations: The loop's budget of model calls in its main cycle.

    Raises:
        TypeError, ValueError: an argument is unknown, of the wrong type or out of range.
    """
    known = TOOL_OPTION_NAMES if takes_tools else LOOP_OPTION_NAMES
    unknown = sorted(set(options) - known)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise TypeError(
            f"unexpected keyword argument {names} for {loop}; accepted: {', '.join(sorted(known))}"
        )
    if tools is not None and (isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence)):
        raise TypeError(f"tools must be a list of tools or callables; got {type(tools).__name__}")
    registry = ToolRegistry(list(tools or ()))
    policy = options.get("retry_policy")
    if policy is not None and not isinstance(policy, RetryPolicy):
        raise TypeError(
            f"retry_policy must be a langgraph RetryPolicy; got {type(policy).__name__}"
        )
    max_calls = options.get("max_tool_calls")
    for key in ("state_schema", "context_schema"):
        _check_schema(key, options.get(key))
    chat_model = check_model(model)
    return LoopSettings(
        model=chat_model,
        tools=registry,
        tool_mode=check_tool_mode(options.get("tool_mode", "auto")),
        max_iterations=check_positive("max_iterations", max_iterations),
        max_tool_output_chars=check_positive(
            "max_tool_output_chars",
            options.get("max_tool_output_chars", DEFAULT_MAX_OUTPUT_CHARS),
            minimum=100,
        ),
        tool_timeout=_check_timeout(options.get("tool_timeout", DEFAULT_TOOL_TIMEOUT)),
        retry_policy=policy if policy is not None else default_retry_policy(chat_model),
        review=review_policy(options.get("interrupt_before_tools", False), registry.names),
        system_prompt=_check_system_prompt(options.get("system_prompt")),
        tool_choice=_check_tool_choice(options.get("tool_choice"), registry),
        max_tool_calls=None if max_calls is None else check_positive("max_tool_calls", max_calls),
        loop_break=check_flag("loop_break", options.get("loop_break", True)),
        response_format=options.get("response_format"),
    )
