"""At temperature 0 the embedded server's reply depends on the request alone.

The same request is sent alone, again (a whole-prompt cache hit), after another
conversation that shares its system prompt (a partial cache hit), among three other
requests in flight at once, and while two busy processes load both cores. Every reply
must be the same text. With several slots over a unified KV cache, or with flash
attention on, llama.cpp's CPU kernels give these paths slightly different numbers and
some of the replies below differ.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from loopgraphs.nodes.parsing.text import content_text

pytestmark = pytest.mark.integration

SYSTEM = (
    "You are a careful assistant. Work through the problem step by step, then finish "
    "with 'Answer: <number>'."
)
QUESTIONS = [
    f"A shop has {boxes} boxes of {pens} pens and sells {sold} pens. How many pens are left?"
    for boxes, pens, sold in [(81, 31, 131), (17, 23, 5), (312, 7, 44), (9, 99, 999)]
]
OTHER = "A train leaves at 9:40 and the trip takes 2 hours 35 minutes. When does it arrive?"


def conversation(question: str, before: tuple[BaseMessage, ...] = ()) -> list[BaseMessage]:
    return [SystemMessage(SYSTEM), *before, HumanMessage(question)]


def reply(model: BaseChatModel, messages: list[BaseMessage]) -> str:
    return content_text(model.invoke(messages).content)


@contextmanager
def busy_cores(count: int = 2) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the duration of the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_a_reply_does_not_depend_on_what_else_the_server_does(local_model):
    asked = [conversation(question) for question in QUESTIONS]
    alone = [reply(local_model, messages) for messages in asked]
    assert all(text.strip() for text in alone)
    assert reply(local_model, asked[-1]) == alone[-1]  # the whole prompt cached

    with ThreadPoolExecutor(len(asked)) as pool:
        together = list(pool.map(lambda messages: reply(local_model, messages), asked))
    assert together == alone

    with busy_cores():
        loaded = [reply(local_model, messages) for messages in asked]
    assert loaded == alone

    # One conversation, after a cache holding less and less of it.
    later = conversation(QUESTIONS[0], (HumanMessage(OTHER), AIMessage("Answer: 12:15")))
    system_cached = reply(local_model, later)
    reply(local_model, conversation(OTHER))
    first_turn_cached = reply(local_model, later)
    all_cached = reply(local_model, later)
    assert system_cached == first_turn_cached == all_cached
