"""Images, files and audio in the user's question reach every model call that works on the
question, in every loop and tool mode: a loop that restates the question in its own words
(a plan step, an evaluation, a critique, a proposal) passes the request's non-text blocks
on as they are; only the question's text is re-rendered."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from loopgraphs import LOOPS, build_loop
from loopgraphs.graphs.registry import LOOP_SPECS
from tests.support.loop_scripts import tool_then_answer
from tests.support.scripts import MODES, model_for, note

IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
LEGACY = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
FILE = {"type": "file", "base64": "JVBERi0x", "mime_type": "application/pdf"}
ANSWER = "It is a red square."
SCRIPTS: dict[str, list[Any]] = {
    "cot": [f"The picture shows a red square.\nFINAL ANSWER: {ANSWER}"],
    "tot": [f"1. ANSWER: {ANSWER}"],
}
OPTIONS = {"tot": {"n_branches": 1, "beam_width": 1, "max_depth": 1}}
CASES = [
    (loop, mode)
    for loop in LOOPS
    for mode in (MODES if LOOP_SPECS[loop].takes_tools else ["native"])
]


def blocks_of(prompt: list[BaseMessage]) -> list[dict[str, Any]]:
    return [
        block
        for message in prompt
        if isinstance(message, HumanMessage) and isinstance(message.content, list)
        for block in message.content
        if isinstance(block, dict) and block.get("type") != "text"
    ]


@pytest.mark.parametrize(("loop", "mode"), CASES)
def test_every_call_on_the_question_sees_its_images_and_files(loop, mode):
    if LOOP_SPECS[loop].takes_tools:
        replies = tool_then_answer(loop, mode, "note", {"text": "square"}, ANSWER)
        options: dict[str, Any] = {"tool_mode": mode}
    else:
        replies, options = SCRIPTS[loop], dict(OPTIONS.get(loop, {}))
    model = model_for(mode, replies)
    question = HumanMessage([{"type": "text", "text": "What is in it?"}, IMAGE, LEGACY, FILE])
    out = build_loop(loop, model, [note], **options).invoke({"messages": [question]})
    assert out["status"] == "completed", out["error"]
    for index, prompt in enumerate(model.prompts):
        assert blocks_of(prompt) == [IMAGE, LEGACY, FILE], (index, prompt)
