"""The chat keeps what it showed: a run that ends on a reply the loop could not use (one
that repeats itself up to the token cap, every time) leaves no empty bubble behind. Every
AI message that streamed is kept with text: what streamed of it, or a sentence saying why
there is no answer; and the thread never shows raw JSON."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk

from loopgraphs import LOOPS, build_loop, prompts
from loopgraphs.graphs.registry import LOOP_SPECS
from loopgraphs.nodes import content_text
from tests.support.scripts import MODES, model_for, note

RUNAWAY = "The answer is " + "x" * 200  # a reply that repeats itself to the token cap
SMALL = {
    "plan_execute": {"max_steps": 1, "max_step_iterations": 1},
    "reflexion": {"max_reflections": 1, "max_iterations": 1},
    "self_ask": {"max_follow_ups": 1},
    "critic": {"max_critique_rounds": 1},
    "tot": {"n_branches": 1, "beam_width": 1, "max_depth": 1},
    "react": {"max_iterations": 2},
}
CASES = [(loop, mode) for loop in LOOPS for mode in MODES]


def chat(loop: str, mode: str) -> tuple[list[Any], dict[str, Any]]:
    model = model_for(mode, [RUNAWAY], repeat_last=True)
    options: dict[str, Any] = dict(SMALL.get(loop, {}))
    if LOOP_SPECS[loop].takes_tools:
        options["tool_mode"] = mode
    graph = build_loop(loop, model, [note], **options)
    streamed, final = [], {}
    for kind, data in graph.stream(
        {"messages": [("user", "What is it?")]}, stream_mode=["messages", "values"]
    ):
        if kind == "messages":
            streamed.append(data[0])
        else:
            final = data
    return streamed, final


@pytest.mark.parametrize(("loop", "mode"), CASES)
def test_a_run_ending_on_unusable_replies_leaves_no_empty_bubble(loop, mode):
    streamed, final = chat(loop, mode)
    assert final["status"] in ("max_iterations", "error", "completed")
    kept = {m.id: m for m in final["messages"] if isinstance(m, AIMessage)}
    shown = {m.id for m in streamed if isinstance(m, AIMessageChunk) and content_text(m.content)}
    for message_id in shown:
        assert message_id in kept, "a streamed bubble vanished"
        text = content_text(kept[message_id].content)
        assert text.strip(), f"the bubble {message_id} was emptied"
        assert not text.lstrip().startswith("{"), text
    last = [m for m in final["messages"] if isinstance(m, AIMessage)][-1]
    assert content_text(last.content).strip()
    if not final["answer"]:
        said = content_text(last.content)
        assert said == prompts.NO_ANSWER_SHOWN or RUNAWAY.startswith(said.strip()[:20])
