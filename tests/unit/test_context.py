"""The run context: loopgraphs' own keys adjust a run, any other key is the caller's, and
the model a run needs is never loaded on an event loop."""

from __future__ import annotations

import dataclasses
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.runtime import Runtime
from pydantic import TypeAdapter

from loopgraphs import LoopContext, create_cot_graph, create_react_graph
from loopgraphs.nodes import run_context as settings_module
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import make_settings
from loopgraphs.toolkits import calculator
from tests.support.scripts import act, final, model_for


def my_orders(customer: str) -> str:
    """List a customer's orders."""
    return f"orders of {customer}: #1, #2"


def tool_results(out: dict[str, Any]) -> list[str]:
    """The text of the run's tool results, without the fence lines around each."""
    texts = [content_text(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    return [text.strip().splitlines()[1] if text.startswith("<<") else text for text in texts]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Replace model loading with a slow fake (it blocks, like starting a server) that
    records each spec it loads and the thread it ran in; the process's cache starts empty."""
    seen: list[tuple[str, int]] = []

    def load_model(spec: str) -> Any:
        seen.append((spec, threading.get_ident()))
        time.sleep(0.05)
        return model_for("native", [final("native", f"answer of {spec}")], repeat_last=True)

    monkeypatch.setattr(settings_module, "load_model", load_model)
    monkeypatch.setattr(settings_module, "_models", {})
    monkeypatch.setattr(settings_module, "_failures", {})
    return seen


# --- model loading never blocks an event loop ----------------------------------------


@pytest.mark.parametrize(
    "context",
    [None, {}, {"user_id": "u1"}, {"max_iterations": 2}, {"model": "some:spec"}],
    ids=["no-context", "empty", "own-keys-only", "loop-keys-only", "names-a-model"],
)
async def test_ainvoke_of_a_graph_without_a_model_loads_it_in_a_worker_thread(loads, context):
    graph = create_react_graph(None, [my_orders], tool_mode="native")
    assert loads == []  # nothing is loaded when the graph is built
    loop_thread = threading.get_ident()
    out = await graph.ainvoke({"messages": [("user", "hi")]}, context=context)
    spec = (context or {}).get("model", "local")
    assert out["status"] == "completed" and out["answer"] == f"answer of {spec}"
    assert [name for name, _ in loads] == [spec]
    assert loads[0][1] != loop_thread


async def test_nothing_blocking_runs_on_the_event_loop_of_a_run_without_a_model(loads):
    """The check ``langgraph dev`` makes: blockbuster raises on any blocking call (a sleep,
    a socket connect, a file read) made on the event loop's thread. The fake load sleeps
    like a server start would block."""
    blockbuster = pytest.importorskip("blockbuster", reason="blockbuster comes with langgraph-api")
    graph = create_cot_graph(None)
    with blockbuster.blockbuster_ctx():
        out = await graph.ainvoke({"messages": [("user", "hi")]})
    assert out["answer"] == "answer of local" and len(loads) == 1


def test_invoke_loads_the_default_model_lazily_in_the_calling_thread(loads):
    graph = create_react_graph(None, [my_orders], tool_mode="native")
    assert loads == []
    out = graph.invoke({"messages": [("user", "hi")]})
    assert out["answer"] == "answer of local"
    assert loads == [("local", threading.get_ident())]


async def test_a_graph_with_its_own_model_loads_nothing(loads, monkeypatch):
    monkeypatch.setattr(settings_module, "_modelless", {})
    graph = create_react_graph(model_for("native", [final("native", "mine")]), [my_orders])
    out = await graph.ainvoke({"messages": [("user", "hi")]}, context={"user_id": "u1"})
    assert out["answer"] == "mine" and loads == []


async def test_a_model_that_fails_to_load_ends_the_run_with_its_error(monkeypatch):
    """The failure is kept from the worker thread and raised in the step, not tried again
    there (which would load on the event loop)."""
    attempts: list[int] = []

    def load_model(spec: str) -> Any:
        attempts.append(threading.get_ident())
        raise FileNotFoundError("no model file here")

    monkeypatch.setattr(settings_module, "load_model", load_model)
    monkeypatch.setattr(settings_module, "_models", {})
    monkeypatch.setattr(settings_module, "_failures", {})
    graph = create_react_graph(None, [my_orders], tool_mode="native")
    out = await graph.ainvoke({"messages": [("user", "hi")]})
    assert out["status"] == "error" and "no model file here" in out["error"]
    assert len(attempts) == 1 and attempts[0] != threading.get_ident()
    # A run soon after gets the same error without a new attempt (which may be slow, as a
    # download that cannot succeed); once LOAD_RETRY_SECONDS have passed, it tries again.
    out = await graph.ainvoke({"messages": [("user", "hi")]})
    assert "no model file here" in out["error"] and len(attempts) == 1
    monkeypatch.setattr(settings_module, "LOAD_RETRY_SECONDS", 0.0)
    await graph.ainvoke({"messages": [("user", "hi")]})
    assert len(attempts) == 2


# --- (a) a model instance in the context --------------------------------------------


@pytest.mark.parametrize("own_model", [False, True])
async def test_a_chat_model_instance_in_the_context_runs_the_loop(loads, own_model):
    graph_model = model_for("native", [final("native", "graph's model")])
    graph = create_react_graph(graph_model if own_model else None, [my_orders])
    context_model = model_for("native", [final("native", "context model")])
    out = await graph.ainvoke({"messages": [("user", "hi")]}, context={"model": context_model})
    assert out["answer"] == "context model"
    assert context_model.call_count == 1 and graph_model.call_count == 0
    assert loads == []
    sync_model = model_for("native", [final("native", "sync context model")])
    out = graph.invoke({"messages": [("user", "hi")]}, context={"model": sync_model})
    assert out["answer"] == "sync context model" and loads == []


def test_a_context_model_of_another_type_is_a_clear_error():
    settings = make_settings("react", model_for("native", []), [my_orders], {})
    with pytest.raises(TypeError, match=r"context\['model'\] must be .*BaseChatModel; got int"):
        settings.for_run(SimpleNamespace(context={"model": 42}))


# --- (b) tool names select the graph's own tools first ------------------------------


def test_context_tools_name_the_graphs_own_tools():
    model = model_for(
        "native", [act("native", "my_orders", {"customer": "ann"}), final("native", "ok")]
    )
    graph = create_react_graph(model, [my_orders], tool_mode="native")
    out = graph.invoke({"messages": [("user", "orders?")]}, context={"tools": ["my_orders"]})
    assert out["status"] == "completed"
    assert tool_results(out) == ["orders of ann: #1, #2"]
    assert model.tool_sets[0] == ["my_orders"]


def test_context_tools_mix_the_graphs_tools_and_built_in_toolkits():
    settings = make_settings("react", model_for("native", []), [my_orders], {})
    run = settings.for_run(SimpleNamespace(context={"tools": ["calculator", "my_orders"]}))
    assert run.tools.names == ["calculator", "my_orders"]
    assert run.tools.get("my_orders") is settings.tools.get("my_orders")
    assert run.tools.get("calculator") is calculator
    assert settings.for_run(SimpleNamespace(context={"tools": []})).tools.names == []


def test_a_graph_tool_wins_over_a_built_in_of_the_same_name():
    @tool("calculator")
    def own_calculator(expression: str) -> str:
        """The application's own calculator."""
        return "own result"

    model = model_for(
        "native", [act("native", "calculator", {"expression": "1+1"}), final("native", "ok")]
    )
    graph = create_react_graph(model, [own_calculator], tool_mode="native")
    out = graph.invoke({"messages": [("user", "1+1?")]}, context={"tools": ["calculator"]})
    assert tool_results(out) == ["own result"]


def test_an_unknown_tool_name_is_an_error_naming_the_available_ones():
    settings = make_settings("react", model_for("native", []), [my_orders], {})
    with pytest.raises(ValueError) as caught:
        settings.for_run(SimpleNamespace(context={"tools": ["my_order"]}))
    message = str(caught.value)
    assert "'my_order'" in message and "my_orders" in message
    for toolkit in ("calculator", "search", "files"):
        assert toolkit in message
    graph = create_react_graph(model_for("native", [final("native", "x")]), [my_orders])
    with pytest.raises(ValueError, match=r"unknown tool 'my_order'.*\(my_orders\)"):
        graph.invoke({"messages": [("user", "hi")]}, context={"tools": ["my_order"]})


def test_the_tools_field_is_documented_for_studio():
    schema = TypeAdapter(LoopContext).json_schema()
    assert "graph's own tools" in schema["properties"]["tools"]["description"]
    assert schema["properties"]["model"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


# --- (c) keys of the caller's own pass through ---------------------------------------


@tool
def whoami(runtime: ToolRuntime[dict[str, Any]]) -> str:
    """Tell who the user is."""
    return f"user {runtime.context['user_id']}"


@tool("whoami")
def whoami_typed(runtime: ToolRuntime[Any]) -> str:
    """Tell who the user is (the context is the caller's dataclass)."""
    return f"user {runtime.context.user_id}"


@pytest.mark.parametrize("run_async", [False, True], ids=["invoke", "ainvoke"])
async def test_own_context_keys_reach_tools_and_loop_keys_still_apply(run_async):
    model = model_for(
        "native",
        [act("native", "whoami", {}), act("native", "whoami", {}), final("native", "done")],
    )
    graph = create_react_graph(model, [whoami], tool_mode="native", max_iterations=5)
    context = {"user_id": "u1", "max_iterations": 1}
    inputs = {"messages": [("user", "who am I?")]}
    out = (
        await graph.ainvoke(inputs, context=context)
        if run_async
        else graph.invoke(inputs, context=context)
    )
    assert tool_results(out) == ["user u1"]
    assert out["status"] == "max_iterations"  # the budget of 1 from the context


def test_a_node_of_the_callers_own_sees_the_context_dict_as_passed():
    seen: list[Any] = []

    def spy(messages: Any) -> Any:
        from langgraph.runtime import get_runtime

        seen.append(get_runtime().context)
        return final("native", "ok")

    graph = create_cot_graph(model_for("native", [spy]))
    context = {"user_id": "u1", "tenant": {"id": 7}}
    assert graph.invoke({"messages": [("user", "hi")]}, context=context)["answer"] == "ok"
    assert seen == [context]


def test_a_context_schema_of_the_callers_still_takes_loop_keys():
    @dataclasses.dataclass
    class AppContext:
        user_id: str
        max_iterations: int | None = None

    model = model_for(
        "native", [act("native", "whoami", {}), act("native", "whoami", {})], repeat_last=True
    )
    graph = create_react_graph(model, [whoami_typed], tool_mode="native", context_schema=AppContext)
    out = graph.invoke(
        {"messages": [("user", "hi")]}, context={"user_id": "u2", "max_iterations": 1}
    )
    assert out["status"] == "max_iterations"
    assert tool_results(out) == ["user u2"]


def test_runtime_annotation_is_only_a_hint():
    """``Runtime[LoopContext]`` is how loop nodes annotate the runtime; the context it holds
    is the dict the caller passed."""
    runtime: Runtime[LoopContext] = Runtime(context={"model": None, "user_id": "u3"})
    assert settings_module.context_values(runtime.context)["user_id"] == "u3"
