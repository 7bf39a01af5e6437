"""Reading messages cheaply: ``is_kind`` and ``of_kind`` answer as ``isinstance`` does,
for the plain message classes, their subclasses and anything else."""

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
)

from loopgraphs.text import is_kind, of_kind

KINDS = [AIMessage, HumanMessage, ToolMessage, SystemMessage]
MESSAGES = [
    AIMessage("a"),
    AIMessageChunk(content="a"),
    HumanMessage("h"),
    SystemMessage("s"),
    ToolMessage("t", tool_call_id="c1"),
    ToolMessageChunk(content="t", tool_call_id="c1"),
    {"role": "user", "content": "h"},
    "h",
    None,
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("message", MESSAGES, ids=repr)
def test_is_kind_answers_as_isinstance(message, kind):
    assert is_kind(message, kind) is isinstance(message, kind)


def test_a_subclass_of_a_plain_class_is_of_its_kind():
    assert is_kind(AIMessageChunk(content="a"), AIMessage)
    assert not is_kind(AIMessageChunk(content="a"), ToolMessage)


@pytest.mark.parametrize("kind", KINDS)
def test_of_kind_keeps_the_messages_isinstance_keeps_in_order(kind):
    assert of_kind(MESSAGES, kind) == [m for m in MESSAGES if isinstance(m, kind)]
