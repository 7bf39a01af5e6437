"""Pytest plugin: a throwaway PostgreSQL server on loopback for the test session.

Uses ``$LOOPGRAPHS_TEST_POSTGRES_URI`` when set; otherwise runs ``initdb`` and ``pg_ctl``
(Debian's ``postgresql`` package, installed by ``.ci/run``) in a temporary directory, as
the ``postgres`` user when the tests run as root. Outside CI the tests skip when no server
can be started; in CI they fail.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

URI_ENV = "LOOPGRAPHS_TEST_POSTGRES_URI"


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required in CI: {reason}")
    pytest.skip(f"no PostgreSQL server could be started: {reason}")


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """Connection URI of a PostgreSQL server that lives for the test session."""
    if os.environ.get(URI_ENV):
        yield os.environ[URI_ENV]
        return
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        _unavailable("initdb/pg_ctl not found (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="loopgraphs-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    try:
        subprocess.run(
            _as_postgres([initdb, "-D", str(data), "-A", "trust", "-U", "postgres"]),
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1"
        subprocess.run(
            _as_postgres(
                [pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"{exc}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)
