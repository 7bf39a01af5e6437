"""The ReAct loop as an agent: prompts, history, state, interrupts, subgraphs, streaming.

Ports of langgraph ``libs/prebuilt/tests/test_react_agent.py`` and langchain
``libs/langchain_v1/tests/unit_tests/agents/test_react_agent.py`` (which share their
cases); each test names the case it ports.
"""

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call, message_text
from tests.compat.support import (
    MODES,
    act,
    final,
    model_for,
    paused,
    seen,
    tool_messages,
    tool_text,
)


def system_text(prompt: list) -> str:
    """The text of the system messages that open a prompt."""
    parts = []
    for message in prompt:
        if not isinstance(message, SystemMessage):
            break
        parts.append(message_text(message))
    return "\n".join(parts)


def kinds(messages: list) -> list[str]:
    return [m.type for m in messages]


# --- plain chat, persistence ---------------------------------------------------------


def test_no_tools_answers_and_saves_the_thread():
    """Ports test_no_prompt (+ test_dynamic_model_with_checkpointer's thread growth)."""
    model = FakeToolModel(turns=["hello back", "second answer"])
    saver = InMemorySaver()
    graph = create_react_graph(model, [], checkpointer=saver)
    config = {"configurable": {"thread_id": "123"}}
    out = graph.invoke({"messages": [HumanMessage("hi?")]}, config)
    assert kinds(out["messages"]) == ["human", "ai"]
    assert [message_text(m) for m in out["messages"]] == ["hi?", "hello back"]
    assert out["answer"] == "hello back" and out["status"] == "completed"
    saved = saver.get_tuple(config)
    assert saved is not None
    assert [message_text(m) for m in saved.checkpoint["channel_values"]["messages"]] == [
        "hi?",
        "hello back",
    ]
    assert saved.pending_writes == []
    again = graph.invoke({"messages": [HumanMessage("more?")]}, config)
    assert [message_text(m) for m in again["messages"]] == [
        "hi?",
        "hello back",
        "more?",
        "second answer",
    ]
    assert "hi?" in seen(model.prompts[1]) and "hello back" in seen(model.prompts[1])


async def test_no_tools_answers_and_saves_the_thread_async():
    """Ports test_no_prompt_async."""
    model = FakeToolModel(turns=["hello back"])
    saver = InMemorySaver()
    graph = create_react_graph(model, [], checkpointer=saver)
    config = {"configurable": {"thread_id": "123"}}
    out = await graph.ainvoke({"messages": [HumanMessage("hi?")]}, config)
    assert [message_text(m) for m in out["messages"]] == ["hi?", "hello back"]
    saved = await saver.aget_tuple(config)
    assert saved is not None and saved.pending_writes == []
    assert len(saved.checkpoint["channel_values"]["messages"]) == 2


# --- system prompts ------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["Foo", SystemMessage("Foo")],
    ids=["string", "system_message"],
)
def test_system_prompt_comes_first(prompt):
    """Ports test_string_prompt / test_system_message_prompt (langchain
    test_create_agent_with_system_message_string/_instance): the caller's prompt opens
    the system text, loopgraphs' own instructions follow it."""
    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(model, [], system_prompt=prompt)
    out = graph.invoke({"messages": [HumanMessage("hi?")]})
    assert out["answer"] == "ok"
    (prompt_seen,) = model.prompts
    text = system_text(prompt_seen)
    assert text.lstrip().startswith("Foo")
    assert len(text.strip()) > len("Foo")
    assert isinstance(prompt_seen[-1], HumanMessage) and message_text(prompt_seen[-1]) == "hi?"
    assert [message_text(m) for m in out["messages"]] == ["hi?", "ok"]


def test_system_message_with_content_blocks():
    """Ports langchain test_system_message.py::test_create_agent_with_various_system_prompts
    (a SystemMessage with a list of text blocks)."""
    prompt = SystemMessage(
        content=[
            {"type": "text", "text": "You are a helpful assistant."},
            {"type": "text", "text": "Follow these rules carefully."},
        ]
    )
    model = FakeToolModel(turns=["ok"])
    out = create_react_graph(model, [], system_prompt=prompt).invoke(
        {"messages": [HumanMessage("hi?")]}
    )
    assert out["answer"] == "ok"
    text = system_text(model.prompts[0])
    assert text.lstrip().startswith("You are a helpful assistant.")
    assert "Follow these rules carefully." in text


@pytest.mark.parametrize("returns", ["string", "system_message"])
def test_callable_system_prompt_reads_state(returns):
    """Ports test_callable_prompt: a callable prompt is computed from the state."""

    def prompt(state: dict[str, Any]):
        text = f"Bar {message_text(state['messages'][-1])}"
        return text if returns == "string" else SystemMessage(text)

    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(model, [], system_prompt=prompt)
    graph.invoke({"messages": [HumanMessage("hi?")]})
    assert system_text(model.prompts[0]).lstrip().startswith("Bar hi?")


async def test_callable_system_prompt_under_ainvoke():
    """Ports test_callable_prompt_async (with a plain callable, see DIFFERENCES.md)."""
    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(
        model, [], system_prompt=lambda state: f"Bar {message_text(state['messages'][-1])}"
    )
    out = await graph.ainvoke({"messages": [HumanMessage("hi?")]})
    assert out["answer"] == "ok"
    assert system_text(model.prompts[0]).lstrip().startswith("Bar hi?")


def test_system_prompt_is_sent_on_every_call():
    """Ports test_prompt_with_store's point that the prompt holds on later turns."""

    def add(a: int, b: int) -> int:
        """Adds a and b."""
        return a + b

    model = FakeToolModel(turns=[[call("add", {"a": 1, "b": 2})], "3"])
    graph = create_react_graph(model, [add], tool_mode="native", system_prompt="User is Alice")
    graph.invoke({"messages": [("user", "hi")]})
    assert model.call_count == 2
    for prompt in model.prompts:
        assert system_text(prompt).lstrip().startswith("User is Alice")


def test_callable_system_prompt_receives_custom_state():
    """Ports test_dynamic_model_receives_correct_state: the whole state, custom keys
    included, reaches the user's callable (the model itself is static in loopgraphs)."""

    class CustomState(TypedDict, total=False):
        custom_field: str

    received: list[dict] = []

    def prompt(state):
        received.append(dict(state))
        return f"custom={state.get('custom_field')}"

    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(model, [], state_schema=CustomState, system_prompt=prompt)
    out = graph.invoke({"messages": [HumanMessage("hello")], "custom_field": "test_value"})
    assert out["custom_field"] == "test_value"
    assert received and received[0]["custom_field"] == "test_value"
    assert [message_text(m) for m in received[0]["messages"]] == ["hello"]
    assert "custom=test_value" in system_text(model.prompts[0])


# --- state updates from tools, interrupts ----------------------------------------------


class NameState(TypedDict, total=False):
    user_name: str


@tool
def get_user_name(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Retrieve the user's name."""
    user_name = interrupt("Please provide the user name:")
    return Command(
        update={
            "user_name": user_name,
            "messages": [
                ToolMessage("Successfully retrieved user name", tool_call_id=tool_call_id)
            ],
        }
    )


@pytest.mark.parametrize("mode", MODES)
def test_tool_interrupts_then_updates_state(mode):
    """Ports test_react_agent_update_state: interrupt() inside a tool pauses the run, the
    resumed tool's Command(update=...) sets a custom state key, and the callable prompt
    sees it on the next model call."""

    def prompt(state):
        name = state.get("user_name")
        return f"User name is {name}" if name else "The user's name is unknown."

    model = model_for(mode, [act(mode, "get_user_name", {}), final(mode, "Hi Archibald")])
    graph = create_react_graph(
        model,
        [get_user_name],
        tool_mode=mode,
        state_schema=NameState,
        system_prompt=prompt,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"name-{mode}"}}
    graph.invoke({"messages": [("user", "what's my name")]}, config)
    assert paused(graph, config) == ["Please provide the user name:"]
    assert graph.get_state(config).next == ("call_tool",)
    out = graph.invoke(Command(resume="Archibald"), config)
    assert out["user_name"] == "Archibald"
    assert out["answer"] == "Hi Archibald" and out["status"] == "completed"
    assert kinds(out["messages"]) == ["human", "ai", "tool", "ai"]
    tool_message = out["messages"][2]
    assert tool_text(tool_message) == "Successfully retrieved user name"
    assert tool_message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert tool_message.name == "get_user_name"
    assert "User name is Archibald" in system_text(model.prompts[-1])


def test_parallel_calls_with_one_interrupting_tool():
    """Ports test_react_agent_parallel_tool_calls: one of two parallel tools pauses for
    a human; after resuming, both results are in the transcript in call order and the
    paused tool's code after interrupt() ran once."""
    after_interrupt = 0

    @tool
    def human_assistance(query: str) -> str:
        """Request assistance from a human."""
        nonlocal after_interrupt
        response = interrupt({"query": query})
        after_interrupt += 1
        return response["data"]

    @tool
    def get_weather(location: str) -> str:
        """Get the weather."""
        return "It's sunny!"

    model = FakeToolModel(
        turns=[
            [
                call("get_weather", {"location": "sf"}, id="1"),
                call("human_assistance", {"query": "request help"}, id="2"),
            ],
            "Sunny, and the human said hello.",
        ]
    )
    graph = create_react_graph(
        model, [human_assistance, get_weather], tool_mode="native", checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"messages": [("user", "Get user assistance and check the weather")]}, config)
    assert paused(graph, config) == [{"query": "request help"}]
    assert model.call_count == 1
    out = graph.invoke(Command(resume={"data": "Hello"}), config)
    assert after_interrupt == 1
    assert kinds(out["messages"]) == ["human", "ai", "tool", "tool", "ai"]
    first, second = tool_messages(out)
    assert (first.tool_call_id, tool_text(first)) == ("1", "It's sunny!")
    assert (second.tool_call_id, tool_text(second)) == ("2", "Hello")
    assert out["answer"] == "Sunny, and the human said hello."


def test_interrupt_inside_tool_pauses_in_call_tool():
    """Ports test_tool_node_node_interrupt (react part): the paused task is the tool node
    and the interrupt carries the tool's value; resuming runs the tool to completion."""

    def tool_normal(some_val: int) -> str:
        """Tool docstring."""
        return "normal"

    def tool_interrupt(some_val: int) -> str:
        """Tool docstring."""
        return interrupt("provide value for foo")

    model = FakeToolModel(
        turns=[
            [
                call("tool_interrupt", {"some_val": 0}, id="1"),
                call("tool_normal", {"some_val": 1}, id="2"),
            ],
            "finished",
        ]
    )
    graph = create_react_graph(
        model, [tool_interrupt, tool_normal], tool_mode="native", checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"messages": [HumanMessage("hi?")]}, config)
    state = graph.get_state(config)
    assert state.next == ("call_tool",)
    assert state.tasks[0].name == "call_tool"
    assert [i.value for i in state.tasks[0].interrupts] == ["provide value for foo"]
    out = graph.invoke(Command(resume="foo value"), config)
    assert [(m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("1", "foo value"),
        ("2", "normal"),
    ]
    assert out["answer"] == "finished"


# --- injected state and store ----------------------------------------------------------


class FooState(TypedDict, total=False):
    foo: int


@pytest.mark.parametrize("mode", MODES)
def test_tools_get_injected_state_and_store(mode):
    """Ports test_create_react_agent_inject_vars: a tool reads a custom state key and the
    store; the custom key flows out of the run."""
    store = InMemoryStore()
    store.put(("test",), "test_key", {"bar": 3})

    def tool1(
        some_val: int,
        state: Annotated[dict, InjectedState],
        store: Annotated[BaseStore, InjectedStore()],
    ) -> str:
        """Tool 1 docstring."""
        return str(some_val + state["foo"] + store.get(("test",), "test_key").value["bar"])

    model = model_for(mode, [act(mode, "tool1", {"some_val": 1}), final(mode, "six")])
    graph = create_react_graph(model, [tool1], tool_mode=mode, state_schema=FooState, store=store)
    out = graph.invoke({"messages": [{"role": "user", "content": "hi"}], "foo": 2})
    assert kinds(out["messages"]) == ["human", "ai", "tool", "ai"]
    (tool_message,) = tool_messages(out)
    assert tool_text(tool_message) == "6"
    assert tool_message.name == "tool1"
    assert tool_message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert out["foo"] == 2 and out["answer"] == "six"


# --- tools built on graphs, streaming ------------------------------------------------


def test_tools_that_run_subgraphs():
    """Ports test_react_with_subgraph_tools: tools invoking compiled graphs, called in
    parallel, answer in call order."""

    class State(TypedDict):
        a: int
        b: int

    class Output(TypedDict):
        result: int

    def add(state):
        return {"result": state["a"] + state["b"]}

    def multiply(state):
        return {"result": state["a"] * state["b"]}

    add_graph = StateGraph(State, output_schema=Output).add_node(add).add_edge(START, "add")
    mul_graph = StateGraph(State, output_schema=Output).add_node(multiply)
    mul_graph.add_edge(START, "multiply")
    add_subgraph, mul_subgraph = add_graph.compile(), mul_graph.compile()

    def addition(a: int, b: int) -> int:
        """Add two numbers."""
        return add_subgraph.invoke({"a": a, "b": b})["result"]

    def multiplication(a: int, b: int) -> int:
        """Multiply two numbers."""
        return mul_subgraph.invoke({"a": a, "b": b})["result"]

    model = FakeToolModel(
        turns=[
            [
                call("addition", {"a": 2, "b": 3}, id="1"),
                call("multiplication", {"a": 2, "b": 3}, id="2"),
            ],
            "5 and 6",
        ]
    )
    graph = create_react_graph(
        model, [addition, multiplication], tool_mode="native", checkpointer=InMemorySaver()
    )
    out = graph.invoke(
        {"messages": [HumanMessage("What's 2 + 3 and 2 * 3?")]},
        {"configurable": {"thread_id": "1"}},
    )
    assert kinds(out["messages"]) == ["human", "ai", "tool", "tool", "ai"]
    assert [(m.name, m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("addition", "1", "5"),
        ("multiplication", "2", "6"),
    ]
    assert out["answer"] == "5 and 6"


def _weather_graph(model):
    @tool
    def get_weather(city: str) -> str:
        """Get the weather of a city."""
        return f"The weather of {city} is sunny."

    return create_react_graph(
        model, [get_weather], tool_mode="native", system_prompt="You are a travel assistant."
    )


def test_streamed_inside_another_graph():
    """Ports test_react_agent_subgraph_streaming_sync: a node of an outer graph streams
    the loop in messages mode and collects the model's text."""
    graph = _weather_graph(
        FakeToolModel(turns=[[call("get_weather", {"city": "Tokyo"})], "Tokyo is sunny."])
    )

    def agent_node(state: MessagesState, config):
        text = ""
        for chunk, _meta in graph.stream(
            {"messages": [("user", message_text(state["messages"][-1]))]},
            config,
            stream_mode="messages",
        ):
            if isinstance(chunk, AIMessage):
                text += message_text(chunk)
        return {"messages": [("assistant", text)]}

    outer = StateGraph(MessagesState).add_node("agent", agent_node)
    outer.add_edge(START, "agent")
    result = outer.compile().invoke({"messages": [("user", "What is the weather in Tokyo?")]})
    assert len(result["messages"]) == 2
    assert "Tokyo is sunny." in message_text(result["messages"][1])


async def test_streamed_as_a_subgraph_node():
    """Ports test_react_agent_subgraph_streaming: the compiled loop as a node of an outer
    graph; streaming the outer graph with subgraphs=True yields the tool result and the
    model's answer from inside the loop."""
    graph = _weather_graph(
        FakeToolModel(turns=[[call("get_weather", {"city": "Tokyo"})], "Tokyo is sunny."])
    )
    outer = StateGraph(MessagesState).add_node("agent", graph)
    outer.add_edge(START, "agent")
    compiled = outer.compile()
    events = [
        event
        async for event in compiled.astream(
            {"messages": [("user", "What is the weather in Tokyo?")]},
            stream_mode="messages",
            subgraphs=True,
        )
    ]
    namespaces = {namespace for namespace, _ in events}
    assert any(namespace for namespace in namespaces), "events come from inside the loop"
    chunks = [chunk for _, (chunk, _meta) in events]
    tool_results = [tool_text(c) for c in chunks if isinstance(c, ToolMessage)]
    assert "The weather of Tokyo is sunny." in tool_results
    assert "Tokyo is sunny." in "".join(message_text(c) for c in chunks if isinstance(c, AIMessage))


# --- chat history validation --------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        [HumanMessage("What's the weather?")],
        [HumanMessage("What's the weather?"), AIMessage("It is sunny and 75°F.")],
        [
            HumanMessage("What's the weather?"),
            AIMessage(
                "Let me check.", tool_calls=[{"id": "call1", "name": "get_weather", "args": {}}]
            ),
            ToolMessage("Sunny, 75°F", tool_call_id="call1"),
            AIMessage("It is sunny and 75°F."),
            HumanMessage("And tomorrow?"),
        ],
    ],
    ids=["human", "human_ai", "answered_tool_calls"],
)
def test_valid_history_runs(history):
    """Ports test__validate_messages (accepted histories)."""

    def get_weather() -> str:
        """Get the weather."""
        return "Sunny"

    model = FakeToolModel(turns=["ok"])
    out = create_react_graph(model, [get_weather], tool_mode="native").invoke({"messages": history})
    assert out["answer"] == "ok" and model.call_count == 1


@pytest.mark.parametrize(
    "history",
    [
        [
            AIMessage(
                "I'll check.",
                tool_calls=[
                    {"id": "call1", "name": "get_weather", "args": {}},
                    {"id": "call2", "name": "get_time", "args": {}},
                ],
            )
        ],
        [
            HumanMessage("What's the weather and time?"),
            AIMessage(
                "I'll check.",
                tool_calls=[
                    {"id": "call1", "name": "get_weather", "args": {}},
                    {"id": "call2", "name": "get_time", "args": {}},
                ],
            ),
            ToolMessage("Sunny, 75°F", tool_call_id="call1"),
            AIMessage("Sunny. Let me check the time."),
        ],
    ],
    ids=["none_answered", "one_of_two_answered"],
)
def test_unanswered_tool_calls_are_rejected(history):
    """Ports test__validate_messages (rejected histories): ValueError before any call."""

    def get_weather() -> str:
        """Get the weather."""
        return "Sunny"

    def get_time() -> str:
        """Get the time."""
        return "noon"

    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(model, [get_weather, get_time], tool_mode="native")
    with pytest.raises(ValueError):
        graph.invoke({"messages": history})
    assert model.call_count == 0


async def test_unanswered_tool_calls_are_rejected_async():
    """Ports test__validate_messages under ainvoke."""
    model = FakeToolModel(turns=["ok"])
    graph = create_react_graph(model, [], tool_mode="native")
    history = [
        HumanMessage("hi"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "get_weather", "args": {}}]),
    ]
    with pytest.raises(ValueError):
        await graph.ainvoke({"messages": history})
    assert model.call_count == 0
