"""How the innermost handler sends a request, piece by piece: the json action schema, what
a ``tool_choice`` asks of it, how a response schema is bound, how each form's output is
read, the system message, and the caches of registries and bound models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableBinding, RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel

from loopgraphs.nodes import model_send
from loopgraphs.nodes.model_send import (
    RAW_REPLY,
    action_schema,
    as_written,
    bound_model,
    joined_system,
    registry_of,
    schema_tool,
)
from loopgraphs.toolkits.registry import ToolRegistry
from tests.support.fakes import ScriptedChatModel


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Say the text back."""
    return text


REGISTRY = ToolRegistry([add, echo])
ADD_ARGS = REGISTRY.schemas()[0]["parameters"]


def step(action: str, action_input: dict[str, Any], *, thought: bool = True) -> dict[str, Any]:
    properties: dict[str, Any] = {"thought": {"type": "string"}} if thought else {}
    properties |= {"action": {"const": action}, "action_input": action_input}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    assert schema["name"] == "react_step"
    assert schema["description"] == "One step: call a tool, or give the final answer."
    return schema["schema"]["anyOf"]


def test_the_action_schema_offers_each_tool_and_the_final_answer():
    found = alternatives(action_schema(REGISTRY))
    assert [a["properties"]["action"]["const"] for a in found] == ["add", "echo", "final_answer"]
    assert found[0] == step("add", ADD_ARGS)
    assert found[-1] == step("final_answer", {"type": "string"})


def test_a_required_call_leaves_out_the_final_answer():
    found = alternatives(action_schema(REGISTRY, require="required"))
    assert [a["properties"]["action"]["const"] for a in found] == ["add", "echo"]


def test_a_named_tool_is_the_only_alternative():
    assert alternatives(action_schema(REGISTRY, require="echo")) == [
        step("echo", REGISTRY.schemas()[1]["parameters"])
    ]


def test_no_tool_choice_leaves_only_the_final_answer():
    assert alternatives(action_schema(REGISTRY, require="none")) == [
        step("final_answer", {"type": "string"})
    ]


def test_an_action_without_thoughts_has_no_thought_field():
    found = alternatives(action_schema(REGISTRY, thoughts=False))
    assert found[0] == step("add", ADD_ARGS, thought=False)


@pytest.mark.parametrize(
    ("choice", "read"),
    [
        (None, None),
        ("auto", None),
        ("any", "required"),
        ("required", "required"),
        (True, "required"),
        ("none", "none"),
        ("echo", "echo"),
        ({"type": "function", "function": {"name": "add"}}, "add"),
        ({"name": "echo"}, "echo"),
        ({"type": "any"}, "required"),
    ],
)
def test_a_tool_choice_as_the_action_schema_reads_it(choice, read):
    assert model_send._required(choice) == read


class Weather(BaseModel):
    city: str


def test_a_response_schema_is_bound_with_its_name():
    assert schema_tool(Weather) == (Weather, "Weather")
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert schema_tool({"title": "Point", **schema}) == ({"title": "Point", **schema}, "Point")
    assert schema_tool({"name": "Box", "schema": schema}) == ({"title": "Box", **schema}, "Box")
    assert schema_tool(schema) == ({"title": "response", **schema}, "response")
    assert schema_tool(object())[1] == "response"


def test_a_plain_reply_is_read_as_it_is_or_as_text():
    reply = AIMessage("hi")
    assert model_send._read_reply(reply).result == [reply]
    assert model_send._read_reply("plain").result[0].content == "plain"


def test_a_schema_tool_reply_is_read_from_its_call_or_its_text():
    called = AIMessage("", tool_calls=[{"name": "Weather", "args": {"city": "Oslo"}, "id": "1"}])
    response = model_send._read_tool_schema(called)
    assert response.result == [called] and response.structured_response == {"city": "Oslo"}
    written = model_send._read_tool_schema('{"city": "Rome"}')
    assert written.structured_response == {"city": "Rome"}
    assert written.result[0].content == '{"city": "Rome"}'


def test_provider_json_is_read_from_the_parsed_object_or_the_raw_text():
    raw = AIMessage('{"city": "Rome"}')
    parsed = model_send._provider_reader(False)({"raw": raw, "parsed": {"city": "Oslo"}})
    assert parsed.result == [raw] and parsed.structured_response == {"city": "Oslo"}
    unparsed = model_send._provider_reader(False)({"raw": raw, "parsed": None})
    assert unparsed.structured_response == {"city": "Rome"}
    # A model's own with_structured_output(schema) returns the object alone.
    bare = model_send._provider_reader(False)({"city": "Oslo"})
    assert bare.result[0].content == '{"city": "Oslo"}'
    assert bare.structured_response == {"city": "Oslo"}
    model = model_send._provider_reader(False)(Weather(city="Oslo"))
    assert model.structured_response == {"city": "Oslo"}


def test_a_json_action_keeps_its_raw_text_or_writes_the_parsed_action():
    raw = AIMessage('{"action": "final_answer", "action_input": "4"}')
    kept = model_send._action_reader(False)({"raw": raw, "parsed": {"action": "x"}})
    assert kept.result == [raw]
    empty = AIMessage("")
    written = model_send._action_reader(False)({"raw": empty, "parsed": {"action": "añadir"}})
    assert written.result[0].content == '{"action": "añadir"}'
    model = model_send._action_reader(False)({"raw": empty, "parsed": Weather(city="Oslo")})
    assert model.result[0].content == '{"city": "Oslo"}'
    nothing = model_send._action_reader(False)({"raw": None, "parsed": None})
    assert nothing.result[0].content == ""


def test_a_wrapped_root_is_read_from_its_value():
    """A strict schema whose root was not an object is sent wrapped in ``value``; its
    reply is read as the object inside."""
    raw = AIMessage('{"value": {"action": "final_answer", "action_input": "4"}}')
    step = {"action": "final_answer", "action_input": "4"}
    action = model_send._action_reader(True)({"raw": raw, "parsed": {"value": step}})
    assert json.loads(action.result[0].content) == step
    unparsed = model_send._action_reader(True)({"raw": raw, "parsed": None})
    assert json.loads(unparsed.result[0].content) == step
    provided = model_send._provider_reader(True)({"raw": raw, "parsed": {"value": [1, 2]}})
    assert provided.structured_response == [1, 2]
    assert model_send._action_reader(False)(raw).result == [raw]


def test_the_loops_text_follows_the_callers_system_message():
    assert joined_system(None, "") is None
    assert joined_system(None, "Loop.").content == "Loop."
    assert joined_system(SystemMessage(""), "Loop.").content == "Loop."
    caller = SystemMessage("Caller.")
    assert joined_system(caller, "") is caller
    assert joined_system(caller, "Loop.").content == "Caller.\n\nLoop."
    blocks = SystemMessage([{"type": "text", "text": "Caller."}])
    assert joined_system(blocks, "Loop.").content == [
        {"type": "text", "text": "Caller."},
        {"type": "text", "text": "Loop."},
    ]
    assert joined_system(SystemMessage([]), "Loop.").content == "Loop."


def test_a_system_text_is_made_into_a_message_once():
    assert model_send._system("Once.") is model_send._system("Once.")
    model_send._systems.clear()
    for n in range(256):
        model_send._system(f"text {n}")
    model_send._system("one more")
    assert list(model_send._systems) == ["one more"]


def test_a_reply_shown_with_another_text_is_sent_as_written():
    shown = AIMessage("4", additional_kwargs={RAW_REPLY: "Thought: add\nFINAL ANSWER: 4"})
    plain, asked = AIMessage("hi"), HumanMessage("q")
    assert [m.content for m in as_written([asked, shown, plain])] == [
        "q",
        "Thought: add\nFINAL ANSWER: 4",
        "hi",
    ]
    assert as_written([plain])[0] is plain


def test_a_set_of_tools_gets_its_registry_once():
    first = registry_of([add, echo])
    assert registry_of([add, echo]) is first
    assert registry_of([echo]) is not first
    assert first.names == ["add", "echo"]
    model_send._registries.clear()
    for n in range(256):
        model_send._registries[(n,)] = ([], ToolRegistry([]))
    registry_of([add])
    assert len(model_send._registries) == 1


class Binder:
    def __init__(self) -> None:
        self.bound: list[tuple[list[Any], dict[str, Any]]] = []

    def bind_tools(self, tools: list[Any], **options: Any) -> tuple[str, int]:
        self.bound.append((tools, options))
        return ("bound", len(self.bound))


def test_a_model_is_bound_once_per_tools_choice_and_settings():
    model = Binder()
    first = bound_model(model, [add], None)
    assert bound_model(model, [add], None) is first
    assert model.bound == [([add], {})]
    bound_model(model, [add], "required")
    bound_model(model, [add], None, {"temperature": 0})
    bound_model(model, [add, echo], None)
    assert model.bound[1:] == [
        ([add], {"tool_choice": "required"}),
        ([add], {"temperature": 0}),
        ([add, echo], {}),
    ]
    model_send._bound.clear()
    for n in range(256):
        model_send._bound[(n,)] = (None, [], None)
    bound_model(model, [echo], None)
    assert len(model_send._bound) == 1


class _Handler(BaseCallbackHandler):
    """Records the invocation parameters of each chat model call and its tags."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], list[str]]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls.append((kwargs.get("invocation_params") or {}, kwargs.get("tags") or []))


def test_unbound_calls_a_tool_binding_s_model_with_its_arguments_and_keeps_the_run_config() -> None:
    model = ScriptedChatModel(replies=[AIMessage("one"), AIMessage("two")])
    binding = model.bind_tools([add], tool_choice="add")
    target, options = model_send.unbound(binding)
    assert target is model
    assert set(options) == {"tools", "tool_choice"}
    direct, through = _Handler(), _Handler()
    prompt = [HumanMessage("hi")]
    target.invoke(prompt, {"callbacks": [direct], "tags": ["run"]}, **options)
    binding.invoke(prompt, {"callbacks": [through], "tags": ["run"]})
    assert direct.calls == through.calls
    assert model.tool_sets == [["add"], ["add"]]
    assert model.tool_choices[0] == model.tool_choices[1]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda m: m.bind_tools([add]).with_config(tags=["own"]), id="own-config"),
        pytest.param(lambda m: m.with_structured_output(_AddArgs), id="structured-chain"),
        pytest.param(lambda m: m, id="the-model-itself"),
        pytest.param(lambda m: RunnableLambda(lambda x: x).bind(n=1), id="not-a-chat-model"),
        pytest.param(lambda m: _OwnBinding(bound=m, kwargs={"stop": ["x"]}), id="own-invoke"),
    ],
)
def test_unbound_leaves_every_other_runnable_as_it_is(make: Any) -> None:
    runnable = make(ScriptedChatModel(replies=[], structured_output=True))
    target, options = model_send.unbound(runnable)
    assert target is runnable
    assert dict(options) == {}


class _OwnBinding(RunnableBinding[Any, Any]):
    """A binding that does something of its own when invoked."""

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().invoke(input, config, **kwargs)


class _AddArgs(BaseModel):
    a: int
    b: int
