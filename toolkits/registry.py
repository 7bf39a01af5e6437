"""Turn tools and plain Python callables into one validated, named set of tools.

A :class:`ToolRegistry` is what the agent loops receive: it looks tools up by name,
validates arguments proposed by a model before anything runs, and renders the tool list
as JSON schemas or as text for system prompts.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeAlias

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopgraphs.toolkits.calculator import calculator
from loopgraphs.toolkits.examples import ToolExample, tool_examples
from loopgraphs.toolkits.files import make_file_tools
from loopgraphs.toolkits.search import make_search_tool

BUILTIN_TOOLKITS: dict[str, str] = {
    "calculator": "calculator: safe arithmetic on numbers and a few math functions",
    "search": "search: full-text search over the bundled fictional knowledge base",
    "files": "read_file and list_files: read-only access to files under a root directory",
}
"""Names accepted by :func:`get_tools`, mapped to what each one provides."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

JsonSchema: TypeAlias = dict[str, Any]
"""A JSON schema (pydantic's, LangChain's): open, each keyword's value of a type of its own."""


class FunctionSpec(TypedDict):
    """One tool as a JSON-schema function specification (``ToolRegistry.schemas``)."""

    name: str
    description: str
    parameters: JsonSchema


def _callable_to_tool(item: Callable[..., object], position: int) -> BaseTool:
    name = getattr(item, "__name__", "")
    if not _TOOL_NAME.match(name):
        raise TypeError(
            f"tools[{position}] has name {name!r}; a tool name may only use letters, digits, "
            "'_' and '-' (up to 64 characters)"
        )
    missing = [
        parameter.name
        for parameter in inspect.signature(item).parameters.values()
        if parameter.annotation is inspect.Parameter.empty
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    if missing:
        raise TypeError(
            f"tools[{position}] ({name}) must have a type annotation on every parameter; "
            f"missing: {', '.join(missing)}"
        )
    description = inspect.getdoc(item) or f"{name.replace('_', ' ').strip().capitalize()}."
    if inspect.iscoroutinefunction(item):
        return StructuredTool.from_function(coroutine=item, name=name, description=description)
    return StructuredTool.from_function(func=item, name=name, description=description)


def to_tools(tools: Iterable[BaseTool | Callable[..., object]]) -> list[BaseTool]:
    """Normalise a mix of LangChain tools and typed Python functions into tools.

    Args:
        tools: LangChain tools (kept as they are) and plain functions or methods, sync or
            async, whose parameters all have type annotations. A function's docstring
            becomes the tool description; without one, the description comes from its name.

    Returns:
        The tools, in the given order.

    Raises:
        TypeError: If an item is neither a tool nor a typed function, naming its position.
        ValueError: If two tools share a name.
    """
    result: list[BaseTool] = []
    seen: set[str] = set()
    for position, item in enumerate(tools):
        if isinstance(item, BaseTool):
            converted = item
        elif inspect.isfunction(item) or inspect.ismethod(item):
            converted = _callable_to_tool(item, position)
        else:
            raise TypeError(
                f"tools[{position}] must be a LangChain tool or a typed callable, "
                f"got {type(item).__name__}"
            )
        if converted.name in seen:
            raise ValueError(f"duplicate tool name {converted.name!r} in tools")
        seen.add(converted.name)
        result.append(converted)
    return result


def _parameters_schema(tool: BaseTool) -> JsonSchema:
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return dict(schema)
    if issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return dict(schema.schema())


def _type_name(spec: JsonSchema) -> str:
    if "type" in spec:
        kind = spec["type"]
        return " or ".join(kind) if isinstance(kind, list) else str(kind)
    options = spec.get("anyOf") or spec.get("oneOf") or []
    names = [_type_name(option) for option in options]
    return " or ".join(name for name in names if name) or "any"


def _describe_arguments(schema: JsonSchema) -> str:
    properties: dict[str, JsonSchema] = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = []
    for arg, spec in properties.items():
        details = [_type_name(spec)]
        if arg in required:
            details.append("required")
        elif "default" in spec:
            details.append(f"default {spec['default']!r}")
        else:
            details.append("optional")
        parts.append(f"{arg} ({', '.join(details)})")
    return ", ".join(parts) or "none"


class ToolRegistry:
    """An ordered set of uniquely named tools.

    Args:
        tools: Tools and typed functions, normalised with :func:`to_tools`.

    Raises:
        TypeError: If an item is neither a tool nor a typed function.
        ValueError: If two tools share a name.
    """

    def __init__(self, tools: Iterable[BaseTool | Callable[..., object]] = ()) -> None:
        self._tools: dict[str, BaseTool] = {tool.name: tool for tool in to_tools(tools)}

    @property
    def names(self) -> list[str]:
        """Tool names, in registration order."""
        return list(self._tools)

    @property
    def tools(self) -> list[BaseTool]:
        """The tools, in registration order (e.g. for ``model.bind_tools``)."""
        return list(self._tools.values())

    def get(self, name: str) -> BaseTool | None:
        """Return the tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools.values())

    def _require(self, name: str) -> BaseTool:
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            raise KeyError(f"unknown tool {name!r}; available tools: {available}")
        return tool

    def schemas(self) -> list[FunctionSpec]:
        """Describe every tool as a JSON-schema function specification.

        Returns:
            One ``{"name", "description", "parameters"}`` dict per tool, in order.
        """
        return [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters": _parameters_schema(tool),
            }
            for tool in self._tools.values()
        ]

    def parameters(self, name: str) -> JsonSchema:
        """The JSON schema of a tool's model-visible arguments (injected ones left out).

        Raises:
            KeyError: If there is no such tool.
        """
        return _parameters_schema(self._require(name))

    def validate(self, name: str, args: dict[str, object]) -> dict[str, object]:
        """Validate arguments proposed for a tool before running it.

        Tools whose arguments are described by a pydantic model (v2 or v1) are validated
        through it, which coerces values, fills in defaults and drops unknown keys; tools
        described by a raw JSON schema are not validated locally and get a copy of ``args``.

        Args:
            name: Tool name.
            args: Keyword arguments for the tool.

        Returns:
            The validated arguments, ready for ``tool.invoke``.

        Raises:
            KeyError: If there is no such tool; the message lists the available names.
            pydantic.ValidationError: If the arguments do not fit the tool's schema (a
                ``pydantic.v1`` error, also a ``ValueError``, for v1 models).
        """
        schema = self._require(name).tool_call_schema
        if isinstance(schema, dict):
            return dict(args)
        if issubclass(schema, BaseModel):
            return schema.model_validate(args).model_dump()
        return dict(schema.parse_obj(args).dict())

    def catalog(self, max_chars: int = 80) -> str:
        """One short line per tool: ``"name: first line of description"``.

        Args:
            max_chars: Longest allowed line; longer lines are cut and end with ``...``.

        Returns:
            The lines joined by newlines.

        Raises:
            ValueError: If ``max_chars`` is below 10.
        """
        if max_chars < 10:
            raise ValueError(f"max_chars must be at least 10, got {max_chars}")
        lines = []
        for tool in self._tools.values():
            first_line = (tool.description.strip().splitlines() or [""])[0]
            line = f"{tool.name}: {first_line}"
            lines.append(line if len(line) <= max_chars else f"{line[: max_chars - 3]}...")
        return "\n".join(lines)

    def describe(self) -> str:
        """Multi-line description of every tool and its arguments, for system prompts.

        Returns:
            For each tool, its name and description on one line and its arguments (e.g.
            ``expression (string, required)``) on the next.
        """
        blocks = []
        for tool in self._tools.values():
            description = " ".join(tool.description.split())
            arguments = _describe_arguments(_parameters_schema(tool))
            blocks.append(f"- {tool.name}: {description}\n  arguments: {arguments}")
        return "\n".join(blocks)

    def examples(self) -> list[tuple[str, ToolExample]]:
        """Every tool's worked examples (see ``loopgraphs.toolkits.examples``), as
        ``(tool name, example)`` pairs in registration order.

        Raises:
            TypeError: If a tool's ``metadata["examples"]`` holds something else.
        """
        return [(tool.name, example) for tool in self for example in tool_examples(tool)]

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with only the named tools, in the order given.

        Args:
            names: Tool names present in this registry.

        Returns:
            The new registry.

        Raises:
            KeyError: If a name is unknown.
        """
        return ToolRegistry([self._require(name) for name in names])


def get_tools(
    names: Sequence[str] | str, *, files_root: str | os.PathLike[str] = "."
) -> list[BaseTool]:
    """Build built-in tools by toolkit name.

    Args:
        names: Keys of ``BUILTIN_TOOLKITS``; a single string is split on commas. Surrounding
            spaces and repeated names are ignored. ``"files"`` gives two tools.
        files_root: Directory the file tools are confined to.

    Returns:
        The tools, in the order of ``names``.

    Raises:
        ValueError: If a name is not a built-in toolkit, or ``files_root`` does not exist.
    """
    requested = names.split(",") if isinstance(names, str) else list(names)
    tools: list[BaseTool] = []
    for name in dict.fromkeys(n.strip() for n in requested if n.strip()):
        if name == "calculator":
            tools.append(calculator)
        elif name == "search":
            tools.append(make_search_tool())
        elif name == "files":
            tools.extend(make_file_tools(files_root))
        else:
            known = ", ".join(BUILTIN_TOOLKITS)
            raise ValueError(f"unknown toolkit {name!r}; known toolkits: {known}")
    return tools
