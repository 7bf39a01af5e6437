"""The file tools' exact results: what the model reads from ``read_file`` and ``list_files``.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgraphs.toolkits import files
from loopgraphs.toolkits.files import make_file_tools

# --- File tools: what the model reads -----------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello world", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("A", encoding="utf-8")
    return tmp_path


def test_file_tools_are_named_and_typed(root: Path) -> None:
    read_file, list_files = make_file_tools(root)
    assert (read_file.name, list_files.name) == ("read_file", "list_files")
    assert read_file.args_schema is files.ReadFileInput
    assert list_files.args_schema is files.ListFilesInput
    assert read_file.description.startswith("Read a UTF-8 text file from the workspace.")
    assert list_files.description.startswith("List the entries of a workspace directory")


def test_read_file_returns_the_text_exactly(root: Path) -> None:
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "notes.txt"}) == "hello world"
    assert read_file.invoke({"path": "docs/a.md"}) == "A"


def test_read_file_refuses_what_is_not_a_text_file(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"ab\x00cd")
    (root / "latin.txt").write_bytes(b"caf\xe9")
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "docs"}) == (
        "Error: 'docs' is a directory; use list_files to see its entries."
    )
    assert read_file.invoke({"path": "blob.bin"}) == "Error: 'blob.bin' is a binary file, not text."
    assert read_file.invoke({"path": "latin.txt"}) == (
        "Error: 'latin.txt' is a binary file or not UTF-8 text."
    )


def test_read_file_cuts_long_text_across_chunks(root: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_READ_CHARS", 10)
    monkeypatch.setattr(files, "_CHUNK_BYTES", 4)
    (root / "long.txt").write_text("0123456789abcdefghij", encoding="utf-8")
    (root / "fits.txt").write_text("0123456789", encoding="utf-8")
    # Multi-byte characters split across chunk boundaries still count as one each.
    (root / "wide.txt").write_text("é" * 12, encoding="utf-8")
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "long.txt"}) == (
        "0123456789\n\n[truncated: 10 more characters not shown of 20]"
    )
    assert read_file.invoke({"path": "fits.txt"}) == "0123456789"
    assert read_file.invoke({"path": "wide.txt"}) == (
        "é" * 10 + "\n\n[truncated: 2 more characters not shown of 12]"
    )


def test_list_files_lists_sorted_entries_with_directories_marked(root: Path) -> None:
    _, list_files = make_file_tools(root)
    assert list_files.invoke({}) == "docs/\nempty/\nnotes.txt"
    assert list_files.invoke({"path": "docs"}) == "a.md"
    assert list_files.invoke({"path": "empty"}) == "'empty' is an empty directory."
    assert list_files.invoke({"path": "notes.txt"}) == (
        "Error: 'notes.txt' is a file, not a directory; use read_file to read it."
    )


def test_list_files_caps_long_listings(root: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_LIST_ENTRIES", 2)
    _, list_files = make_file_tools(root)
    assert list_files.invoke({}) == "docs/\nempty/\n[... 1 more entries not shown]"
    (root / "one").mkdir()
    (root / "one" / "x").write_text("x", encoding="utf-8")
    (root / "one" / "y").write_text("y", encoding="utf-8")
    assert list_files.invoke({"path": "one"}) == "x\ny"  # exactly the cap: nothing cut


def test_the_root_must_be_an_existing_directory(root: Path) -> None:
    missing = root / "missing"
    with pytest.raises(ValueError) as raised:
        make_file_tools(missing)
    assert str(raised.value) == f"root {str(missing)!r} does not exist"
    with pytest.raises(ValueError) as raised:
        make_file_tools(root / "notes.txt")
    assert str(raised.value) == f"root {str(root / 'notes.txt')!r} is not a directory"
