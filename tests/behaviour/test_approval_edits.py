"""Guarantees that only show when the code is broken on purpose.

Each test here pins down a promise that an earlier test suite let through when the code
was mutated: an approval edit naming another tool, truncation of tool errors, cached-token
accounting, the final-answer request once ``max_tool_calls`` is spent, and provider JSON
for a model whose capabilities are unknown.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages import ToolMessage as _ToolMessage
from langchain_core.tools import InjectedToolCallId
from langchain_core.tools import tool as _tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import build_loop, create_react_graph, prompts
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for


def prompt_text(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def tool_messages(out: dict) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


FENCED = re.compile(r"<<tool_output (\w+)>>\n(.*)\n<<end_tool_output \1>>", re.DOTALL)


def fenced_body(message: ToolMessage) -> str:
    """A tool result between its run's fence markers (the result must be fenced)."""
    found = FENCED.fullmatch(content_text(message.content))
    assert found is not None, message.content
    return found.group(2)


# --- An approval edit that names another tool runs that tool -----------------------------


def mail_tools(log: list) -> list:
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        log.append(("send_email", to, body))
        return f"sent to {to}"

    def save_draft(subject: str) -> str:
        """Save a draft instead of sending."""
        log.append(("save_draft", subject))
        return f"draft saved: {subject}"

    return [send_email, save_draft]


@pytest.mark.parametrize("mode", MODES)
def test_an_edit_naming_another_tool_runs_that_tool(mode):
    log: list = []
    model = model_for(
        mode,
        [act(mode, "send_email", {"to": "ann@example.org", "body": "hi"}), final(mode, "kept")],
    )
    graph = create_react_graph(
        model,
        mail_tools(log),
        tool_mode=mode,
        checkpointer=InMemorySaver(),
        interrupt_before_tools=True,
    )
    config = {"configurable": {"thread_id": f"edit-other-{mode}"}}
    graph.invoke({"messages": [("user", "email Ann")]}, config)
    assert log == []
    edited = {"name": "save_draft", "args": {"subject": "For Ann"}}
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), config
    )
    # The other tool ran with the edited arguments; the proposed one never ran.
    assert log == [("save_draft", "For Ann")]
    (result,) = tool_messages(out)
    assert result.name == "save_draft" and result.status == "success"
    assert fenced_body(result) == "draft saved: For Ann"
    # The transcript and the model's next prompt show the call that ran.
    (call,) = next(m for m in out["messages"] if isinstance(m, AIMessage)).tool_calls
    assert (call["name"], call["args"]) == ("save_draft", {"subject": "For Ann"})
    assert call["id"] == result.tool_call_id
    assert "draft saved: For Ann" in prompt_text(model.prompts[1])
    assert out["status"] == "completed" and out["answer"] == "kept"


def test_an_edit_naming_another_tool_runs_that_tool_in_self_ask():
    """A reviewer's edit that names another tool runs that tool for a Self-Ask
    follow-up: the tool guard swaps the tool, not only the arguments."""
    log: list = []

    def lookup(query: str) -> str:
        """Look something up."""
        log.append(("lookup", query))
        return f"facts about {query}"

    def registry(company: str) -> str:
        """Look a company up in the company registry."""
        log.append(("registry", company))
        return f"{company} was founded by Ann"

    model = model_for(
        "text",
        [
            "Are follow up questions needed here? Yes.\nFollow up: Who founded Quillmark?",
            "So the final answer is: Ann",
        ],
    )
    graph = build_loop(
        "self_ask",
        model,
        [lookup, registry],
        tool_mode="text",
        checkpointer=InMemorySaver(),
        interrupt_before_tools=True,
        max_follow_ups=2,
    )
    config = {"configurable": {"thread_id": "self-ask-edit-other"}}
    graph.invoke({"messages": [("user", "Who founded Quillmark?")]}, config)
    assert log == []
    edited = {"name": "registry", "args": {"company": "Quillmark"}}
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), config
    )
    assert log == [("registry", "Quillmark")]
    assert "Quillmark was founded by Ann" in prompt_text(model.prompts[-1])
    assert "Error" not in prompt_text(model.prompts[-1])
    assert out["status"] == "completed" and out["answer"] == "Ann"


# --- A tool's error is truncated like its output ----------------------------------------

LONG_ERROR = "E" * 3000


def explode(query: str) -> str:
    """A tool that always fails with a very long message."""
    raise ValueError(LONG_ERROR)


@pytest.mark.parametrize("mode", MODES)
def test_a_long_tool_error_is_truncated_to_the_output_limit(mode):
    model = model_for(mode, [act(mode, "explode", {"query": "x"}), final(mode, "gave up")])
    graph = create_react_graph(
        model, [explode], tool_mode=mode, max_tool_output_chars=100, retry_policy=FAST_RETRY
    )
    out = graph.invoke({"messages": [("user", "try it")]})
    (result,) = tool_messages(out)
    assert result.status == "error"
    shown = fenced_body(result)
    body, _, note = shown.partition("\n[... truncated ")
    assert len(body) == 100 and body.startswith("Error: explode failed: ValueError: EEE")
    total = len("Error: explode failed: ValueError: ") + 3000
    assert note == f"{total - 100} of {total} characters]"
    # The model reads the cut error, never the whole message.
    seen = prompt_text(model.prompts[1])
    assert "E" * 101 not in seen and "E" * 60 in seen
    assert out["status"] == "completed" and out["answer"] == "gave up"


# --- Cached prompt tokens are summed over every call -------------------------------------


def note(text: str) -> str:
    """Keep a note."""
    return f"noted {text}"


@pytest.mark.parametrize("mode", MODES)
def test_react_sums_cached_tokens_over_its_calls(mode):
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    model = model_for(
        mode,
        [act(mode, "lookup", {"key": "a"}), act(mode, "lookup", {"key": "b"}), final(mode, "ok")],
        cache_read=7,
    )
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
        {"messages": [("user", "look a and b up")]}
    )
    assert out["llm_calls"] == 3 == model.call_count
    assert out["usage"]["cached_tokens"] == 21
    assert out["usage"]["input_tokens"] > out["usage"]["cached_tokens"]


def test_reflexion_sums_cached_tokens_over_episodes_and_verdicts():
    model = model_for(
        "text",
        [
            final("text", "It weighs 5."),
            "UNSATISFACTORY: the unit is missing",
            "Reflection: state the unit.",
            final("text", "It weighs 5 kg."),
            "SATISFACTORY: fine",
        ],
        cache_read=4,
    )
    graph = build_loop("reflexion", model, [note], tool_mode="text", retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "How heavy is it?")]})
    assert out["status"] == "completed" and out["answer"] == "It weighs 5 kg."
    assert out["llm_calls"] == 5 == model.call_count
    assert out["usage"]["cached_tokens"] == 20


def test_a_model_without_cache_reads_reports_no_cached_tokens():
    model = ScriptedChatModel(replies=["plain answer"])
    out = create_react_graph(model).invoke({"messages": [("user", "hi")]})
    assert out["usage"]["cached_tokens"] == 0 and out["usage"]["input_tokens"] > 0


# --- Once max_tool_calls is spent, the next call asks for the final answer --------------


@pytest.mark.parametrize("mode", MODES)
def test_the_call_after_the_tool_budget_is_the_final_answer_request(mode):
    ran: list = []

    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    model = model_for(
        mode,
        [act(mode, "lookup", {"key": "a"}), final(mode, "a is known")],
    )
    graph = create_react_graph(model, [lookup], tool_mode=mode, max_tool_calls=1)
    out = graph.invoke({"messages": [("user", "look things up")]})
    assert ran == ["a"]
    assert model.call_count == 2 == out["llm_calls"]
    last = model.prompts[-1][-1]
    assert isinstance(last, HumanMessage) and last.content == prompts.FORCE_FINAL_ANSWER
    assert prompts.FORCE_FINAL_ANSWER not in prompt_text(model.prompts[0])
    # No ordinary turn was spent on a call the budget would refuse.
    (result,) = tool_messages(out)
    assert "Not run" not in content_text(result.content)
    assert out["status"] == "max_iterations" and out["answer"] == "a is known"


# --- Provider JSON for a model whose capabilities are unknown ---------------------------


JSON_FINAL = json.dumps({"thought": "Done.", "action": "final_answer", "action_input": "42"})


@pytest.mark.parametrize(
    ("profile", "uses_schema"),
    [
        (None, True),  # unknown: try the provider's JSON schema
        ({}, True),  # a profile that does not say: unknown too
        ({"structured_output": True}, True),
        ({"structured_output": False}, False),  # declared unsupported: never asked
    ],
)
def test_json_mode_asks_for_provider_json_unless_the_profile_says_no(profile, uses_schema):
    model = ScriptedChatModel(replies=[JSON_FINAL], profile=profile, structured_output=True)
    graph = create_react_graph(model, [note], tool_mode="json")
    out = graph.invoke({"messages": [("user", "what is 6 * 7?")]})
    assert out["status"] == "completed" and out["answer"] == "42"
    assert model.call_count == 1 == out["llm_calls"]
    assert len(model.schemas) == (1 if uses_schema else 0)
    if uses_schema:
        (schema,) = model.schemas
        assert schema["name"] == "react_step"


def test_the_fake_tells_unknown_from_unsupported():
    """The scripted model itself: three distinct cases of structured output."""
    follows = ScriptedChatModel(replies=[], profile={"structured_output": False})
    with pytest.raises(NotImplementedError):
        follows.with_structured_output({"type": "object"})
    refuses = ScriptedChatModel(
        replies=[], profile={"structured_output": True}, structured_output=False
    )
    with pytest.raises(NotImplementedError):
        refuses.with_structured_output({"type": "object"})
    unknown = ScriptedChatModel(replies=['{"a": 1}'], structured_output=True)
    assert unknown.with_structured_output({"type": "object"}).invoke("x") == {"a": 1}


def test_an_unnamed_error_message_from_a_tool_names_the_tool():
    """A tool returning its own error ToolMessage without a name is reported by the
    call's tool name (not "None")."""

    @_tool
    def grumpy(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> _ToolMessage:
        """Refuses."""
        return _ToolMessage("no", tool_call_id=tool_call_id, status="error")

    model = model_for("native", [calls(tool_call("grumpy", {"key": "k"})), "done"])
    out = create_react_graph(model, [grumpy]).invoke({"messages": [("user", "go")]})
    (result,) = [m for m in out["messages"] if m.type == "tool"]
    assert "Error: grumpy failed: no" in result.content and "None" not in result.content
