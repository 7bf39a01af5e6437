"""Traits of a model that the loops adapt to, so that a loop asks what a model needs
instead of which model it is.

The small models the embedded llama.cpp server runs get guided steps: a tool call
required before answering, short capped thoughts, and (for the bundled SmolLM2) json
steps without a written thought. Every other model is left to decide. A request sets a
sampling temperature only where the model takes one (``takes_temperature``).
"""

from __future__ import annotations

from langchain_core.runnables import Runnable

from loopgraphs.models.introspection import unwrap
from loopgraphs.models.local_server import LOCAL_MODEL_NAME, is_embedded_model


def needs_guided_steps(model: object) -> bool:
    """Whether a model is a small one that the loops guide step by step: a tool call is
    required before it answers (`default_tool_choice`) and its thoughts are capped short.

    These are the models of a llama.cpp server this process started (``"local"``,
    ``"gguf:<path>"``), sized for a laptop; a model served elsewhere is taken as able to
    pace itself.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        True for a model that needs guided steps.
    """
    return is_embedded_model(model)


def default_tool_choice(model: object) -> str | None:
    """The ``tool_choice`` ReAct uses when none is given: ``"required"`` (call a tool
    before answering) for a model that needs guided steps, which otherwise tends to
    answer at once without looking anything up; None (the model decides) for every other
    model."""
    return "required" if needs_guided_steps(model) else None


def writes_thoughts(model: object) -> bool:
    """Whether json-mode steps ask the model for a ``thought`` before its action: yes,
    except for the bundled SmolLM2-135M, which drifts while writing one and then calls the
    tool with numbers and names it made up (0 of 16 calculator questions answered with a
    thought, 8 of 16 without, measured with the tools' worked examples)."""
    if not needs_guided_steps(model):
        return True
    inner = unwrap(model) if isinstance(model, Runnable) else model
    return getattr(inner, "model_name", None) != LOCAL_MODEL_NAME


# OpenAI's reasoning models take no temperature but their default (the API refuses one).
_NO_TEMPERATURE = ("o1", "o3", "o4", "gpt-5")


def takes_temperature(model: object) -> bool:
    """Whether a request may set the model's sampling temperature (a search that samples
    several candidates sets one): the model's class declares a ``temperature`` field, as
    LangChain's provider models do, and it is not one of OpenAI's reasoning models, which
    refuse any but their default (``o1``, ``o3``, ``o4``, ``gpt-5`` but its chat models,
    or any model given a reasoning effort). A model without the field (a scripted model,
    a provider with no sampling settings) is sent none.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        True when a request may carry a ``temperature``.
    """
    inner = unwrap(model) if isinstance(model, Runnable) else model
    if "temperature" not in getattr(type(inner), "model_fields", {}):
        return False
    if getattr(inner, "reasoning_effort", None) or getattr(inner, "reasoning", None):
        return False
    name = str(getattr(inner, "model_name", None) or getattr(inner, "model", None) or "").lower()
    return not (name.startswith(_NO_TEMPERATURE) and "chat" not in name)
