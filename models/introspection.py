"""What a chat model says about itself: its declared capabilities and a display label."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from langchain_core.runnables import Runnable, RunnableBinding

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class Capabilities:
    """What a chat model is declared to support; `None` means unknown.

    Attributes:
        tool_calling: Whether the model emits native tool calls.
        structured_output: Whether the model supports native structured output.
    """

    tool_calling: bool | None
    structured_output: bool | None


def unwrap(model: Runnable[InputT, OutputT]) -> Runnable[InputT, OutputT]:
    """Follow `RunnableBinding` wrappers (as made by `model.bind(...)`) to the bound model."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    return model


def capabilities(model: object) -> Capabilities:
    """Read a model's declared tool-calling and structured-output support from its profile.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        The capabilities; fields are `None` when the profile does not say.
    """
    inner = unwrap(model) if isinstance(model, Runnable) else model
    profile = getattr(inner, "profile", None) or {}
    return Capabilities(
        tool_calling=profile.get("tool_calling"),
        structured_output=profile.get("structured_output"),
    )


def describe_model(model: object) -> str:
    """Return a short label for display, such as `ChatOpenAI(smollm2 @ http://…/v1)`.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        The class name with the model name and server URL when known.
    """
    inner = unwrap(model) if isinstance(model, Runnable) else model
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
    url = getattr(inner, "openai_api_base", None)
    details = " @ ".join(str(part) for part in (name, url) if part)
    label = type(inner).__name__
    return f"{label}({details})" if details else label
