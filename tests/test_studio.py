"""LangGraph Studio's API: `langgraph dev` serves all seven loops from langgraph.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.graph.state import CompiledStateGraph

from loopgraphs import LOOPS
from loopgraphs.graphs import studio

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parent.parent


def test_langgraph_json_lists_every_loop():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert sorted(config["graphs"]) == sorted(LOOPS)
    assert config["dependencies"] == ["."]
    for name, target in config["graphs"].items():
        path, attribute = target.split(":")
        assert path == "./graphs/studio.py" and attribute == name
        assert isinstance(getattr(studio, name), CompiledStateGraph)
        assert getattr(studio, name).get_name() == name


def test_studio_serves_and_runs_every_loop(langgraph_dev_url, local_server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=langgraph_dev_url, api_key=None)
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
