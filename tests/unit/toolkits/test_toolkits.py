"""Tests of the built-in tools, the knowledge base and the tool registry."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool, StructuredTool, tool
from pydantic import ValidationError

from loopgraphs.toolkits import (
    BUILTIN_TOOLKITS,
    Entity,
    ToolRegistry,
    calculator,
    documents,
    get_tools,
    load_knowledge_base,
    make_file_tools,
    make_search_tool,
    to_tools,
    triples,
)
from loopgraphs.toolkits.knowledge import ENTITY_RELATIONS, RELATION_SENTENCES


def calc(expression: str) -> str:
    result = calculator.invoke({"expression": expression})
    assert isinstance(result, str)
    return result


# --- calculator -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("7 / 2", "3.5"),
        ("8 / 2", "4"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("2 ** 10", "1024"),
        ("2 ** -2", "0.25"),
        ("-3 + -(-2)", "-1"),
        ("1.5 * 4", "6"),
        ("0.1 + 0.2", "0.3"),
        ("1 / 3", "0.333333333333333"),
        ("sqrt(16)", "4"),
        ("sqrt(2)", "1.4142135623731"),
        ("abs(-3.5)", "3.5"),
        ("round(2.567, 2)", "2.57"),
        ("round(7.5)", "8"),
        ("min(4, 2, 8)", "2"),
        ("max(4, 2, 8)", "8"),
        ("floor(2.7) + ceil(2.1)", "5"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("exp(0)", "1"),
        ("sin(0) + cos(0)", "1"),
        ("tan(0)", "0"),
        ("2 * pi", "6.28318530717959"),
        ("123456789 * 987654321", "121932631112635269"),
        ("2 ** 100", "1267650600228229401496703205376"),
        ("1" + " + 1" * 99, "100"),
    ],
)
def test_calculator_results(expression: str, expected: str) -> None:
    assert calc(expression) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("3 x 4", "12"),
        ("3x4", "12"),
        ("(2)x(3)", "6"),
        ("2 × 8", "16"),
        ("2 X 3", "6"),
        ("2^10", "1024"),
        ("3 ^ 2 x 2", "18"),
        ("0x10", "16"),
        ("exp(0) x max(2, 3)", "3"),
    ],
)
def test_calculator_accepts_small_model_notation(expression: str, expected: str) -> None:
    assert calc(expression) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os')", "only these functions"),
        ("(1).__class__", "Attribute"),
        ("[1][0]", "Subscript"),
        ("open('x')", "only these functions"),
        ("math.sqrt(4)", "only these functions"),
        ("lambda: 1", "Lambda"),
        ("[i for i in range(3)]", "ListComp"),
        ("'abc'", "only numbers"),
        ("True + 1", "only numbers"),
        ("1j * 2", "only numbers"),
        ("x + 1", "name 'x'"),
        ("1 < 2", "Compare"),
        ("round(2.5, ndigits=1)", "keyword"),
        ("9**9**9", "exponent"),
        ("2**100000", "exponent"),
        ("(2**1000)**1000", "digits"),
        ("10**999 * 10**999 * 10**999 * 10**999 * 10**999", "digits"),
        ("1" * 501, "501 characters"),
        ("(" * 200 + "1" + ")" * 200, "nested deeper"),
        ("-" * 100 + "1", "nested deeper"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("1e999", "not a finite number"),
        ("1e308 * 10", "not a finite number"),
        ("exp(1000)", "too large"),
        ("2.0 ** 5000", "too large"),
        ("sqrt(-1)", "math domain error"),
        ("(-8) ** (1 / 3)", "not a real number"),
        ("", "empty"),
        ("2 +", "invalid syntax"),
        ("1\x002", "invalid syntax"),
        ("min()", "at least 1 argument"),
    ],
)
def test_calculator_refusals(expression: str, reason: str) -> None:
    result = calc(expression)
    assert result.startswith("Error:"), result
    assert reason in result


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("6*7 = 42", '42 (ignored "= 42")'),
        ("17 * 19 = 2567", '323 (ignored "= 2567")'),
        ("6 × 7 = 42 = 43", '42 (ignored "= 42 = 43")'),
        ("6*7 = forty-two", '42 (ignored "= forty-two")'),
        ("6*7 =", "42"),
        ("= 6*7", "42"),
        ("`6*7`", "42"),
        ("```python\n6*7\n```", "42"),
        ("'2+3'", "5"),
        ('"6 * 7"', "42"),
        ("“6 * 7”", "42"),
        ("what is 6*7?", "42"),
        ("What's 6 x 7?", "42"),
        ("Calculate 12 ÷ 4.", "3"),
        ("compute: 2^10", "1024"),
        ("`what is 6*7 = 42?`", '42 (ignored "= 42")'),
        ("`6*7` = 42", '42 (ignored "= 42")'),
        ("1,000 * 3", "3000"),
        ("1,000,000 / 4", "250000"),
        ("12,345.5 + 1", "12346.5"),
        ("(1,000 + 5) * 2", "2010"),
    ],
)
def test_calculator_reads_loose_forms(expression: str, expected: str) -> None:
    assert calc(expression) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # Inside a call a comma separates arguments, so "1,000" stays two numbers.
        ("max(1,000)", "1"),
        ("round(1,234)", "1"),
        ("min(4, 2, 8)", "2"),
        # Comparisons are not a guessed result: they stay refused.
        ("1 == 1", "Error: Compare is not allowed in arithmetic expressions"),
        ("1 <= 2", "Error: Compare is not allowed in arithmetic expressions"),
        ("2 >= 1 = 1", "Error: Compare is not allowed in arithmetic expressions"),
        # A comma that is not a thousands separator is not guessed away.
        ("1,00 * 3", "Error: Tuple is not allowed in arithmetic expressions"),
        # A name on the left of "=" is not an expression to evaluate.
        ("x = 6*7", "Error: name 'x' is not allowed"),
    ],
)
def test_calculator_leaves_ambiguous_forms_alone(expression: str, expected: str) -> None:
    assert calc(expression) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("what is 2**100000?", "exponent 100000 is too large"),
        ("`__import__('os')` = 0", "only these functions"),
        ("6*7 = " + "1" * 495, "501 characters"),
        ("what is (" + "(" * 60 + "1" + ")" * 61 + "?", "nested deeper"),
        ("'abc'", "only numbers"),
        ("what is 2 +?", "invalid syntax"),
    ],
)
def test_calculator_loose_forms_keep_every_limit(expression: str, reason: str) -> None:
    result = calc(expression)
    assert result.startswith("Error:"), result
    assert reason in result


def test_calculator_tool_interface() -> None:
    assert calculator.name == "calculator"
    assert list(calculator.args) == ["expression"]
    assert "sqrt" in calculator.description
    assert "arithmetic" in calculator.description
    assert "after = is ignored" in calculator.description
    assert len(calculator.description) < 400


# --- knowledge base ---------------------------------------------------------------------


def test_knowledge_base_size_and_unique_names() -> None:
    entities = load_knowledge_base()
    names = [entity.name for entity in entities]
    assert len(names) == len(set(names))
    assert sum(len(entity.facts) for entity in entities) >= 150
    kinds = {entity.kind for entity in entities}
    assert kinds == {"person", "place", "organisation"}
    assert sum(entity.kind == "person" for entity in entities) >= 25
    assert sum(entity.kind == "place" for entity in entities) >= 15
    assert sum(entity.kind == "organisation" for entity in entities) >= 12
    assert all(isinstance(entity, Entity) for entity in entities)


def test_knowledge_base_relations_are_known_and_values_are_strings() -> None:
    for entity in load_knowledge_base():
        for relation, value in entity.facts.items():
            assert relation in RELATION_SENTENCES, (entity.name, relation)
            assert isinstance(value, str) and value, (entity.name, relation)


def test_entity_valued_facts_point_at_entities_of_the_right_kind() -> None:
    kinds = {entity.name: entity.kind for entity in load_knowledge_base()}
    for subject, relation, value in triples():
        if relation in ENTITY_RELATIONS:
            assert kinds.get(value) == ENTITY_RELATIONS[relation], (subject, relation, value)


def test_knowledge_base_is_consistent() -> None:
    by_name = {entity.name: entity for entity in load_knowledge_base()}
    for entity in by_name.values():
        spouse = entity.facts.get("spouse")
        if spouse is not None:
            assert by_name[spouse].facts.get("spouse") == entity.name
        ceo = entity.facts.get("ceo")
        if ceo is not None:
            assert by_name[ceo].facts.get("works_for") == entity.name
        founder = entity.facts.get("founded_by")
        if founder is not None:
            age = int(entity.facts["founded_year"]) - int(by_name[founder].facts["born_year"])
            assert 18 <= age <= 70, (entity.name, founder, age)


def test_two_hop_chains_exist() -> None:
    facts = {entity.name: entity.facts for entity in load_knowledge_base()}
    chains = [
        (subject, relation, value, second)
        for subject, relation, value in triples()
        if relation in ENTITY_RELATIONS
        for second in facts[value]
        if second in ENTITY_RELATIONS
    ]
    assert len(chains) >= 10
    founder_birthplaces = [c for c in chains if c[1] == "founded_by" and c[3] == "born_in"]
    assert len(founder_birthplaces) >= 10


def test_triples_and_documents_cover_every_fact() -> None:
    entities = load_knowledge_base()
    assert len(triples()) == sum(len(entity.facts) for entity in entities)
    docs = dict(documents())
    assert list(docs) == [entity.name for entity in entities]
    odalys = docs["Odalys Fenwrick"]
    assert "Odalys Fenwrick is a person." in odalys
    assert "Odalys Fenwrick was born in Quessaby." in odalys
    for subject, relation, value in triples():
        assert RELATION_SENTENCES[relation].format(subject=subject, object=value) in docs[subject]


def test_load_knowledge_base_returns_independent_copies() -> None:
    first = load_knowledge_base()
    first[0].facts["profession"] = "changed"
    assert load_knowledge_base()[0].facts["profession"] != "changed"


# --- search -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def search() -> BaseTool:
    return make_search_tool()


def first_title(result: str) -> str:
    return result.split(": ", 1)[0]


@pytest.mark.parametrize(
    "name",
    [
        "Odalys Fenwrick",
        "Ruslan Pettigrue",
        "Varnholt",
        "Drennick Falls",
        "Quillmark Instruments",
        "Brisk Lantern Cartography",
        "Dashiell Moorcraven",
    ],
)
def test_search_finds_entity_by_name_first(search: BaseTool, name: str) -> None:
    assert first_title(search.invoke({"query": name})) == name


def test_search_finds_every_entity_by_name_first(search: BaseTool) -> None:
    for entity in load_knowledge_base():
        assert first_title(search.invoke({"query": entity.name})) == entity.name


def test_search_returns_k_blocks_and_handles_questions(search: BaseTool) -> None:
    result = search.invoke({"query": "Who founded Quillmark Instruments?"})
    blocks = result.split("\n\n")
    assert len(blocks) == 3
    assert blocks[0].startswith("Quillmark Instruments: ")
    assert "founded by Bartholomew Ixley" in blocks[0]


@pytest.mark.parametrize("query", ["Quillmark Instruments", " quillmark instruments? "])
def test_search_for_a_title_returns_that_document_alone(search: BaseTool, query: str) -> None:
    result = search.invoke({"query": query})
    document, also = result.split("\n\n")
    assert document.startswith("Quillmark Instruments: ")
    assert "founded by Bartholomew Ixley" in document and "married" not in result
    assert also == "Also found: Bartholomew Ixley, Seraphine Vantreece."


def test_exact_lookup_can_be_turned_off() -> None:
    tool = make_search_tool(exact_lookup=False)
    assert len(tool.invoke({"query": "Quillmark Instruments"}).split("\n\n")) == 3
    alone = make_search_tool([("Alpha", "first letter")]).invoke({"query": "alpha"})
    assert alone == "Alpha: first letter"


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "AND OR NOT", "*", "NEAR(", "", "x" * 5000, "🙂 ☃", "日本語", "a:b -c ^d"],
)
def test_search_never_raises(search: BaseTool, query: str) -> None:
    result = search.invoke({"query": query})
    assert isinstance(result, str) and result


def test_search_reports_no_results(search: BaseTool) -> None:
    assert search.invoke({"query": "🙂"}).startswith("No results for")
    assert search.invoke({"query": "zzzqqq"}).startswith("No results for")


def test_search_custom_corpus() -> None:
    texts = make_search_tool(["apples are red", "bananas are yellow"], k=1, name="fruit")
    assert texts.name == "fruit"
    assert texts.invoke({"query": "banana yellow"}) == "doc 2: bananas are yellow"
    pairs = make_search_tool([("Alpha", "first letter"), ("Omega", "last letter")], k=2)
    result = pairs.invoke({"query": "last"})
    assert result == "Omega: last letter"


def test_search_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="k must be"):
        make_search_tool(["x"], k=0)
    with pytest.raises(ValueError, match="at least one"):
        make_search_tool([])
    with pytest.raises(TypeError, match=r"corpus\[1\]"):
        make_search_tool(["ok", 3])  # type: ignore[list-item]


async def test_search_works_from_async_tasks(search: BaseTool) -> None:
    results = await asyncio.gather(
        *(search.ainvoke({"query": entity.name}) for entity in load_knowledge_base()[:10])
    )
    names = [entity.name for entity in load_knowledge_base()[:10]]
    assert [first_title(result) for result in results] == names


# --- files ------------------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("hello world", encoding="utf-8")
    (root / "sub" / "inner.txt").write_text("inner text", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    return root


def file_tools(root: Path) -> tuple[BaseTool, BaseTool]:
    read_file, list_files = make_file_tools(root)
    assert (read_file.name, list_files.name) == ("read_file", "list_files")
    return read_file, list_files


def test_files_read_and_list_inside_root(workspace: Path) -> None:
    read_file, list_files = file_tools(workspace)
    assert read_file.invoke({"path": "notes.txt"}) == "hello world"
    assert read_file.invoke({"path": "sub/inner.txt"}) == "inner text"
    assert read_file.invoke({"path": "./sub//inner.txt"}) == "inner text"
    assert list_files.invoke({"path": "."}) == "notes.txt\nsub/"
    assert list_files.invoke({}) == "notes.txt\nsub/"
    assert list_files.invoke({"path": "sub"}) == "inner.txt"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../secret.txt", ".."),
        ("/etc/passwd", "absolute"),
        ("sub/../../secret.txt", ".."),
        ("~/secret.txt", "~"),
        ("sub\\..\\..\\secret.txt", "backslash"),
        ("notes.txt\x00.png", "NUL"),
        ("missing.txt", "does not exist"),
        ("sub", "directory"),
    ],
)
def test_files_read_refusals(workspace: Path, path: str, reason: str) -> None:
    read_file, _ = file_tools(workspace)
    result = read_file.invoke({"path": path})
    assert result.startswith("Error:"), result
    assert reason in result
    assert "top secret" not in result


def test_files_list_refusals(workspace: Path) -> None:
    _, list_files = file_tools(workspace)
    assert list_files.invoke({"path": "notes.txt"}).startswith("Error:")
    assert list_files.invoke({"path": ".."}).startswith("Error:")
    assert list_files.invoke({"path": "/"}).startswith("Error:")
    assert list_files.invoke({"path": "nowhere"}).startswith("Error:")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_files_symlinks(workspace: Path) -> None:
    (workspace / "escape.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "escape_dir").symlink_to(workspace.parent)
    (workspace / "alias.txt").symlink_to(workspace / "sub" / "inner.txt")
    (workspace / "loop").symlink_to(workspace / "loop")
    read_file, list_files = file_tools(workspace)
    assert read_file.invoke({"path": "escape.txt"}).startswith("Error:")
    assert read_file.invoke({"path": "escape_dir/secret.txt"}).startswith("Error:")
    assert list_files.invoke({"path": "escape_dir"}).startswith("Error:")
    assert read_file.invoke({"path": "loop"}).startswith("Error:")
    assert read_file.invoke({"path": "alias.txt"}) == "inner text"


def test_files_truncation_and_binary(workspace: Path) -> None:
    (workspace / "big.txt").write_text("é" * 25_000, encoding="utf-8")
    (workspace / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    (workspace / "latin1.txt").write_bytes("café".encode("latin-1"))
    read_file, _ = file_tools(workspace)
    big = read_file.invoke({"path": "big.txt"})
    assert big.startswith("é" * 20_000 + "\n")
    assert "5000 more characters" in big
    assert read_file.invoke({"path": "blob.bin"}).startswith("Error:")
    assert read_file.invoke({"path": "latin1.txt"}).startswith("Error:")


def test_files_missing_root(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match="nope"):
        make_file_tools(missing)


# --- registry ---------------------------------------------------------------------------


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    The second one defaults to 2.
    """
    return a + b


async def shout(text: str) -> str:
    return text.upper()


def test_to_tools_converts_callables() -> None:
    tools = to_tools([calculator, add, shout])
    assert [t.name for t in tools] == ["calculator", "add", "shout"]
    assert tools[0] is calculator
    assert tools[1].description.startswith("Add two integers.")
    assert tools[2].description == "Shout."
    assert tools[1].invoke({"a": 3}) == 5


async def test_async_callable_runs_via_ainvoke() -> None:
    (tool_,) = to_tools([shout])
    assert await tool_.ainvoke({"text": "hi"}) == "HI"


def test_to_tools_rejects_bad_items() -> None:
    with pytest.raises(TypeError, match=r"tools\[2\] must be a LangChain tool .* got int"):
        to_tools([calculator, add, 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools\[0\].*got str"):
        to_tools(["calculator"])  # type: ignore[list-item]

    def untyped(value):
        return value

    with pytest.raises(TypeError, match=r"tools\[1\].*missing: value"):
        to_tools([add, untyped])
    with pytest.raises(TypeError, match=r"tools\[0\].*name"):
        to_tools([lambda: 1])


def test_to_tools_rejects_duplicates() -> None:
    @tool
    def add(x: int) -> int:
        """Another add."""
        return x

    with pytest.raises(ValueError, match="duplicate tool name 'add' in tools"):
        to_tools([globals()["add"], add])


def test_registry_lookup_and_iteration() -> None:
    registry = ToolRegistry([calculator, add])
    assert registry.names == ["calculator", "add"]
    assert len(registry) == 2
    assert "add" in registry and "nope" not in registry
    assert registry.get("calculator") is calculator
    assert registry.get("nope") is None
    assert [t.name for t in registry] == ["calculator", "add"]
    assert registry.subset(["add"]).names == ["add"]
    with pytest.raises(KeyError, match="available tools: calculator, add"):
        registry.subset(["nope"])


def test_registry_schemas() -> None:
    schemas = ToolRegistry([calculator, add]).schemas()
    assert [s["name"] for s in schemas] == ["calculator", "add"]
    assert schemas[0]["parameters"]["required"] == ["expression"]
    assert schemas[0]["parameters"]["properties"]["expression"]["type"] == "string"
    assert schemas[1]["parameters"]["properties"]["b"]["default"] == 2
    assert schemas[1]["description"].startswith("Add two integers.")


def test_registry_validate() -> None:
    registry = ToolRegistry([calculator, add])
    assert registry.validate("add", {"a": "3"}) == {"a": 3, "b": 2}
    assert registry.validate("calculator", {"expression": "1+1"}) == {"expression": "1+1"}
    with pytest.raises(ValidationError):
        registry.validate("add", {"a": "three"})
    with pytest.raises(ValidationError):
        registry.validate("calculator", {})
    with pytest.raises(KeyError, match="available tools: calculator, add"):
        registry.validate("nope", {})


def test_registry_catalog_and_describe() -> None:
    registry = ToolRegistry([calculator, add, *get_tools(["search"])])
    lines = registry.catalog().splitlines()
    assert len(lines) == 3
    assert all(len(line) <= 80 for line in lines)
    assert lines[1] == "add: Add two integers."
    assert lines[0].startswith("calculator: ") and lines[0].endswith("...")
    assert all(len(line) <= 30 for line in registry.catalog(max_chars=30).splitlines())
    description = registry.describe()
    assert "expression (string, required)" in description
    assert "a (integer, required), b (integer, default 2)" in description
    assert "- search: Search the knowledge base" in description


def test_get_tools(tmp_path: Path) -> None:
    requested = "calculator,search"
    tools = get_tools(requested.split(","))
    assert [t.name for t in tools] == ["calculator", "search"]
    assert "Quillmark Instruments" in tools[1].invoke({"query": "Quillmark"})
    names = [t.name for t in get_tools("files, calculator", files_root=tmp_path)]
    assert names == ["read_file", "list_files", "calculator"]
    assert set(BUILTIN_TOOLKITS) == {"calculator", "search", "files"}
    with pytest.raises(ValueError, match="known toolkits: calculator, search, files"):
        get_tools(["calculator", "web"])


def test_registry_handles_json_schema_tools() -> None:
    def repeat(n: int) -> str:
        return "ab" * n

    raw = StructuredTool.from_function(
        func=repeat,
        name="repeat",
        description="Repeat 'ab'.",
        args_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    )
    registry = ToolRegistry([raw])
    assert registry.schemas()[0]["parameters"]["properties"] == {"n": {"type": "integer"}}
    assert registry.validate("repeat", {"n": 2}) == {"n": 2}
    assert "n (integer, required)" in registry.describe()
