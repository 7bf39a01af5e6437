"""Sizes a reader can hold: no module of the package above 600 lines, no function above 120.

A loop's steps are module-level functions, each readable and testable on its own; a
builder that grows a bag of nested steps, or a module that grows past a reader's span,
fails here with the names to split.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.support.package_modules import package_modules

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120
MODULES = package_modules()


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method in ``tree``, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def long_functions(source: str, module: str) -> list[str]:
    """The functions of ``source`` above the limit, as ``module.name (lines)``."""
    found = []
    for function in functions(ast.parse(source)):
        first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
        lines = (function.end_lineno or function.lineno) - first + 1
        if lines > MAX_FUNCTION_LINES:
            found.append(f"{module}.{function.name} ({lines} lines)")
    return found


def test_no_module_is_above_the_limit():
    long = {
        module: lines
        for module, path in MODULES.items()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules above {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_above_the_limit():
    long = [
        name
        for module, path in MODULES.items()
        for name in long_functions(path.read_text(), module)
    ]
    assert not long, f"functions above {MAX_FUNCTION_LINES} lines: {long}"


def test_the_check_finds_a_long_nested_function():
    body = "\n".join(f"        x{index} = {index}" for index in range(MAX_FUNCTION_LINES))
    source = f"def builder():\n    def step():\n{body}\n    return step\n"
    assert long_functions(source, "m") == [
        f"m.builder ({MAX_FUNCTION_LINES + 3} lines)",
        f"m.step ({MAX_FUNCTION_LINES + 1} lines)",
    ]
