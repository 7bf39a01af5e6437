"""What an ``after_model`` hook reads as a step's reply.

create_agent runs its ``after_model`` hooks right after the model node, whose reply is the
thread's last assistant message. A loop's model step may add none: its model calls were
internal (a value, a verdict, a search's candidates). Then the last assistant message is
an earlier step's, and when its tool calls all have their results a hook would review
them again (human-in-the-loop) or count them again (a tool-call limit). ``own_reply``
shows such a hook an empty reply after them instead, which never reaches the thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from loopgraphs.state import LoopRuntime, messages_of

HookUpdate = dict[str, Any] | None
Hook = Callable[[Mapping[str, object], LoopRuntime], HookUpdate]
AsyncHook = Callable[[Mapping[str, object], LoopRuntime], Awaitable[HookUpdate]]

NO_REPLY_ID = "loopgraphs-no-reply"
"""Id of the empty reply an ``after_model`` hook sees after a step that added none."""


def seeing_own_reply(
    sync: Hook | None, asynchronous: AsyncHook | None
) -> tuple[Hook | None, AsyncHook | None]:
    """A hook's sync and async methods, each reading the state through ``own_reply``
    (and never writing back the empty reply it may see)."""

    def seen_sync(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert sync is not None
        return without_no_reply(sync(own_reply(state), runtime))

    async def seen_async(state: Mapping[str, object], runtime: LoopRuntime) -> HookUpdate:
        assert asynchronous is not None
        return without_no_reply(await asynchronous(own_reply(state), runtime))

    return (
        seen_sync if sync is not None else None,
        seen_async if asynchronous is not None else None,
    )


def own_reply(state: Mapping[str, object]) -> Mapping[str, object]:
    """The state as an ``after_model`` hook reads it: its last assistant message is the
    step's reply, as after create_agent's model node. A step whose model calls were
    internal (a value, a candidate of a search) adds no reply; when the last assistant
    message's tool calls all have their results it is an earlier step's, which the hook
    must not review or count again, so the hook sees an empty reply after it."""
    messages = messages_of(state)
    at = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), -1
    )
    last = messages[at] if at >= 0 else None
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return state
    after = messages[at + 1 :]
    answered = {m.tool_call_id for m in after if isinstance(m, ToolMessage)}
    if any(call["id"] not in answered for call in last.tool_calls):
        return state
    return {**state, "messages": [*messages, AIMessage(content="", id=NO_REPLY_ID)]}


def without_no_reply(update: HookUpdate) -> HookUpdate:
    """A hook's update without the empty reply ``own_reply`` showed it."""
    if not isinstance(update, dict) or not isinstance(update.get("messages"), list):
        return update
    messages = [m for m in update["messages"] if getattr(m, "id", None) != NO_REPLY_ID]
    return {**update, "messages": messages}


__all__ = ["NO_REPLY_ID", "own_reply", "seeing_own_reply", "without_no_reply"]
