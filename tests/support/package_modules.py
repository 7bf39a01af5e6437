"""The modules of the package, found from its files (the repository root is the package)."""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def package_modules() -> dict[str, Path]:
    """Every module of ``loopgraphs`` by dotted name (a package by its own name), with its
    file."""
    found: dict[str, Path] = {}
    for package in ["", *find_packages(str(ROOT), exclude=("tests", "tests.*"))]:
        prefix = ".".join(filter(None, ["loopgraphs", package]))
        for path in sorted((ROOT / package.replace(".", "/")).glob("*.py")):
            found[prefix if path.stem == "__init__" else f"{prefix}.{path.stem}"] = path
    return found
