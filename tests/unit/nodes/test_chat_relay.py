"""The chat relay: a chat turn of an inner run re-opened as a model run of the calling
node, with the same chunks, on the sync and the async path; and how a model call finds
it in its config."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langgraph.constants import TAG_HIDDEN, TAG_NOSTREAM

from loopgraphs.nodes.chat_relay import AsyncChatRelay, ChatRelay, current_relay, relaying
from loopgraphs.nodes.model_call import CALL_METADATA, INTERNAL_TAG, ModelCaller
from tests.support.fakes import ProviderError, ScriptedChatModel


class Seen(BaseCallbackHandler):
    """What the calling node's handlers see: each model run's start (tags, metadata),
    its tokens (with their message ids), its end and its error."""

    def __init__(self) -> None:
        self.events: list[tuple[str, UUID, Any]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.events.append(("start", run_id, (kwargs["tags"], kwargs["metadata"])))

    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        chunk = kwargs["chunk"]
        self.events.append(("token", run_id, (chunk.message.id, token)))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("end", run_id, response.generations[0][0].message.id))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("error", run_id, error))


NODE = {"tags": ["node"], "metadata": {"langgraph_node": "generate"}}


def relayed_turn(replies: list[Any], asynchronous: bool) -> Seen:
    """One streamed chat turn sent with a relay to a node whose handler is ``Seen``."""
    seen = Seen()
    node = {**NODE, "callbacks": [seen]}
    model = ScriptedChatModel(replies=replies)
    prompt = [HumanMessage("Where are the plums?")]
    if asynchronous:

        async def turn() -> None:
            config = {"callbacks": [AsyncChatRelay(node)]}
            async for _ in model.astream(prompt, config):
                pass

        asyncio.run(turn())
    else:
        for _ in model.stream(prompt, {"callbacks": [ChatRelay(node)]}):
            pass
    return seen


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_relayed_turn_is_a_hidden_run_of_the_node_with_the_same_chunks(asynchronous):
    seen = relayed_turn(["Plums are in the basket."], asynchronous)
    kinds = [kind for kind, _, _ in seen.events]
    assert kinds[0] == "start" and kinds[-1] == "end" and set(kinds[1:-1]) == {"token"}
    (run,) = {run_id for _, run_id, _ in seen.events}  # one run, the node's
    tags, metadata = seen.events[0][2]
    assert {"node", TAG_HIDDEN} <= set(tags) and metadata["langgraph_node"] == "generate"
    tokens = [data for kind, _, data in seen.events if kind == "token"]
    assert "".join(token for _, token in tokens) == "Plums are in the basket."
    (message_id,) = {message_id for message_id, _ in tokens}
    assert message_id == seen.events[-1][2] and message_id != f"lc_run--{run}"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_failure_reaches_the_node_as_the_relayed_runs_error(asynchronous):
    seen = Seen()
    node = {**NODE, "callbacks": [seen]}
    relay = AsyncChatRelay(node) if asynchronous else ChatRelay(node)
    model = ScriptedChatModel(replies=[ProviderError(500)])
    prompt = [HumanMessage("Where?")]
    with pytest.raises(ProviderError):
        if asynchronous:
            asyncio.run(model.ainvoke(prompt, {"callbacks": [relay]}))
        else:
            model.invoke(prompt, {"callbacks": [relay]})
    assert [kind for kind, _, _ in seen.events] == ["start", "error"]
    assert not relay.runs


def test_a_model_call_finds_the_relay_of_its_inner_run_in_the_context():
    """The relay lives in a context variable around the inner run, not in its config,
    which a LangGraph server stores with the run's checkpoints (the served chat tests
    run Reflexion there)."""
    relay = ChatRelay(NODE)
    assert current_relay() is None
    with relaying(relay):
        assert current_relay() is relay
    assert current_relay() is None


def test_a_chat_turn_of_an_inner_run_is_sent_with_nostream_and_the_relay():
    relay = ChatRelay(NODE)
    turn = ModelCaller(ScriptedChatModel(replies=[])).call([HumanMessage("Where?")])
    with relaying(relay):
        sent = turn.sent_with(NODE)
    assert sent is not None and TAG_NOSTREAM in sent["tags"] and "node" in sent["tags"]
    assert relay in sent["callbacks"]
    assert turn.sent_with(NODE) is None  # a chat turn anywhere else runs as it is


def test_an_internal_call_is_tagged_with_its_purpose_and_not_relayed():
    relay = ChatRelay(NODE)
    call = ModelCaller(ScriptedChatModel(replies=[])).call([HumanMessage("Where?")], purpose="plan")
    with relaying(relay):
        sent = call.sent_with(NODE)
    assert sent is not None
    assert {TAG_NOSTREAM, INTERNAL_TAG, "node"} <= set(sent["tags"])
    assert sent["metadata"] == {"langgraph_node": "generate", CALL_METADATA: "plan"}
    assert relay not in (sent.get("callbacks") or [])
