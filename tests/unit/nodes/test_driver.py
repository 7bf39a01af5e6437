"""The node runner: one logic, sync and async drivers, provider quirks."""

from __future__ import annotations

from types import SimpleNamespace

import openai
import pytest
from langchain_core.runnables import RunnableLambda

from loopgraphs.nodes.errors import failed_calls
from loopgraphs.nodes.model_call import ModelCaller


class LengthFinishReasonError(openai.LengthFinishReasonError):
    """openai's error for a structured reply cut at max_tokens, its completion holding only
    what is read of it."""

    def __init__(self) -> None:
        Exception.__init__(self, "length limit reached")
        usage = SimpleNamespace(
            prompt_tokens=40,
            completion_tokens=8,
            prompt_tokens_details=SimpleNamespace(cached_tokens=30),
        )
        message = SimpleNamespace(content='{"thought": "cut sh')
        self.completion = SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def raising(exc: Exception) -> RunnableLambda:
    def fail(_):
        raise exc

    return RunnableLambda(fail)


async def test_truncated_structured_reply_is_returned_not_raised():
    call = ModelCaller(raising(LengthFinishReasonError())).call([])
    for outcome in (call.invoke({}), await call.ainvoke({})):
        assert outcome.reply.content == '{"thought": "cut sh'
        assert outcome.reply.usage_metadata["output_tokens"] == 8
        assert outcome.reply.usage_metadata["input_token_details"]["cache_read"] == 30
        assert outcome.calls == 1
        assert outcome.usage == {"input_tokens": 40, "output_tokens": 8, "cached_tokens": 30}


async def test_other_errors_still_raise_and_count_as_sent():
    call = ModelCaller(raising(KeyError("x"))).call([])
    with pytest.raises(KeyError) as caught:
        call.invoke({})
    assert failed_calls(caught.value) == 1
    with pytest.raises(KeyError) as caught:
        await call.ainvoke({})
    assert failed_calls(caught.value) == 1


def react_channels():
    """The channels of ReAct's state, as a routed step reads them."""
    from loopgraphs.nodes.build import new_graph
    from loopgraphs.nodes.settings import make_settings
    from loopgraphs.state import TotalsOutput, TotalsState
    from tests.support.fakes import ScriptedChatModel

    settings = make_settings("react", ScriptedChatModel(replies=["hi"]), None, {})
    return new_graph(TotalsState, TotalsOutput, {}, loop="react", settings=settings).channels


def reduced(channels, state, key, writes):
    """What LangGraph's own channel makes of ``writes`` to ``key``."""
    channel = channels[key].from_checkpoint(state[key]) if key in state else channels[key].copy()
    channel.update(writes)
    return channel.get()


def test_state_after_applies_each_write_as_the_reducers_do():
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.types import Command

    from loopgraphs.state import state_after

    channels = react_channels()
    history = [
        HumanMessage("q", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
        ToolMessage("r", tool_call_id="c1", id="t1"),
    ]
    state = {"messages": history, "scratch": {"iterations": 1, "fence": "f"}, "status": "running"}
    cases = [
        [AIMessage("new", id="a2")],  # all new: appended
        [AIMessage("no id")],  # new, without an id yet
        [AIMessage("edited", id="a1")],  # replaces the stored reply in place
        [RemoveMessage(id="t1")],
        [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("summary", id="s")],
        [("user", "a tuple to convert")],
    ]
    for writes in cases:
        after = state_after(channels, state, [{"messages": writes}])
        expected = reduced(channels, state, "messages", [list(writes)])
        assert [(type(m), m.content) for m in after["messages"]] == [
            (type(m), m.content) for m in expected
        ]
        assert [m.id for m in after["messages"] if m.id in {"h1", "a1", "t1", "a2", "s"}] == [
            m.id for m in expected if m.id in {"h1", "a1", "t1", "a2", "s"}
        ]
    assert state["messages"] == history  # the node's input is left as it was

    # A key without a reducer takes the last write; scratch merges (an update and a
    # command of the same node); keys not written keep their value.
    after = state_after(
        channels,
        state,
        [
            {"status": "completed", "scratch": {"iterations": 2}},
            Command(update={"scratch": {"x": 1}}),
        ],
    )
    assert after["status"] == "completed"
    assert after["scratch"] == {"iterations": 2, "fence": "f", "x": 1}
    assert after["messages"] is history
