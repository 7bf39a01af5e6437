"""LangGraph Studio's API: `langgraph dev` serves all seven loops from langgraph.json."""

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

from loopgraphs import LOOPS

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen, timeout: float = 120) -> None:
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


@pytest.fixture(scope="module")
def studio_url(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = (tmp_path_factory.mktemp("studio") / "server.log").open("w")
    cli = Path(sys.executable).with_name("langgraph")
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LOOPGRAPHS_MAX_TOKENS": "48"}
    process = subprocess.Popen(
        [
            str(cli),
            "dev",
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
        log.close()


def test_langgraph_json_lists_every_loop():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert sorted(config["graphs"]) == sorted(LOOPS)
    assert config["dependencies"] == ["."]


def test_studio_serves_and_runs_every_loop(studio_url, local_server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=studio_url, api_key=None)
    assistants = client.assistants.search(limit=20)
    assert sorted(a["graph_id"] for a in assistants) == sorted(LOOPS)
    for graph_id in sorted(LOOPS):
        schemas = client.assistants.get_schemas(
            next(a for a in assistants if a["graph_id"] == graph_id)["assistant_id"]
        )
        assert "model" in json.dumps(schemas.get("context_schema") or schemas.get("config_schema"))
        out = client.runs.wait(
            None,
            graph_id,
            input={"messages": [{"role": "user", "content": "What is 2 + 2?"}]},
            context={"model": f"{local_server.url}/v1", "max_iterations": 1},
        )
        assert out["status"] in ("completed", "max_iterations"), (graph_id, out.get("error"))
        assert isinstance(out["answer"], str) and out["llm_calls"] >= 1
