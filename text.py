"""Plain text that every layer reads: the text of a message, the question a conversation
asks, the fence around tool output, and the words left out when texts are matched by
their words; and which kind of message a message is, read cheaply (``is_kind``).

It sits below the state, the parsers and the tools, which all use it, and imports
nothing of the package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeGuard, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

# Left out of word matching: by the search tool's ranking, and by the parsers that match
# a question with a tool's worked examples, so that both read a question alike.
# The fence around tool output (one run's marker in place of ``{fence}``): the only place
# its format is written. Prompts describe it, the tool guard writes it, readers undo it.
FENCE_OPEN = "<<tool_output {fence}>>"
FENCE_CLOSE = "<<end_tool_output {fence}>>"
FENCE_MARKER = re.compile(r"<<(?:end_)?tool_output[^>]*>>")
"""Any fence marker, of any run's fence."""
FENCED = re.compile(r"\A<<tool_output (\w+)>>\n(.*)\n<<end_tool_output \1>>\Z", re.DOTALL)
"""A whole fenced text: the fence (group 1) and the text inside (group 2)."""


def fenced(text: str, fence: str) -> str:
    """``text`` between the opening and closing markers of ``fence``."""
    return f"{FENCE_OPEN.format(fence=fence)}\n{text}\n{FENCE_CLOSE.format(fence=fence)}"


STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "did",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
    }
)


MessageT = TypeVar("MessageT", AIMessage, HumanMessage, ToolMessage, SystemMessage)
PLAIN_KINDS = frozenset({AIMessage, HumanMessage, ToolMessage, SystemMessage})
"""The four plain message classes (a chunk or another subclass is none of them)."""


def is_kind(message: object, kind: type[MessageT]) -> TypeGuard[MessageT]:
    """``isinstance(message, kind)`` for one of the four plain message classes, read from
    the message's class where it is a plain one: the classes' metaclass makes an
    ``isinstance`` that fails cost several times one that holds, and a scan of a long
    thread fails it for most messages."""
    exact = type(message)
    return exact is kind or (exact not in PLAIN_KINDS and isinstance(message, kind))


def of_kind(messages: Sequence[object], kind: type[MessageT]) -> list[MessageT]:
    """The messages of one of the four plain message classes (see ``is_kind``), in order:
    one pass over a thread, for the scans a run makes of it."""
    return [
        m
        for m in messages
        if type(m) is kind or (type(m) not in PLAIN_KINDS and isinstance(m, kind))
    ]


def content_text(content: object) -> str:
    """Flatten message content (a string or a list of content blocks) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def question_text(messages: Sequence[AnyMessage]) -> str:
    """The text of the latest user message (the last message when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return content_text(message.content).strip()
    return content_text(messages[-1].content).strip() if messages else ""


def media_of(content: object) -> list[dict[str, object]]:
    """The content blocks of a message's content that are not text (images, files, audio,
    in LangChain's standard form or a provider's, such as OpenAI's ``image_url``), as
    they are."""
    if not isinstance(content, list):
        return []
    return [
        block
        for block in content
        if isinstance(block, dict) and block.get("type") not in ("text", None)
    ]


def with_media(text: str, media: Sequence[dict[str, object]]) -> HumanMessage:
    """A user-role message: ``text``, followed by ``media`` (content blocks, as they are)
    when there are any."""
    if not media:
        return HumanMessage(text)
    return HumanMessage([{"type": "text", "text": text}, *media])


def media_kinds(blocks: Sequence[dict[str, object]]) -> str:
    """What media blocks are, in words: each block's MIME type, else its type
    (``"image/png, file"``)."""
    return ", ".join(str(b.get("mime_type") or b.get("type")) for b in blocks)


def media_blocks(messages: Sequence[AnyMessage]) -> list[dict[str, object]]:
    """The content blocks of the latest user message that are not text (see
    ``media_of``), as the user gave them."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return media_of(message.content)
    return []
