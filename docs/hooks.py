"""MkDocs hooks for the documentation site.

The repository root is the package itself, so the API reference reads it through a link
named after it, build/docs/loopgraphs (mkdocs.yml's handler ``paths``), made here: a
folder of links to the root's modules and subpackages (a link to the root itself would
lead the reference through .venv and build/ as well).

Files kept in docs/ itself (beside the pages folder) are part of the site.
docs/eval-accuracy.png is written there by the evaluation benchmark. A page refers to it as
``../eval-accuracy.png``, which is right when the Markdown is read on its own (on GitHub);
for the site the file is added at the root and the reference rewritten to match.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOT_PACKAGE = {"tests", "examples", "docs", "build"}  # folders at the root that are not modules
SHARED = sorted(path for path in HERE.iterdir() if path.suffix in {".png", ".svg", ".jpg"})


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Link the package's modules and subpackages into build/docs/loopgraphs/."""
    package = ROOT / "build" / "docs" / "loopgraphs"
    package.mkdir(parents=True, exist_ok=True)
    for link in package.iterdir():  # made afresh: a module may have become a package
        link.unlink()
    for path in sorted(ROOT.iterdir()):
        is_module = path.suffix == ".py" and path.is_file()
        is_package = path.is_dir() and (path / "__init__.py").is_file()
        if path.name not in NOT_PACKAGE and (is_module or is_package):
            target = Path("..", "..", "..", path.name)
            (package / path.name).symlink_to(target, target_is_directory=is_package)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from mkdocs.structure.files import File

    for path in SHARED:
        files.append(File.generated(config, path.name, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    depth = page.file.src_uri.count("/")
    for path in SHARED:
        on_github = "../" * (depth + 1) + path.name
        on_site = "../" * depth + path.name
        markdown = markdown.replace(f"]({on_github})", f"]({on_site})")
    return markdown
