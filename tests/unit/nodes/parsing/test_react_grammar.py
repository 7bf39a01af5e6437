"""The ReAct grammars (``nodes/parsing/react.py``) and their precedence.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

import pytest

from loopgraphs.nodes.parsing.react import (
    ParsedReply,
    final_answer_of,
    parse_json_action,
    parse_json_text,
    parse_react_text,
)

# --- Parsing: the ReAct grammars and their precedence ------------------------------------


@pytest.mark.parametrize(
    ("text", "step"),
    [
        # The answer marker wins over an action in the same reply.
        (
            "Thought: done\nAction: search\nAction Input: x\nFINAL_ANSWER: 42",
            ParsedReply("final", thought="done", answer="42"),
        ),
        ("final answer:  the end  ", ParsedReply("final", answer="the end")),
        (
            "Thought: t\nFINAL_ANSWER: 7\nObservation: made up",
            ParsedReply("final", thought="t", answer="7"),
        ),
        (
            'Thought: look\nAction: `search`\nAction Input: {"q": "a"}',
            ParsedReply("action", thought="look", action="search", action_input={"q": "a"}),
        ),
        (
            "Action: **calc**\nAction Input: 1+1\nObservation: 2\nmore",
            ParsedReply("action", action="calc", action_input="1+1"),
        ),
        ("Action: lookup", ParsedReply("action", action="lookup", action_input="")),
        (
            "Action: Final Answer\nAction Input: blue\nObservation: x",
            ParsedReply("final", answer="blue"),
        ),
        (
            "Thought: t\nAction: finish\nAction Input:  done ",
            ParsedReply("final", thought="t", answer="done"),
        ),
        ("Thought: hmm\nAction:   \n", ParsedReply("none", thought="hmm")),
        ("just words", ParsedReply("none")),
        (
            "  thought :  spaced  \nACTION : go",
            ParsedReply("action", thought="spaced", action="go", action_input=""),
        ),
    ],
)
def test_parse_react_text(text: str, step: ParsedReply) -> None:
    assert parse_react_text(text) == step


@pytest.mark.parametrize(
    ("data", "step"),
    [
        (None, ParsedReply("none")),
        ([1], ParsedReply("none")),
        (
            {"thought": "t", "action": "search", "action_input": {"q": "a"}},
            ParsedReply("action", thought="t", action="search", action_input={"q": "a"}),
        ),
        (
            {"reasoning": "r", "tool": " calc ", "args": "1+1"},
            ParsedReply("action", thought="r", action="calc", action_input="1+1"),
        ),
        (
            {"name": "calc", "arguments": {"e": 1}},
            ParsedReply("action", action="calc", action_input={"e": 1}),
        ),
        ({"action": "calc", "input": 5}, ParsedReply("action", action="calc", action_input="5")),
        (
            {"action": "calc", "action_input": 1, "args": 2},
            ParsedReply("action", action="calc", action_input="1"),
        ),
        (
            {"action": {"name": "calc", "args": {"e": 2}}},
            ParsedReply("action", action="calc", action_input={"e": 2}),
        ),
        (
            {"action": {"tool": "calc", "action_input": {"e": 3}, "args": {"e": 4}}},
            ParsedReply("action", action="calc", action_input={"e": 3}),
        ),
        (
            {"action": {"tool": "calc"}, "args": {"e": 5}},
            ParsedReply("action", action="calc", action_input={"e": 5}),
        ),
        (
            {"thought": "t", "action": " Final_Answer ", "action_input": " 42 "},
            ParsedReply("final", thought="t", answer="42"),
        ),
        ({"action": "answer", "action_input": {"text": "t"}}, ParsedReply("final", answer="t")),
        ({"action": "final", "action_input": {"value": 3}}, ParsedReply("final", answer="3")),
        (
            {"action": "finish", "action_input": {"other": "ü"}},
            ParsedReply("final", answer='{"other": "ü"}'),
        ),
        ({"action": "final_answer", "action_input": None}, ParsedReply("final", answer="")),
        ({"action": "final_answer", "action_input": 12}, ParsedReply("final", answer="12")),
        ({"action": "final_answer"}, ParsedReply("final", answer="{}")),
        ({"final_answer": " x ", "thought": "t"}, ParsedReply("final", thought="t", answer="x")),
        ({"answer": {"final_answer": "y"}}, ParsedReply("final", answer="y")),
        ({"answer": "z", "action": "calc"}, ParsedReply("action", action="calc", action_input={})),
        ({"action": "  "}, ParsedReply("none")),
        ({"action": 3, "thought": "t"}, ParsedReply("none", thought="t")),
        ({"thought": None, "reasoning": "why"}, ParsedReply("none", thought="why")),
    ],
)
def test_parse_json_action(data, step: ParsedReply) -> None:
    assert parse_json_action(data) == step


def test_parse_json_text_reads_the_object_in_free_text() -> None:
    text = 'Sure: {"action": "calc", "action_input": {"e": 1}} done'
    assert parse_json_text(text) == ParsedReply("action", action="calc", action_input={"e": 1})
    assert parse_json_text("no object") == ParsedReply("none")


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("  plain  ", "plain"),
        ("FINAL_ANSWER:", "FINAL_ANSWER:"),
        ("a\nFinal_Answer: b", "b"),
        # A reply that is nothing but a JSON final-answer action gives its input...
        ('{"thought": "Done.", "action": "final_answer", "action_input": "42"}', "42"),
        ('```json\n{"action": "Final Answer", "action_input": " 42 "}\n```', "42"),
        ('{"final_answer": "42"}', "42"),
        ('{"action": "final_answer", "action_input": {"answer": "42"}}', "42"),
        # ... a tool action, JSON inside prose, or two objects are the reply as written.
        (
            '{"action": "search", "action_input": {"q": "x"}}',
            '{"action": "search", "action_input": {"q": "x"}}',
        ),
        (
            'It is {"action": "final_answer", "action_input": "42"}',
            'It is {"action": "final_answer", "action_input": "42"}',
        ),
        (
            '{"action": "final_answer", "action_input": "1"} {"a": 2}',
            '{"action": "final_answer", "action_input": "1"} {"a": 2}',
        ),
        (
            '{"action": "final_answer", "action_input": ""}',
            '{"action": "final_answer", "action_input": ""}',
        ),
    ],
)
def test_final_answer_of_reads_a_marker_or_a_whole_reply_json_final_action(text, answer):
    assert final_answer_of(text) == answer
