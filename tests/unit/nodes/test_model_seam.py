"""Guarantees of the model-call seam that every loop's requests go through: what a
``wrap_model_call`` or hook may do, and which structured-output level a model gets."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelResponse,
    PIIMiddleware,
    TodoListMiddleware,
    wrap_model_call,
)
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from loopgraphs import create_plan_execute_graph, create_react_graph
from tests.support.fakes import ScriptedChatModel, calls, tool_call
from tests.support.scripts import act, final, model_for

QUESTION = {"messages": [HumanMessage("What is six times seven?")]}


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_a_short_circuiting_wrapper_counts_no_model_call(mode):
    @wrap_model_call
    def cached(request: Any, handler: Any) -> ModelResponse:
        return ModelResponse(result=[AIMessage("42, from the cache.")])

    model = model_for(mode, [])
    out = create_react_graph(model, [lookup], tool_mode=mode, middleware=[cached]).invoke(QUESTION)

    assert model.call_count == 0
    assert out["llm_calls"] == 0
    assert out["status"] == "completed" and "42" in out["answer"]


@pytest.mark.parametrize("mode", ["json", "text"])
def test_a_wrappers_system_prompt_reaches_the_model_in_parsing_modes(mode):
    @wrap_model_call
    def pirate(request: Any, handler: Any) -> Any:
        return handler(request.override(system_message=SystemMessage("Talk like a pirate.")))

    model = model_for(mode, [final(mode, "Arr, 42.")])
    out = create_react_graph(model, [lookup], tool_mode=mode, middleware=[pirate]).invoke(QUESTION)

    assert out["answer"] == "Arr, 42."
    (prompt,) = model.prompts
    system = " ".join(str(m.content) for m in prompt if isinstance(m, SystemMessage))
    assert "Talk like a pirate." in system
    # The loop's own instructions (its grammar) follow the wrapper's system prompt.
    assert system.index("Talk like a pirate.") < system.index("lookup")


class Quiet(AgentMiddleware):
    """A second middleware with an ``after_model`` hook that changes nothing."""

    def after_model(self, state: Any, runtime: Any) -> None:
        return None


@pytest.mark.parametrize("pii_first", [True, False])
def test_output_redaction_next_to_another_after_model_hook_reaches_the_answer(pii_first):
    model = model_for("native", ["Write to bob@example.com for 42."])
    pii = PIIMiddleware("email", strategy="redact", apply_to_output=True)
    middleware = [pii, Quiet()] if pii_first else [Quiet(), pii]
    graph = create_react_graph(model, [lookup], tool_mode="native", middleware=middleware)
    out = graph.invoke(QUESTION)

    assert "bob@example.com" not in out["answer"]
    assert "[REDACTED_EMAIL]" in out["answer"]
    assert "bob@example.com" not in str(out["messages"][-1].content)


@pytest.mark.parametrize("mode", ["json", "text"])
def test_middleware_tools_are_offered_and_run_in_parsing_modes(mode):
    todos = [{"content": "look it up", "status": "in_progress"}]
    model = model_for(
        mode, [act(mode, "write_todos", {"todos": todos}), final(mode, "Planned: 42.")]
    )
    graph = create_react_graph(model, [lookup], tool_mode=mode, middleware=[TodoListMiddleware()])
    out = graph.invoke(QUESTION)

    first = " ".join(str(m.content) for m in model.prompts[0])
    assert "write_todos" in first
    assert out["todos"] == todos
    assert out["status"] == "completed" and out["answer"] == "Planned: 42."


def test_a_model_whose_profile_does_not_mention_structured_output_gets_the_json_level():
    plan = json.dumps({"steps": ["look up a", "say what a is"]})
    script = [plan, act("text", "lookup", {"key": "a"}), final("text", "value of a")]
    model = model_for("text", [*script, "It is value of a."], structured_output=True)
    model.profile = {"tool_calling": False}  # says nothing of structured output
    graph = create_plan_execute_graph(model, [lookup], tool_mode="text")
    out = graph.invoke({"messages": [HumanMessage("What is a?")]})

    assert out["plan"] == ["look up a", "say what a is"]
    # The plan was asked for through the provider's JSON schema, before any text level.
    assert model.schemas and "steps" in json.dumps(model.schemas[0])


class DictToolsOnly(ScriptedChatModel):
    """A chat model whose ``bind_tools`` takes only tool dicts and tools, as some
    providers' do (no pydantic classes)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        for item in tools:
            if not isinstance(item, (dict, BaseTool)):
                raise TypeError(f"cannot bind {item!r}")
        return super().bind_tools(tools, **kwargs)


class Answer(BaseModel):
    """The answer as a number."""

    value: int


def test_the_native_structured_level_binds_the_schema_as_a_tool_dict():
    model = DictToolsOnly(
        replies=["42.", calls(tool_call("Answer", {"value": 42}))],
        profile={"tool_calling": True, "structured_output": False},
    )
    graph = create_react_graph(model, [lookup], tool_mode="native", response_format=Answer)
    out = graph.invoke(QUESTION)

    assert out["structured_response"] == Answer(value=42)
    assert model.tool_sets[-1] == ["Answer"]
    assert out["status"] == "completed"


def test_a_wrapper_switching_to_the_providers_json_schema_is_honoured():
    @wrap_model_call
    def provider_json(request: Any, handler: Any) -> Any:
        if isinstance(request.response_format, ToolStrategy):
            schema = request.response_format.schema
            return handler(request.override(response_format=ProviderStrategy(schema)))
        return handler(request)

    model = model_for("native", ["42.", '{"value": 42}'])
    graph = create_react_graph(
        model, [lookup], tool_mode="native", response_format=Answer, middleware=[provider_json]
    )
    out = graph.invoke(QUESTION)

    assert out["structured_response"] == Answer(value=42)
    # Asked through with_structured_output, as the schema's JSON.
    assert [schema["title"] for schema in model.schemas] == ["Answer"]
    assert all("Answer" not in names for names in model.tool_sets)  # never bound as a tool


class NoMethodArgument(ScriptedChatModel):
    """A chat model whose ``with_structured_output`` takes no ``method`` (nor
    ``include_raw``), as some integrations' do: provider JSON is a form it lacks."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if kwargs:
            raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
        return super().with_structured_output(schema)


def test_a_model_without_the_json_levels_arguments_steps_down_to_text():
    plan = json.dumps({"steps": ["look up a", "say what a is"]})
    script = [plan, act("text", "lookup", {"key": "a"}), final("text", "value of a")]
    script += [final("text", "a is value of a"), "It is value of a."]
    model = NoMethodArgument(
        replies=script, profile={"tool_calling": False}, structured_output=True
    )
    out = create_plan_execute_graph(model, [lookup], tool_mode="text").invoke(QUESTION)
    assert out["status"] == "completed", out.get("error")
    assert out["plan"] == ["look up a", "say what a is"]
    assert model.schemas == []  # the json level was refused before any request left
    assert out["llm_calls"] == model.call_count == len(script)
