"""Grounded strings: a JSON-schema string written only from given words."""

from __future__ import annotations

import re

import pytest

from loopgraphs.nodes.grounding import MAX_WORDS, grounded_string, new_words, words_of


def matcher(schema) -> re.Pattern[str]:
    assert schema["type"] == "string"
    return re.compile(schema["pattern"])


def test_words_come_in_every_case_a_sentence_may_start_with():
    assert words_of("In which year", "year") == ["In", "in", "which", "Which", "year", "Year"]
    assert len(words_of(" ".join(f"w{i}" for i in range(1000)))) == MAX_WORDS


def test_a_grounded_string_uses_only_its_words_up_to_the_most():
    pattern = matcher(grounded_string(words_of("Who founded Quillmark Instruments"), most=4))
    assert pattern.fullmatch("Who founded Quillmark Instruments")
    assert pattern.fullmatch("who founded Quillmark-Instruments")
    assert not pattern.fullmatch("Who founded Quillmark Instruments Quillmark")  # 5 words
    assert not pattern.fullmatch("Who was born in 1992")
    assert not pattern.fullmatch("")


def test_a_grounded_string_may_end_with_its_mark():
    schema = grounded_string(["Who", "is", "X"], most=3, end="?")
    assert "\\" not in schema["pattern"]
    pattern = matcher(schema)
    assert pattern.fullmatch("Who is X?") and pattern.fullmatch("Who is X")
    assert not pattern.fullmatch("Who is X.")


def test_a_held_text_appears_as_written_with_bounded_words_around_it():
    words = words_of("In which year was born")
    pattern = matcher(grounded_string(words, most=4, end="?", holding="Idony Larchmere", after=1))
    assert pattern.fullmatch("In which year was Idony Larchmere born?")
    assert pattern.fullmatch("Idony Larchmere?")
    assert not pattern.fullmatch("In which year was born?")  # the held text is missing
    assert not pattern.fullmatch("In which year was Idony Larchmere born born?")
    assert not pattern.fullmatch("In which year was it in which Idony Larchmere?")


def test_a_held_text_is_held_word_by_word_with_no_escape_a_grammar_may_refuse():
    schema = grounded_string([], most=2, holding="3.5 (approx) Idony Larchmere")
    assert "\\" not in schema["pattern"]  # llama.cpp's converter refuses "\ " and others
    pattern = matcher(schema)
    assert pattern.fullmatch("3 5 approx Idony Larchmere")
    assert pattern.fullmatch("3-5 approx Idony Larchmere")
    assert not pattern.fullmatch("315 approx Idony Larchmere")


def test_no_words_and_nothing_held_is_any_string():
    assert grounded_string([], most=3) == {"type": "string"}
    with pytest.raises(ValueError, match="most must be >= 1, got 0"):
        grounded_string(["a"], most=0)
    with pytest.raises(ValueError, match="end must be one punctuation mark, got '\\?!'"):
        grounded_string(["a"], most=1, end="?!")


def test_new_words_leave_out_what_the_question_said():
    assert new_words(words_of("Italy hosted Expo 2015"), "Which country hosted Expo?") == [
        "Italy",
        "italy",
        "2015",
    ]
