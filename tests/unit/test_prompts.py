"""Every prompt template is filled with exactly the placeholders it has.

The package's code is read with ``ast``: each ``prompts.NAME.format(...)`` (or ``NAME.format``
after ``from loopgraphs.prompts import NAME``) must pass the template's placeholders, no
more and no fewer, so that a renamed placeholder fails here and not in a user's run."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

import loopgraphs
from loopgraphs import prompts

PACKAGE = Path(loopgraphs.__file__).resolve().parent
SKIPPED = {"tests", "examples", "build", "docs"}


def placeholders(template: str) -> set[str]:
    """The template's placeholder names (a JSON example's ``{"query": ...}`` is text)."""
    parsed = string.Formatter().parse(template)
    return {name for _, name, _, _ in parsed if name is not None and name.isidentifier()}


def templates() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(prompts).items()
        if isinstance(value, str) and name.lstrip("_").isupper()
    }


def package_files() -> list[Path]:
    return [
        path
        for path in PACKAGE.rglob("*.py")
        if not SKIPPED & set(path.relative_to(PACKAGE).parts) and ".venv" not in str(path)
    ]


def format_calls() -> list[tuple[str, str, set[str] | None]]:
    """``(file:line, template name, keywords)`` of every ``.format`` call on a prompt
    (keywords None when the call passes ``**mapping``)."""
    found = []
    for path in package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "loopgraphs.prompts"
            for alias in node.names
        }
        chosen: dict[str, list[str]] = {}  # template = prompts.A if ... else prompts.B
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and _prompt_names(node.value):
                    chosen.setdefault(target.id, []).extend(_prompt_names(node.value))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            target = node.func.value
            if node.func.attr != "format":
                continue
            if isinstance(target, ast.Attribute) and getattr(target.value, "id", "") == "prompts":
                names = [target.attr]
            elif isinstance(target, ast.Name) and target.id in imported:
                names = [target.id]
            elif isinstance(target, ast.Name) and target.id in chosen:
                names = chosen[target.id]
            else:
                continue
            keywords = {k.arg for k in node.keywords}
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            found += [(where, name, None if None in keywords else keywords) for name in names]
    return found


def _prompt_names(value: ast.expr) -> list[str]:
    """The prompts an expression picks from, when it only picks (``a if c else b``)."""
    if isinstance(value, ast.Attribute) and getattr(value.value, "id", "") == "prompts":
        return [value.attr]
    if isinstance(value, ast.IfExp):
        both = _prompt_names(value.body), _prompt_names(value.orelse)
        return [*both[0], *both[1]] if all(both) else []
    return []


def test_every_template_parses():
    for name, template in templates().items():
        try:
            placeholders(template)
        except ValueError as exc:  # an unmatched brace
            pytest.fail(f"prompts.{name}: {exc}")


@pytest.mark.parametrize(("where", "name", "keywords"), format_calls())
def test_a_template_is_filled_with_its_own_placeholders(where, name, keywords):
    template = templates().get(name)
    assert template is not None, f"{where}: prompts.{name} is no template"
    assert keywords is not None, f"{where}: fill prompts.{name} with named arguments"
    assert keywords == placeholders(template), (
        f"{where}: prompts.{name} has {sorted(placeholders(template))}, "
        f"the call passes {sorted(keywords)}"
    )


def test_every_template_with_placeholders_is_filled_somewhere():
    filled = {name for _, name, _ in format_calls()}
    pieces = {name for name in templates() if name.startswith("_")}  # joined into others
    unfilled = {
        name
        for name, template in templates().items()
        if placeholders(template) and name not in filled | pieces
    }
    assert not unfilled, f"templates never filled by a checked call: {sorted(unfilled)}"


def test_the_checks_see_the_calls():
    assert len(format_calls()) >= 30
