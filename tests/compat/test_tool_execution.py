"""How the loop runs tools: results, errors, commands, injection, streaming, callbacks.

Ports of langgraph ``libs/prebuilt/tests/test_tool_node.py`` (ToolNode cases, exercised
through ``create_react_graph`` instead of a bare ToolNode) and of the tool cases of
``test_react_agent.py``; each test names the case it ports.
"""

import json
from typing import Annotated, Any, NoReturn

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolArg, InjectedToolCallId, ToolException
from langchain_core.tools import tool as dec_tool
from langgraph.config import get_stream_writer
from langgraph.prebuilt import InjectedState, InjectedStore
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call, message_text
from tests.compat.support import (
    MODES,
    act,
    answered_once,
    final,
    model_for,
    seen,
    tool_messages,
    tool_text,
)


def tool1(some_val: int, some_other_val: str) -> str:
    """Tool 1 docstring."""
    if some_val == 0:
        raise ValueError("Test error")
    return f"{some_val} - {some_other_val}"


async def tool2(some_val: int, some_other_val: str) -> str:
    """Tool 2 docstring."""
    if some_val == 0:
        raise ToolException("Test error")
    return f"tool2: {some_val} - {some_other_val}"


async def tool3(some_val: int, some_other_val: str) -> Any:
    """Tool 3 docstring."""
    return [{"key_1": some_val, "key_2": "foo"}, {"key_1": some_other_val, "key_2": "baz"}]


async def tool4(some_val: int, some_other_val: str) -> Any:
    """Tool 4 docstring."""
    return [{"type": "image_url", "image_url": {"url": "abdc"}}]


@dec_tool
def tool5(some_val: int) -> NoReturn:
    """Tool 5 docstring."""
    raise ToolException("Test error")


tool5.handle_tool_error = "foo"

TOOLS = [tool1, tool2, tool3, tool4, tool5]


def run_native(turns: list, tools: list | None = None, **kwargs: Any):
    model = FakeToolModel(turns=turns)
    graph = create_react_graph(
        model, TOOLS if tools is None else tools, tool_mode="native", **kwargs
    )
    return model, graph


# --- results -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tool1", "1 - foo"),
        ("tool2", "tool2: 1 - foo"),
        ("tool3", json.dumps([{"key_1": 1, "key_2": "foo"}, {"key_1": "foo", "key_2": "baz"}])),
    ],
    ids=["sync", "async", "list_of_dicts"],
)
async def test_tool_result_reaches_transcript_and_model(mode, name, expected):
    """Ports test_tool_node: string results, async tools, JSON-serialised lists (the
    async tools under ainvoke, as in the peer)."""
    model = model_for(
        mode, [act(mode, name, {"some_val": 1, "some_other_val": "foo"}), final(mode, "ok")]
    )
    graph = create_react_graph(model, TOOLS, tool_mode=mode)
    inputs = {"messages": [("user", "go")]}
    out = graph.invoke(inputs) if name == "tool1" else await graph.ainvoke(inputs)
    (message,) = tool_messages(out)
    assert message.type == "tool" and message.name == name
    text = tool_text(message)
    if name == "tool3":
        assert json.loads(text) == json.loads(expected)
    else:
        assert text == expected
    assert message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert text in seen(model.prompts[1])
    assert out["answer"] == "ok"


async def test_tool_results_under_ainvoke():
    """Ports test_tool_node (async half): sync and async tools under ainvoke."""
    _model, graph = run_native(
        [
            [
                call("tool1", {"some_val": 1, "some_other_val": "foo"}, id="some 0"),
                call("tool2", {"some_val": 2, "some_other_val": "bar"}, id="some 1"),
            ],
            "ok",
        ]
    )
    out = await graph.ainvoke({"messages": [("user", "go")]})
    assert [(m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("some 0", "1 - foo"),
        ("some 1", "tool2: 2 - bar"),
    ]


async def test_content_blocks_pass_through():
    """Ports test_tool_node (content blocks): a list of content blocks is kept as blocks."""
    _model, graph = run_native(
        [[call("tool4", {"some_val": 2, "some_other_val": "bar"}, id="some 3")], "ok"]
    )
    out = await graph.ainvoke({"messages": [("user", "show me")]})
    (message,) = tool_messages(out)
    assert isinstance(message.content, list)
    assert {"type": "image_url", "image_url": {"url": "abdc"}} in message.content
    assert message.tool_call_id == "some 3"


def test_mixed_text_and_image_blocks():
    """Ports test_tool_node (content blocks) with text next to an image."""

    def snapshot(label: str) -> Any:
        """Take a labelled picture."""
        return [
            {"type": "text", "text": f"picture of {label}"},
            {"type": "image", "url": "https://example.invalid/p.png"},
        ]

    _model, graph = run_native([[call("snapshot", {"label": "cat"})], "ok"], tools=[snapshot])
    out = graph.invoke({"messages": [("user", "snap")]})
    (message,) = tool_messages(out)
    assert isinstance(message.content, list)
    assert {"type": "image", "url": "https://example.invalid/p.png"} in message.content
    assert "picture of cat" in tool_text(message)


def test_calls_answered_in_call_order():
    """Ports test_tool_node_tool_call_input (several calls, one unknown tool)."""
    _model, graph = run_native(
        [
            [
                call("tool1", {"some_val": 1, "some_other_val": "foo"}, id="some 0"),
                call("tool1", {"some_val": 2, "some_other_val": "bar"}, id="some 1"),
                call("tool9", {"some_val": 1, "some_other_val": "foo"}, id="some 2"),
            ],
            "ok",
        ],
        tools=[tool1],
    )
    out = graph.invoke({"messages": [("user", "go")]})
    first, second, unknown = tool_messages(out)
    assert (first.tool_call_id, tool_text(first), first.status) == ("some 0", "1 - foo", "success")
    assert (second.tool_call_id, tool_text(second)) == ("some 1", "2 - bar")
    assert unknown.tool_call_id == "some 2" and unknown.status == "error"
    assert "tool9" in tool_text(unknown) and "tool1" in tool_text(unknown)


def test_utf8_is_kept():
    """Ports test_tool_node_ensure_utf8."""

    @dec_tool
    def get_day_list(days: list[str]) -> list[str]:
        """Choose days."""
        return days

    data = ["星期一", "水曜日", "목요일", "Friday"]
    _model, graph = run_native([[call("get_day_list", {"days": data})], "ok"], tools=[get_day_list])
    out = graph.invoke({"messages": [("user", "days")]})
    (message,) = tool_messages(out)
    assert tool_text(message) == json.dumps(data, ensure_ascii=False)


# --- failures ----------------------------------------------------------------------


def raises_value_error(some_val: int) -> str:
    """Fails with a ValueError."""
    raise ValueError("Test error")


def raises_tool_exception(some_val: int) -> str:
    """Fails with a ToolException."""
    raise ToolException("Test error")


@pytest.mark.parametrize("mode", MODES)
def test_failures_become_error_messages(mode):
    """Ports test_tool_node_error_handling / _default_exception / _handle_tool_errors_false
    / test_tool_node_incorrect_tool_name: an exception, a ToolException, invalid
    arguments and an unknown tool each give the model an error ToolMessage; nothing is
    raised out of invoke."""
    calls_to_make = [
        ("raises_value_error", {"some_val": 0}),
        ("raises_tool_exception", {"some_val": 0}),
        ("tool1", {"some_val": 0}),
        ("tool7", {"some_val": 1}),
    ]
    replies = [act(mode, name, args) for name, args in calls_to_make] + [final(mode, "sorry")]
    model = model_for(mode, replies)
    graph = create_react_graph(
        model, [tool1, raises_value_error, raises_tool_exception], tool_mode=mode
    )
    out = graph.invoke({"messages": [("user", "go")]})
    assert out["status"] == "completed" and out["answer"] == "sorry"
    messages = tool_messages(out)
    assert len(messages) == 4 and answered_once(out)
    assert all(m.status == "error" for m in messages)
    value_error, tool_exception, invalid, unknown = (tool_text(m) for m in messages)
    assert "Test error" in value_error
    assert "Test error" in tool_exception
    assert "some_other_val" in invalid
    assert "tool7" in unknown
    for index, text in enumerate([value_error, tool_exception, invalid, unknown]):
        assert text.strip() in seen(model.prompts[index + 1])


async def test_parallel_failures_keep_their_ids():
    """Ports test_tool_node_error_handling (ids of failed calls in one step; async
    tools under ainvoke as in the peer)."""
    _model, graph = run_native(
        [
            [
                call("tool1", {"some_val": 0, "some_other_val": "foo"}, id="some id"),
                call("tool2", {"some_val": 0, "some_other_val": "bar"}, id="some other id"),
                call("tool3", {"some_val": 0}, id="another id"),
            ],
            "done",
        ]
    )
    out = await graph.ainvoke({"messages": [("user", "go")]})
    messages = tool_messages(out)
    assert [m.tool_call_id for m in messages] == ["some id", "some other id", "another id"]
    assert [m.status for m in messages] == ["error"] * 3
    assert "Test error" in tool_text(messages[0]) and "Test error" in tool_text(messages[1])
    assert "some_other_val" in tool_text(messages[2])


def test_invalid_arguments_name_the_tool_and_field():
    """Ports test_tool_node_error_handling_default_invocation."""
    _model, graph = run_native(
        [[call("tool1", {"invalid": 0, "args": "foo"}, id="some id")], "done"]
    )
    out = graph.invoke({"messages": [("user", "go")]})
    (message,) = tool_messages(out)
    assert message.status == "error" and message.tool_call_id == "some id"
    assert "some_val" in tool_text(message)


def test_tool_own_error_handler_is_used():
    """Ports test_tool_node_individual_tool_error_handling: a tool's handle_tool_error
    text is what the model sees, as an error."""
    _model, graph = run_native([[call("tool5", {"some_val": 0}, id="some 0")], "done"])
    out = graph.invoke({"messages": [("user", "go")]})
    (message,) = tool_messages(out)
    assert "foo" in tool_text(message) and "Test error" not in tool_text(message)
    assert message.status == "error" and message.tool_call_id == "some 0"


async def test_failures_never_raise_under_ainvoke():
    """Ports test_tool_node_handle_tool_errors_false (loopgraphs always handles errors)."""
    _model, graph = run_native(
        [
            [
                call("tool1", {"some_val": 0, "some_other_val": "foo"}),
                call("tool2", {"some_val": 0, "some_other_val": "bar"}),
                call("tool1", {"some_val": 0}),
            ],
            "done",
        ]
    )
    out = await graph.ainvoke({"messages": [("user", "go")]})
    assert out["status"] == "completed"
    assert [m.status for m in tool_messages(out)] == ["error"] * 3


# --- commands --------------------------------------------------------------------------


class NoteState(TypedDict, total=False):
    note: str


def test_command_and_plain_results_in_one_step():
    """Ports test_tool_node_command (mixing regular tools and a tool returning a
    Command): both results land, in call order, and the Command's update is applied."""

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @dec_tool
    def take_note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Write a note into the state."""
        return Command(
            update={
                "note": text,
                "messages": [ToolMessage("Noted", tool_call_id=tool_call_id)],
            }
        )

    model, graph = run_native(
        [[call("add", {"a": 1, "b": 2}, id="1"), call("take_note", {"text": "hi"}, id="2")], "ok"],
        tools=[add, take_note],
        state_schema=NoteState,
    )
    out = graph.invoke({"messages": [("user", "go")]})
    assert out["note"] == "hi"
    assert [(m.tool_call_id, tool_text(m)) for m in tool_messages(out)] == [
        ("1", "3"),
        ("2", "Noted"),
    ]
    assert "Noted" in seen(model.prompts[1])


@pytest.mark.parametrize("kind", ["sync_tool", "async_tool", "base_tool"])
async def test_command_from_every_kind_of_tool(kind):
    """Ports test_tool_node_command (sync, async and BaseTool subclasses; the async tool
    under ainvoke, as in the peer)."""

    def update(tool_call_id: str) -> Command:
        return Command(
            update={
                "note": "transferred",
                "messages": [ToolMessage("Transferred to Bob", tool_call_id=tool_call_id)],
            }
        )

    if kind == "sync_tool":

        @dec_tool
        def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
            """Transfer to Bob."""
            return update(tool_call_id)

        chosen: Any = transfer
    elif kind == "async_tool":

        @dec_tool
        async def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
            """Transfer to Bob."""
            return update(tool_call_id)

        chosen = transfer
    else:

        class Schema(BaseModel):
            tool_call_id: Annotated[str, InjectedToolCallId]

        class Transfer(BaseTool):
            def _run(self, **kwargs: Any) -> Command:
                return update(kwargs["tool_call_id"])

            async def _arun(self, **kwargs: Any) -> Command:
                return update(kwargs["tool_call_id"])

        chosen = Transfer(name="transfer", description="Transfer to Bob.", args_schema=Schema)

    _model, graph = run_native(
        [[call("transfer", {}, id="1")], "ok"], tools=[chosen], state_schema=NoteState
    )
    inputs = {"messages": [("user", "go")]}
    out = await graph.ainvoke(inputs) if kind == "async_tool" else graph.invoke(inputs)
    assert out["note"] == "transferred"
    (message,) = tool_messages(out)
    assert (message.tool_call_id, tool_text(message)) == ("1", "Transferred to Bob")
    assert message.name == "transfer"


def test_list_of_command_and_tool_message():
    """Ports test_tool_node_list_return_command_and_tool_message."""

    @dec_tool
    def list_tool(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Returns an update and a message."""
        return [
            Command(update={"note": "bar"}),
            ToolMessage(content="done", tool_call_id=tool_call_id),
        ]

    _model, graph = run_native(
        [[call("list_tool", {}, id="call-1")], "ok"], tools=[list_tool], state_schema=NoteState
    )
    out = graph.invoke({"messages": [("user", "go")]})
    assert out["note"] == "bar"
    (message,) = tool_messages(out)
    assert (message.tool_call_id, tool_text(message)) == ("call-1", "done")


def test_command_without_its_tool_message_is_an_error_not_a_crash():
    """Ports test_tool_node_command's validation cases (missing ToolMessage, wrong id):
    the call still gets exactly one ToolMessage, an error, and the run goes on."""

    @dec_tool
    def no_update_tool() -> Command:
        """My tool."""
        return Command(update={"messages": []})

    @dec_tool
    def wrong_id_tool() -> Command:
        """My tool."""
        return Command(update={"messages": [ToolMessage(content="foo", tool_call_id="nope")]})

    model, graph = run_native(
        [[call("no_update_tool", {}, id="1"), call("wrong_id_tool", {}, id="2")], "ok"],
        tools=[no_update_tool, wrong_id_tool],
    )
    out = graph.invoke({"messages": [("user", "go")]})
    assert out["status"] == "completed" and out["answer"] == "ok"
    answers = {m.tool_call_id: m for m in tool_messages(out)}
    assert set(answers) >= {"1", "2"}
    assert answers["1"].status == "error" and answers["2"].status == "error"
    assert model.call_count == 2


# --- artifacts, streaming, callbacks ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_content_and_artifact_keeps_the_artifact(mode):
    """Ports ToolNode's artifact handling (response_format="content_and_artifact")."""

    @dec_tool(response_format="content_and_artifact")
    def fetch_rows(table: str) -> tuple[str, dict]:
        """Fetch rows."""
        return f"2 rows from {table}", {"rows": [1, 2], "table": table}

    model = model_for(mode, [act(mode, "fetch_rows", {"table": "t"}), final(mode, "two")])
    out = create_react_graph(model, [fetch_rows], tool_mode=mode).invoke(
        {"messages": [("user", "rows?")]}
    )
    (message,) = tool_messages(out)
    assert tool_text(message) == "2 rows from t"
    assert message.artifact == {"rows": [1, 2], "table": "t"}
    assert "2 rows from t" in seen(model.prompts[1])


@pytest.mark.parametrize("mode", MODES)
def test_stream_writer_in_tools(mode):
    """Ports test_tool_node_stream_writer: get_stream_writer() works inside a tool."""

    @dec_tool
    def streaming_tool(x: int) -> str:
        """Do something with the writer."""
        writer = get_stream_writer()
        for value in ["foo", "bar", "baz"]:
            writer({"custom_tool_value": value})
        return str(x)

    def script():
        return model_for(mode, [act(mode, "streaming_tool", {"x": 1}), final(mode, "ok")])

    graph = create_react_graph(script(), [streaming_tool], tool_mode=mode)
    custom = list(graph.stream({"messages": [("user", "go")]}, stream_mode="custom"))
    assert [c for c in custom if "custom_tool_value" in c] == [
        {"custom_tool_value": "foo"},
        {"custom_tool_value": "bar"},
        {"custom_tool_value": "baz"},
    ]
    graph = create_react_graph(script(), [streaming_tool], tool_mode=mode)
    both = list(graph.stream({"messages": [("user", "go")]}, stream_mode=["custom", "updates"]))
    custom_at = [i for i, (kind, chunk) in enumerate(both) if kind == "custom"]
    tool_update_at = [
        i
        for i, (kind, chunk) in enumerate(both)
        if kind == "updates"
        and any(
            isinstance(m, ToolMessage) and tool_text(m) == "1"
            for update in chunk.values()
            if isinstance(update, dict)
            for m in update.get("messages", []) or []
        )
    ]
    assert len(custom_at) >= 3 and tool_update_at
    assert max(custom_at) < tool_update_at[0]


async def test_stream_writer_under_astream():
    """Ports test_tool_node_stream_writer on the async path, with an async tool."""

    @dec_tool
    async def streaming_tool(x: int) -> str:
        """Do something with the writer."""
        writer = get_stream_writer()
        writer({"custom_tool_value": "async"})
        return str(x)

    model = FakeToolModel(turns=[[call("streaming_tool", {"x": 1})], "ok"])
    graph = create_react_graph(model, [streaming_tool], tool_mode="native")
    custom = [c async for c in graph.astream({"messages": [("user", "go")]}, stream_mode="custom")]
    assert {"custom_tool_value": "async"} in custom


class ToolStarts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kwargs: Any) -> None:
        self.names.append((serialized or {}).get("name") or kwargs.get("name") or "")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_callbacks_see_tool_runs(mode, how):
    """Tools run as LangChain tool runs: callbacks get on_tool_start (the peers get this
    from ToolNode; see test_tool_node)."""
    handler = ToolStarts()
    model = model_for(
        mode, [act(mode, "tool1", {"some_val": 1, "some_other_val": "x"}), final(mode, "ok")]
    )
    graph = create_react_graph(model, [tool1], tool_mode=mode)
    inputs = {"messages": [("user", "go")]}
    config = {"callbacks": [handler]}
    if how == "invoke":
        graph.invoke(inputs, config)
    else:
        await graph.ainvoke(inputs, config)
    assert handler.names == ["tool1"]


# --- injection -------------------------------------------------------------------------


class FooState(TypedDict, total=False):
    foo: str


class InjectedAuth(InjectedToolArg):
    """A custom kind of hidden tool argument."""


@pytest.mark.parametrize("style", ["whole_state", "whole_state_instance", "key", "messages"])
def test_injected_state(style):
    """Ports test_tool_node_inject_state (TypedDict state; tool1..tool4 shapes)."""

    def whole(some_val: int, state: Annotated[dict, InjectedState]) -> str:
        """Tool docstring."""
        return state["foo"]

    def whole_instance(some_val: int, state: Annotated[dict, InjectedState()]) -> str:
        """Tool docstring."""
        return state["foo"]

    def by_key(
        some_val: int,
        foo: Annotated[str, InjectedState("foo")],
        msgs: Annotated[list, InjectedState("messages")],
    ) -> str:
        """Tool docstring."""
        return foo

    def first_message(some_val: int, msgs: Annotated[list, InjectedState("messages")]) -> str:
        """Tool docstring."""
        return message_text(msgs[0])

    chosen = {
        "whole_state": whole,
        "whole_state_instance": whole_instance,
        "key": by_key,
        "messages": first_message,
    }[style]
    model, graph = run_native(
        [[call(chosen.__name__, {"some_val": 1})], "ok"], tools=[chosen], state_schema=FooState
    )
    out = graph.invoke({"messages": [HumanMessage("hi?")], "foo": "bar"})
    (message,) = tool_messages(out)
    assert tool_text(message) == ("hi?" if style == "messages" else "bar")
    assert message.status == "success"
    assert model.tool_sets and all("state" not in names for names in model.tool_sets)


def test_missing_injected_state_key_is_an_error_message():
    """Ports test_tool_node_inject_state's failure cases (the state lacks the injected
    key): an error ToolMessage, not an exception."""

    def by_key(some_val: int, foo: Annotated[str, InjectedState("foo")]) -> str:
        """Tool docstring."""
        return foo

    def whole(some_val: int, state: Annotated[dict, InjectedState]) -> str:
        """Tool docstring."""
        return state["foo"]

    _model, graph = run_native(
        [[call("by_key", {"some_val": 1}), call("whole", {"some_val": 1})], "ok"],
        tools=[by_key, whole],
        state_schema=FooState,
    )
    out = graph.invoke({"messages": [HumanMessage("hi?")]})
    assert [m.status for m in tool_messages(out)] == ["error", "error"]
    assert "KeyError" in tool_text(tool_messages(out)[1])
    assert out["answer"] == "ok"


def test_injected_store_and_state_key():
    """Ports test_tool_node_inject_store."""
    store = InMemoryStore()
    store.put(("test",), "test_key", {"foo": "bar"})

    class BarState(TypedDict, total=False):
        bar: str

    def tool_a(some_val: int, store: Annotated[BaseStore, InjectedStore()]) -> str:
        """Tool A."""
        return f"Some val: {some_val}, store val: {store.get(('test',), 'test_key').value['foo']}"

    def tool_b(
        some_val: int,
        bar: Annotated[str, InjectedState("bar")],
        store: Annotated[BaseStore, InjectedStore()],
    ) -> str:
        """Tool B."""
        value = store.get(("test",), "test_key").value["foo"]
        return f"Some val: {some_val}, store val: {value}, state val: {bar}"

    _model, graph = run_native(
        [[call("tool_a", {"some_val": 1}), call("tool_b", {"some_val": 1})], "ok"],
        tools=[tool_a, tool_b],
        state_schema=BarState,
        store=store,
    )
    out = graph.invoke({"messages": [("user", "go")], "bar": "baz"})
    assert [tool_text(m) for m in tool_messages(out)] == [
        "Some val: 1, store val: bar",
        "Some val: 1, store val: bar, state val: baz",
    ]


def test_hidden_tool_args_supplied_by_the_model_are_dropped():
    """Ports test_tool_node_strips_plain_injected_tool_arg and
    test_tool_node_strips_custom_injected_tool_arg_subclass."""

    @dec_tool
    def read_secret(query: str, auth: Annotated[dict, InjectedToolArg()]) -> str:
        """Return data based on the caller's role."""
        return "ADMIN_SECRET" if auth.get("role") == "admin" else "PUBLIC_DATA"

    @dec_tool
    def read_other(query: str, auth: Annotated[dict, InjectedAuth()]) -> str:
        """Return data based on the caller's role."""
        return "ADMIN_SECRET" if auth.get("role") == "admin" else "PUBLIC_DATA"

    model, graph = run_native(
        [
            [
                call("read_secret", {"query": "hello", "auth": {"role": "admin"}}),
                call("read_other", {"query": "hello", "auth": {"role": "admin"}}),
            ],
            "ok",
        ],
        tools=[read_secret, read_other],
    )
    out = graph.invoke({"messages": [("user", "go")]})
    for message in tool_messages(out):
        assert "ADMIN_SECRET" not in tool_text(message)
    assert "ADMIN_SECRET" not in seen(model.prompts[1])


def test_injected_state_wins_over_model_supplied_value():
    """Ports test_tool_node_injected_state_overwrites_llm_value."""

    class AuthState(TypedDict, total=False):
        auth: dict

    @dec_tool
    def read_secret(query: str, auth: Annotated[dict, InjectedState("auth")]) -> str:
        """Return data based on the role in the graph state."""
        return "ADMIN_SECRET" if auth.get("role") == "admin" else "PUBLIC_DATA"

    _model, graph = run_native(
        [[call("read_secret", {"query": "hello", "auth": {"role": "admin"}})], "ok"],
        tools=[read_secret],
        state_schema=AuthState,
    )
    out = graph.invoke({"messages": [("user", "go")], "auth": {"role": "viewer"}})
    (message,) = tool_messages(out)
    assert tool_text(message) == "PUBLIC_DATA"


# --- sync/async crossing -----------------------------------------------------------------


def test_async_only_tool_under_invoke():
    """Tools run in LangGraph's runtime: an async-only tool works under invoke."""

    @dec_tool
    async def fetch(x: int) -> str:
        """Fetch asynchronously."""
        return f"fetched {x}"

    _model, graph = run_native([[call("fetch", {"x": 3})], "ok"], tools=[fetch])
    out = graph.invoke({"messages": [("user", "go")]})
    (message,) = tool_messages(out)
    assert tool_text(message) == "fetched 3" and message.status == "success"


async def test_sync_tool_under_ainvoke():
    """Tools run in LangGraph's runtime: a sync tool works under ainvoke."""

    def compute(x: int) -> str:
        """Compute synchronously."""
        return f"computed {x}"

    _model, graph = run_native([[call("compute", {"x": 3})], "ok"], tools=[compute])
    out = await graph.ainvoke({"messages": [("user", "go")]})
    (message,) = tool_messages(out)
    assert tool_text(message) == "computed 3" and message.status == "success"


def test_tool_call_ids_are_preserved():
    """Ports the ToolMessage/tool_call_id pairing asserted throughout test_tool_node."""
    _model, graph = run_native(
        [
            [
                call("tool1", {"some_val": 1, "some_other_val": "a"}, id="x-1"),
                call("tool1", {"some_val": 2, "some_other_val": "b"}, id="x-2"),
            ],
            "ok",
        ],
        tools=[tool1],
    )
    out = graph.invoke({"messages": [("user", "go")]})
    assert [m.tool_call_id for m in tool_messages(out)] == ["x-1", "x-2"]
    assert [m.name for m in tool_messages(out)] == ["tool1", "tool1"]
    assert isinstance(out["messages"][1], AIMessage)
    assert [c["id"] for c in out["messages"][1].tool_calls] == ["x-1", "x-2"]
