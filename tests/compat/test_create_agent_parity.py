"""Behaviours of the peers' agents that loopgraphs now shares.

A state schema built on LangGraph's prebuilt ``AgentState`` (managed ``remaining_steps``),
provider tools given as dicts, ``handle_tool_errors`` (re-raise, a custom text, a
function, exception types), structured output falling back when ``bind_tools`` is
refused, and a tool ``Command`` without its ``ToolMessage``.
"""

from __future__ import annotations

import warnings

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph.types import Command
from pydantic import BaseModel

from loopgraphs import create_react_graph
from tests.compat.support import tool_messages, tool_text
from tests.support.fakes import calls, tool_call
from tests.support.scripts import model_for


class Prebuilt(AgentState):
    user: str


def prebuilt_agent(model, tools, **options):
    """LangGraph's own prebuilt agent (which defines this ``AgentState``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, **options)


@pytest.mark.parametrize("factory", [prebuilt_agent, create_react_graph])
def test_a_state_schema_on_langgraphs_agent_state(factory):
    graph = factory(model_for("native", ["hello"]), [], state_schema=Prebuilt)
    out = graph.invoke({"messages": [HumanMessage("hi")], "user": "ann"})
    assert out["user"] == "ann"
    assert out["messages"][-1].content == "hello"
    assert "user" in graph.get_input_jsonschema()["properties"]


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def test_remaining_steps_stays_out_of_loopgraphs_input_schema():
    graph = create_react_graph(model_for("native", []), [], state_schema=Prebuilt)
    assert "remaining_steps" not in graph.get_input_jsonschema()["properties"]


def test_provider_tools_given_as_dicts_are_bound_not_run():
    web = {"type": "web_search", "name": "web_search"}
    model = model_for("native", ["searched"])
    out = create_react_graph(model, [lookup, web], tool_mode="native").invoke(
        {"messages": [HumanMessage("news?")]}
    )
    assert out["answer"] == "searched"
    assert model.tool_sets == [["lookup", str(web)]]


def test_provider_tools_alone_are_bound_natively():
    web = {"type": "web_search", "name": "web_search"}
    model = model_for("native", ["searched"])
    out = create_react_graph(model, [web]).invoke({"messages": [HumanMessage("news?")]})
    assert out["tool_mode"] == "native" and model.tool_sets == [[str(web)]]


@tool
def broken(key: str) -> str:
    """Fails."""
    raise ValueError(f"no such key {key}")


def run_broken(**options):
    model = model_for("native", [calls(tool_call("broken", {"key": "k"})), "done"])
    return create_react_graph(model, [broken], **options).invoke({"messages": [HumanMessage("go")]})


def test_handle_tool_errors_false_raises_as_toolnode_does():
    with pytest.raises(ValueError, match="no such key k"):
        run_broken(handle_tool_errors=False)


@pytest.mark.parametrize(
    ("policy", "shown"),
    [
        (True, "ValueError: no such key k"),
        ("The lookup failed.", "The lookup failed."),
        (lambda exc: f"handled {type(exc).__name__}", "handled ValueError"),
        (ValueError, "ValueError: no such key k"),
        ((KeyError, ValueError), "ValueError: no such key k"),
    ],
)
def test_handle_tool_errors_turns_the_exception_into_what_it_says(policy, shown):
    out = run_broken(handle_tool_errors=policy)
    (result,) = tool_messages(out)
    assert result.status == "error" and shown in tool_text(result)
    assert out["answer"] == "done"


def test_handle_tool_errors_of_other_types_raises():
    with pytest.raises(ValueError, match="no such key"):
        run_broken(handle_tool_errors=KeyError)


def test_a_bad_handle_tool_errors_is_refused():
    with pytest.raises(TypeError, match="handle_tool_errors"):
        create_react_graph(model_for("native", []), [broken], handle_tool_errors=3)


class Weather(BaseModel):
    """Weather."""

    temperature: int


def test_structured_output_falls_back_when_bind_tools_is_refused():
    """A model class without ``bind_tools`` (it raises ``NotImplementedError``) gets the
    structured response from the next level that works."""
    model = FakeListChatModel(responses=["It is 20 degrees.", '{"temperature": 20}'])
    out = create_react_graph(model, [], response_format=Weather).invoke(
        {"messages": [HumanMessage("weather?")]}
    )
    assert out["structured_response"] == Weather(temperature=20)
    assert out["status"] == "completed"


@tool
def bad_command(key: str) -> Command:
    """Returns a command without its tool message."""
    return Command(update={"messages": []})


def test_a_command_without_its_tool_message_is_a_clear_error_the_model_reads():
    model = model_for("native", [calls(tool_call("bad_command", {"key": "k"})), "done"])
    out = create_react_graph(model, [bad_command]).invoke({"messages": [HumanMessage("go")]})
    (result,) = tool_messages(out)
    assert result.status == "error"
    assert "Expected to have a matching ToolMessage" in tool_text(result)
    with pytest.raises(ValueError, match="matching ToolMessage"):
        model = model_for("native", [calls(tool_call("bad_command", {"key": "k"})), "done"])
        create_react_graph(model, [bad_command], handle_tool_errors=False).invoke(
            {"messages": [HumanMessage("go")]}
        )
