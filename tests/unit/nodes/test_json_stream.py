"""Reading a json-mode turn's answer out of its JSON as it is written."""

from __future__ import annotations

import json

import pytest

from loopgraphs.nodes.json_stream import REACT_ANSWER, AnswerField

FINAL = {"thought": "Done.", "action": "final_answer", "action_input": 'Say "hi"\nthen é ☃ \\ bye'}


def test_the_answer_grows_with_every_prefix_and_ends_as_the_json_says():
    text = json.dumps(FINAL)
    seen = ""
    for end in range(len(text) + 1):
        read = REACT_ANSWER.read(text[:end])
        if read is None:
            assert seen == ""
            continue
        assert read.startswith(seen), (seen, read)
        seen = read
    assert seen == FINAL["action_input"]


def test_an_ascii_escaped_answer_reads_the_same():
    text = json.dumps(FINAL, ensure_ascii=True)
    assert REACT_ANSWER.read(text) == FINAL["action_input"]
    cut_in_escape = text[: text.index("\\u") + 3]
    assert REACT_ANSWER.read(cut_in_escape) == 'Say "hi"\nthen '


@pytest.mark.parametrize(
    "reply",
    [
        {"thought": "I need it.", "action": "lookup", "action_input": "the answer"},
        {"thought": "I need it.", "action": "final_answ"},
        {"value": {"thought": "x", "action": "lookup", "action_input": {"query": "q"}}},
    ],
)
def test_an_action_that_calls_a_tool_is_no_answer(reply):
    assert REACT_ANSWER.read(json.dumps(reply)) is None


def test_a_wrapped_root_and_an_answer_field_without_a_condition():
    wrapped = json.dumps({"value": FINAL})
    assert REACT_ANSWER.read(wrapped) == FINAL["action_input"]
    plain = AnswerField("answer", when=None)
    assert plain.read('{"answer": "Paris, the cap') == "Paris, the cap"
    assert plain.read('{"reason": "x"}') is None


@pytest.mark.parametrize("action", ["final_answer", "Final Answer", " FINISH ", "answer"])
def test_every_final_action_the_parser_accepts_is_an_answer(action):
    reply = json.dumps({"thought": "t", "action": action, "action_input": "Paris"})
    assert REACT_ANSWER.read(reply[:-4]) == "Par"
    assert REACT_ANSWER.read(reply) == "Paris"
