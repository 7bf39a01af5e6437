"""Read-only file tools confined to one root directory.

Paths come from a model and are treated as hostile: absolute paths, ``..`` components,
``~``, backslashes, NUL bytes and symlinks leading out of the root are all refused. The
tools return an ``Error: ...`` string instead of raising, so the model can correct itself.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path, PurePosixPath

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

MAX_READ_CHARS = 20_000
MAX_PATH_CHARS = 1024
MAX_LIST_ENTRIES = 1000
_CHUNK_BYTES = 64 * 1024


class ReadFileInput(BaseModel):
    """Arguments of the read_file tool."""

    path: str = Field(description="Path of a text file, relative to the workspace root.")


class ListFilesInput(BaseModel):
    """Arguments of the list_files tool."""

    path: str = Field(
        default=".", description="Directory relative to the workspace root; '.' is the root."
    )


class _Sandbox:
    """Resolves model-supplied relative paths inside a fixed root directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        try:
            self.root = Path(root).resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ValueError(f"root {os.fspath(root)!r} does not exist") from exc
        if not self.root.is_dir():
            raise ValueError(f"root {os.fspath(root)!r} is not a directory")

    def resolve(self, path: str) -> Path | str:
        """Return the existing path inside the root, or an error message."""
        if "\x00" in path:
            return "Error: the path contains a NUL byte."
        if len(path) > MAX_PATH_CHARS:
            return f"Error: the path is {len(path)} characters long (limit {MAX_PATH_CHARS})."
        if "\\" in path:
            return "Error: backslashes are not allowed in paths; use '/'."
        relative = PurePosixPath(path.strip() or ".")
        if relative.is_absolute():
            return f"Error: {path!r} is absolute; give a path relative to the workspace root."
        if any(part == ".." for part in relative.parts):
            return f"Error: {path!r} contains '..'; paths must stay inside the workspace root."
        if any(part.startswith("~") for part in relative.parts):
            return f"Error: {path!r} uses '~'; give a path relative to the workspace root."
        try:
            candidate = (self.root / relative).resolve()
        except (OSError, RuntimeError) as exc:
            return f"Error: cannot resolve {path!r}: {exc}"
        if not candidate.is_relative_to(self.root):
            return f"Error: {path!r} leads outside the workspace root."
        try:
            exists = candidate.exists()
        except OSError as exc:  # e.g. a path component longer than the file system allows
            return f"Error: cannot use {path!r}: {exc.strerror or exc}"
        if not exists:
            return f"Error: {path!r} does not exist."
        return candidate


def _read_text(file: Path, shown: str) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")()
    kept: list[str] = []
    kept_chars = 0
    total_chars = 0
    try:
        with file.open("rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                if b"\x00" in chunk:
                    return f"Error: {shown!r} is a binary file, not text."
                text = decoder.decode(chunk)
                total_chars += len(text)
                if kept_chars < MAX_READ_CHARS:
                    piece = text[: MAX_READ_CHARS - kept_chars]
                    kept.append(piece)
                    kept_chars += len(piece)
            total_chars += len(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        return f"Error: {shown!r} is a binary file or not UTF-8 text."
    except OSError as exc:
        return f"Error: cannot read {shown!r}: {exc.strerror or exc}"
    content = "".join(kept)
    if total_chars > kept_chars:
        cut = total_chars - kept_chars
        content += f"\n\n[truncated: {cut} more characters not shown of {total_chars}]"
    return content


def make_file_tools(root: str | os.PathLike[str]) -> list[BaseTool]:
    """Make ``read_file`` and ``list_files`` tools confined to a directory.

    Args:
        root: The directory the tools may see; resolved once, symlinks included.

    Returns:
        ``[read_file, list_files]``. ``read_file(path)`` returns the text of a UTF-8 file
        (at most ``MAX_READ_CHARS`` characters, followed by a marker saying how many were
        cut); ``list_files(path=".")`` returns the sorted entry names of a directory, one a
        line, directories ending with ``/``. Both return ``Error: ...`` for refused paths.

    Raises:
        ValueError: If ``root`` does not exist or is not a directory.
    """
    sandbox = _Sandbox(root)

    def read_file(path: str) -> str:
        target = sandbox.resolve(path)
        if isinstance(target, str):
            return target
        if target.is_dir():
            return f"Error: {path!r} is a directory; use list_files to see its entries."
        if not target.is_file():
            return f"Error: {path!r} is not a regular file."
        return _read_text(target, path)

    def list_files(path: str = ".") -> str:
        target = sandbox.resolve(path)
        if isinstance(target, str):
            return target
        if not target.is_dir():
            return f"Error: {path!r} is a file, not a directory; use read_file to read it."
        try:
            entries = sorted(
                f"{entry.name}/" if entry.is_dir() else entry.name for entry in target.iterdir()
            )
        except OSError as exc:
            return f"Error: cannot list {path!r}: {exc.strerror or exc}"
        if not entries:
            return f"{path!r} is an empty directory."
        lines = entries[:MAX_LIST_ENTRIES]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"[... {len(entries) - MAX_LIST_ENTRIES} more entries not shown]")
        return "\n".join(lines)

    return [
        StructuredTool.from_function(
            func=read_file,
            name="read_file",
            description=(
                "Read a UTF-8 text file from the workspace. "
                "Input: a path relative to the workspace root, e.g. 'notes/todo.txt'."
            ),
            args_schema=ReadFileInput,
        ),
        StructuredTool.from_function(
            func=list_files,
            name="list_files",
            description=(
                "List the entries of a workspace directory, sorted; directories end with '/'. "
                "Input: a directory path relative to the workspace root ('.' is the root)."
            ),
            args_schema=ListFilesInput,
        ),
    ]
