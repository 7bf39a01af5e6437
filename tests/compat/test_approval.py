"""Human approval of tool calls (``interrupt_before_tools``) in langchain's HITL format.

Ports of langchain ``agents/middleware/implementations/test_human_in_the_loop.py``: the
middleware cases there call ``after_model`` with a patched ``interrupt``; here the same
decisions go through a real pause and ``Command(resume=...)``. Callable descriptions,
``interrupt_when`` predicates and the middleware object itself have no counterpart; see
DIFFERENCES.md.
"""

import os
import sqlite3
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from loopgraphs import create_react_graph
from tests.compat.fake import FakeToolModel, call
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

ALL = ["approve", "edit", "reject"]


class Tools:
    """Recording tools: every run is logged as (name, args)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []

        def get_forecast(location: str) -> str:
            """Get the forecast for a location."""
            self.log.append(("get_forecast", {"location": location}))
            return f"forecast for {location}: rain"

        def get_temperature(location: str) -> str:
            """Get the temperature for a location."""
            self.log.append(("get_temperature", {"location": location}))
            return f"temperature in {location}: 12C"

        def ask_user(question: str) -> str:
            """Ask the user a question."""
            self.log.append(("ask_user", {"question": question}))
            return "the tool itself answered"

        def search(q: str) -> str:
            """Search."""
            self.log.append(("search", {"q": q}))
            return f"results for {q}"

        self.all = [get_forecast, get_temperature, ask_user, search]


def start(turns: list, review: Any, thread: str = "t", **kwargs: Any):
    tools = Tools()
    model = FakeToolModel(turns=turns)
    graph = create_react_graph(
        model,
        tools.all,
        tool_mode="native",
        interrupt_before_tools=review,
        checkpointer=kwargs.pop("checkpointer", None) or InMemorySaver(),
        **kwargs,
    )
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": [HumanMessage("What's the weather?")]}, config)
    return tools, model, graph, config


def resume(graph, config, *decisions: dict[str, Any]):
    return graph.invoke(Command(resume={"decisions": list(decisions)}), config)


def by_id(out: dict) -> dict[str, Any]:
    return {m.tool_call_id: m for m in tool_messages(out)}


FORECAST_SF = call("get_forecast", {"location": "San Francisco"}, id="1")
TEMPERATURE_SF = call("get_temperature", {"location": "San Francisco"}, id="2")


# --- no pause needed -------------------------------------------------------------------


def test_no_pause_when_nothing_is_flagged():
    """Ports test_human_in_the_loop_middleware_no_interrupts_needed."""
    tools, _model, graph, config = start(
        [[call("search", {"q": "x"})], "done"], {"get_forecast": {"allowed_decisions": ALL}}
    )
    assert paused(graph, config) == []
    state = graph.get_state(config)
    assert state.next == () and state.values["answer"] == "done"
    assert tools.log == [("search", {"q": "x"})]


def test_no_pause_for_a_final_answer():
    """Ports test_human_in_the_loop_middleware_no_interrupts_needed (no tool calls)."""
    _tools, _model, graph, config = start(["Hi there"], True)
    assert paused(graph, config) == []
    assert graph.get_state(config).values["answer"] == "Hi there"


def test_false_entry_does_not_pause():
    """Ports test_human_in_the_loop_middleware_boolean_configs (``False``)."""
    tools, _model, graph, config = start(
        [[FORECAST_SF], "done"], {"get_forecast": False, "get_temperature": True}
    )
    assert paused(graph, config) == []
    assert tools.log == [("get_forecast", {"location": "San Francisco"})]


# --- the request -----------------------------------------------------------------------


def test_interrupt_request_structure():
    """Ports test_human_in_the_loop_middleware_interrupt_request_structure."""
    tools, model, graph, config = start(
        [[call("get_forecast", {"location": "SF"}, id="1")], "done"],
        {"get_forecast": {"allowed_decisions": ALL}},
    )
    (request,) = paused(graph, config)
    assert set(request) >= {"action_requests", "review_configs"}
    (action,) = request["action_requests"]
    assert action["name"] == "get_forecast"
    assert action["args"] == {"location": "SF"}
    assert isinstance(action["description"], str) and action["description"]
    (review,) = request["review_configs"]
    assert review == {"action_name": "get_forecast", "allowed_decisions": ALL}
    assert tools.log == [] and model.call_count == 1
    state = graph.get_state(config)
    assert state.tasks[0].name == "review"


def test_static_description():
    """Ports test_human_in_the_loop_middleware_description_as_callable (string half)."""
    _tools, _model, graph, config = start(
        [[FORECAST_SF], "done"],
        {"get_forecast": {"allowed_decisions": ["approve"], "description": "Static description"}},
    )
    (request,) = paused(graph, config)
    assert request["action_requests"][0]["description"] == "Static description"
    assert request["review_configs"][0]["allowed_decisions"] == ["approve"]


@pytest.mark.parametrize("review", [True, ["get_forecast"], {"get_forecast": True}])
def test_shorthands_allow_approve_edit_reject(review):
    """Ports test_human_in_the_loop_middleware_boolean_configs (``True``) for the three
    ways of flagging a tool."""
    _tools, _model, graph, config = start([[FORECAST_SF], "done"], review)
    (request,) = paused(graph, config)
    assert set(ALL) <= set(request["review_configs"][0]["allowed_decisions"])


def test_one_request_for_all_flagged_calls_in_order():
    """Ports test_human_in_the_loop_middleware_mixed_auto_approved_and_interrupt and
    test_human_in_the_loop_middleware_preserves_tool_call_order: one interrupt lists only
    the flagged calls, in call order; unflagged calls run without review."""
    turns = [
        [
            call("search", {"q": "a"}, id="id_a"),
            call("get_forecast", {"location": "B"}, id="id_b"),
            call("search", {"q": "c"}, id="id_c"),
            call("get_temperature", {"location": "D"}, id="id_d"),
            call("search", {"q": "e"}, id="id_e"),
        ],
        "done",
    ]
    tools, _model, graph, config = start(turns, ["get_forecast", "get_temperature"])
    (request,) = paused(graph, config)
    assert [a["name"] for a in request["action_requests"]] == ["get_forecast", "get_temperature"]
    assert [a["args"] for a in request["action_requests"]] == [{"location": "B"}, {"location": "D"}]
    out = resume(graph, config, {"type": "approve"}, {"type": "approve"})
    assert [m.tool_call_id for m in tool_messages(out)] == ["id_a", "id_b", "id_c", "id_d", "id_e"]
    assert sorted(name for name, _ in tools.log) == [
        "get_forecast",
        "get_temperature",
        "search",
        "search",
        "search",
    ]
    assert out["answer"] == "done"


# --- decisions -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_approve_runs_the_call_as_proposed(mode):
    """Ports test_human_in_the_loop_middleware_single_tool_accept."""
    tools = Tools()
    model = model_for(
        mode, [act(mode, "get_forecast", {"location": "Paris"}), final(mode, "It rains.")]
    )
    graph = create_react_graph(
        model, tools.all, tool_mode=mode, interrupt_before_tools=True, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": f"approve-{mode}"}}
    graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    (request,) = paused(graph, config)
    assert request["action_requests"][0]["args"] == {"location": "Paris"}
    assert tools.log == []
    out = resume(graph, config, {"type": "approve"})
    assert tools.log == [("get_forecast", {"location": "Paris"})]
    (message,) = tool_messages(out)
    assert tool_text(message) == "forecast for Paris: rain" and message.status == "success"
    assert "forecast for Paris: rain" in seen(model.prompts[-1])
    assert out["answer"] == "It rains." and out["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_edit_changes_what_runs(mode):
    """Ports test_human_in_the_loop_middleware_single_tool_edit /
    _edit_with_modified_args."""
    tools = Tools()
    model = model_for(
        mode, [act(mode, "get_forecast", {"location": "Paris"}), final(mode, "It rains.")]
    )
    graph = create_react_graph(
        model,
        tools.all,
        tool_mode=mode,
        interrupt_before_tools=["get_forecast"],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"edit-{mode}"}}
    graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    edited = {"name": "get_forecast", "args": {"location": "Lyon"}}
    out = resume(graph, config, {"type": "edit", "edited_action": edited})
    assert tools.log == [("get_forecast", {"location": "Lyon"})]
    (message,) = tool_messages(out)
    assert tool_text(message) == "forecast for Lyon: rain"
    assert message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert "forecast for Lyon: rain" in seen(model.prompts[-1])


@pytest.mark.parametrize("mode", MODES)
def test_reject_skips_the_call_and_tells_the_model(mode):
    """Ports test_human_in_the_loop_middleware_single_tool_response (reject)."""
    tools = Tools()
    model = model_for(
        mode, [act(mode, "get_forecast", {"location": "Paris"}), final(mode, "Okay.")]
    )
    graph = create_react_graph(
        model, tools.all, tool_mode=mode, interrupt_before_tools=True, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": f"reject-{mode}"}}
    graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    out = resume(graph, config, {"type": "reject", "message": "Custom response message"})
    assert tools.log == []
    (message,) = tool_messages(out)
    assert message.status == "error" and message.name == "get_forecast"
    assert "Custom response message" in tool_text(message)
    assert "Custom response message" in seen(model.prompts[-1])
    assert out["answer"] == "Okay." and out["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_respond_answers_for_the_tool(mode):
    """Ports test_human_in_the_loop_middleware_single_tool_respond."""
    tools = Tools()
    model = model_for(
        mode, [act(mode, "ask_user", {"question": "favorite color?"}), final(mode, "Blue it is.")]
    )
    graph = create_react_graph(
        model,
        tools.all,
        tool_mode=mode,
        interrupt_before_tools={"ask_user": {"allowed_decisions": ["respond"]}},
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"respond-{mode}"}}
    graph.invoke({"messages": [HumanMessage("Ask me")]}, config)
    (request,) = paused(graph, config)
    assert request["review_configs"][0]["allowed_decisions"] == ["respond"]
    out = resume(graph, config, {"type": "respond", "message": "blue"})
    assert tools.log == []
    (message,) = tool_messages(out)
    assert tool_text(message) == "blue"
    assert message.status == "success" and message.name == "ask_user"
    assert message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
    assert "blue" in seen(model.prompts[-1])
    assert out["answer"] == "Blue it is."


def test_mixed_approve_and_respond():
    """Ports test_human_in_the_loop_middleware_mixed_with_respond."""
    tools, _model, graph, config = start(
        [
            [
                call("get_forecast", {"location": "SF"}, id="1"),
                call("ask_user", {"question": "favorite color?"}, id="2"),
            ],
            "done",
        ],
        {
            "get_forecast": {"allowed_decisions": ["approve"]},
            "ask_user": {"allowed_decisions": ["respond"]},
        },
    )
    out = resume(graph, config, {"type": "approve"}, {"type": "respond", "message": "blue"})
    assert tools.log == [("get_forecast", {"location": "SF"})]
    answers = by_id(out)
    assert tool_text(answers["1"]) == "forecast for SF: rain"
    assert tool_text(answers["2"]) == "blue" and answers["2"].status == "success"


def test_mixed_approve_and_reject():
    """Ports test_human_in_the_loop_middleware_multiple_tools_mixed_responses."""
    tools, _model, graph, config = start(
        [[FORECAST_SF, TEMPERATURE_SF], "done"],
        {"get_forecast": {"allowed_decisions": ALL}, "get_temperature": {"allowed_decisions": ALL}},
    )
    out = resume(
        graph, config, {"type": "approve"}, {"type": "reject", "message": "User rejected this"}
    )
    assert tools.log == [("get_forecast", {"location": "San Francisco"})]
    assert [m.tool_call_id for m in tool_messages(out)] == ["1", "2"]
    rejected = by_id(out)["2"]
    assert rejected.status == "error" and rejected.name == "get_temperature"
    assert "User rejected this" in tool_text(rejected)


def test_edit_every_call():
    """Ports test_human_in_the_loop_middleware_multiple_tools_edit_responses."""
    tools, _model, graph, config = start(
        [[FORECAST_SF, TEMPERATURE_SF], "done"], ["get_forecast", "get_temperature"]
    )
    out = resume(
        graph,
        config,
        {
            "type": "edit",
            "edited_action": {"name": "get_forecast", "args": {"location": "New York"}},
        },
        {
            "type": "edit",
            "edited_action": {"name": "get_temperature", "args": {"location": "New York"}},
        },
    )
    # The calls run side by side: their order is not defined.
    assert sorted(tools.log, key=str) == [
        ("get_forecast", {"location": "New York"}),
        ("get_temperature", {"location": "New York"}),
    ]
    answers = by_id(out)
    assert tool_text(answers["1"]) == "forecast for New York: rain"
    assert tool_text(answers["2"]) == "temperature in New York: 12C"


def test_order_kept_with_edits_and_rejections():
    """Ports test_human_in_the_loop_middleware_preserves_order_with_edits and
    _preserves_order_with_rejections."""
    turns = [
        [
            call("search", {"q": "a"}, id="id_a"),
            call("get_forecast", {"location": "B"}, id="id_b"),
            call("search", {"q": "c"}, id="id_c"),
            call("get_temperature", {"location": "D"}, id="id_d"),
        ],
        "done",
    ]
    tools, _model, graph, config = start(turns, ["get_forecast", "get_temperature"])
    out = resume(
        graph,
        config,
        {"type": "edit", "edited_action": {"name": "get_forecast", "args": {"location": "B2"}}},
        {"type": "reject", "message": "Rejected tool D"},
    )
    messages = tool_messages(out)
    assert [m.tool_call_id for m in messages] == ["id_a", "id_b", "id_c", "id_d"]
    assert tool_text(messages[1]) == "forecast for B2: rain"
    assert messages[3].status == "error" and "Rejected tool D" in tool_text(messages[3])
    assert ("get_temperature", {"location": "D"}) not in tools.log


# --- bad resumes pause again ---------------------------------------------------------


def test_disallowed_decision_pauses_again_with_an_error():
    """Ports test_human_in_the_loop_middleware_disallowed_action and
    test_human_in_the_loop_middleware_respond_disallowed: the tool does not run; the run
    pauses again with an ``error`` explaining the problem, and a valid decision then
    goes through."""
    tools, _model, graph, config = start(
        [[call("get_forecast", {"location": "SF"}, id="1")], "done"],
        {"get_forecast": {"allowed_decisions": ["approve", "reject"]}},
    )
    edited = {"name": "get_forecast", "args": {"location": "LA"}}
    resume(graph, config, {"type": "edit", "edited_action": edited})
    (request,) = paused(graph, config)
    assert isinstance(request.get("error"), str) and request["error"]
    assert request["action_requests"][0]["args"] == {"location": "SF"}
    assert tools.log == []
    resume(graph, config, {"type": "respond", "message": "synthetic"})
    (request,) = paused(graph, config)
    assert isinstance(request.get("error"), str) and request["error"]
    out = resume(graph, config, {"type": "approve"})
    assert tools.log == [("get_forecast", {"location": "SF"})]
    assert out["answer"] == "done"


def test_unknown_decision_pauses_again():
    """Ports test_human_in_the_loop_middleware_unknown_response_type."""
    tools, _model, graph, config = start([[FORECAST_SF], "done"], True)
    resume(graph, config, {"type": "unknown"})
    (request,) = paused(graph, config)
    assert request.get("error")
    assert tools.log == []


@pytest.mark.parametrize("count", [0, 2])
def test_wrong_number_of_decisions_pauses_again(count):
    """Ports test_human_in_the_loop_middleware_sequence_mismatch."""
    tools, _model, graph, config = start([[FORECAST_SF], "done"], True)
    resume(graph, config, *([{"type": "approve"}] * count))
    (request,) = paused(graph, config)
    assert request.get("error")
    assert tools.log == []
    out = resume(graph, config, {"type": "approve"})
    assert out["answer"] == "done" and len(tools.log) == 1


# --- graph shape and persistence ----------------------------------------------------


def test_review_node_only_when_configured():
    """Node names: ``review`` exists only when approval is configured."""
    model = FakeToolModel(turns=[])
    tools = Tools()
    plain = create_react_graph(model, tools.all, tool_mode="native")
    reviewed = create_react_graph(model, tools.all, tool_mode="native", interrupt_before_tools=True)
    assert "review" not in plain.nodes
    assert "review" in reviewed.nodes
    assert {"generate", "call_tool"} <= set(reviewed.nodes)


def test_resume_from_sqlite_in_a_new_process_graph(tmp_path):
    """Interrupt → resume on a persistent checkpointer: the pause survives the graph
    object and the connection (a restart)."""
    path = os.fspath(tmp_path / "threads.sqlite")
    tools = Tools()
    model = FakeToolModel(turns=[[FORECAST_SF], "It rains in SF."])
    with sqlite3.connect(path, check_same_thread=False) as connection:
        graph = create_react_graph(
            model,
            tools.all,
            tool_mode="native",
            interrupt_before_tools=True,
            checkpointer=SqliteSaver(connection),
        )
        config = {"configurable": {"thread_id": "sqlite-1"}}
        graph.invoke({"messages": [HumanMessage("Weather in SF?")]}, config)
        assert paused(graph, config)
    connection.close()
    with sqlite3.connect(path, check_same_thread=False) as connection:
        graph = create_react_graph(
            model,
            tools.all,
            tool_mode="native",
            interrupt_before_tools=True,
            checkpointer=SqliteSaver(connection),
        )
        (request,) = paused(graph, config)
        assert request["action_requests"][0]["name"] == "get_forecast"
        out = resume(graph, config, {"type": "approve"})
    connection.close()
    assert tools.log == [("get_forecast", {"location": "San Francisco"})]
    assert out["answer"] == "It rains in SF."
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]


async def test_resume_under_ainvoke():
    """Ports the async HITL flow: pause and resume with ainvoke."""
    tools = Tools()
    model = FakeToolModel(turns=[[FORECAST_SF], "done"])
    graph = create_react_graph(
        model,
        tools.all,
        tool_mode="native",
        interrupt_before_tools=True,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "async"}}
    await graph.ainvoke({"messages": [HumanMessage("Weather?")]}, config)
    assert (await graph.aget_state(config)).tasks[0].interrupts
    out = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert tools.log == [("get_forecast", {"location": "San Francisco"})]
    assert out["answer"] == "done"


@pytest.mark.integration
def test_resume_from_postgres(postgres_uri):
    """Interrupt → resume on PostgreSQL, with a fresh graph and connection for the resume."""
    from langgraph.checkpoint.postgres import PostgresSaver

    tools = Tools()
    model = FakeToolModel(turns=[[FORECAST_SF], "done"])
    config = {"configurable": {"thread_id": "pg-approval"}}
    with PostgresSaver.from_conn_string(postgres_uri) as saver:
        saver.setup()
        graph = create_react_graph(
            model, tools.all, tool_mode="native", interrupt_before_tools=True, checkpointer=saver
        )
        graph.invoke({"messages": [HumanMessage("Weather?")]}, config)
        assert paused(graph, config)
    with PostgresSaver.from_conn_string(postgres_uri) as saver:
        graph = create_react_graph(
            model, tools.all, tool_mode="native", interrupt_before_tools=True, checkpointer=saver
        )
        out = resume(graph, config, {"type": "approve"})
    assert tools.log == [("get_forecast", {"location": "San Francisco"})]
    assert out["answer"] == "done"
