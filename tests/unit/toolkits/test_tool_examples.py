"""Worked tool examples for json/text-mode models, the compact json step, and answers
that only echo a marker or an example."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import create_react_graph
from loopgraphs.models import writes_thoughts
from loopgraphs.nodes.answer_repair import restated_answer
from loopgraphs.nodes.model_send import action_schema
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.tool_guard import fence_output
from loopgraphs.nodes.tool_modes import (
    EXAMPLE_FENCE,
    MAX_EXAMPLES,
    example_turns,
    react_instructions,
)
from loopgraphs.toolkits import ToolExample, ToolRegistry, calculator, get_tools
from tests.support.fakes import ScriptedChatModel
from tests.support.scripts import act, final, model_for

FENCE = "0123456789ab"


def registry() -> ToolRegistry:
    return ToolRegistry(get_tools(["calculator", "search"]))


def test_builtin_tools_carry_examples():
    examples = registry().examples()
    assert {name for name, _ in examples} == {"calculator", "search"}
    for name, example in examples:
        assert example.question and example.args and example.result and example.answer
        assert example.answer in example.result
        # The example's call really produces its result with the bundled tools.
        if name == "calculator":
            assert calculator.invoke(dict(example.args)) == example.result


def test_search_examples_are_not_in_the_knowledge_base():
    search = get_tools(["search"])[0]
    for _, example in ToolRegistry([search]).examples():
        assert search.invoke(dict(example.args)).startswith("No results")


def test_examples_from_dicts_and_bad_entries():
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    lookup.metadata = {"examples": [{"question": "q", "args": {"key": "k"}, "result": "r"}]}
    ((name, example),) = ToolRegistry([lookup]).examples()
    assert name == "lookup" and example == ToolExample("q", {"key": "k"}, "r", "")
    lookup.metadata = {"examples": ["not an example"]}
    with pytest.raises(TypeError, match=r"'lookup'.*examples'\]\[0\] must be a ToolExample"):
        ToolRegistry([lookup]).examples()
    lookup.metadata = {"examples": [{"question": "q", "tool": "x"}]}
    with pytest.raises(TypeError, match=r"question, args, result and answer"):
        ToolRegistry([lookup]).examples()


def test_example_turns_in_json_mode_end_with_the_closest_example():
    turns = example_turns(registry(), "What is 7 * (3 + 4)?", "json")
    assert len(turns) == 4 * MAX_EXAMPLES
    questions = [content_text(m.content) for m in turns[::4]]
    assert questions[-1] == "What is (12 + 3) * 7?"  # shares "(", "*", "+" and numbers
    call = json.loads(content_text(turns[-3].content))
    assert call == {"action": "calculator", "action_input": {"expression": "(12 + 3) * 7"}}
    assert content_text(turns[-2].content) == "Observation: " + fence_output("105", EXAMPLE_FENCE)
    assert json.loads(content_text(turns[-1].content)) == {
        "action": "final_answer",
        "action_input": "105",
    }
    assert [type(m) for m in turns[:4]] == [HumanMessage, AIMessage, HumanMessage, AIMessage]


def test_a_question_ending_in_a_subtraction_gets_the_example_with_a_negative_result():
    """The whole expression goes into one call and the answer keeps the result's sign:
    SmolLM2 computed only the bracketed product, or dropped the minus sign, without it."""
    turns = example_turns(registry(), "What is (93 + 27) * 28 - 957?", "json")
    call = json.loads(content_text(turns[-3].content))
    assert call == {"action": "calculator", "action_input": {"expression": "(9 + 6) * 5 - 80"}}
    assert json.loads(content_text(turns[-1].content))["action_input"] == "-5"


def test_example_turns_pick_search_for_a_question_about_names():
    turns = example_turns(
        registry(), "Where was the founder of Quillmark Instruments born?", "json"
    )
    last_call = json.loads(content_text(turns[-3].content))
    assert last_call["action"] == "search"
    assert content_text(turns[-1].content) == json.dumps(
        {"action": "final_answer", "action_input": "Tessford"}
    )


def test_example_turns_in_text_mode_and_none_in_native_mode():
    turns = example_turns(registry(), "What is 2 + 2?", "text")
    assert content_text(turns[-3].content).startswith("Action: calculator\nAction Input: {")
    assert content_text(turns[-1].content) == "FINAL_ANSWER: 89"
    assert example_turns(registry(), "What is 2 + 2?", "native") == []
    assert example_turns(ToolRegistry([]), "What is 2 + 2?", "json") == []


@pytest.mark.parametrize("mode", ["json", "text"])
def test_model_sees_examples_before_the_conversation(mode):
    model = model_for(mode, [act(mode, "calculator", {"expression": "6 * 7"}), final(mode, "42")])
    graph = create_react_graph(model, get_tools(["calculator", "search"]), tool_mode=mode)
    out = graph.invoke({"messages": [("user", "What is 6 * 7?")]})
    assert out["answer"] == "42"
    first, second = model.prompts
    assert content_text(first[1].content) != "What is 6 * 7?"  # an example comes first
    assert content_text(first[-1].content) == "What is 6 * 7?"
    # The examples are the same in every call of the run (a stable, cacheable prefix).
    shown = len(first) - 2
    assert [m.content for m in second[: shown + 1]] == [m.content for m in first[:-1]]
    assert not any(isinstance(m, ToolMessage) for m in out["messages"][:1])
    assert all("12 * 7" not in content_text(m.content) for m in out["messages"])


def test_compact_step_has_no_thought():
    compact = action_schema(registry(), thoughts=False)["schema"]["anyOf"]
    assert all(list(alt["properties"]) == ["action", "action_input"] for alt in compact)
    assert all(alt["required"] == ["action", "action_input"] for alt in compact)
    full = action_schema(registry())["schema"]["anyOf"]
    assert all(next(iter(alt["properties"])) == "thought" for alt in full)
    text = react_instructions(registry(), "json", thoughts=False)
    assert '"thought"' not in text and '"action": "final_answer"' in text
    assert '"thought"' in react_instructions(registry(), "json")


def test_only_the_bundled_model_skips_thoughts():
    assert writes_thoughts(ScriptedChatModel(replies=[]))


def _run(answer_call: dict, result: str) -> list:
    call = {"name": "search", "args": answer_call, "id": "c1", "type": "tool_call"}
    return [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(fence_output(result, FENCE), tool_call_id="c1"),
    ]


@pytest.mark.parametrize(
    "said", [FENCE, "FINAL_ANSWER", "final_answer", f"<<tool_output {FENCE}>>"]
)
def test_an_answer_of_only_markers_is_not_filled_in_from_the_last_result(said):
    messages = _run({"query": "x"}, "Ada")
    assert restated_answer(said, messages, 1, FENCE) == said


def test_an_answer_copied_from_an_example_is_no_answer():
    messages = _run({"query": "Quillmark"}, "Quillmark was founded by Bartholomew Ixley.")
    examples = ["Ada Quinlan", "Tessford"]
    assert restated_answer("Ada Quinlan", messages, 1, FENCE, examples=examples) == ""
    kept = restated_answer("Bartholomew Ixley", messages, 1, FENCE, examples=examples)
    assert kept == "Bartholomew Ixley"
    # An example's answer that the result really holds is a real answer.
    messages = _run({"query": "Ada"}, "Ada Quinlan lives here.")
    assert restated_answer("Ada Quinlan", messages, 1, FENCE, examples=examples) == "Ada Quinlan"


def test_a_result_echoing_the_call_does_not_hold_a_copied_example_answer():
    """A search for the example's own answer finds nothing; the message naming the query
    is not evidence for that answer, so the copied answer is no answer."""
    messages = _run({"query": "Ada Quinlan"}, "No results for 'Ada Quinlan'.")
    examples = ["Ada Quinlan", "Tessford"]
    assert restated_answer("Ada Quinlan", messages, 1, FENCE, examples=examples) == ""
    # The same answer is kept when the result holds it besides the echoed query.
    messages = _run({"query": "Ada Quinlan"}, "Ada Quinlan: founder of Harrowby Looms.")
    kept = restated_answer("Ada Quinlan", messages, 1, FENCE, examples=examples)
    assert kept == "Ada Quinlan"


def test_examples_stay_the_same_for_every_run_on_a_thread():
    """The second run on a thread sees the same system message and examples as the first
    (same order, same marker), though its question is about something else: the server's
    prompt cache keeps the whole prefix across the runs of a conversation."""
    replies = [final("json", "42"), final("json", "Bartholomew Ixley")]
    model = model_for("json", replies)
    tools = get_tools(["calculator", "search"])
    graph = create_react_graph(model, tools, tool_mode="json", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "What is 6 * 7?")]}, config)
    graph.invoke({"messages": [("user", "Who founded Quillmark Instruments?")]}, config)
    first, second = model.prompts
    prefix = 1 + 4 * MAX_EXAMPLES
    assert [m.content for m in second[:prefix]] == [m.content for m in first[:prefix]]
    assert f"<<tool_output {EXAMPLE_FENCE}>>" in content_text(first[3].content)


def test_a_copied_example_answer_after_a_repeated_call_is_asked_for_again():
    """The model repeats its search for the example's name (the loop-break answers it from
    history, an error result) and answers with that name: that is no answer, nor is the
    search's "No results" message; the loop asks once more and the model's next answer
    ends the run."""
    replies = [
        act("json", "search", {"query": "Ada Quinlan"}),
        act("json", "search", {"query": "Ada Quinlan"}),
        final("json", "Ada Quinlan"),
        final("json", "Bartholomew Ixley"),
    ]
    model = model_for("json", replies)
    graph = create_react_graph(model, get_tools(["search"]), tool_mode="json")
    out = graph.invoke({"messages": [("user", "Who founded Quillmark Instruments?")]})
    assert (out["status"], out["answer"]) == ("completed", "Bartholomew Ixley")
    assert out["llm_calls"] == model.call_count == 4
