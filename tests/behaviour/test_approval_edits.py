"""An approval edit that names another tool runs that tool, in every loop with tools.

It pins down a promise that an earlier test suite let through when the code was mutated
(found by ``make mutate``).
"""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import build_loop, create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.support.scripts import MODES, act, final, model_for


def prompt_text(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def tool_messages(out: dict) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


FENCED = re.compile(r"<<tool_output (\w+)>>\n(.*)\n<<end_tool_output \1>>", re.DOTALL)


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
    assert content_text(result.content) == "draft saved: For Ann"  # as the tool returned it
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
