"""Pytest plugin: one ``langgraph dev`` server on loopback for the test session.

The server serves ``served_config()``, written to ``TEST_CONFIG``: the loops of the
repository's ``langgraph.json``, unchanged, and the test graphs of
``tests/support/served_graphs.py`` (each tool loop of the registry pausing for approval
before tool calls). ``langgraph dev`` resolves the config's graph paths and dependencies
against its working directory, the repository root, not against the config file's folder.
The server caps the model replies of its runs at ``DEV_MAX_TOKENS`` tokens, and is stopped
(its whole process group) when the session ends. Register it from the root test conftest
with ``pytest_plugins = ["tests.support.langgraph_server"]``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopgraphs.graphs.registry import TOOL_LOOPS

ROOT = Path(__file__).resolve().parents[2]
TEST_CONFIG = ROOT / "build" / "langgraph.test.json"
DEV_MAX_TOKENS = 48
READY_TIMEOUT = 120.0


def served_config() -> dict[str, object]:
    """The test server's config: langgraph.json, and ``<loop>_approval`` for every tool
    loop of the registry (``tests/support/served_graphs.py``)."""
    production = json.loads((ROOT / "langgraph.json").read_text())
    approvals = {
        f"{loop}_approval": f"./tests/support/served_graphs.py:{loop}_approval"
        for loop in TOOL_LOOPS
    }
    return {**production, "graphs": {**production["graphs"], **approvals}}


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = READY_TIMEOUT) -> None:
    """Poll the server's ``/ok`` until it answers, failing if the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("langgraph dev did not become ready")


@pytest.fixture(scope="session")
def langgraph_dev_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a ``langgraph dev`` server started for the session on 127.0.0.1."""
    cli = Path(sys.executable).with_name("langgraph")
    if sys.version_info < (3, 11) or not cli.exists():
        pytest.skip("langgraph dev (langgraph-cli[inmem], the [studio] extra) needs Python 3.11+")
    TEST_CONFIG.parent.mkdir(exist_ok=True)
    TEST_CONFIG.write_text(json.dumps(served_config(), indent=2))
    port = free_port()
    log = (tmp_path_factory.mktemp("langgraph-dev") / "server.log").open("w")
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LOOPGRAPHS_MAX_TOKENS": str(DEV_MAX_TOKENS),
    }
    process = subprocess.Popen(
        [
            str(cli),
            "dev",
            "--config",
            str(TEST_CONFIG.relative_to(ROOT)),
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
        log.close()
