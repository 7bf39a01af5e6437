"""The text helpers of ``nodes/parsing/text.py``.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs.nodes.parsing.text import (
    FINAL_ANSWER_RE,
    ListItem,
    after_marker,
    best_effort_answer,
    clip,
    content_text,
    list_items,
    strip_marker,
    tidy,
)

# --- Parsing: the text helpers ---------------------------------------------------------


def test_text_helpers() -> None:
    assert clip("abcdef", 3) == "abc" and clip("abc", 3) == "abc"
    assert content_text(["a", {"type": "text", "text": "b"}, {"type": "image"}, 3]) == "ab"
    assert content_text([{"type": "text"}]) == "" and content_text(None) == ""
    assert content_text(12) == "12"
    assert tidy("  **`x`**  ") == "x"
    assert after_marker("pre FINAL ANSWER:  y ", FINAL_ANSWER_RE) == "y"
    assert after_marker("nothing", FINAL_ANSWER_RE) is None


def test_best_effort_answer_prefers_the_last_assistant_text() -> None:
    call = AIMessage("calling", tool_calls=[{"name": "t", "args": {}, "id": "1"}])
    said = [
        AIMessage(" first "),
        ToolMessage(" result one ", tool_call_id="1"),
        call,
        AIMessage("   "),
    ]
    assert best_effort_answer(said) == "first"
    tools_only = [
        call,
        ToolMessage(" early ", tool_call_id="1"),
        ToolMessage(" late ", tool_call_id="1"),
    ]
    assert best_effort_answer(tools_only) == ""  # a tool result is not the model's answer
    assert best_effort_answer([HumanMessage("q")]) == ""


def test_list_markers() -> None:
    assert strip_marker("  2) second ") == "second"
    assert strip_marker("- bullet") == "bullet"
    assert strip_marker("**Step 3**: go") == "go"
    assert strip_marker("plain line") == "plain line"
    assert strip_marker("3.5 is a number") == "3.5 is a number"
    text = "intro\n1. one\n   more\n\n2) two\n- three\n**Candidate 4 -** four\n* five"
    assert list_items(text) == [
        ListItem(1, "one", ("more",)),
        ListItem(2, "two"),
        ListItem(None, "three"),
        ListItem(4, "four"),
        ListItem(None, "five"),
    ]
    assert list_items("1:7\n2:5", separators=":", tight=True) == [
        ListItem(1, "7"),
        ListItem(2, "5"),
    ]
    assert list_items("1. __one__\n2. *two*") == [ListItem(1, "one"), ListItem(2, "two")]
    assert list_items("1:7") == []
    assert list_items("no list here") == []
