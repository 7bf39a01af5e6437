"""A step's tool results as a json- or text-mode model reads them: one user message, their
texts in the loop's words, followed by the images and files the tools returned."""

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs import prompts
from loopgraphs.nodes import observed, with_media
from loopgraphs.nodes.tool_modes import model_view
from loopgraphs.text import content_text

PNG = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
PDF = {"type": "file", "url": "https://example.com/a.pdf"}


def result(content, call_id="c1"):
    return ToolMessage(content=content, tool_call_id=call_id, name="draw")


def observation(wording, results):
    text, media = observed(results)
    return with_media(wording.format(content=text), media)


def test_text_results_make_one_text_message():
    message = observation(prompts.OBSERVATION, [result("4"), result("9", "c2")])

    assert message.content == "Observation: 4\n\n9"


def test_an_image_result_follows_the_text_as_it_was_returned():
    message = observation(
        prompts.OBSERVATION, [result([{"type": "text", "text": "a square"}, PNG])]
    )

    assert message.content == [{"type": "text", "text": "Observation: a square"}, PNG]


def test_a_result_of_media_alone_is_named_in_the_text():
    message = observation(prompts.OBSERVATION, [result([PNG]), result("ok", "c2"), result([PDF])])

    text, *media = message.content
    assert text == {
        "type": "text",
        "text": "Observation: [attached: image/png]\n\nok\n\n[attached: file]",
    }
    assert media == [PNG, PDF]


def test_the_loops_words_frame_the_results():
    message = observation(prompts.SELF_ASK_INTERMEDIATE, [result([PNG])])

    assert content_text(message.content).startswith("Intermediate answer: [attached: image/png]")


def test_model_view_sends_a_steps_images_in_its_observation():
    call = {"name": "draw", "args": {"colour": "red"}, "id": "c1"}
    transcript = [HumanMessage("draw"), AIMessage("", tool_calls=[call]), result([PNG])]

    for mode in ("json", "text"):
        *_, shown = model_view(transcript, mode)
        assert isinstance(shown, HumanMessage)
        assert shown.content[1:] == [PNG]
