"""response_format: a structured object next to the answer.

Ports of langgraph ``test_react_agent.py::test_react_agent_with_structured_response``
(and ``test_dynamic_model_with_structured_response``) and of langchain
``agents/test_response_format.py`` (``TestResponseFormatAsModel``). The strategy classes
(ToolStrategy, ProviderStrategy), unions and error-handling options have no loopgraphs
counterpart; see DIFFERENCES.md.

The fake model answers a structured-output request with its ``structured`` object however
the loop asks for it (see tests/compat/fake.py); the json/text-mode cases script the
structured reply as the model call after the final answer.
"""

import json

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from loopgraphs import LOOPS, build_loop, create_react_graph
from tests.compat.fake import FakeToolModel, call
from tests.compat.support import act, final, model_for, tool_messages, tool_text
from tests.support.fakes import ScriptedChatModel


class WeatherBaseModel(BaseModel):
    """Weather response."""

    temperature: float = Field(description="The temperature in fahrenheit")
    condition: str = Field(description="Weather condition")


class WeatherTypedDict(TypedDict):
    """Weather response."""

    temperature: float
    condition: str


WEATHER_JSON_SCHEMA = {
    "type": "object",
    "title": "weather_schema",
    "description": "Weather response.",
    "properties": {
        "temperature": {"type": "number", "description": "Temperature in fahrenheit"},
        "condition": {"type": "string", "description": "Weather condition"},
    },
    "required": ["temperature", "condition"],
}

WEATHER_DATA = {"temperature": 75.0, "condition": "sunny"}


def get_weather() -> str:
    """Get the weather."""
    return "The weather is sunny and 75°F."


def weather_model(**kwargs) -> FakeToolModel:
    return FakeToolModel(
        turns=[[call("get_weather", {}, id="1")], "It is sunny and 75°F."],
        structured=WEATHER_DATA,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        (WeatherBaseModel, WeatherBaseModel(**WEATHER_DATA)),
        (WeatherTypedDict, WEATHER_DATA),
        (WEATHER_JSON_SCHEMA, WEATHER_DATA),
    ],
    ids=["pydantic", "typed_dict", "json_schema"],
)
def test_structured_response_after_tool_use(response_format, expected):
    """Ports test_react_agent_with_structured_response and
    TestResponseFormatAsModel.test_pydantic_model / test_typed_dict / test_json_schema."""
    model = weather_model()
    graph = create_react_graph(
        model, [get_weather], tool_mode="native", response_format=response_format
    )
    out = graph.invoke({"messages": [HumanMessage("What's the weather?")]})
    assert out["structured_response"] == expected
    if isinstance(expected, BaseModel):
        assert isinstance(out["structured_response"], WeatherBaseModel)
    (message,) = [m for m in tool_messages(out) if m.name == "get_weather"]
    assert tool_text(message) == "The weather is sunny and 75°F."
    assert out["status"] == "completed"
    assert model.structured_requests >= 1


async def test_structured_response_under_ainvoke():
    """Ports test_react_agent_with_structured_response on the async path."""
    graph = create_react_graph(
        weather_model(), [get_weather], tool_mode="native", response_format=WeatherBaseModel
    )
    out = await graph.ainvoke({"messages": [HumanMessage("What's the weather?")]})
    assert out["structured_response"] == WeatherBaseModel(**WEATHER_DATA)


def test_structured_response_without_tools():
    """Ports test_dynamic_model_with_structured_response (a plain chat with a schema)."""

    class TestResponse(BaseModel):
        message: str
        confidence: float

    model = FakeToolModel(
        turns=["dynamic response"],
        structured={"message": "dynamic response", "confidence": 0.9},
    )
    graph = create_react_graph(model, [], response_format=TestResponse)
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert out["structured_response"] == TestResponse(message="dynamic response", confidence=0.9)


def test_no_structured_response_unless_asked():
    """Ports the spec's expectation that ``structured_response`` is absent without a
    response_format (test_return_direct_spec: ``"structured_response" not in result``)."""
    model = FakeToolModel(turns=[[call("get_weather", {})], "sunny"], structured=WEATHER_DATA)
    out = create_react_graph(model, [get_weather], tool_mode="native").invoke(
        {"messages": [HumanMessage("What's the weather?")]}
    )
    assert out.get("structured_response") is None
    assert model.structured_requests == 0


@pytest.mark.parametrize("mode", ["json", "text"])
def test_structured_response_in_prompt_modes(mode):
    """Ports TestResponseFormatAsModel.test_pydantic_model to the json and text tool
    modes (no function calling): the structured reply is the call after the answer."""
    model = model_for(
        mode,
        [
            act(mode, "get_weather", {}),
            final(mode, "It is sunny and 75°F."),
            json.dumps(WEATHER_DATA),
        ],
    )
    graph = create_react_graph(
        model, [get_weather], tool_mode=mode, response_format=WeatherBaseModel
    )
    out = graph.invoke({"messages": [HumanMessage("What's the weather?")]})
    assert out["answer"] == "It is sunny and 75°F."
    assert out["structured_response"] == WeatherBaseModel(**WEATHER_DATA)
    (message,) = tool_messages(out)
    assert tool_text(message) == "The weather is sunny and 75°F."


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_a_structured_output_failure_is_reported(mode):
    """No level yields the schema: the run says so instead of ending "completed"."""
    model = model_for(mode, [final(mode, "It is sunny."), *["no idea"] * 6])
    graph = create_react_graph(
        model, [get_weather], tool_mode=mode, response_format=WeatherBaseModel
    )
    out = graph.invoke({"messages": [HumanMessage("Weather?")]})
    assert out["answer"] == "It is sunny."
    assert out.get("structured_response") is None
    assert out["status"] == "error"
    assert "structured output failed" in out["error"] and "WeatherBaseModel" in out["error"]
    assert out["llm_calls"] == model.call_count <= 4


class SchemaOnly(ScriptedChatModel):
    """A chat model whose ``with_structured_output`` takes the schema alone and returns
    the object, as langgraph's own prebuilt tests' fake model does: the answer's schema
    gives ``objects[its name]``; any other schema is one it cannot do."""

    objects: dict[str, object] = Field(default_factory=dict)

    def with_structured_output(self, schema):  # type: ignore[override]
        name = getattr(schema, "__name__", None) or schema.get("title")
        if name not in self.objects:
            raise ValueError(f"no structured output for {name}")
        return RunnableLambda(lambda _: self.objects[name])


# Each loop's replies to one question, answered "sunny" without tools (the text forms of
# the loops' own structured steps: a one-step plan, a satisfied verdict, scores).
SUNNY = "The weather is sunny.\nFINAL ANSWER: sunny"
SCHEMA_ONLY_SCRIPTS = {
    "cot": [SUNNY],
    "react": [SUNNY],
    "plan_execute": ['{"steps": ["What is the weather?"]}', SUNNY, "sunny"],
    "reflexion": [SUNNY, '{"satisfactory": true, "feedback": ""}'],
    "self_ask": ["So the final answer is: sunny"],
    "critic": [SUNNY, '{"verified": true, "claims": []}'],
    "tot": ["1. ANSWER: sunny", '{"scores": [9]}'],
    "rewoo": [SUNNY],  # no tools: no plan, the solver answers
    "lats": [SUNNY, '{"satisfactory": true, "feedback": ""}'],
}
SCHEMA_ONLY_OPTIONS: dict[str, dict[str, object]] = {
    "tot": {"n_branches": 1, "beam_width": 1, "max_depth": 1},
    "lats": {"n_candidates": 1},
}


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_model_whose_structured_output_takes_only_the_schema(loop):
    """The response format steps down to the model's own ``with_structured_output(schema)``
    before asking for JSON in words: the object arrives as create_react_agent gets it."""
    model = SchemaOnly(
        replies=SCHEMA_ONLY_SCRIPTS[loop],
        repeat_last=True,
        profile={"tool_calling": False},
        objects={"WeatherBaseModel": WeatherBaseModel(**WEATHER_DATA)},
    )
    options = SCHEMA_ONLY_OPTIONS.get(loop, {})
    graph = build_loop(loop, model, [], response_format=WeatherBaseModel, **options)
    out = graph.invoke({"messages": [HumanMessage("What is the weather?")]})
    assert out["structured_response"] == WeatherBaseModel(**WEATHER_DATA), out
