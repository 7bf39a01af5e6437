"""Loop options declared once, validated once, and adjusted per run by the context.

Every factory takes ``model`` (and ``tools``) positionally, its own budget keywords, and
the shared keywords of ``LoopOptions`` (``ToolLoopOptions`` for loops that call tools)
through ``**options: Unpack[...]``, so editors and type checkers see every keyword while
the checks live here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, cast

from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.types import RetryPolicy
from typing_extensions import TypedDict

from loopgraphs.context import ContextT
from loopgraphs.models import load_model
from loopgraphs.nodes.budget import RunBudget
from loopgraphs.nodes.errors import default_retry_policy
from loopgraphs.nodes.middleware import Middlewares, check_middleware
from loopgraphs.nodes.model_call import ModelChain
from loopgraphs.nodes.review import ReviewConfig, ReviewPolicy, middleware_review, review_policy
from loopgraphs.nodes.run_context import (
    DEFAULT_MODEL_SPEC,
    cached_model,
    context_model,
    context_registry,
    context_values,
    note_modelless,
    tool_names,
)
from loopgraphs.nodes.tool_guard import (
    DEFAULT_MAX_OUTPUT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    ToolErrorPolicy,
)
from loopgraphs.state import TOOL_MODES, LoopRuntime, ResponseT
from loopgraphs.toolkits.registry import ToolRegistry

ToolsArg = Sequence[BaseTool | Callable[..., object] | dict[str, Any]] | None
SystemPrompt = str | SystemMessage | Callable[[Mapping[str, object]], str | SystemMessage]
ToolChoice = Literal["auto", "required"] | str


class LoopOptions(TypedDict, Generic[ResponseT, ContextT], total=False):
    """Keywords every factory accepts.

    Attributes:
        checkpointer: Passed to ``compile()``: threads, resume and interrupts.
        store: Passed to ``compile()``: long-term memory, ``InjectedStore`` in tools.
        name: Name of the compiled graph (default: the loop's name).
        result_keys: Renames the loop's result keys in what the compiled graph returns,
            e.g. ``{"status": "math_status", "answer": "math_answer"}``: a host graph
            running the loop as a node keeps its own keys of those names.
        state_schema: A TypedDict with extra keys; they flow in and out of the graph.
        context_schema: The run context's type (``graph.invoke(..., context=...)``);
            loopgraphs' own context fields (``LoopContext``) keep working when present.
        response_format: A pydantic model, TypedDict or JSON schema: the final answer is
            also returned as ``structured_response`` (one extra structured call).
        system_prompt: A string, a ``SystemMessage``, or a callable of the state returning
            either; placed before the loop's own instructions.
        retry_policy: LangGraph retry policy for model calls; the default retries
            transient provider failures (429, 5xx, dropped connections) 3 times.
        middleware: LangChain ``AgentMiddleware`` instances (classes or made with
            ``@before_model``, ``@wrap_model_call``, ...), with create_agent's semantics:
            every model request goes through ``wrap_model_call``, every tool call through
            ``wrap_tool_call``; the hooks run around the loop (see the README's
            Middleware section for where each hook runs in each loop).
        max_history_tokens: How much of the conversation before the user's current
            request each model call reads, in tokens as langchain-core's
            ``count_tokens_approximately`` counts them: the oldest messages are left out
            first (``trim_messages``), and what is kept starts on a user turn. The request
            and the run's own messages are always read. None (the default): the whole
            conversation; 0: none of it. ``context={"max_history_tokens": n}`` sets it
            for one run.
    """

    checkpointer: BaseCheckpointSaver[Any] | bool | None
    store: BaseStore | None
    name: str | None
    result_keys: Mapping[str, str] | None
    state_schema: type[Any] | None
    context_schema: type[ContextT] | None
    response_format: type[ResponseT] | dict[str, Any] | None
    system_prompt: SystemPrompt | None
    retry_policy: RetryPolicy | None
    middleware: Sequence[AgentMiddleware[Any, Any]] | None
    max_history_tokens: int | None


class ToolLoopOptions(LoopOptions[ResponseT, ContextT], total=False):
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
        handle_tool_errors: What a tool's exception becomes, as ``ToolNode``'s option:
            True (default: an error observation the model reads), a string (that text),
            a function of the exception returning the text, an exception class or tuple
            (only those become observations), or False (the exception is raised out of
            the run). Unknown tools, budgets and timeouts are always observations.
    """

    tool_mode: Literal["auto", "native", "json", "text"]
    tool_choice: ToolChoice | None
    max_tool_calls: int | None
    loop_break: bool
    tool_timeout: float | None
    max_tool_output_chars: int
    interrupt_before_tools: bool | Sequence[str] | Mapping[str, bool | ReviewConfig]
    handle_tool_errors: ToolErrorPolicy


LOOP_OPTION_NAMES = frozenset(LoopOptions.__annotations__)
TOOL_OPTION_NAMES = LOOP_OPTION_NAMES | frozenset(ToolLoopOptions.__annotations__)


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
    handle_tool_errors: ToolErrorPolicy = True
    provider_tools: tuple[dict[str, Any], ...] = ()
    response_format: Any = None
    middleware: Middlewares = field(default_factory=Middlewares)
    agent_name: str | None = None
    max_history_tokens: int | None = None
    step_run: bool = False
    """A ReAct run inside another loop's step: its answer is the step's result, which the
    outer loop checks (see ``loopgraphs.nodes.answer_check``)."""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The loop's own keywords (its budgets and switches), resolved; steps read them as
    ``step.options``."""

    def __post_init__(self) -> None:
        if self.model is None:
            note_modelless(self)

    @property
    def budget(self) -> RunBudget:
        """The limits the run shares with every loop (see ``loopgraphs.nodes.budget``)."""
        return RunBudget(max_tool_calls=self.max_tool_calls)

    @property
    def known_tools(self) -> frozenset[str] | None:
        """The names of the tools a run can run, when middleware may change the tools a
        model is offered (None without ``wrap_model_call`` middleware: nothing to check)."""
        return frozenset(self.tools.names) if self.model_chain is not None else None

    @property
    def model_chain(self) -> ModelChain | None:
        """The run's ``wrap_model_call`` middleware, composed (None without any)."""
        return self.middleware.model_chain

    @property
    def chat_model(self) -> BaseChatModel:
        """The model, loading the default when the graph was built without one.

        Loading is lazy under ``invoke``; under ``ainvoke`` the nodes await
        ``load_context`` first, which loads it in a worker thread."""
        return self.model if self.model is not None else cached_model(DEFAULT_MODEL_SPEC)

    def for_run(self, runtime: LoopRuntime | None) -> LoopSettings:
        """Apply the run's context on top of the factory settings.

        The context's ``model`` (a spec string or a chat model), ``tool_mode``, ``tools``
        (names of the graph's own tools, then of built-in toolkits), ``max_iterations``
        and ``max_history_tokens`` take effect; any other key is the caller's own and is
        left to the caller's nodes and tools.

        Raises:
            TypeError, ValueError: a context value is of the wrong type, out of range, or
                names a tool that neither the graph nor the built-in toolkits have.
        """
        values = context_values(getattr(runtime, "context", None))
        if not values:
            return self
        changes: dict[str, Any] = {}
        model = values.get("model")
        if model is not None and not (isinstance(model, str) and not model.strip()):
            changes["model"] = context_model(model)
        if values.get("tool_mode"):
            changes["tool_mode"] = check_tool_mode(values["tool_mode"])
        if values.get("tools") is not None:
            changes["tools"] = context_registry(self.tools, tool_names(values["tools"]))
        if values.get("max_iterations") is not None:
            changes["max_iterations"] = check_positive("max_iterations", values["max_iterations"])
        if values.get("max_history_tokens") is not None:
            changes["max_history_tokens"] = check_history_bound(values["max_history_tokens"])
        return dataclasses.replace(self, **changes) if changes else self


def check_tool_mode(value: object) -> str:
    """Validate a tool mode name."""
    if value not in TOOL_MODES:
        raise ValueError(f"tool_mode must be one of {', '.join(TOOL_MODES)}; got {value!r}")
    return str(value)


def check_positive(name: str, value: object, *, minimum: int = 1) -> int:
    """Validate an integer option such as ``max_iterations``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return value


def check_history_bound(value: object) -> int | None:
    """Validate ``max_history_tokens``: None, or a whole number of tokens >= 0."""
    return None if value is None else check_positive("max_history_tokens", value, minimum=0)


def check_flag(name: str, value: object) -> bool:
    """Validate a boolean option such as ``synthesize_answer``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return value


def check_model(model: object) -> BaseChatModel | None:
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


def _check_system_prompt(value: object) -> SystemPrompt | None:
    if value is None or isinstance(value, (str, SystemMessage)) or callable(value):
        return cast("SystemPrompt | None", value)
    raise TypeError(
        "system_prompt must be a string, a SystemMessage or a callable of the state; "
        f"got {type(value).__name__}"
    )


def _check_tool_choice(value: object, registry: ToolRegistry) -> str | None:
    if value is None or value in ("auto", "required"):
        return cast("str | None", value)
    if isinstance(value, str) and value in registry:
        return value
    raise ValueError(
        f"tool_choice must be 'auto', 'required' or a tool name {registry.names}; got {value!r}"
    )


def _check_schema(name: str, value: object) -> object:
    if value is None or isinstance(value, (type, dict)):
        return value
    raise TypeError(f"{name} must be a class (TypedDict, dataclass, pydantic model); got {value!r}")


def _check_timeout(value: object) -> float | None:
    if value is None or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    ):
        return value
    raise ValueError(f"tool_timeout must be a positive number of seconds or None; got {value!r}")


def make_settings(
    loop: str,
    model: object,
    tools: ToolsArg,
    options: Mapping[str, Any],
    *,
    takes_tools: bool = True,
    max_iterations: int = 10,
    own_keywords: Sequence[str] = (),
    own: Mapping[str, Any] | None = None,
    writes_tool_calls: bool = False,
) -> LoopSettings:
    """Validate a factory's arguments into ``LoopSettings``; errors name the argument.

    Args:
        loop: The factory's loop name, for error messages.
        model: A chat model, a model spec string, or None.
        tools: Tools or typed callables (tool-using loops only).
        options: The factory's ``**options``.
        takes_tools: Whether the loop accepts the tool keywords.
        max_iterations: The loop's budget of model calls in its main cycle.
        own_keywords: The loop's own keywords, which the error for an unknown keyword
            lists with the shared ones.
        own: The loop's own keywords, resolved (``LoopSettings.options``).
        writes_tool_calls: The loop writes its tool calls itself, never in a model step:
            a ``HumanInTheLoopMiddleware`` reviews them with ``interrupt_before_tools``
            (see ``loopgraphs.nodes.review.middleware_review``).

    Raises:
        TypeError, ValueError: an argument is unknown, of the wrong type or out of range.
    """
    known = TOOL_OPTION_NAMES if takes_tools else LOOP_OPTION_NAMES
    unknown = sorted(set(options) - known)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        accepted = ", ".join(own_keywords)
        raise TypeError(
            f"unexpected keyword argument {names} for {loop}; accepted: {accepted}"
            f"{'; ' if accepted else ''}and the shared options {', '.join(sorted(known))}"
        )
    if tools is not None and (isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence)):
        raise TypeError(f"tools must be a list of tools or callables; got {type(tools).__name__}")
    middleware = Middlewares(check_middleware(options.get("middleware"), loop))
    provider_tools: tuple[dict[str, Any], ...] = tuple(
        tool for tool in tools or () if isinstance(tool, dict)
    )
    local_tools = [tool for tool in tools or () if not isinstance(tool, dict)]
    registry = ToolRegistry([*local_tools, *middleware.tools])
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
        review={
            **(middleware_review(middleware.items) if writes_tool_calls else {}),
            **review_policy(options.get("interrupt_before_tools", False), registry.names),
        },
        system_prompt=_check_system_prompt(options.get("system_prompt")),
        tool_choice=_check_tool_choice(options.get("tool_choice"), registry),
        max_tool_calls=None if max_calls is None else check_positive("max_tool_calls", max_calls),
        loop_break=check_flag("loop_break", options.get("loop_break", True)),
        handle_tool_errors=_check_error_policy(options.get("handle_tool_errors", True)),
        provider_tools=provider_tools,
        response_format=options.get("response_format"),
        middleware=middleware,
        agent_name=options.get("name"),
        max_history_tokens=check_history_bound(options.get("max_history_tokens")),
        options=dict(own or {}),
    )


def _check_error_policy(value: object) -> ToolErrorPolicy:
    classes = value if isinstance(value, tuple) else (value,)
    if (
        isinstance(value, (bool, str))
        or all(isinstance(c, type) and issubclass(c, Exception) for c in classes)
        or callable(value)
    ):
        return cast("ToolErrorPolicy", value)
    raise TypeError(
        "handle_tool_errors must be True, False, a string, a function of the exception, or "
        f"an exception class or tuple of them; got {value!r}"
    )
