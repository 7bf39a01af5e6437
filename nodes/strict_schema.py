"""JSON schemas in the form a provider's strict mode accepts, and when to send them strict.

OpenAI's structured outputs and strict function calling (and Anthropic's strict tool use)
enforce a schema only in a subset of JSON Schema: the root is an object, every object is
closed (``additionalProperties: false``) and lists every property in ``required`` (an
optional one is nullable instead), and only some keywords are known. ``strict_schema``
turns any JSON schema a loop sends into that form; ``sends_strict`` says whether a model
gets it with ``strict=True``: every chat model whose client takes a ``strict`` argument,
except the small embedded models, whose llama.cpp server reads the full schema (length
and item bounds included) as a grammar.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableBinding
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonDict

from loopgraphs.models import needs_guided_steps

# The keywords strict mode accepts (structure, annotations, and the constraints it
# enforces); any other keyword is dropped.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
_READ = STRICT_KEYWORDS | {"oneOf", "allOf"}  # read, then turned into what strict mode knows
ROOT_KEY = "value"
"""The property that holds a schema whose root is not an object (see ``object_root``)."""


def schema_name(schema: object) -> str:
    """The name a schema goes by in tool calls and prompts."""
    if isinstance(schema, dict):
        return str(schema.get("title") or schema.get("name") or "response")
    return str(getattr(schema, "__name__", "response"))


def json_schema_of(schema: Any) -> dict[str, Any]:
    """The JSON schema of a pydantic model, TypedDict/dataclass, or a JSON schema dict."""
    if isinstance(schema, dict):
        body = schema.get("schema", schema)
        described = {"description": schema["description"]} if "description" in schema else {}
        return {"title": schema_name(schema), **described, **body}
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return {"title": schema_name(schema), **TypeAdapter(schema).json_schema()}


def strict_schema(schema: Mapping[str, Any]) -> JsonDict:
    """``schema`` in the form strict mode accepts (the schema given is not changed).

    Every object is closed and requires all its properties, an optional property becoming
    nullable (a reply's ``null`` then stands for "left out"); ``oneOf`` becomes ``anyOf``
    and a one-item ``allOf`` its item; an object with no properties of its own (a
    free-form ``dict``), which strict mode cannot express, becomes a string holding the
    JSON; keywords strict mode does not know (``default``, ``minLength``, ``maxLength``,
    ...) are dropped. The root must already be an object (see ``object_root``).

    Args:
        schema: A JSON schema, as pydantic or a loop writes it.

    Returns:
        The strict form.
    """
    return _strict(copy.deepcopy(dict(schema)))


def object_root(schema: Mapping[str, Any]) -> tuple[JsonDict, bool]:
    """``schema`` with an object at its root: itself when it has one, else an object
    whose one property ``ROOT_KEY`` holds it (strict mode refuses a root ``anyOf``); and
    whether it was wrapped, so that a reply's value is read from ``ROOT_KEY``."""
    body = dict(schema)
    if body.get("type") == "object" or "properties" in body:
        return body, False
    kept = ("title", "description", "$defs")
    head: JsonDict = {key: body.pop(key) for key in kept if key in body}
    wrapped: JsonDict = {
        **head,
        "type": "object",
        "properties": {ROOT_KEY: body},
        "required": [ROOT_KEY],
    }
    return wrapped, True


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: value for key, value in node.items() if key in _READ}
    if "oneOf" in node:
        node["anyOf"] = [*node.get("anyOf", []), *node.pop("oneOf")]
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        node = {**all_of[0], **node}
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            node[key] = {name: _strict(item) for name, item in node[key].items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"])
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = _distinct([_strict(item) for item in node["anyOf"]])
        if len(node["anyOf"]) == 1:
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **node["anyOf"][0]}
    if node.get("type") == "object":
        properties = node.get("properties")
        if not isinstance(properties, dict) or not properties:
            return {"type": "string"}
        required = set(node.get("required") or [])
        node["properties"] = {
            name: _strict(value) if name in required else _nullable(_strict(value))
            for name, value in properties.items()
        }
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def _nullable(node: JsonDict) -> JsonDict:
    """``node`` that also admits ``null`` (unless it does already)."""
    options = node.get("anyOf")
    if node.get("type") == "null" or (
        isinstance(options, list) and any(o == {"type": "null"} for o in options)
    ):
        return node
    if isinstance(options, list):
        return {**node, "anyOf": [*options, {"type": "null"}]}
    annotations: JsonDict = {k: node[k] for k in ("title", "description") if k in node}
    inner = {k: v for k, v in node.items() if k not in annotations}
    return {**annotations, "anyOf": [inner, {"type": "null"}]}


def _distinct(items: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return kept


def without_nulls(value: object) -> object:
    """``value`` with every ``null`` object property left out: how a reply to a strict
    schema (where an optional property is nullable) reads as the schema it came from."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


_takes_strict: dict[tuple[type[Any], str], bool] = {}


def _has_strict(kind: type[Any], method: str) -> bool:
    """Whether ``kind``'s ``method`` names a ``strict`` parameter (read once per class)."""
    key = (kind, method)
    if key not in _takes_strict:
        target: Callable[..., object] | None = getattr(kind, method, None)
        try:
            found = target is not None and "strict" in inspect.signature(target).parameters
        except (TypeError, ValueError):
            found = False
        _takes_strict[key] = found
    return _takes_strict[key]


def sends_strict(model: object, method: str) -> bool:
    """Whether a loop's own schemas go to ``model``'s ``method`` (``"bind_tools"`` or
    ``"with_structured_output"``) in strict form with ``strict=True``: when that method
    of the model's client takes a ``strict`` argument (OpenAI's, Azure's, Anthropic's
    ``bind_tools``), except for a small embedded model (see
    ``loopgraphs.models.needs_guided_steps``), whose server enforces the schema as a
    grammar with its length and item bounds."""
    inner = model
    while isinstance(inner, RunnableBinding):
        inner = inner.bound
    return _has_strict(type(inner), method) and not needs_guided_steps(inner)


__all__ = [
    "ROOT_KEY",
    "STRICT_KEYWORDS",
    "json_schema_of",
    "object_root",
    "schema_name",
    "sends_strict",
    "strict_schema",
    "without_nulls",
]
