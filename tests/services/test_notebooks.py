"""Every notebook in examples/ runs top to bottom on the local model."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def test_the_examples_are_there():
    names = {path.stem for path in NOTEBOOKS}
    assert {
        "quickstart",
        "tool_modes",
        "custom_tools",
        "human_approval",
        "streaming",
        "persistence",
    } <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, local_server, monkeypatch):
    monkeypatch.setenv("LOOPGRAPHS_MODEL", f"llamacpp:{local_server.url}")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(o.output_type == "stream" and o.text.strip() for o in outputs)
