"""The tool step's parts one by one: which calls a step runs, which calls are still open,
one task per call, which tool sets run on the thread's own event loop, a return_direct
result ending the run, and a human message a tool added being noted."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.types import Command, Send

from loopgraphs.nodes import tool_step
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.tool_step import (
    calls_in,
    dispatch,
    pending_calls,
    run_step,
    sync_step_loop,
)
from loopgraphs.toolkits.registry import ToolRegistry
from tests.support.fakes import ScriptedChatModel

ADD = {"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}
ECHO = {"name": "echo", "args": {"text": "x"}, "id": "c2", "type": "tool_call"}


@tool
def add(a: int) -> int:
    """Add one."""
    return a + 1


@tool
async def slow(a: int) -> int:
    """Add one, asynchronously."""
    return a + 1


@tool(return_direct=True)
def finish(text: str) -> str:
    """End with the text."""
    return text


def test_a_step_runs_the_calls_sent_to_it_or_the_last_replys():
    assert calls_in([ADD, "not a call"]) == [ADD]
    reply = AIMessage("", tool_calls=[ADD, ECHO])
    assert [c["id"] for c in calls_in({"messages": [HumanMessage("q"), reply]})] == ["c1", "c2"]
    assert calls_in({"messages": [HumanMessage("q")]}) == []
    assert calls_in({"messages": []}) == [] and calls_in({}) == [] and calls_in(None) == []


def test_the_open_calls_are_the_last_replys_without_a_result():
    reply = AIMessage("", tool_calls=[ADD, ECHO])
    done = ToolMessage("2", tool_call_id="c1")
    assert [c["id"] for c in pending_calls([HumanMessage("q"), reply])] == ["c1", "c2"]
    assert [c["id"] for c in pending_calls([reply, done])] == ["c2"]
    older = AIMessage("", tool_calls=[{**ADD, "id": "c0"}])
    assert pending_calls([older, reply, done, HumanMessage("more")]) == [ECHO]
    assert pending_calls([HumanMessage("q")]) == []


def test_each_call_is_sent_as_a_task_of_its_own():
    sent = dispatch([{k: v for k, v in ADD.items() if k != "type"}, ECHO], node="tools")
    assert sent == [Send("tools", [ADD]), Send("tools", [ECHO])]
    assert dispatch([]) == []
    assert dispatch([ADD])[0].node == "call_tool"


def settings(*tools: Any, **options: Any) -> LoopSettings:
    return LoopSettings(
        model=ScriptedChatModel(replies=[]), tools=ToolRegistry(list(tools)), **options
    )


def test_a_tool_is_synchronous_unless_it_has_an_async_implementation():
    assert tool_step._sync_function(add)
    assert tool_step._sync_function(None)  # unknown: nothing runs
    assert not tool_step._sync_function(slow)

    class OwnAsync(StructuredTool):
        async def _arun(self, *args: Any, **kwargs: Any) -> Any:
            return "async"

    own = OwnAsync(name="own", description="d", args_schema=add.args_schema, func=lambda a: a)
    assert not tool_step._sync_function(own)
    assert tool_step._all_sync(ToolRegistry([add, finish]))
    assert not tool_step._all_sync(ToolRegistry([add, slow]))


def test_a_step_of_synchronous_tools_runs_on_the_threads_own_loop():
    run = settings(add)
    loop = sync_step_loop(run, {"messages": [AIMessage("", tool_calls=[ADD])]})
    assert isinstance(loop, asyncio.AbstractEventLoop)
    assert sync_step_loop(run, {}) is loop  # kept for the thread
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(sync_step_loop(run, {})))
    worker.start()
    worker.join()
    assert found[0] is not None and found[0] is not loop  # one per thread
    loop.close()
    assert sync_step_loop(run, {}) is not loop  # a closed loop is replaced


def test_a_step_with_async_tools_or_tool_wrappers_keeps_its_own_path():
    slow_call = {**ADD, "name": "slow"}
    mixed = settings(add, slow)
    assert sync_step_loop(mixed, {"messages": [AIMessage("", tool_calls=[slow_call])]}) is None
    # only synchronous tools called: the thread's loop serves
    assert sync_step_loop(mixed, {"messages": [AIMessage("", tool_calls=[ADD])]}) is not None

    async def inside() -> Any:
        return sync_step_loop(settings(add), {})

    assert asyncio.run(inside()) is None  # an event loop already runs here


def test_a_step_stopped_early_still_finishes_its_other_calls():
    loop = asyncio.new_event_loop()
    finished: list[str] = []

    async def other() -> None:
        await asyncio.sleep(0.01)
        finished.append("other")

    async def step() -> None:
        asyncio.get_running_loop().create_task(other())
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        run_step(loop, step())
    assert finished == ["other"]
    assert run_step(loop, asyncio.sleep(0, result="ok")) == "ok"
    loop.close()


def test_a_return_direct_result_ends_the_run_with_it():
    run = settings(add, finish)
    fenced = ToolMessage(
        "<<tool_output f>>\nbye\n<<end_tool_output f>>", tool_call_id="c", name="finish"
    )
    out = tool_step._return_direct(run, {"messages": [fenced]})
    assert out["answer"] == "bye" and out["scratch"] == {"tool_ended": True}
    as_list = tool_step._return_direct(run, [{"messages": [fenced]}])
    assert as_list[-1] == Command(update={"scratch": {"tool_ended": True}, "answer": "bye"})


def test_a_failed_or_ordinary_result_does_not_end_the_run():
    run = settings(add, finish)
    failed = ToolMessage("boom", tool_call_id="c", name="finish", status="error")
    ordinary = ToolMessage("2", tool_call_id="c", name="add")
    for message in (failed, ordinary):
        output = {"messages": [message]}
        assert tool_step._return_direct(run, output) is output
    plain = {"messages": [ordinary]}
    assert tool_step._return_direct(settings(add), plain) is plain


def test_a_human_message_a_tool_added_is_taken_in_by_the_run():
    added = HumanMessage("from the tool")
    out = tool_step._noted_human({"messages": [ToolMessage("ok", tool_call_id="c"), added]})
    assert len(added.id or "") == 36 and out["scratch"] == {"seen": added.id}
    command = Command(update={"messages": [HumanMessage("again", id="h7")]})
    updates = tool_step._noted_human([command])
    assert updates[-1] == Command(update={"scratch": {"seen": "h7"}})
    plain = {"messages": [ToolMessage("ok", tool_call_id="c")]}
    assert tool_step._noted_human(plain) is plain


def test_a_threads_loop_is_closed_when_the_thread_ends():
    import gc

    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(sync_step_loop(settings(add), {})))
    worker.start()
    worker.join()
    del worker
    gc.collect()
    assert found[0].is_closed()


def test_only_an_idle_open_loop_is_closed():
    idle = asyncio.new_event_loop()
    tool_step._close_loop(idle)
    assert idle.is_closed()
    tool_step._close_loop(idle)  # closed already: nothing to do

    async def close_while_running() -> bool:
        running = asyncio.get_running_loop()
        tool_step._close_loop(running)
        return running.is_closed()

    busy = asyncio.new_event_loop()
    assert busy.run_until_complete(close_while_running()) is False
    busy.close()


def test_a_step_stopped_early_raises_its_own_error_not_another_calls():
    loop = asyncio.new_event_loop()

    async def other() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("the other call failed")

    async def step() -> None:
        asyncio.get_running_loop().create_task(other())
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        run_step(loop, step())
    loop.close()


def test_a_tool_steps_loop_watches_its_sockets_with_poll():
    # An epoll set would be shared with forked children (see ``_new_loop``).
    import selectors

    loop = tool_step._new_loop()
    try:
        assert isinstance(loop._selector, selectors.PollSelector)  # type: ignore[attr-defined]
    finally:
        loop.close()
