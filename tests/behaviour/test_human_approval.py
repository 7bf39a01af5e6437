"""Human approval of tool calls: approve, edit and reject, in langchain's HITL format."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.support.scripts import MODES, act, final, model_for


def recording_tool(log: list):
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        log.append({"to": to, "body": body})
        return f"sent to {to}"

    return send_email


def paused(graph, config) -> list:
    return [i.value for task in graph.get_state(config).tasks for i in task.interrupts]


def start(mode: str, log: list, **kwargs):
    model = model_for(
        mode,
        [act(mode, "send_email", {"to": "ann@example.org", "body": "hi"}), final(mode, "done")],
    )
    graph = create_react_graph(
        model, [recording_tool(log)], tool_mode=mode, checkpointer=InMemorySaver(), **kwargs
    )
    config = {"configurable": {"thread_id": f"t-{mode}"}}
    graph.invoke({"messages": [("user", "email Ann")]}, config)
    return model, graph, config


@pytest.mark.parametrize("mode", MODES)
def test_interrupt_payload_and_approve(mode):
    log: list = []
    model, graph, config = start(mode, log, interrupt_before_tools=True)
    (payload,) = paused(graph, config)
    (request,) = payload["action_requests"]
    assert request["name"] == "send_email"
    assert request["args"] == {"to": "ann@example.org", "body": "hi"}
    assert "send_email" in request["description"]
    assert payload["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    assert log == []
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert log == [{"to": "ann@example.org", "body": "hi"}]
    assert "sent to ann@example.org" in content_text(model.prompts[1][-1].content)
    assert out["answer"] == "done" and out["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_edit_changes_what_the_tool_receives(mode):
    log: list = []
    model, graph, config = start(mode, log, interrupt_before_tools=["send_email"])
    edited = {"name": "send_email", "args": {"to": "bob@example.org", "body": "hello"}}
    graph.invoke(Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), config)
    assert log == [{"to": "bob@example.org", "body": "hello"}]
    assert "sent to bob@example.org" in content_text(model.prompts[1][-1].content)


@pytest.mark.parametrize("mode", MODES)
def test_an_edit_rewrites_the_call_in_the_transcript(mode):
    log: list = []
    model, graph, config = start(mode, log, interrupt_before_tools=True)
    (proposed,) = graph.get_state(config).values["messages"][-1].tool_calls
    edited = {"name": "send_email", "args": {"to": "bob@example.org", "body": "hello"}}
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), config
    )
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    (call,) = replies[0].tool_calls
    assert (call["name"], call["args"], call["id"]) == (
        "send_email",
        edited["args"],
        proposed["id"],
    )
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.tool_call_id == proposed["id"]
    assert len(replies) == 2  # the edited reply replaced the proposal, it was not added
    # The model's next prompt shows the call that ran, not the one it proposed.
    prompt = "\n".join(content_text(m.content) for m in model.prompts[1])
    if mode != "native":
        assert "bob@example.org" in prompt.split("sent to")[0]
    assert "ann@example.org" not in prompt
    sent = [c for m in model.prompts[1] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [c["args"] for c in sent] == ([edited["args"]] if mode == "native" else [])


@pytest.mark.parametrize("mode", MODES)
def test_reject_skips_the_tool_and_tells_the_model(mode):
    log: list = []
    model, graph, config = start(mode, log, interrupt_before_tools=True)
    decision = {"type": "reject", "message": "Do not email Ann."}
    out = graph.invoke(Command(resume={"decisions": [decision]}), config)
    assert log == []
    assert "Do not email Ann." in content_text(model.prompts[1][-1].content)
    assert out["status"] == "completed"


def test_a_bad_resume_pauses_again_with_the_problem():
    log: list = []
    _, graph, config = start("native", log, interrupt_before_tools=True)
    graph.invoke(Command(resume={"decisions": []}), config)
    (payload,) = paused(graph, config)
    assert "expected 1, got 0" in payload["error"] and log == []
    graph.invoke(Command(resume={"decisions": [{"type": "maybe"}]}), config)
    (payload,) = paused(graph, config)
    assert "'maybe'" in payload["error"] and log == []
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert len(log) == 1 and out["answer"] == "done"


def test_tools_not_listed_run_without_pausing():
    log: list = []
    model = model_for(
        "native", [act("native", "send_email", {"to": "a", "body": "b"}), final("native", "ok")]
    )

    def other(x: str) -> str:
        """Another tool."""
        return x

    graph = create_react_graph(
        model,
        [recording_tool(log), other],
        checkpointer=InMemorySaver(),
        interrupt_before_tools=["other"],
    )
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"messages": [("user", "go")]}, config)
    assert paused(graph, config) == [] and out["answer"] == "ok" and len(log) == 1


def lookup_tool(log: list):
    def lookup(query: str) -> str:
        """Look something up."""
        log.append(query)
        return f"facts about {query}"

    return lookup


@pytest.mark.parametrize(
    ("loop", "script", "options"),
    [
        (
            "self_ask",
            [
                "Are follow up questions needed here? Yes.\nFollow up: Who founded Quillmark?",
                "So the final answer is: Ann",
            ],
            {"max_follow_ups": 2},
        ),
        (
            "critic",
            [
                "Quillmark was founded by Bob.",
                "CLAIM: founder\nTOOL: lookup\nTOOL INPUT: Quillmark founder",
                "Ann founded Quillmark.",
            ],
            {"max_critique_rounds": 1},
        ),
    ],
)
def test_other_tool_loops_pause_and_take_edits(loop, script, options):
    from loopgraphs import build_loop

    log: list = []
    model = model_for("text", script)
    graph = build_loop(
        loop,
        model,
        [lookup_tool(log)],
        tool_mode="text",
        checkpointer=InMemorySaver(),
        interrupt_before_tools=True,
        **options,
    )
    config = {"configurable": {"thread_id": loop}}
    graph.invoke({"messages": [("user", "Who founded Quillmark?")]}, config)
    (payload,) = paused(graph, config)
    assert payload["action_requests"][0]["name"] == "lookup" and log == []
    edited = {"name": "lookup", "args": {"query": "Quillmark Instruments"}}
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), config
    )
    assert log == ["Quillmark Instruments"]
    assert any(
        "facts about Quillmark Instruments" in content_text(m.content)
        for p in model.prompts
        for m in p
    )
    assert out["status"] == "completed" and out["answer"].startswith("Ann")
