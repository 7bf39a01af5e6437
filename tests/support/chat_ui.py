"""A chat over a served graph, driven the way LangChain's agent-chat-ui drives a LangGraph
server (its ``useStream`` submit and its approval inbox), over ``langgraph_sdk``'s sync
client.

Each human turn is one streamed run on the thread: the input is
``{"messages": [<tool messages answering dangling calls>, <the human message>]}``, the
human message ``{"id": <uuid>, "type": "human", "content": [{"type": "text", ...}]}``,
streamed with the modes the UI subscribes to (``values``, ``messages-tuple`` and
``custom``), ``stream_subgraphs=True`` and ``stream_resumable=True`` (so a disconnect
lets the run go on). Before each turn the thread's messages are read, as the UI reads
them from the thread's history, and every AI tool call not followed by a tool message
gets the UI's placeholder result. An approval is resumed as the inbox does it: input
``{}`` and ``command={"resume": {"decisions": [...]}}``, without subgraphs.

The model, tool mode and budget come from the assistant's context (the UI names an
assistant and sends no context of its own): ``assistant_for`` makes one.

Every message chunk that streams is kept as a ``Chunk`` (event name, namespace, message
id, type and text), with the run's last root ``values`` and any ``error`` event.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_sdk.client import SyncLangGraphClient

from loopgraphs.nodes.parsing.text import content_text

STREAM_MODES = ["values", "messages-tuple", "custom"]
PLACEHOLDER_RESULT = "Successfully handled tool call."
PLACEHOLDER_PREFIX = "do-not-render-"


@dataclass(frozen=True)
class Chunk:
    """One streamed message chunk.

    Attributes:
        event: The event's name: ``messages``, or ``messages|<namespace>`` from a subgraph.
        namespace: The subgraph path the chunk came from; empty for the graph itself.
        id: The message's id, which the UI merges chunks by.
        type: The message's type (``AIMessageChunk``, ``ai``, ``tool``, ...).
        text: The chunk's text.
        node: The node that produced it (``langgraph_node`` in its metadata).
    """

    event: str
    namespace: tuple[str, ...]
    id: str
    type: str
    text: str
    node: str


@dataclass
class Streamed:
    """What one run streamed: its message chunks, last root values, interrupts, errors."""

    run_id: str = ""
    chunks: list[Chunk] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)

    def ids(self) -> list[str]:
        """The ids of the messages that streamed, in order of first appearance."""
        return list(dict.fromkeys(chunk.id for chunk in self.chunks))

    def text_of(self, message_id: str) -> str:
        """The text a message's chunks add up to (what its bubble shows)."""
        return "".join(chunk.text for chunk in self.chunks if chunk.id == message_id)

    def bubbles(self) -> dict[str, str]:
        """Each AI message that streamed, by id, with its text."""
        ai = [c.id for c in self.chunks if c.type in ("ai", "AIMessageChunk")]
        return {message_id: self.text_of(message_id) for message_id in dict.fromkeys(ai)}


def human_message(text: str) -> dict[str, Any]:
    """A human message as the UI writes it: a fresh uuid and one text part."""
    return {"id": str(uuid.uuid4()), "type": "human", "content": [{"type": "text", "text": text}]}


def placeholder_results(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The UI's tool messages for AI tool calls not followed by a tool message."""
    results: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        calls = (message.get("tool_calls") or []) if message.get("type") == "ai" else []
        following = messages[index + 1] if index + 1 < len(messages) else None
        if not calls or (following is not None and following.get("type") == "tool"):
            continue
        results.extend(
            {
                "type": "tool",
                "tool_call_id": call.get("id") or "",
                "id": f"{PLACEHOLDER_PREFIX}{uuid.uuid4()}",
                "name": call.get("name"),
                "content": PLACEHOLDER_RESULT,
            }
            for call in calls
        )
    return results


def assistant_for(client: SyncLangGraphClient, graph_id: str, context: Mapping[str, Any]) -> str:
    """A new assistant of a served graph with the given context; its id."""
    assistant = client.assistants.create(graph_id, context=dict(context))
    return str(assistant["assistant_id"])


class ChatUI:
    """One chat thread on a served assistant.

    Attributes:
        sent: The human messages sent, in order, as sent.
    """

    def __init__(self, client: SyncLangGraphClient, assistant_id: str) -> None:
        self.client = client
        self.assistant_id = assistant_id
        self.thread_id = str(client.threads.create()["thread_id"])
        self.sent: list[dict[str, Any]] = []

    def state(self) -> dict[str, Any]:
        """The thread's current state (``values``, ``tasks`` with their interrupts, ...)."""
        return dict(self.client.threads.get_state(self.thread_id))

    def messages(self) -> list[dict[str, Any]]:
        """The thread's messages."""
        return list((self.state().get("values") or {}).get("messages") or [])

    def interrupts(self) -> list[Any]:
        """The values of the interrupts the thread waits on."""
        tasks = self.state().get("tasks") or []
        return [i["value"] for task in tasks for i in task.get("interrupts") or []]

    def send(self, text: str, **options: Any) -> Streamed:
        """Send one human turn and stream its run to the end.

        Args:
            text: What the user typed.
            **options: Further arguments of ``runs.stream`` (``multitask_strategy``,
                ``on_run_created``).
        """
        human = human_message(text)
        self.sent.append(human)
        turn = {"messages": [*placeholder_results(self.messages()), human]}
        return self._stream(
            turn, stream_subgraphs=True, stream_resumable=True, on_disconnect="continue", **options
        )

    def resume(self, decisions: Sequence[Mapping[str, Any]]) -> Streamed:
        """Answer the pending approval with one decision per call, as the inbox does."""
        command = {"resume": {"decisions": [dict(d) for d in decisions]}}
        return self._stream({}, command=command)

    def _stream(self, turn: dict[str, Any], **options: Any) -> Streamed:
        streamed = Streamed()
        parts = self.client.runs.stream(
            self.thread_id, self.assistant_id, input=turn, stream_mode=STREAM_MODES, **options
        )
        for part in parts:
            event, data = part.event, part.data
            kind, _, path = event.partition("|")
            if event == "metadata":
                streamed.run_id = str(data.get("run_id", ""))
            elif event == "error":
                streamed.errors.append(data)
            elif kind == "messages":
                message, metadata = data
                streamed.chunks.append(
                    Chunk(
                        event=event,
                        namespace=tuple(path.split("|")) if path else (),
                        id=str(message.get("id") or ""),
                        type=str(message.get("type") or ""),
                        text=content_text(message.get("content") or ""),
                        node=str((metadata or {}).get("langgraph_node", "")),
                    )
                )
            elif event == "values":
                if "__interrupt__" in data:
                    streamed.interrupts.extend(data["__interrupt__"])
                else:
                    streamed.values = data
        return streamed


def is_raw_json(text: str) -> bool:
    """Whether a text is a JSON object or array (a reply a schema or grammar shaped)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return stripped.startswith('{"')
    return True
