"""MkDocs hooks for the documentation site.

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
SHARED = sorted(path for path in HERE.iterdir() if path.suffix in {".png", ".svg", ".jpg"})


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
