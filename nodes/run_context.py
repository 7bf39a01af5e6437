"""A run's context: loopgraphs' own keys (``model``, ``tool_mode``, ``tools``,
``max_iterations``) read from whatever the caller passed, the models and tools they
name, loaded once per process, and ``load_context``, which loads them off the event loop
under ``ainvoke``."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import lru_cache

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from loopgraphs.models import load_model
from loopgraphs.state import LoopRuntime
from loopgraphs.toolkits.registry import BUILTIN_TOOLKITS, ToolRegistry, get_tools

DEFAULT_MODEL_SPEC = "local"
"""The model of graphs built without one when the run's context names none."""

# The settings of graphs built without a model that are alive in this process: while there
# are some, an async run may need the default model, which ``load_context`` then loads
# off the event loop.
_modelless: dict[int, weakref.ref[object]] = {}


def note_modelless(settings: object) -> None:
    """Note a loop's settings built without a model, for as long as they exist: while
    there are some, an async run may need the default model (see ``load_context``)."""
    key = id(settings)
    _modelless[key] = weakref.ref(settings, lambda _: _modelless.pop(key, None))


def context_values(context: object) -> Mapping[str, object]:
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


def tool_names(value: object) -> tuple[str, ...]:
    """The tool names of a run context's ``tools``: a list of names (or one string of
    comma-separated names), without blanks and repeats.

    Raises:
        TypeError: ``value`` is not a list of strings.
    """
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence) or not all(isinstance(item, str) for item in items):
        raise TypeError(
            f"context['tools'] must be a list of tool names; got {type(value).__name__}"
        )
    return tuple(dict.fromkeys(name.strip() for name in items if name.strip()))


def context_model(value: object) -> BaseChatModel:
    """The chat model a run context names: a model instance as it is, a spec loaded once."""
    if isinstance(value, BaseChatModel):
        return value
    if isinstance(value, str):
        return cached_model(value.strip())
    raise TypeError(
        "context['model'] must be a model spec string such as 'local' or "
        f"'openai:gpt-4o-mini', or a LangChain BaseChatModel; got {type(value).__name__}"
    )


def _model_to_load(values: Mapping[str, object]) -> str | None:
    """The model spec a run may need loaded: the context's spec, or the default one when
    the context names none and a graph of this process has no model of its own; None when
    it is loaded already, or failed to load less than ``LOAD_RETRY_SECONDS`` ago."""
    named = values.get("model")
    if isinstance(named, str) and named.strip():
        spec = named.strip()
    elif (named is None or isinstance(named, str)) and _modelless:
        spec = DEFAULT_MODEL_SPEC
    else:
        return None
    failed = _failures.get(spec)
    if spec in _models or (failed and time.monotonic() - failed[1] < LOAD_RETRY_SECONDS):
        return None
    return spec


async def load_context(runtime: LoopRuntime | None) -> None:
    """Load what the run's model and tools need in a worker thread, so that the sync
    loading (a server started, a profile read over HTTP, a search index built) never
    blocks the event loop of an async run; ``for_run`` and ``chat_model`` then find them
    cached.

    The model is the one the context names; with no context, or one naming no model, it
    is the default model while a graph of this process has no model of its own. A
    failure is not raised here but kept: a step that needs the model raises it (inside
    the node, which turns it into the run's error) instead of loading again on the event
    loop; loading is tried again ``LOAD_RETRY_SECONDS`` later.
    """
    values = context_values(getattr(runtime, "context", None))
    spec = _model_to_load(values)
    if spec is not None:
        try:
            await asyncio.to_thread(cached_model, spec)
        except Exception as exc:
            _failures[spec] = (exc, time.monotonic())
    names = values.get("tools")
    if isinstance(names, (str, list, tuple)):
        toolkits = [n for n in tool_names(names) if n in BUILTIN_TOOLKITS and n not in _builtins]
        if toolkits:
            await asyncio.to_thread(lambda: [_builtin_tools(name) for name in toolkits])


LOAD_RETRY_SECONDS = 30.0
"""How long after a failed load in a worker thread async runs get that failure again
instead of a new attempt (which may be slow, such as a download that cannot succeed)."""

_models: dict[str, BaseChatModel] = {}
_failures: dict[str, tuple[Exception, float]] = {}
_models_lock = threading.Lock()


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def cached_model(spec: str) -> BaseChatModel:
    """The model of a spec, loaded once per process (under a lock, so that concurrent
    first runs start one server, not several). On an event loop's thread, after
    ``load_context`` failed to load it, that failure is raised again rather than the
    loading tried there."""
    model = _models.get(spec)
    if model is not None:
        return model
    failed = _failures.get(spec)
    if failed is not None and _in_event_loop():
        raise failed[0]
    with _models_lock:
        model = _models.get(spec)
        if model is None:
            model = _models[spec] = load_model(spec)
        _failures.pop(spec, None)
    return model


_builtins: dict[str, tuple[BaseTool, ...]] = {}
_builtins_lock = threading.Lock()


def _builtin_tools(name: str) -> tuple[BaseTool, ...]:
    """The tools of one built-in toolkit, made once per process."""
    tools = _builtins.get(name)
    if tools is not None:
        return tools
    with _builtins_lock:
        tools = _builtins.get(name)
        if tools is None:
            tools = _builtins[name] = tuple(get_tools([name]))
    return tools


@lru_cache(maxsize=64)
def context_registry(own: ToolRegistry, names: tuple[str, ...]) -> ToolRegistry:
    """The tools a run context names, one registry per graph and tool set (so what is made
    per registry, such as the model with the tools bound, is made once): a name of one of
    the graph's own tools selects it, any other name a built-in toolkit.

    Raises:
        ValueError: a name is neither a tool of the graph nor a built-in toolkit.
    """
    tools: list[BaseTool] = []
    for name in names:
        tool = own.get(name)
        if tool is not None:
            tools.append(tool)
        elif name in BUILTIN_TOOLKITS:
            tools.extend(_builtin_tools(name))
        else:
            graph_tools = ", ".join(own.names) or "none"
            raise ValueError(
                f"unknown tool {name!r} in the run context's tools. Available: the graph's "
                f"tools ({graph_tools}) and the built-in toolkits "
                f"({', '.join(BUILTIN_TOOLKITS)})"
            )
    return ToolRegistry(tools)
