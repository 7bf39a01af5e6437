"""Chat turns of an inner run, streamed as the calling node's own.

LangGraph's ``stream_mode="messages"`` streams a subgraph's model tokens only with
``subgraphs=True``. Reflexion runs each episode as a ReAct subgraph from inside its own
``generate`` node, and the episode's turns are the chat's replies: a relay carries them to
the calling node. The inner run's chat turns are sent with LangGraph's ``nostream`` tag
(so that nothing streams them in the inner namespace) and with the relay as a callback
handler, which re-opens each as a model run of the calling node, with the same chunks
(and so the same message ids): its tokens (``on_llm_new_token``), or the protocol events
of LangGraph's newer streaming (``on_stream_event``). LangGraph streams that run as the
node's; it is tagged ``langsmith:hidden`` so that a trace shows the turn once, as the
inner run's.

The inner run finds its relay in a context variable set around it (``relaying``,
``current_relay``); the model-call path attaches it to each chat turn (see
``loopgraphs.nodes.model_call``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackHandler,
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    CallbackManagerForLLMRun,
)
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    merge_configs,
)
from langgraph.constants import TAG_HIDDEN

if TYPE_CHECKING:
    from langchain_protocol.protocol import MessagesData


def _hidden(config: RunnableConfig) -> RunnableConfig:
    return merge_configs(config, {"tags": [TAG_HIDDEN]})


class ChatRelay(BaseCallbackHandler):
    """Relays the chat turns of an inner run to the node whose ``config`` it is given
    (the sync path: the inner run is invoked)."""

    run_inline = True

    def __init__(self, config: RunnableConfig) -> None:
        self.manager = get_callback_manager_for_config(_hidden(config))
        self.runs: dict[UUID, CallbackManagerForLLMRun] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        kwargs = {k: v for k, v in kwargs.items() if k not in _OWN_KEYS}
        self.runs[run_id] = self.manager.on_chat_model_start(serialized, messages, **kwargs)[0]

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        if run := self.runs.get(run_id):
            run.on_llm_new_token(token, chunk=chunk)

    def on_stream_event(self, event: MessagesData, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.get(run_id):
            run.on_stream_event(event)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.pop(run_id, None):
            run.on_llm_end(response)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.pop(run_id, None):
            run.on_llm_error(error)


class AsyncChatRelay(AsyncCallbackHandler):
    """``ChatRelay`` for the async path (the inner run is awaited)."""

    run_inline = True

    def __init__(self, config: RunnableConfig) -> None:
        self.manager = get_async_callback_manager_for_config(_hidden(config))
        self.runs: dict[UUID, AsyncCallbackManagerForLLMRun] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        kwargs = {k: v for k, v in kwargs.items() if k not in _OWN_KEYS}
        runs = await self.manager.on_chat_model_start(serialized, messages, **kwargs)
        self.runs[run_id] = runs[0]

    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        if run := self.runs.get(run_id):
            await run.on_llm_new_token(token, chunk=chunk)

    async def on_stream_event(self, event: MessagesData, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.get(run_id):
            await run.on_stream_event(event)

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.pop(run_id, None):
            await run.on_llm_end(response)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if run := self.runs.pop(run_id, None):
            await run.on_llm_error(error)


# What the inner run's manager passes that the calling node's manager sets itself.
_OWN_KEYS = frozenset({"parent_run_id", "tags", "metadata"})


Relay = ChatRelay | AsyncChatRelay


_current: ContextVar[Relay | None] = ContextVar("loopgraphs_chat_relay", default=None)


@contextmanager
def relaying(relay: Relay) -> Iterator[None]:
    """Within the block (and the tasks it starts: an inner run invoked there), the chat
    turns are ``relay``'s. Held in a context variable, not in the run's config: a config
    may be copied and stored with the run's checkpoints, which a relay cannot be."""
    token = _current.set(relay)
    try:
        yield
    finally:
        _current.reset(token)


def current_relay() -> Relay | None:
    """The relay of the inner run a chat turn is made in (None outside such a run)."""
    return _current.get()


__all__ = ["AsyncChatRelay", "ChatRelay", "current_relay", "relaying"]
