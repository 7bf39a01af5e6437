"""The package's import layers: each module imports only from its own layer or those below
it, and no two modules import each other, directly or through others.

Every import counts, those inside functions and under ``TYPE_CHECKING`` included, so that
a dependency cannot hide from the rules by being imported late.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.package_modules import package_modules

# Lowest first: a layer's modules may import from their own layer and those below. A
# name ending in ``.*`` stands for a package and every module in it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "loopgraphs.text",
            "loopgraphs.process_hooks",
            "loopgraphs.prompts.*",
            "loopgraphs.internals",
        ),
    ),
    ("models", ("loopgraphs.models.*",)),
    ("toolkits", ("loopgraphs.toolkits.*",)),
    ("state", ("loopgraphs.state", "loopgraphs.context")),
    ("parsing", ("loopgraphs.nodes.parsing.*",)),
    ("nodes", ("loopgraphs.nodes.*",)),
    ("graphs", ("loopgraphs.graphs.*",)),
    ("eval", ("loopgraphs.eval.*",)),
    ("cli", ("loopgraphs.cli.*",)),
    ("package", ("loopgraphs",)),
)
MODULES = package_modules()
# What a loop may ask of ``loopgraphs.models``: a model's traits and declared
# capabilities, never which model (or server) it is.
TRAIT_MODULES = ("loopgraphs.models.traits", "loopgraphs.models.introspection")


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of a module's layer."""
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            package = name.removesuffix(".*")
            if module == package or (name != package and module.startswith(f"{package}.")):
                return index
    raise AssertionError(f"{module} is in no layer of tests/unit/test_layers.py")


def imported_names(path: Path, module: str) -> Iterator[tuple[str, str | None]]:
    """Each (module, name) a file imports from the package, anywhere in it; a name that is a
    module itself (``from loopgraphs import prompts``) is taken as that module."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(filter(None, [*parts[: len(parts) - node.level + 1], base]))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                yield (target, None) if target in MODULES else (base, alias.name)


def imports_of(module: str) -> set[str]:
    """The package's modules that a module imports."""
    found = set()
    for target, _ in imported_names(MODULES[module], module):
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != module:
            found.add(target)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_from_its_layer_and_below(module: str) -> None:
    above = sorted(t for t in GRAPH[module] if layer_of(t) > layer_of(module))
    assert not above, f"{module} ({LAYERS[layer_of(module)][0]}) imports from above: {above}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_has_a_layer(module: str) -> None:
    layer_of(module)


def test_state_imports_nothing_from_nodes() -> None:
    assert not {t for t in GRAPH["loopgraphs.state"] if t.startswith("loopgraphs.nodes")}


def test_nodes_import_nothing_from_graphs() -> None:
    for module in MODULES:
        if module.startswith("loopgraphs.nodes"):
            assert not {t for t in GRAPH[module] if t.startswith("loopgraphs.graphs")}, module


def test_parsers_import_nothing_from_toolkits() -> None:
    for module in MODULES:
        if module.startswith("loopgraphs.nodes.parsing"):
            assert not {t for t in GRAPH[module] if t.startswith("loopgraphs.toolkits")}, module


def test_loops_ask_models_only_for_traits() -> None:
    allowed = {name for trait in TRAIT_MODULES for name in public_names(trait)}
    for module in MODULES:
        if not module.startswith("loopgraphs.graphs"):
            continue
        for target, name in imported_names(MODULES[module], module):
            if target.startswith("loopgraphs.models"):
                assert target in (*TRAIT_MODULES, "loopgraphs.models"), (module, target)
                assert name is None or name in allowed, (module, name)


def public_names(module: str) -> set[str]:
    """The top-level functions and classes a module defines without a leading underscore."""
    tree = ast.parse(MODULES[module].read_text())
    kinds = (ast.FunctionDef, ast.ClassDef)
    return {n.name for n in tree.body if isinstance(n, kinds) and not n.name.startswith("_")}


def test_the_import_graph_has_no_cycle() -> None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in sorted(GRAPH[module]):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(MODULES):
        visit(module, [])
