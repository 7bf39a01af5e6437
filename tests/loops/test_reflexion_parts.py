"""Reflexion's evaluation and reflection: the kit's ``evaluate`` and ``reflect`` as its
steps call them, and the record of a verdict."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from loopgraphs.graphs.reflexion import LOOP
from loopgraphs.graphs.reflexion.steps import evaluation_record
from loopgraphs.nodes import Verdict, evaluate, reflect
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.judging import FEEDBACK_CHARS
from loopgraphs.nodes.parsing.answers import (
    MAX_REFLECTION_CHARS,
    normalise_reflection,
    parse_verdict,
)
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.text import question_text
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import model_for


def asked(question: str = "How heavy?") -> dict:
    return {"messages": [HumanMessage(question)]}


def judged(model, answer="5 kg", **kwargs):
    """The verdict on ``answer`` as Reflexion's ``evaluate`` step asks for it."""
    step = LOOP.step("evaluate", model, [])
    return run_sync(evaluate(step, asked(), answer, max_calls=2, **kwargs), {})


def reflected(model, question: str, answer: str, feedback: str):
    """The lesson as Reflexion's ``reflect`` step asks for it."""
    step = LOOP.step("reflect", model, [])
    return run_sync(reflect(step, asked(question), answer, feedback), {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UNSATISFACTORY: the unit is missing", (False, "the unit is missing")),
        ("SATISFACTORY", (True, "")),
        ("satisfactory — complete and correct.", (True, "complete and correct")),
        ("Verdict: Unsatisfactory. Wrong city.", (False, "Wrong city")),
        ("The answer is NOT satisfactory because it is vague", (False, "because it is vague")),
        ("SATISFACTORY? No: UNSATISFACTORY, wrong year", (False, "wrong year")),
    ],
)
def test_verdict_regex_checks_unsatisfactory_first(text, expected):
    found = parse_verdict(text)
    assert (found["satisfactory"], found["feedback"]) == expected


@pytest.mark.parametrize("text", ["", "looks fine to me", "dissatisfaction", '{"ok": true}'])
def test_verdict_regex_without_a_verdict_word(text):
    assert parse_verdict(text) is None


def test_verdict_regex_is_linear_on_hostile_text():
    found = parse_verdict("NOT " * 50_000 + "x")
    assert found is None


def test_native_tool_call_verdict():
    model = model_for("native", [calls(tool_call("Evaluation", {"satisfactory": True}))])
    result = judged(model)
    assert result.value == Verdict(satisfactory=True, feedback="")
    assert (result.level, result.spent["llm_calls"], model.call_count) == ("native", 1, 1)
    prompt = "\n".join(content_text(m.content) for m in model.prompts[0])
    assert "How heavy?" in prompt and "<answer>\n5 kg\n</answer>" in prompt


def test_provider_json_verdict():
    model = model_for("json", [json.dumps({"satisfactory": False, "feedback": "no source"})])
    result = judged(model)
    assert (result.value.satisfactory, result.value.feedback, result.level) == (
        False,
        "no source",
        "json",
    )


def test_text_verdict_through_the_regex_fallback():
    model = model_for("text", ["UNSATISFACTORY - it ignores the unit"])
    result = judged(model)
    assert (result.value.satisfactory, result.value.feedback) == (False, "it ignores the unit")
    assert (result.level, result.spent["llm_calls"]) == ("text", 1)


def test_native_model_answering_in_text_is_read_without_extra_calls():
    model = model_for("native", ["I'd say SATISFACTORY.", "SATISFACTORY, really."])
    result = judged(model)
    assert result.value.satisfactory is True
    assert (result.level, result.spent["llm_calls"]) == ("native", 1) and model.call_count == 1


def test_garbage_evaluator_output_is_not_satisfactory():
    model = model_for("native", ["%%%", "{not json", "never reached"])
    result = judged(model)
    assert result.value is None and result.spent["llm_calls"] == 2 == model.call_count
    assert evaluation_record(result.value) == {
        "satisfactory": False,
        "feedback": "evaluation failed",
    }


@pytest.mark.parametrize("mode", ["json", "text"])
def test_a_verdict_cut_at_the_token_cap_is_not_read(mode):
    """A reply that stopped at the token cap is not read, even where a verdict can be
    found in it: the evaluator is asked again, and two cut replies give no verdict."""
    cut = AIMessage(
        '{"satisfactory": true, "feedback": "44 * 85 = 44 * 85 = 44 * 85 = 4',
        response_metadata={"finish_reason": "length"},
    )
    model = model_for(mode, [cut, json.dumps({"satisfactory": False, "feedback": "wrong"})])
    result = judged(model)
    assert (result.value.satisfactory, result.value.feedback) == (False, "wrong")
    assert result.spent["llm_calls"] == 2 == model.call_count
    result = judged(model_for(mode, [cut, cut]))
    assert result.value is None and result.spent["llm_calls"] == 2


def test_the_feedback_is_bounded_in_the_schema():
    """A schema-constrained decoder ends the feedback within a few sentences (SmolLM2 wrote
    on to its token cap inside an open string)."""
    feedback = Verdict.model_json_schema()["properties"]["feedback"]
    assert feedback["maxLength"] == FEEDBACK_CHARS


def test_schema_mismatch_in_provider_json_is_an_unusable_reply():
    model = model_for("json", [json.dumps({"verdict": "meh"}), json.dumps({"satisfactory": True})])
    result = judged(model)
    assert result.value.satisfactory is True
    assert (result.level, result.spent["llm_calls"]) == ("json", 2) and model.call_count == 2


def test_authentication_failure_is_raised_at_once():
    model = model_for("native", [ProviderError(401, "invalid api key")], repeat_last=True)
    with pytest.raises(ProviderError, match="invalid api key"):
        judged(model)
    assert model.call_count == 1


def test_rejection_of_the_form_at_every_level_is_raised():
    refused = ProviderError(400, "tools are not supported by this model")
    model = model_for("native", [refused], repeat_last=True)
    with pytest.raises(ProviderError, match="not supported"):
        judged(model)
    assert model.call_count == 3  # native, json and text were each tried once


def test_a_rejection_not_of_the_form_is_raised_at_once():
    model = model_for("native", [ProviderError(400, "context length exceeded")], repeat_last=True)
    with pytest.raises(ProviderError, match="context length"):
        judged(model)
    assert model.call_count == 1


def test_transient_failure_is_left_to_the_retry_policy():
    model = model_for("native", [ProviderError(503, "overloaded")])
    with pytest.raises(ProviderError, match="overloaded"):
        judged(model)


def test_evaluate_rejects_a_bad_max_calls():
    with pytest.raises(ValueError, match="max_calls"):
        step = LOOP.step("evaluate", model_for("native", []), [])
        run_sync(evaluate(step, asked(), "5 kg", max_calls=0), {})


def test_question_text_reads_the_latest_user_message():
    from langchain_core.messages import AIMessage, HumanMessage

    messages = [HumanMessage("first"), AIMessage("reply"), HumanMessage("second"), AIMessage("x")]
    assert question_text(messages) == "second"
    assert question_text([AIMessage("only")]) == "only"
    assert question_text([]) == ""


# reflect ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Reflection: I should use the tool.", "I should use the tool."),
        ("**Reflection:** Check   the\n units.", "Check the units."),
        ("  reflection : quoted?", "quoted?"),
        ('"Use the calculator."', "Use the calculator."),
        ("No label here.", "No label here."),
    ],
)
def test_reflection_is_normalised(text, expected):
    assert normalise_reflection(text) == expected


def test_long_reflection_is_capped():
    assert len(normalise_reflection("word " * 1000)) <= MAX_REFLECTION_CHARS + 2


def test_reflect_makes_one_call_with_the_whole_context():
    model = ScriptedChatModel(replies=["Reflection: I skipped the unit. State it next time."])
    reflection = reflected(model, "How heavy?", "5", "the unit is missing")
    text, update = reflection.text, reflection.spent
    assert text == "I skipped the unit. State it next time."
    assert update["llm_calls"] == 1 == model.call_count and update["usage"]["output_tokens"] > 0
    prompt = "\n".join(content_text(m.content) for m in model.prompts[0])
    assert all(
        part in prompt for part in ("How heavy?", "<attempt>\n5\n</attempt>", "the unit is missing")
    )


def test_empty_reflection_falls_back_to_the_feedback():
    model = ScriptedChatModel(replies=["Reflection:   "])
    reflection = reflected(model, "q", "a", "wrong city")
    assert "wrong city" in reflection.text and reflection.spent["llm_calls"] == 1
