"""Every loop is a package of one shape, built from the public kit alone, and everything
that lists loops reads the registry (or this test names the file that is behind).

A loop package is ``graphs/<loop>/`` with ``__init__.py`` (the factory), ``state.py``
(state, output, keywords), ``steps.py`` (steps and routers) and ``graph.py`` (the
wiring and the ``LoopSpec``), its prompts in ``prompts/<loop>.py``. It imports the kit
(``loopgraphs.nodes``, never a module under it but the readers of
``loopgraphs.nodes.parsing``), never calls the model but through the kit's nodes, and
runs another loop only through that loop's ``LOOP`` (``InnerLoop``).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import pytest

import loopgraphs
from loopgraphs.graphs import registry, studio
from loopgraphs.nodes import LoopSpec

PACKAGE = Path(loopgraphs.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
LOOP_NAMES = [spec.name for spec in registry.BUILT_IN]
SHAPE = ("__init__.py", "state.py", "steps.py", "graph.py")
ALLOWED = (
    "loopgraphs.nodes",
    "loopgraphs.nodes.parsing",
    "loopgraphs.prompts",
    "loopgraphs.models",
    "loopgraphs.context",
    "loopgraphs.text",
    "loopgraphs.toolkits",
)
# What lies beneath the kit's nodes: a loop that calls these re-implements a node.
BENEATH_THE_KIT = {
    "ask",
    "call_model",
    "structured_call",
    "first_accepted",
    "ModelCall",
    "ModelCaller",
    "ModelBatch",
    "ToolStep",
    "add_step",
    "add_start",
    "new_graph",
    "compile_loop",
}


def package_of(name: str) -> Path:
    return PACKAGE / "graphs" / name


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_every_loop_is_a_spec_of_the_kit(name):
    spec = registry.LOOP_SPECS[name]
    assert isinstance(spec, LoopSpec), f"{name} is not built as a LoopSpec of the kit"
    assert spec.public_factory is registry.LOOPS[name]


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_every_loop_is_a_package_of_one_shape(name):
    folder = package_of(name)
    missing = [module for module in SHAPE if not (folder / module).is_file()]
    assert not missing, f"graphs/{name}/ lacks {', '.join(missing)}"
    assert (PACKAGE / "prompts" / f"{name}.py").is_file(), f"prompts/{name}.py is missing"
    assert not (PACKAGE / "graphs" / f"{name}.py").exists(), f"graphs/{name}.py is left over"


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
    return found


def allowed(module: str, names: list[str], own: str) -> bool:
    if not module.startswith("loopgraphs"):
        return True
    if module == own or module.startswith(f"{own}."):
        return True
    if module == "loopgraphs.nodes" or module.startswith("loopgraphs.nodes.parsing"):
        return True
    if module.startswith("loopgraphs.graphs."):
        # another loop's package, for its LOOP only (an inner run)
        return module.count(".") == 2 and names == ["LOOP"]
    if module == "loopgraphs":
        return set(names) <= {"prompts"}
    return any(module == top or module.startswith(f"{top}.") for top in ALLOWED[2:])


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_a_loop_imports_the_kit_and_nothing_beneath_it(name):
    own = f"loopgraphs.graphs.{name}"
    wrong = []
    for path in sorted(package_of(name).glob("*.py")):
        for module, names in imports_of(path):
            if not allowed(module, names, own):
                wrong.append(f"graphs/{name}/{path.name}: from {module} import {', '.join(names)}")
            if module.startswith("loopgraphs") and set(names) & BENEATH_THE_KIT:
                wrong.append(f"graphs/{name}/{path.name}: imports {set(names) & BENEATH_THE_KIT}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_a_loop_calls_the_model_only_through_the_kits_nodes(name):
    calls = []
    for path in sorted(package_of(name).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if called and node.func.attr in ("ask", "invoke", "ainvoke", "bind_tools"):
                calls.append(f"graphs/{name}/{path.name}:{node.lineno} .{node.func.attr}(")
    assert not calls, "\n".join(calls)


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_a_loops_keywords_are_declared_once(name):
    spec = registry.LOOP_SPECS[name]
    assert isinstance(spec, LoopSpec)
    factory = spec.public_factory
    shown = [
        p.name
        for p in inspect.signature(factory).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    assert shown == [own.name for own in spec.own]
    header = inspect.getsource(factory).split('"""')[0]
    for own in spec.own:
        written = re.search(rf"\b{own.name}\s*[:=]", header)
        assert not written, f"{name}'s factory declares {own.name}; its options declare it"


def test_langgraph_json_and_studio_serve_every_loop():
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert sorted(graphs) == sorted(LOOP_NAMES), "langgraph.json is behind the registry"
    for name, target in graphs.items():
        assert target == f"./graphs/studio.py:{name}", f"langgraph.json: {name}"
        assert getattr(studio, name).__name__ == name


def test_the_docs_list_every_loop():
    nav = (ROOT / "docs" / "mkdocs.yml").read_text()
    index = (ROOT / "docs" / "pages" / "loops" / "index.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in LOOP_NAMES:
        page = f"loops/{name.replace('_', '-')}.md"
        assert (ROOT / "docs" / "pages" / page).is_file(), f"docs/pages/{page} is missing"
        assert page in nav, f"docs/mkdocs.yml's nav lacks {page}"
        assert f"(`{name}`)" in index, f"docs/pages/loops/index.md's table lacks {name}"
        assert f"(`{name}`)" in readme, f"README.md's table of loops lacks {name}"


NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# A count of all the loops: "ships seven agent loops", "all seven loops".
COUNTED = re.compile(
    rf"\b(?:all|ships)\s+({'|'.join(NUMBERS)})\s+(?:agent\s+)?loops\b", re.IGNORECASE
)


def test_no_prose_counts_the_loops_wrongly():
    """A count of the loops in prose ("seven loops") is the registry's, or it is behind."""
    files = [
        ROOT / "README.md",
        ROOT / "pyproject.toml",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "docs").glob("*.yml")),
    ]
    right = NUMBERS[len(LOOP_NAMES) - 1]
    behind = [
        f"{path.relative_to(ROOT)}: {match.group(0)!r}"
        for path in files
        for match in COUNTED.finditer(path.read_text())
        if match.group(1).lower() != right
    ]
    assert not behind, "\n".join(behind)


@pytest.mark.parametrize("name", LOOP_NAMES)
def test_every_built_in_factory_is_importable_from_the_package_root(name):
    spec = registry.LOOP_SPECS[name]
    factory = getattr(loopgraphs, spec.public_factory.__name__, None)
    assert factory is spec.public_factory, (
        f"loopgraphs/__init__.py does not export {spec.public_factory.__name__} "
        f"(the {name!r} loop's factory): import it there and add it to __all__"
    )
    assert spec.public_factory.__name__ in loopgraphs.__all__
