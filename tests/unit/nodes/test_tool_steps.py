"""How ReAct runs a tool step under ``invoke``: a step of synchronous tools takes
ToolNode's async path on the thread's own event loop (one worker thread per call, the
timeout is asyncio's); a tool with an async implementation of its own, or a thread where
an event loop already runs, keeps ToolNode's threads. Every way ends the same."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import interrupt

from loopgraphs import create_react_graph
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import make_settings
from loopgraphs.nodes.tool_step import sync_step_loop
from tests.support.fakes import calls, tool_call
from tests.support.scripts import act, final, model_for


def slow(key: str) -> str:
    """Sleeps."""
    time.sleep(2)
    return "late"


def build(tools: list, replies: list, **options):
    model = model_for("native", replies)
    return model, create_react_graph(model, tools, tool_mode="native", **options)


def test_a_tool_with_an_async_implementation_runs_its_sync_function_under_invoke():
    """The async implementation may hold resources of another event loop, so invoke runs
    the sync function and ainvoke the coroutine, as LangGraph's ToolNode does."""
    ran: list[str] = []

    def lookup(key: str) -> str:
        ran.append("sync")
        return "from sync"

    async def alookup(key: str) -> str:
        ran.append("async")
        return "from async"

    tool = StructuredTool.from_function(
        func=lookup, coroutine=alookup, name="lookup", description="Look a key up."
    )
    replies = [act("native", "lookup", {"key": "k"}), final("native", "done")]
    model, graph = build([tool], replies)
    graph.invoke({"messages": [("user", "q")]})
    assert ran == ["sync"] and "from sync" in content_text(model.prompts[1][-1].content)
    _, graph = build([tool], replies)
    asyncio.run(graph.ainvoke({"messages": [("user", "q")]}))
    assert ran == ["sync", "async"]


async def test_a_sync_tool_times_out_under_invoke_where_an_event_loop_runs():
    """invoke from a thread with a running event loop (a notebook cell, an async
    function) runs the step on ToolNode's threads, and the timeout still holds."""
    model, graph = build(
        [slow], [act("native", "slow", {"key": "k"}), final("native", "ok")], tool_timeout=0.2
    )
    started = time.monotonic()
    out = graph.invoke({"messages": [("user", "q")]})
    assert time.monotonic() - started < 1.9
    assert "timed out after 0.2 s" in content_text(model.prompts[1][-1].content)
    assert (out["answer"], out["status"]) == ("ok", "completed")


def test_steps_of_sync_tools_time_out_run_after_run():
    """Step after step and run after run under invoke, each timeout holds."""
    replies = [act("native", "slow", {"key": "k"}), final("native", "ok")]
    for _ in range(3):
        model, graph = build([slow], replies, tool_timeout=0.1)
        out = graph.invoke({"messages": [("user", "q")]})
        assert out["status"] == "completed"
        assert "timed out after 0.1 s" in content_text(model.prompts[1][-1].content)


def test_which_steps_take_the_thread_event_loop():
    async def aslow(key: str) -> str:
        """Sleeps."""
        return key

    run = make_settings("react", model_for("native", []), [slow, aslow], {})
    state_for = {
        name: {"messages": [calls(tool_call(name, {"key": "k"}))]}
        for name in ("slow", "aslow", "no_such_tool")
    }
    loop = sync_step_loop(run, state_for["slow"])
    assert loop is not None and not loop.is_running()
    assert sync_step_loop(run, state_for["no_such_tool"]) is loop
    assert sync_step_loop(run, state_for["aslow"]) is None

    async def inside_a_running_loop() -> object:
        return sync_step_loop(run, state_for["slow"])

    assert asyncio.run(inside_a_running_loop()) is None


def quick(key: str) -> str:
    """Answers at once."""
    return f"value of {key}"


def _run_in(conn) -> None:
    replies = [act("native", "quick", {"key": "k"}), final("native", "ok")]
    model, graph = build([quick], replies, tool_timeout=5)
    out = graph.invoke({"messages": [("user", "q")]})
    conn.send((out["status"], content_text(model.prompts[1][-1].content)))


def test_a_forked_process_runs_tool_steps_on_loops_of_its_own():
    """A child forked after a run (a prefork server, multiprocessing's fork) must not use
    the parent's event loop or its pool threads, which the child does not have."""
    replies = [act("native", "quick", {"key": "k"}), final("native", "ok")]
    _, graph = build([quick], replies)
    assert graph.invoke({"messages": [("user", "q")]})["status"] == "completed"
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=_run_in, args=(child,))
    process.start()
    assert parent.poll(30), "the forked run did not finish"
    status, observation = parent.recv()
    assert status == "completed" and "value of k" in observation
    process.join(10)
    assert process.exitcode == 0


def _collect() -> None:
    """A forked child that only collects garbage (its copy of the parent's loops goes)."""
    gc.collect()


def test_a_forked_child_leaves_the_parents_event_loop_working():
    """The child drops its copy of the parent's event loop; that must not stop the parent's
    loop from hearing its worker threads (an epoll set is shared across fork, so a loop
    closed in the child would unregister the parent's wake-up socket)."""
    replies = [act("native", "quick", {"key": "k"}), final("native", "ok")]
    _, graph = build([quick], replies, tool_timeout=5)
    assert graph.invoke({"messages": [("user", "q")]})["status"] == "completed"
    process = multiprocessing.get_context("fork").Process(target=_collect)
    process.start()
    process.join(10)
    assert process.exitcode == 0
    model, graph = build([quick], replies, tool_timeout=2)
    graph.invoke({"messages": [("user", "q")]})
    assert "value of k" in content_text(model.prompts[1][-1].content)


def test_a_step_stopped_by_an_interrupt_finishes_its_other_calls_first():
    """A tool's interrupt() stops the step; the step's other calls still run to their end
    (callbacks included) before invoke returns, as on ToolNode's threads."""
    ended: list[str] = []

    class ToolEnds(BaseCallbackHandler):
        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            ended.append(str(output))

    def ask(question: str) -> str:
        """Ask a human."""
        return str(interrupt(question))

    def wait(key: str) -> str:
        """Waits a moment."""
        time.sleep(0.2)
        return "waited"

    both = calls(tool_call("ask", {"question": "ok?"}), tool_call("wait", {"key": "k"}))
    model = model_for("native", [both, final("native", "done")])
    graph = create_react_graph(model, [ask, wait], tool_mode="native", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "callbacks": [ToolEnds()]}
    graph.invoke({"messages": [("user", "q")]}, config)
    assert graph.get_state(config).next == ("call_tool",)
    assert any("waited" in text for text in ended)
