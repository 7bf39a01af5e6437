"""ToolRuntime, InjectedState/Store/ToolCallId, custom state and context in tools.

Ports of langchain ``agents/test_injected_runtime_create_agent.py``,
``agents/test_state_schema.py`` and ``agents/test_create_agent_tool_validation.py``;
each test names the case it ports. Middleware-based variants are listed in
DIFFERENCES.md.
"""

import dataclasses
from typing import Annotated, Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from typing_extensions import TypedDict

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call
from tests.compat.support import MODES, act, final, model_for, tool_messages, tool_text


def run(turns: list, tools: list, inputs: dict | None = None, **kwargs: Any) -> dict:
    model = FakeToolModel(turns=turns)
    graph = create_react_graph(
        model, tools, tool_mode="native", system_prompt="You are a helpful assistant.", **kwargs
    )
    return graph.invoke(inputs or {"messages": [HumanMessage("Test")]})


# --- ToolRuntime ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tool_runtime_basic_injection(mode):
    """Ports test_tool_runtime_basic_injection (in every tool mode)."""
    injected: dict[str, Any] = {}

    @tool
    def runtime_tool(x: int, runtime: ToolRuntime) -> str:
        """Tool that accesses the runtime."""
        injected.update(
            state=runtime.state,
            tool_call_id=runtime.tool_call_id,
            config=runtime.config,
            context=runtime.context,
            store=runtime.store,
            stream_writer=runtime.stream_writer,
        )
        return f"Processed {x}"

    model = model_for(mode, [act(mode, "runtime_tool", {"x": 42}), final(mode, "done")])
    graph = create_react_graph(model, [runtime_tool], tool_mode=mode)
    out = graph.invoke({"messages": [HumanMessage("Test")]})
    assert len(out["messages"]) == 4
    tool_message = out["messages"][2]
    assert isinstance(tool_message, ToolMessage)
    assert tool_text(tool_message) == "Processed 42"
    call_id = out["messages"][1].tool_calls[0]["id"]
    assert tool_message.tool_call_id == call_id
    assert injected["tool_call_id"] == call_id
    assert "messages" in injected["state"]
    assert injected["config"] is not None
    assert callable(injected["stream_writer"])
    assert {"context", "store"} <= set(injected)


async def test_tool_runtime_async_injection():
    """Ports test_tool_runtime_async_injection."""
    injected: dict[str, Any] = {}

    @tool
    async def async_runtime_tool(x: int, runtime: ToolRuntime) -> str:
        """Async tool that accesses the runtime."""
        injected.update(state=runtime.state, tool_call_id=runtime.tool_call_id)
        return f"Async processed {x}"

    model = FakeToolModel(
        turns=[[call("async_runtime_tool", {"x": 99}, id="async_call_456")], "done"]
    )
    graph = create_react_graph(model, [async_runtime_tool], tool_mode="native")
    out = await graph.ainvoke({"messages": [HumanMessage("Test async")]})
    (message,) = tool_messages(out)
    assert tool_text(message) == "Async processed 99"
    assert message.tool_call_id == "async_call_456" == injected["tool_call_id"]
    assert "messages" in injected["state"]


def test_tool_runtime_state_access():
    """Ports test_tool_runtime_state_access: the tool sees both human messages and the
    model's call (3 messages)."""

    @tool
    def state_aware_tool(query: str, runtime: ToolRuntime) -> str:
        """Tool that counts the messages in the state."""
        return f"Query: {query}, Message count: {len(runtime.state.get('messages', []))}"

    out = run(
        [[call("state_aware_tool", {"query": "test"}, id="state_call")], "done"],
        [state_aware_tool],
        {"messages": [HumanMessage("Hello"), HumanMessage("World")]},
    )
    assert "Message count: 3" in tool_text(out["messages"][3])


def test_tool_runtime_with_store():
    """Ports test_tool_runtime_with_store; loopgraphs takes a store, so writes land."""
    store = InMemoryStore()

    @tool
    def store_tool(key: str, value: str, runtime: ToolRuntime) -> str:
        """Tool that writes to the store."""
        if runtime.store is None:
            return f"No store (key={key}, value={value})"
        runtime.store.put(("test",), key, {"data": value})
        return f"Stored {key}={value}"

    @tool
    def check_runtime_tool(runtime: ToolRuntime) -> str:
        """Tool that reports what the runtime holds."""
        return f"Runtime: store={runtime.store is not None}"

    out = run(
        [
            [call("store_tool", {"key": "foo", "value": "bar"}, id="call_1")],
            [call("check_runtime_tool", {}, id="call_2")],
            "done",
        ],
        [store_tool, check_runtime_tool],
        store=store,
    )
    first, second = tool_messages(out)
    assert tool_text(first) == "Stored foo=bar"
    assert tool_text(second) == "Runtime: store=True"
    assert store.get(("test",), "foo").value == {"data": "bar"}


def test_tool_runtime_without_store_is_none():
    """Ports test_tool_runtime_with_store (create_agent without a store)."""

    @tool
    def store_tool(key: str, runtime: ToolRuntime) -> str:
        """Tool that checks the store."""
        return "No store" if runtime.store is None else "Has store"

    out = run([[call("store_tool", {"key": "foo"})], "done"], [store_tool])
    assert tool_text(tool_messages(out)[0]) == "No store"


def test_tool_runtime_with_multiple_tools():
    """Ports test_tool_runtime_with_multiple_tools."""
    log: list[tuple[str, str, Any]] = []

    @tool
    def tool_a(x: int, runtime: ToolRuntime) -> str:
        """First tool."""
        log.append(("tool_a", runtime.tool_call_id, x))
        return f"A: {x}"

    @tool
    def tool_b(y: str, runtime: ToolRuntime) -> str:
        """Second tool."""
        log.append(("tool_b", runtime.tool_call_id, y))
        return f"B: {y}"

    out = run(
        [
            [
                call("tool_a", {"x": 1}, id="call_a"),
                call("tool_b", {"y": "test"}, id="call_b"),
            ],
            "done",
        ],
        [tool_a, tool_b],
    )
    assert {(name, call_id) for name, call_id, _ in log} == {
        ("tool_a", "call_a"),
        ("tool_b", "call_b"),
    }
    assert [(m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("call_a", "A: 1"),
        ("call_b", "B: test"),
    ]


async def test_tool_runtime_parallel_execution():
    """Ports test_tool_runtime_parallel_execution (async tools under ainvoke)."""
    log: list[tuple[str, str, Any]] = []

    @tool
    async def parallel_tool_1(x: int, runtime: ToolRuntime) -> str:
        """First parallel tool."""
        log.append(("tool_1", runtime.tool_call_id, x))
        return f"Tool1: {x}"

    @tool
    async def parallel_tool_2(y: int, runtime: ToolRuntime) -> str:
        """Second parallel tool."""
        log.append(("tool_2", runtime.tool_call_id, y))
        return f"Tool2: {y}"

    model = FakeToolModel(
        turns=[
            [
                call("parallel_tool_1", {"x": 10}, id="parallel_1"),
                call("parallel_tool_2", {"y": 20}, id="parallel_2"),
            ],
            "done",
        ]
    )
    graph = create_react_graph(model, [parallel_tool_1, parallel_tool_2], tool_mode="native")
    out = await graph.ainvoke({"messages": [HumanMessage("Run parallel")]})
    assert {(name, call_id) for name, call_id, _ in log} == {
        ("tool_1", "parallel_1"),
        ("tool_2", "parallel_2"),
    }
    assert [(m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("parallel_1", "Tool1: 10"),
        ("parallel_2", "Tool2: 20"),
    ]


def test_tool_runtime_config_access():
    """Ports test_tool_runtime_config_access: the run's config reaches the tool."""
    seen_config: dict[str, Any] = {}

    @tool
    def config_tool(x: int, runtime: ToolRuntime) -> str:
        """Tool that reads the config."""
        seen_config.update(runtime.config or {})
        return f"Config accessed for {x}"

    model = FakeToolModel(turns=[[call("config_tool", {"x": 5}, id="config_call")], "done"])
    graph = create_react_graph(model, [config_tool], tool_mode="native")
    out = graph.invoke(
        {"messages": [HumanMessage("Test config")]},
        {"configurable": {"user_id": "u-7"}, "tags": ["compat"]},
    )
    assert tool_text(out["messages"][2]) == "Config accessed for 5"
    assert seen_config["configurable"]["user_id"] == "u-7"
    assert "compat" in seen_config.get("tags", [])


def test_tool_runtime_name_based_injection():
    """Ports test_tool_runtime_name_based_injection: a parameter named ``runtime`` is
    injected even without the ToolRuntime annotation."""
    injected: dict[str, Any] = {}

    @tool
    def name_based_tool(x: int, runtime: Any) -> str:
        """Tool with an unannotated runtime parameter."""
        injected["is_tool_runtime"] = isinstance(runtime, ToolRuntime)
        injected["tool_call_id"] = getattr(runtime, "tool_call_id", None)
        return f"Processed {x}"

    out = run([[call("name_based_tool", {"x": 42}, id="name_call_123")], "done"], [name_based_tool])
    assert tool_text(out["messages"][2]) == "Processed 42"
    assert injected == {"is_tool_runtime": True, "tool_call_id": "name_call_123"}


def test_tool_runtime_no_runtime_parameter():
    """Ports test_tool_runtime_no_runtime_parameter."""

    @tool
    def regular_tool(x: int) -> str:
        """Regular tool."""
        return f"Regular: {x}"

    @tool
    def runtime_tool(y: int, runtime: ToolRuntime) -> str:
        """Tool with runtime."""
        return f"Runtime: {y}, call_id: {runtime.tool_call_id}"

    out = run(
        [
            [
                call("regular_tool", {"x": 1}, id="regular_call"),
                call("runtime_tool", {"y": 2}, id="runtime_call"),
            ],
            "done",
        ],
        [regular_tool, runtime_tool],
    )
    assert [tool_text(m) for m in tool_messages(out)] == [
        "Regular: 1",
        "Runtime: 2, call_id: runtime_call",
    ]


def test_tool_runtime_error_then_success():
    """Ports test_tool_runtime_error_handling; a raising runtime tool is an error
    message in loopgraphs rather than an exception."""

    @tool
    def error_tool(x: int, runtime: ToolRuntime) -> str:
        """Tool that fails on zero."""
        assert runtime.tool_call_id
        if x == 0:
            raise ValueError("Cannot process zero")
        return f"Processed: {x}"

    out = run(
        [
            [call("error_tool", {"x": 0}, id="error_call")],
            [call("error_tool", {"x": 5}, id="success_call")],
            "done",
        ],
        [error_tool],
    )
    first, second = tool_messages(out)
    assert first.status == "error" and "Cannot process zero" in tool_text(first)
    assert second.status == "success" and tool_text(second) == "Processed: 5"
    assert out["status"] == "completed"


def test_tool_runtime_context():
    """Ports test_tool_node_tool_runtime_generic / test_dynamic_model_with_context: the
    run's context reaches ToolRuntime.context, coerced to the context schema."""

    @dataclasses.dataclass
    class MyContext:
        some_info: str

    @tool
    def get_info(rt: ToolRuntime[MyContext]) -> str:
        """Return info from the context."""
        assert isinstance(rt.context, MyContext)
        return rt.context.some_info

    model = FakeToolModel(turns=[[call("get_info", {})], "done", [call("get_info", {})], "done"])
    graph = create_react_graph(model, [get_info], tool_mode="native", context_schema=MyContext)
    out = graph.invoke({"messages": [HumanMessage("info?")]}, context={"some_info": "test_info"})
    assert tool_text(tool_messages(out)[0]) == "test_info"
    out = graph.invoke(
        {"messages": [HumanMessage("info?")]}, context=MyContext(some_info="other_info")
    )
    assert tool_text(tool_messages(out)[0]) == "other_info"


def test_tool_runtime_context_typed_dict():
    """Ports the context half of test_tool_runtime_basic_injection with a TypedDict."""

    class Ctx(TypedDict):
        user_id: str

    @tool
    def whoami(runtime: ToolRuntime) -> str:
        """Who is asking."""
        return runtime.context["user_id"]

    model = FakeToolModel(turns=[[call("whoami", {})], "done"])
    graph = create_react_graph(model, [whoami], tool_mode="native", context_schema=Ctx)
    out = graph.invoke({"messages": [HumanMessage("who?")]}, context={"user_id": "user_42"})
    assert tool_text(tool_messages(out)[0]) == "user_42"


# --- custom state --------------------------------------------------------------------


class CustomState(TypedDict, total=False):
    custom_field: str


class MultiState(TypedDict, total=False):
    user_id: str
    session_id: str
    context: str


@tool
def simple_tool(x: int) -> str:
    """Simple tool for basic tests."""
    return f"Result: {x}"


def test_state_schema_single_custom_field():
    """Ports test_state_schema_single_custom_field."""
    out = run(
        [[call("simple_tool", {"x": 1}, id="call_1")], "done"],
        [simple_tool],
        {"messages": [HumanMessage("Test")], "custom_field": "test_value"},
        state_schema=CustomState,
    )
    assert out["custom_field"] == "test_value"
    assert len(out["messages"]) == 4


def test_state_schema_multiple_custom_fields():
    """Ports test_state_schema_multiple_custom_fields."""
    out = run(
        [[call("simple_tool", {"x": 1}, id="call_1")], "done"],
        [simple_tool],
        {
            "messages": [HumanMessage("Test")],
            "user_id": "user_123",
            "session_id": "session_456",
            "context": "test_ctx",
        },
        state_schema=MultiState,
    )
    assert (out["user_id"], out["session_id"], out["context"]) == (
        "user_123",
        "session_456",
        "test_ctx",
    )
    assert len(out["messages"]) == 4


def test_state_schema_with_messages_key():
    """The state schema may redeclare ``messages`` (AgentState subclasses do)."""
    from langchain_core.messages import AnyMessage
    from langgraph.graph.message import add_messages

    class WithMessages(TypedDict, total=False):
        messages: Annotated[list[AnyMessage], add_messages]
        counter: int

    out = run(
        [[call("simple_tool", {"x": 3})], "done"],
        [simple_tool],
        {"messages": [HumanMessage("Test")], "counter": 5},
        state_schema=WithMessages,
    )
    assert out["counter"] == 5
    assert tool_text(tool_messages(out)[0]) == "Result: 3"
    assert out["answer"] == "done"


@pytest.mark.parametrize("mode", MODES)
def test_state_schema_with_tool_runtime(mode):
    """Ports test_state_schema_with_tool_runtime."""

    class ExtendedState(TypedDict, total=False):
        counter: int

    @tool
    def counter_tool(x: int, runtime: ToolRuntime) -> str:
        """Tool that reads a custom state field."""
        return f"Counter is {runtime.state['counter']}, x is {x}"

    model = model_for(mode, [act(mode, "counter_tool", {"x": 10}), final(mode, "done")])
    graph = create_react_graph(model, [counter_tool], tool_mode=mode, state_schema=ExtendedState)
    out = graph.invoke({"messages": [HumanMessage("Test")], "counter": 5})
    assert "Counter is 5" in tool_text(tool_messages(out)[0])
    assert out["counter"] == 5


def test_state_schema_none_uses_default():
    """Ports test_state_schema_none_uses_default."""
    out = run(
        [[call("simple_tool", {"x": 1}, id="call_1")], "done"],
        [simple_tool],
        state_schema=None,
    )
    assert len(out["messages"]) == 4
    assert "Result: 1" in tool_text(out["messages"][2])


async def test_state_schema_async():
    """Ports test_state_schema_async."""

    class AsyncState(TypedDict, total=False):
        async_field: str

    @tool
    async def async_tool(x: int) -> str:
        """Async tool."""
        return f"Async: {x}"

    model = FakeToolModel(turns=[[call("async_tool", {"x": 99}, id="call_1")], "done"])
    graph = create_react_graph(model, [async_tool], tool_mode="native", state_schema=AsyncState)
    out = await graph.ainvoke(
        {"messages": [HumanMessage("Test async")], "async_field": "async_value"}
    )
    assert out["async_field"] == "async_value"
    assert "Async: 99" in tool_text(out["messages"][2])


# --- all injections together ---------------------------------------------------------


class SessionState(TypedDict, total=False):
    user_id: str
    session_id: str


def test_combined_injected_state_runtime_store():
    """Ports test_combined_injected_state_runtime_store."""
    injected: dict[str, Any] = {}
    schema = {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "Where"}},
        "required": ["location"],
    }

    @tool(args_schema=schema)
    def multi_injection_tool(
        location: str,
        state: Annotated[Any, InjectedState],
        runtime: ToolRuntime,
        store: Annotated[Any, InjectedStore()],
    ) -> str:
        """Tool that uses injected state, runtime and store together."""
        injected.update(
            user_id=state.get("user_id"),
            session_id=state.get("session_id"),
            tool_call_id=runtime.tool_call_id,
            store=store,
            same_state=runtime.state == state,
        )
        return f"Weather info for {location}"

    store = InMemoryStore()
    out = run(
        [
            [call("multi_injection_tool", {"location": "San Francisco"}, id="call_weather_123")],
            "ok",
        ],
        [multi_injection_tool],
        {
            "messages": [HumanMessage("What's the weather like?")],
            "user_id": "user_42",
            "session_id": "session_abc123",
        },
        state_schema=SessionState,
        store=store,
    )
    (message,) = tool_messages(out)
    assert tool_text(message) == "Weather info for San Francisco"
    assert message.tool_call_id == "call_weather_123"
    assert injected["user_id"] == "user_42" and injected["session_id"] == "session_abc123"
    assert injected["tool_call_id"] == "call_weather_123"
    assert injected["store"] is store
    assert injected["same_state"] is True


async def test_combined_injected_state_runtime_store_async():
    """Ports test_combined_injected_state_runtime_store_async."""

    class ApiState(TypedDict, total=False):
        api_key: str
        request_id: str

    injected: dict[str, Any] = {}

    @tool
    async def search_tool(
        query: str,
        max_results: int,
        state: Annotated[Any, InjectedState],
        runtime: ToolRuntime,
        store: Annotated[Any, InjectedStore()],
    ) -> str:
        """Async tool with several injections."""
        injected.update(api_key=state.get("api_key"), tool_call_id=runtime.tool_call_id)
        await store.aput(("test", "namespace"), "test_key", {"query": query})
        injected["stored"] = (await store.aget(("test", "namespace"), "test_key")) is not None
        return f"Found {max_results} results for '{query}'"

    model = FakeToolModel(
        turns=[
            [call("search_tool", {"query": "test search", "max_results": 10}, id="call_456")],
            "done",
        ]
    )
    graph = create_react_graph(
        model, [search_tool], tool_mode="native", state_schema=ApiState, store=InMemoryStore()
    )
    out = await graph.ainvoke(
        {"messages": [HumanMessage("Search")], "api_key": "sk-test", "request_id": "req_999"}
    )
    assert tool_text(tool_messages(out)[0]) == "Found 10 results for 'test search'"
    assert injected == {"api_key": "sk-test", "tool_call_id": "call_456", "stored": True}
    assert out["request_id"] == "req_999"


def test_injected_tool_call_id():
    """Ports the InjectedToolCallId cases of test_tool_node_command."""

    @tool
    def echo_id(tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Echo the call id."""
        return f"id={tool_call_id}"

    out = run([[call("echo_id", {}, id="abc-1")], "done"], [echo_id])
    assert tool_text(tool_messages(out)[0]) == "id=abc-1"


# --- validation errors only show the model's own arguments -----------------------------


class SecretState(TypedDict, total=False):
    secret_data: str


def test_validation_error_excludes_injected_state():
    """Ports test_tool_invocation_error_excludes_injected_state."""

    @tool
    def tool_with_injected_state(some_val: int, state: Annotated[dict, InjectedState]) -> str:
        """Tool that uses injected state."""
        return f"some_val: {some_val}"

    out = run(
        [[call("tool_with_injected_state", {"wrong_arg": "value"}, id="call_1")], "done"],
        [tool_with_injected_state],
        {"messages": [HumanMessage("Test")], "secret_data": "sensitive_secret_123"},
        state_schema=SecretState,
    )
    (message,) = tool_messages(out)
    assert message.status == "error"
    assert "some_val" in tool_text(message)
    assert "secret_data" not in message.content
    assert "sensitive_secret_123" not in message.content


async def test_validation_error_excludes_injected_state_async():
    """Ports test_tool_invocation_error_excludes_injected_state_async and
    test_create_agent_error_content_with_multiple_params."""

    class ApiState(TypedDict, total=False):
        api_key: str

    @tool
    async def complex_tool(
        query: str,
        limit: int,
        state: Annotated[dict, InjectedState],
        store: Annotated[BaseStore, InjectedStore()],
        runtime: ToolRuntime,
    ) -> str:
        """A tool with injected and model-controlled parameters."""
        return f"Results for {query}"

    model = FakeToolModel(
        turns=[[call("complex_tool", {"query": 12345}, id="call_complex_1")], "done"]
    )
    graph = create_react_graph(
        model, [complex_tool], tool_mode="native", state_schema=ApiState, store=InMemoryStore()
    )
    out = await graph.ainvoke(
        {"messages": [HumanMessage("Search")], "api_key": "sk-secret-key-abc123xyz"}
    )
    (message,) = tool_messages(out)
    assert message.status == "error" and message.tool_call_id == "call_complex_1"
    text = tool_text(message)
    assert "limit" in text
    assert "sk-secret-key" not in message.content
    assert "sk-secret-key" not in "\n".join(str(m.content) for m in model.prompts[1])
