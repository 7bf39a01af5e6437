"""LangGraph Studio's API: `langgraph dev` serves all seven loops from langgraph.json."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph

from loopgraphs import LOOPS
from loopgraphs.graphs import studio
from loopgraphs.models import find_default_gguf
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

needs_langgraph_dev = pytest.mark.skipif(
    sys.version_info < (3, 11) or importlib.util.find_spec("langgraph_api") is None,
    reason="langgraph dev needs langgraph-api, which needs Python 3.11+ "
    '(pip install "loopgraphs[studio]")',
)


def test_langgraph_json_lists_every_loop():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert sorted(config["graphs"]) == sorted(LOOPS)
    assert config["dependencies"] == ["."]
    for name, target in config["graphs"].items():
        path, attribute = target.split(":")
        assert path == "./graphs/studio.py" and attribute == name
        # A factory of no arguments, whose result langgraph dev awaits for the graph.
        graph = asyncio.run(getattr(studio, name)())
        assert isinstance(graph, CompiledStateGraph) and graph.get_name() == name
        assert studio.studio_graph(name) is graph
    assert sorted(studio.FACTORIES) == sorted(LOOPS)
    assert sorted(studio.__all__) == sorted(
        ["FACTORIES", "STUDIO_HISTORY_TOKENS", "STUDIO_TOOLS", "studio_graph", *LOOPS]
    )


@needs_langgraph_dev
def test_studio_serves_and_runs_every_loop(langgraph_dev_url, local_server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=langgraph_dev_url, api_key=None)
    # The test server also serves test graphs of its own (tests/support/served_graphs.py).
    assistants = client.assistants.search(limit=100, metadata={"created_by": "system"})
    assert set(LOOPS) <= {a["graph_id"] for a in assistants}
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


@needs_langgraph_dev
def test_a_studio_run_without_context_uses_the_default_local_model(langgraph_dev_url, local_server):
    """Studio's first run: no context at all, so the graph loads its default model, the
    embedded llama.cpp server, inside ``langgraph dev``, whose event loop fails any blocking
    call (``BlockingError``): the model must be loaded off the loop."""
    from langgraph_sdk import get_sync_client

    find_default_gguf(fetch=False)  # on this machine already (local_server skips otherwise)
    client = get_sync_client(url=langgraph_dev_url, api_key=None)
    out = client.runs.wait(
        None, "react", input={"messages": [{"role": "user", "content": "What is 2 + 2?"}]}
    )
    assert "Blocking" not in str(out.get("error")), out.get("error")
    assert out["status"] in ("completed", "max_iterations"), out.get("error")
    assert isinstance(out["answer"], str) and out["llm_calls"] >= 1


def test_studio_graphs_read_a_bounded_history_unless_the_run_says_otherwise():
    """The Studio graphs read at most ``STUDIO_HISTORY_TOKENS`` of the earlier
    conversation; the run's context may set another bound."""
    old = [HumanMessage("old " * 4 * studio.STUDIO_HISTORY_TOKENS), AIMessage("Noted.")]
    recent = [HumanMessage("Refund order A-17"), AIMessage("Refunded order A-17.")]
    inputs = {"messages": [*old, *recent, HumanMessage("Which order did I mention?")]}
    model = ScriptedChatModel(replies=["FINAL ANSWER: A-17"] * 2)
    graph = studio.studio_graph("cot")
    graph.invoke(inputs, context={"model": model})
    graph.invoke(inputs, context={"model": model, "max_history_tokens": 10_000})
    bounded, whole = ("\n".join(content_text(m.content) for m in p) for p in model.prompts)
    assert "Refund order A-17" in bounded and "old old" not in bounded
    assert "Refund order A-17" in whole and "old old" in whole
