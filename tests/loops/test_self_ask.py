"""Self-Ask scenarios in every tool mode, on the scripted model."""

from __future__ import annotations

import itertools
import json
import random
import re
import string
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from loopgraphs import prompts
from loopgraphs.graphs.self_ask import create_self_ask_graph
from loopgraphs.graphs.self_ask.guided import guided
from loopgraphs.nodes import grounding, model_send
from loopgraphs.nodes.parsing.self_ask import (
    asked_part,
    builds_on,
    facts_read,
    needed_words,
    open_json_field,
    parse_self_ask,
    read_answer,
    relevant_sentences,
)
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.toolkits import make_search_tool
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, model_for

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
QUESTION = {
    "messages": [("user", "Who is the head of state of the country that hosted Expo 2015?")]
}
FACTS = {
    "Which country hosted Expo 2015?": "Italy hosted Expo 2015 in Milan.",
    "Who is the head of state of Italy?": "Sergio Mattarella is the President of Italy.",
}
Q1, Q2 = FACTS


class Search:
    """A search tool that records its queries."""

    def __init__(self) -> None:
        self.queries: list[str] = []

        def search(query: str) -> str:
            """Search the web for a short factual answer."""
            self.queries.append(query)
            return FACTS.get(query, f"no result for {query}")

        self.tool = search


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return {"6*7": "42"}.get(expression.replace(" ", ""), "error")


def ask(mode: str, question: str, args_key: str = "query"):
    """A reply asking one follow-up, answered natively in native mode."""
    text = f"Are follow up questions needed here? Yes.\nFollow up: {question}"
    if mode == "native":
        return calls(tool_call("search", {args_key: question}), content=text)
    return text


def transcript(out: dict) -> str:
    return "\n".join(content_text(m.content) for m in out["messages"])


def build(mode: str, replies: list, tools=None, **kwargs):
    model = model_for(mode, replies, **kwargs.pop("model_kwargs", {}))
    graph = create_self_ask_graph(model, tools, tool_mode=mode, retry_policy=FAST_RETRY, **kwargs)
    return model, graph


@pytest.mark.parametrize("mode", MODES)
def test_two_follow_ups_answered_by_the_tool(mode):
    search = Search()
    replies = [ask(mode, Q1), ask(mode, Q2), "So the final answer is: Sergio Mattarella"]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1, Q2]
    assert out["answer"] == "Sergio Mattarella"
    assert out["status"] == "completed"
    assert out["llm_calls"] == 3 == model.call_count
    assert out["tool_mode"] == mode
    assert [f["question"] for f in out["follow_ups"]] == [Q1, Q2]
    assert [f["tool"] for f in out["follow_ups"]] == ["search", "search"]
    assert "Milan" in out["follow_ups"][0]["answer"] and "<<" not in out["follow_ups"][0]["answer"]
    seen = model.prompts[1][-1]
    assert "Italy hosted Expo 2015" in content_text(seen.content)
    if mode == "native":
        assert isinstance(seen, ToolMessage)
        assert model.tool_sets[0] == ["search"]
    else:
        assert isinstance(seen, HumanMessage)
        assert content_text(seen.content).startswith("Intermediate answer: <<tool_output ")
        assert "Mattarella is the President" in content_text(model.prompts[2][-1].content)


def test_native_mode_text_follow_up_without_tool_call_goes_to_the_first_tool():
    search = Search()
    model, graph = build(
        "native", [ask("text", Q1), "So the final answer is: Italy"], [search.tool]
    )
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1]
    call, result = model.prompts[1][-2:]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == "search"
    assert isinstance(result, ToolMessage) and result.tool_call_id == call.tool_calls[0]["id"]
    assert "Italy hosted Expo 2015" in content_text(result.content)
    assert out["answer"] == "Italy" and out["llm_calls"] == 2


def test_native_mode_tool_call_without_follow_up_text():
    search = Search()
    replies = [calls(tool_call("search", {"query": Q1}, id="c1")), AIMessage("Italy.")]
    _model, graph = build("native", replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1]
    assert out["follow_ups"] == [{"question": Q1, "answer": FACTS[Q1], "tool": "search"}]
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c1"]
    assert out["answer"] == "Italy." and out["status"] == "completed"


@pytest.mark.parametrize("mode", ["json", "text", "native"])
def test_named_tool_form_routes_to_the_named_tool(mode):
    search = Search()
    reply = "Follow up: What is 6 times 7?\nTool: calculator\nTool Input: 6*7"
    model, graph = build(mode, [reply, "So the final answer is: 42"], [search.tool, calculator])
    out = graph.invoke({"messages": [("user", "What is 6 times 7?")]})
    assert search.queries == []
    assert out["follow_ups"] == [
        {"question": "What is 6 times 7?", "answer": "42", "tool": "calculator"}
    ]
    assert "42" in content_text(model.prompts[1][-1].content)
    assert out["answer"] == "42"


def test_named_tool_with_json_input_for_a_two_argument_tool():
    received = []

    def lookup(table: str, key: str) -> str:
        """Look a key up in a table."""
        received.append((table, key))
        return f"{table}[{key}] = 5"

    reply = 'Tool: lookup\nTool Input: {"table": "prices", "key": "apple"}'
    _model, graph = build("json", [reply, "So the final answer is: 5"], [lookup])
    out = graph.invoke({"messages": [("user", "Price of an apple?")]})
    assert received == [("prices", "apple")]
    assert out["answer"] == "5"


@pytest.mark.parametrize("mode", ["json", "text"])
def test_unknown_named_tool_becomes_an_observation(mode):
    search = Search()
    model, graph = build(
        mode,
        ["Tool: wikipedia\nTool Input: Expo 2015", "So the final answer is: unknown"],
        [search.tool],
    )
    out = graph.invoke(QUESTION)
    seen = content_text(model.prompts[1][-1].content)
    assert "unknown tool 'wikipedia'" in seen and "search" in seen
    assert out["status"] == "completed" and out["answer"] == "unknown"


@pytest.mark.parametrize("mode", ["json", "text"])
def test_invented_intermediate_answer_is_ignored(mode):
    search = Search()
    reply = f"Follow up: {Q1}\nIntermediate answer: France.\nFollow up: {Q2}"
    _model, graph = build(mode, [reply, "So the final answer is: Sergio Mattarella"], [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1]
    assert out["follow_ups"][0]["answer"] == FACTS[Q1]


def test_without_tools_the_model_answers_its_own_follow_ups():
    replies = [
        f"Are follow up questions needed here? Yes.\nFollow up: {Q1}",
        f"Intermediate answer: Italy.\nFollow up: {Q2}",
        "Intermediate answer: Sergio Mattarella.\nSo the final answer is: Sergio Mattarella",
    ]
    model = ScriptedChatModel(replies=replies)
    out = create_self_ask_graph(model).invoke(QUESTION)
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert out["llm_calls"] == 3 == model.call_count
    assert out["tool_mode"] == "none" and model.tool_sets == []
    assert out["follow_ups"] == [
        {"question": Q1, "answer": "Italy.", "tool": None},
        {"question": Q2, "answer": "Sergio Mattarella.", "tool": None},
    ]
    asked = content_text(model.prompts[1][-1].content)
    assert "Intermediate answer:" in asked and "yourself" in asked
    assert isinstance(model.prompts[1][-2], AIMessage)


@pytest.mark.parametrize("mode", ["text", "json"])
def test_a_reply_answering_its_own_new_follow_up_waits_for_the_tool(mode):
    """As in Self-Ask's method, the tool answers a follow-up: a reply that goes on to
    invent the answer and a final line is cut after its question, which the tool answers."""
    search = Search()
    invented = f"Follow up: {Q1}\nIntermediate answer: France.\nSo the final answer is: Macron"
    model, graph = build(
        mode, [invented, "So the final answer is: Sergio Mattarella"], [search.tool]
    )
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1]
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert out["llm_calls"] == 2 == model.call_count
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert content_text(replies[0].content) == f"Follow up: {Q1}"
    assert "Macron" not in transcript(out) and "France" not in transcript(out)
    second = "\n".join(content_text(m.content) for m in model.prompts[1])
    assert FACTS[Q1] in second and "Macron" not in second


def test_a_final_line_after_an_answered_follow_up_is_the_answer():
    search = Search()
    replies = [ask("text", Q1), f"Follow up: {Q1}\nSo the final answer is: Italy"]
    _model, graph = build("text", replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1] and out["answer"] == "Italy" and out["llm_calls"] == 2


def test_without_tools_a_reply_may_answer_its_own_follow_ups_at_once():
    model = ScriptedChatModel(
        replies=[
            f"Follow up: {Q1}\nIntermediate answer: Italy.\n"
            "So the final answer is: Sergio Mattarella"
        ]
    )
    out = create_self_ask_graph(model).invoke(QUESTION)
    assert out["answer"] == "Sergio Mattarella" and out["llm_calls"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_reply_without_markers_is_the_answer(mode):
    search = Search()
    _model, graph = build(mode, ["Sergio Mattarella is the head of state."], [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Sergio Mattarella is the head of state."
    assert out["status"] == "completed" and out["llm_calls"] == 1 and search.queries == []


def test_final_answer_with_a_dangling_native_call_drops_the_call():
    search = Search()
    reply = calls(tool_call("search", {"query": Q1}), content="So the final answer is: Italy")
    _model, graph = build("native", [reply], [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Italy" and search.queries == []
    assert not out["messages"][-1].tool_calls and len(out["messages"]) == 2


async def test_ainvoke_with_tools():
    search = Search()
    _model, graph = build("text", [ask("text", Q1), "So the final answer is: Italy"], [search.tool])
    out = await graph.ainvoke(QUESTION)
    assert out["answer"] == "Italy" and search.queries == [Q1] and out["llm_calls"] == 2


def never_finishes(mode: str):
    counter = itertools.count()

    def reply(messages):
        question = f"Question number {next(counter)}?"
        if mode == "native":
            return calls(tool_call("search", {"query": question}), content=f"Follow up: {question}")
        return f"Follow up: {question}"

    return reply


@pytest.mark.parametrize("mode", [*MODES, "none"])
@pytest.mark.parametrize("run_async", [False, True])
async def test_model_that_never_finishes_stops_at_the_budget(mode, run_async):
    search = Search()
    tools = None if mode == "none" else [search.tool]
    model, graph = build(
        "text" if mode == "none" else mode,
        [never_finishes(mode)],
        tools,
        max_follow_ups=3,
        model_kwargs={"repeat_last": True},
    )
    out = await graph.ainvoke(QUESTION) if run_async else graph.invoke(QUESTION)
    assert out["status"] == "max_iterations"
    assert out["llm_calls"] == 4 == model.call_count
    assert "follow-up questions allowed" in content_text(model.prompts[-1][-1].content)
    if tools:  # the model never answered: the last tool result is not taken for one
        assert len(search.queries) == 3
        assert out["answer"] == "" and out["error"].startswith("no usable answer:")
    else:
        assert out["answer"]


def test_forced_answer_is_used_when_the_model_gives_it():
    search = Search()
    _model, graph = build(
        "text", [ask("text", Q1), "So the final answer is: Italy"], [search.tool], max_follow_ups=1
    )
    out = graph.invoke(QUESTION)
    assert out["status"] == "max_iterations" and out["answer"] == "Italy"
    assert out["llm_calls"] == 2


def garbage(messages) -> str:
    rng = random.Random(sum(len(content_text(m.content)) for m in messages))
    return "".join(
        rng.choice(string.ascii_letters + string.digits + " \n{}[]:") for _ in range(400)
    )


@pytest.mark.parametrize("mode", [*MODES, "none"])
def test_random_garbage_ends_within_budget(mode):
    search = Search()
    tools = None if mode == "none" else [search.tool]
    model, graph = build(
        "text" if mode == "none" else mode,
        [garbage],
        tools,
        max_follow_ups=2,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION)
    assert out["llm_calls"] == model.call_count <= 3
    assert out["status"] in ("completed", "max_iterations")
    assert isinstance(out["answer"], str)


@pytest.mark.parametrize("mode", [*MODES, "none"])
def test_permanent_error_ends_with_status_error(mode):
    search = Search()
    tools = None if mode == "none" else [search.tool]
    model, graph = build(
        "text" if mode == "none" else mode, [ProviderError(401, "invalid api key")], tools
    )
    out = graph.invoke(QUESTION)
    assert out["status"] == "error" and "401" in out["error"]
    # The rejected request counts as a model call; a 401 is not retried.
    assert out["llm_calls"] == 1 == model.call_count
    assert out["retries"] == 0
    assert isinstance(out["answer"], str)


def test_error_after_a_follow_up_keeps_a_best_effort_answer():
    search = Search()
    model, graph = build("text", [ask("text", Q1), ProviderError(401, "revoked")], [search.tool])
    out = graph.invoke(QUESTION)
    # The follow-up question and the rejected request both count; a 401 is not retried.
    assert out["status"] == "error" and out["llm_calls"] == 2 == model.call_count
    assert out["retries"] == 0
    call, result = out["messages"][-2:]
    assert isinstance(result, ToolMessage) and result.tool_call_id == call.tool_calls[0]["id"]
    assert FACTS[Q1] in content_text(result.content)
    assert out["answer"] == ""  # the tool's result stays in the transcript, not as an answer


@pytest.mark.parametrize("mode", ["native", "text", "none"])
@pytest.mark.parametrize("limit", range(2, 16))
def test_small_recursion_limit_never_raises(mode, limit):
    search = Search()
    tools = None if mode == "none" else [search.tool]
    model, graph = build(
        "text" if mode == "none" else mode,
        [never_finishes(mode)],
        tools,
        max_follow_ups=10,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION, {"recursion_limit": limit})
    assert out["status"] == "max_iterations"
    assert out["llm_calls"] == model.call_count <= 11
    assert isinstance(out["answer"], str)


def test_provider_rejecting_tools_falls_back_to_text_in_auto_mode():
    search = Search()
    model = ScriptedChatModel(
        replies=[ask("text", Q1), "So the final answer is: Italy"], rejects_tools=True
    )
    graph = create_self_ask_graph(model, [search.tool], retry_policy=FAST_RETRY)
    out = graph.invoke(QUESTION)
    assert out["tool_mode"] == "text" and out["answer"] == "Italy"
    # The refused request was sent, so it counts, as in every loop.
    assert out["llm_calls"] == 3 == model.call_count and search.queries == [Q1]


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        ("So the final answer is: **Rome**", "final", {"answer": "Rome"}),
        (
            "Intermediate answer: x. So the final answer is: y",
            "final",
            {"answer": "y", "intermediate": "x."},
        ),
        (
            "Follow up: Who?\nIntermediate answer: x\nSo the final answer is: y",
            "final",
            {"answer": "y", "question": "Who?"},
        ),
        ("**Follow up:** Who?\n", "follow_up", {"question": "Who?"}),
        ("Follow-up question: Who?", "follow_up", {"question": "Who?"}),
        ('Tool: search("rome")', "tool", {"tool": "search", "tool_input": "rome"}),
        ("Intermediate answer: only this", "intermediate", {"intermediate": "only this"}),
        ("Are follow up questions needed here? No. It is 4.", "none", {"answer": "It is 4."}),
        ('{"follow_up": "Who?"}', "follow_up", {"question": "Who?"}),
        ('{"final_answer": "4"}', "final", {"answer": "4"}),
        ("", "none", {"answer": ""}),
    ],
)
def test_parse_self_ask(text, kind, fields):
    turn = parse_self_ask(text)
    assert turn.kind == kind
    for key, value in fields.items():
        assert getattr(turn, key) == value


@pytest.mark.parametrize(
    "text",
    [
        "Follow up: " * 20_000,
        "So " + " " * 200_000,
        "Tool:" + "{" * 100_000,
        "\n" * 200_000,
        "Intermediate answer: a\n" * 20_000,
        "{" * 200_000,
        '{"tool": "x", "tool_input": ' + "[" * 100_000,
        "Tool: x\nTool Input: {" + '"a": {' * 50_000,
    ],
)
def test_parse_self_ask_is_fast_on_hostile_input(text):
    started = time.monotonic()
    parse_self_ask(text)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"max_follow_ups": 0}, ValueError, "max_follow_ups"),
        ({"max_follow_ups": "3"}, TypeError, "max_follow_ups"),
        ({"tool_mode": "xml"}, ValueError, "tool_mode"),
        ({"tool_timeout": 0}, ValueError, "tool_timeout"),
        ({"max_tool_output_chars": 10}, ValueError, "max_tool_output_chars"),
        ({"interrupt_before_tools": ["nope"]}, ValueError, "interrupt_before_tools"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_self_ask_graph(ScriptedChatModel(replies=[]), [calculator], **kwargs)


def test_tools_must_be_a_list():
    with pytest.raises(TypeError, match="tools"):
        create_self_ask_graph(ScriptedChatModel(replies=[]), "search")


@pytest.mark.parametrize("mode", MODES)
def test_graph_shape_snapshot(mode):
    _, graph = build(mode, [], [calculator])
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "self_ask.mmd").read_text()


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Follow up: Who?\nIntermediate answer: x\nSo the final answer is: y", "Follow up: Who?"),
        ("Follow up: Who? So the final answer is: y", "Follow up: Who?"),
        (
            'Follow up: Who?\nTool: search\nTool Input: {"query": "x"}\nFollow up: Where?',
            'Follow up: Who?\nTool: search\nTool Input: {"query": "x"}',
        ),
        ("Are follow up questions needed here? Yes.\nFollow up: Who?", None),
    ],
)
def test_asked_part_keeps_the_reply_up_to_its_first_question(text, kept):
    assert asked_part(text) == (text if kept is None else kept)


@pytest.mark.parametrize("mode", MODES)
def test_required_tool_choice_asks_for_a_follow_up_before_an_answer(mode):
    """tool_choice="required": native binds it until a tool answered; text and json ask
    again for a follow-up when the first reply answers at once."""
    search = Search()
    replies = ["So the final answer is: Macron", ask(mode, Q1), "So the final answer is: Italy"]
    if mode == "native":
        replies = replies[1:]
    model, graph = build(mode, replies, [search.tool], tool_choice="required")
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1] and out["answer"] == "Italy" and out["status"] == "completed"
    assert out["llm_calls"] == len(replies) == model.call_count
    if mode == "native":
        assert model.tool_choices == ["required", None]
    else:
        pushed = content_text(model.prompts[1][-1].content)
        assert pushed == prompts.SELF_ASK_REQUIRE_FOLLOW_UP


def test_a_required_tool_name_answers_the_first_bare_follow_up():
    search = Search()
    graph = create_self_ask_graph(
        ScriptedChatModel(replies=[ask("text", "6*7"), "So the final answer is: 42"]),
        [search.tool, calculator],
        tool_mode="text",
        tool_choice="calculator",
    )
    out = graph.invoke({"messages": [("user", "What is 6*7?")]})
    assert out["follow_ups"][0]["tool"] == "calculator" and out["answer"] == "42"
    assert search.queries == []


def test_required_tool_choice_gives_up_asking_at_the_budget():
    search = Search()
    replies = ["So the final answer is: Macron"] * 3
    model, graph = build("text", replies, [search.tool], tool_choice="required", max_follow_ups=1)
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Macron" and search.queries == []
    assert out["llm_calls"] == model.call_count <= 2


# ---------------------------------------------------------------- guided runs
# On a model that gets a tool call required by default (the embedded small model), json
# and text modes are guided: the first reply is a follow-up, each tool result is read in
# a call of its own, and a follow-up asked again moves on to the final answer. Native mode
# keeps the free grammar.


@pytest.fixture
def small_model(monkeypatch):
    """Treat every model as the embedded small model: a tool call required by default, and
    its guided schemas sent as written (its server makes them a grammar)."""
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")
    monkeypatch.setattr(model_send, "needs_guided_steps", lambda model: True)


def guided_ask(mode: str, question: str, tool: str = "search") -> str:
    """A guided reply asking one follow-up, in json or text mode."""
    if mode == "json":
        return json.dumps({"follow_up": question, "tool": tool})
    return f"Follow up: {question}"


def guided_final(mode: str, answer: str) -> str:
    if mode == "json":
        return json.dumps({"final_answer": answer})
    return f"So the final answer is: {answer}"


def cut(text: str) -> AIMessage:
    """A reply stopped at the token cap."""
    return AIMessage(content=text, response_metadata={"finish_reason": "length"})


def prompt_text(messages) -> str:
    return "\n".join(content_text(m.content) for m in messages)


@pytest.mark.parametrize("mode", MODES)
def test_guided_chain_reads_each_tool_result_then_answers(small_model, mode):
    search = Search()
    if mode == "native":
        replies = [ask(mode, Q1), ask(mode, Q2), "So the final answer is: Sergio Mattarella"]
    else:
        replies = [
            guided_ask(mode, Q1),
            "Italy",  # read from the first result
            guided_ask(mode, Q2),
            "Sergio Mattarella",  # read from the second result
            guided_ask(mode, Q2),  # asked again: nothing new to ask
            guided_final(mode, "Sergio Mattarella"),
        ]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == [Q1, Q2]
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert out["llm_calls"] == len(replies) == model.call_count
    if mode == "native":  # the free grammar: the tool's results are the answers
        assert out["follow_ups"][0]["answer"] == FACTS[Q1]
        return
    assert out["follow_ups"] == [
        {"question": Q1, "answer": "Italy", "tool": "search"},
        {"question": Q2, "answer": "Sergio Mattarella", "tool": "search"},
    ]
    # Each result is read in a call of its own: the follow-up and the result, fenced.
    read = prompt_text(model.prompts[1])
    assert f"Question: {Q1}" in read and FACTS[Q1] in read and "<<tool_output " in read
    # Each turn after it reads the worked example, then the run's scratchpad.
    turn = model.prompts[2]
    assert prompts.SELF_ASK_EXAMPLE_QUESTION in prompt_text(turn)
    assert content_text(turn[-1].content) == (
        f"Question: {content_text(QUESTION['messages'][0][1])}\n"
        f"Follow up: {Q1}\nIntermediate answer: Italy"
    )
    if mode == "json":  # every reply is schema-constrained: follow-ups, reads, the answer
        names = [schema["name"] for schema in model.schemas]
        assert names == ["self_ask_follow_up", "self_ask_read"] * 2 + [
            "self_ask_follow_up",
            "self_ask_final_answer",
        ]
    else:
        assert model.schemas == []


def follow_up_pattern(schema) -> re.Pattern[str]:
    field = schema["schema"]["anyOf"][0]["properties"]["follow_up"]
    return re.compile(field["pattern"])


def answer_pattern(schema, key: str) -> re.Pattern[str]:
    return re.compile(schema["schema"]["properties"][key]["pattern"])


def test_guided_json_replies_are_grounded_in_their_evidence(small_model):
    """In json mode a follow-up is written from the question's words (and, later, holds
    the last intermediate answer), a read from the tool result's new words, and the final
    answer from the last intermediate answer."""
    search = Search()
    replies = [
        guided_ask("json", Q1),
        json.dumps({"answer": "Italy"}),
        guided_ask("json", Q2),
        json.dumps({"answer": "Sergio Mattarella"}),
        json.dumps({"final_answer": "Sergio Mattarella"}),
    ]
    model, graph = build("json", replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert out["llm_calls"] == len(replies) == model.call_count
    first, read, second, read_again, last = model.schemas
    asking = follow_up_pattern(first)
    assert asking.fullmatch("Who is the head of state of the country?")
    assert not asking.fullmatch("Who was born in 1992?")  # 1992 is nowhere in the question
    assert len(first["schema"]["anyOf"]) == 1  # no final answer before a follow-up
    reading = answer_pattern(read, "answer")
    assert reading.fullmatch("Italy") and reading.fullmatch("Milan.")
    assert not reading.fullmatch("Expo")  # the follow-up's own words say nothing new
    building = follow_up_pattern(second)
    assert building.fullmatch("Who is the head of state of Italy?")
    assert not building.fullmatch("Who is the head of state of the country?")
    assert len(second["schema"]["anyOf"]) == 1  # one answer is not a chain yet
    assert answer_pattern(read_again, "answer").fullmatch("Sergio Mattarella")
    # After two answers the reply may end the chain, with the last answer's words.
    ending = re.compile(last["schema"]["anyOf"][1]["properties"]["final_answer"]["pattern"])
    assert ending.fullmatch("Sergio Mattarella") and not ending.fullmatch("Italy")


@pytest.mark.parametrize("mode", MODES)
def test_guided_first_reply_is_a_follow_up_whatever_it_says(small_model, mode):
    search = Search()
    answer_at_once = "Sergio Mattarella is the head of state."
    replies = [answer_at_once]
    if mode != "native":
        replies += ["Italy", guided_final(mode, "Sergio Mattarella")]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    if mode == "native":  # a capable model answers as it likes
        assert search.queries == [] and out["answer"] == answer_at_once
        return
    assert search.queries == [answer_at_once]
    assert out["follow_ups"][0]["tool"] == "search"
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert out["llm_calls"] == 3 == model.call_count


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_json_schema_offers_only_follow_ups_for_the_chosen_tool(small_model, mode):
    search = Search()
    replies = [guided_ask(mode, "6*7", tool="calculator"), "42", guided_final(mode, "42")]
    model, graph = build(mode, replies, [search.tool, calculator], tool_choice="calculator")
    out = graph.invoke({"messages": [("user", "What is 6 times 7?")]})
    assert out["follow_ups"] == [{"question": "6*7", "answer": "42", "tool": "calculator"}]
    assert out["answer"] == "42" and search.queries == []
    if mode == "json":
        (alternative,) = model.schemas[0]["schema"]["anyOf"]
        assert alternative["properties"]["tool"] == {"const": "calculator"}
        assert "final_answer" not in json.dumps(model.schemas[0])


@pytest.mark.parametrize("mode", MODES)
def test_guided_run_that_never_stops_asking_ends_at_the_budget(small_model, mode):
    search = Search()
    counter = itertools.count()

    def reply(messages):
        if mode == "native":
            return never_finishes(mode)(messages)
        if "Tool result:" in content_text(messages[-1].content):
            return f"answer {next(counter)}"  # a read
        return guided_ask(mode, f"Question number {next(counter)}?")

    model, graph = build(
        mode, [reply], [search.tool], max_follow_ups=4, model_kwargs={"repeat_last": True}
    )
    out = graph.invoke(QUESTION)
    assert out["status"] == "max_iterations"
    assert out["llm_calls"] == model.call_count == 4 + 1  # the budget, then the answer
    if mode == "native":
        # The run's best effort is the last search result, which the model never read:
        # a tool result copied whole is no answer.
        assert out["answer"] == "" and "only copied a tool result" in out["error"]
    else:
        assert out["answer"]
        # ask, read, ask, read; the last result is read by the final turn
        assert len(search.queries) == 2 and not out["answer"].startswith("Question number")


@pytest.mark.parametrize("mode", MODES)
def test_guided_cut_final_reply_is_asked_once_more(small_model, mode):
    search = Search()
    rambling = "Sergio Mattarella is the " + "head of the " * 40
    if mode == "native":
        replies = [ask(mode, Q1), cut(rambling), "So the final answer is: Sergio Mattarella"]
    else:
        replies = [
            guided_ask(mode, Q1),
            "Italy",
            guided_ask(mode, Q1),  # asked again
            cut(rambling),
            guided_final(mode, "Sergio Mattarella"),
        ]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    if mode == "native":  # the free grammar, without guided turns
        assert not any("Tool result:" in prompt_text(p) for p in model.prompts)
        return
    assert out["answer"] == "Sergio Mattarella" and out["status"] == "completed"
    assert content_text(model.prompts[-1][-1].content) == prompts.SHORT_ANSWER
    assert out["llm_calls"] == 5 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_guided_cut_twice_ends_with_the_last_intermediate_answer(small_model, mode):
    search = Search()
    rambling = "head of the " * 40
    if mode == "native":
        replies = [ask(mode, Q1), cut(rambling), cut(rambling)]
        model, graph = build(mode, replies, [search.tool], max_follow_ups=2)
        out = graph.invoke(QUESTION)
        assert not any("Tool result:" in prompt_text(p) for p in model.prompts)
        return
    replies = [guided_ask(mode, Q1), "Italy", guided_ask(mode, Q1), cut(rambling), cut(rambling)]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Italy" and out["status"] == "max_iterations"
    assert "head of the" not in out["answer"]
    assert out["llm_calls"] == 5 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_guided_cut_final_at_the_budget_is_not_asked_again(small_model, mode):
    search = Search()
    if mode == "native":
        replies = [ask(mode, Q1), cut("head of the " * 40)]
    else:
        replies = [guided_ask(mode, Q1), cut("head of the " * 40)]
    model, graph = build(mode, replies, [search.tool], max_follow_ups=1)
    out = graph.invoke(QUESTION)
    assert out["llm_calls"] == 2 == model.call_count  # max_follow_ups + 1
    if mode != "native":  # the unread result is not taken for the model's answer
        assert (out["status"], out["answer"]) == ("max_iterations", "")
        assert out["error"] == "no usable answer: the model's reply only copied a tool result"


@pytest.mark.parametrize("mode", MODES)
def test_guided_answer_copied_from_the_worked_example_is_not_taken(small_model, mode):
    search = Search()
    example = prompts.SELF_ASK_EXAMPLE_ANSWER
    if mode == "native":
        replies = [ask(mode, Q1), f"So the final answer is: {example}"]
    else:
        replies = [guided_ask(mode, Q1), "Italy", guided_ask(mode, Q1), guided_final(mode, example)]
    _model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    if mode == "native":
        assert out["answer"] == example
        return
    assert out["answer"] == "Italy" and out["status"] == "max_iterations"


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_example_tool_is_the_one_whose_examples_match_the_question(small_model, mode):
    from loopgraphs.toolkits import calculator as bundled_calculator
    from loopgraphs.toolkits import make_search_tool

    tools = [bundled_calculator, make_search_tool()]
    replies = [guided_ask(mode, "Who founded Quillmark Instruments?"), "Bartholomew Ixley"]
    replies.append(guided_final(mode, "Bartholomew Ixley"))
    model, graph = build(mode, replies, tools)
    out = graph.invoke({"messages": [("user", "Who founded Quillmark Instruments?")]})
    assert out["follow_ups"][0]["tool"] == "search"
    shown = prompt_text(model.prompts[0])
    assert ('"tool": "search"' if mode == "json" else "goes to the tool search") in shown


def test_guided_runs_only_in_json_and_text_modes_on_a_small_model(monkeypatch):
    from loopgraphs.nodes.settings import make_settings

    def run_of(model_default, **options):
        monkeypatch.setattr(grounding, "default_tool_choice", lambda model: model_default)
        return make_settings("self_ask", ScriptedChatModel(replies=[]), [calculator], options)

    assert guided(run_of("required"), "json")
    assert guided(run_of("required"), "text")
    assert not guided(run_of("required"), "native")
    assert not guided(run_of("required", tool_choice="auto"), "json")
    assert not guided(run_of(None), "json")


@pytest.mark.parametrize("limit", range(2, 16))
@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_small_recursion_limit_never_raises(small_model, mode, limit):
    search = Search()
    counter = itertools.count()

    def reply(messages):
        return guided_ask(mode, f"Question number {next(counter)}?")

    model, graph = build(
        mode, [reply], [search.tool], max_follow_ups=10, model_kwargs={"repeat_last": True}
    )
    out = graph.invoke(QUESTION, {"recursion_limit": limit})
    assert out["status"] == "max_iterations"
    assert out["llm_calls"] == model.call_count <= 11
    assert isinstance(out["answer"], str)


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("Who founded Harrowby Looms?", "Harrowby Looms was founded by Ada Quinlan."),
        ("Where was Ada Quinlan born?", "Ada Quinlan was born in Tessford."),
    ],
)
def test_relevant_sentences_keep_the_closest_in_order(question, kept):
    result = (
        "Harrowby Looms: Harrowby Looms is an organisation. Harrowby Looms was founded by "
        "Ada Quinlan.\n\nAda Quinlan: Ada Quinlan is a person. Ada Quinlan was born in "
        "Tessford. Ada Quinlan was a weaver."
    )
    assert relevant_sentences(result, question, 1) == kept
    assert relevant_sentences("42", question) == "42"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Italy", "Italy"),
        ("\n**Intermediate answer:** Italy.\nMore text", "Italy."),
        ("Answer: Milan", "Milan"),
        ("", ""),
    ],
)
def test_read_answer(text, answer):
    assert read_answer(text) == answer


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"follow_up": "Who founded X?", "tool": "search"}', "Who founded X?"),
        ('{"follow_up": "Who \\"really\\" founded the head of the head of', 'Who "really" founded'),
        ('{"final_answer": "x"}', ""),
    ],
)
def test_open_json_field_reads_a_cut_reply(text, value):
    assert open_json_field(text, "follow_up").startswith(value)


@pytest.mark.parametrize(
    "text",
    ["a. " * 100_000, "\n" * 200_000, '{"follow_up": "' + "\\" * 200_000, "word " * 200_000],
)
def test_guided_parsers_are_fast_on_hostile_input(text):
    started = time.monotonic()
    relevant_sentences(text, "Who founded Harrowby Looms?")
    read_answer(text)
    open_json_field(text, "follow_up")
    assert time.monotonic() - started < 1.0


# ---------------------------------------------------------------- cut replies (free grammar)


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_final_reply_is_asked_once_for_a_short_answer(mode):
    search = Search()
    replies = [
        cut("So the final answer is: Rome " + "and Rome " * 60),
        "So the final answer is: Rome",
    ]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "Rome" and out["status"] == "completed"
    assert out["llm_calls"] == 2 == model.call_count
    assert content_text(model.prompts[1][-1].content) == prompts.SHORT_ANSWER


@pytest.mark.parametrize("mode", MODES)
def test_a_final_reply_cut_twice_is_never_the_answer(mode):
    search = Search()
    looping = "So the final answer is: Rome " + "and Rome " * 60
    model, graph = build(mode, [cut(looping), cut(looping), cut(looping)], [search.tool])
    out = graph.invoke(QUESTION)
    assert out["status"] == "max_iterations" and "and Rome and Rome" not in out["answer"]
    assert out["llm_calls"] == model.call_count <= 3


# ---------------------------------------------------------------- questions as users ask them
# A two-hop question phrased otherwise than "the X of the Y of Z" (a possessive here): the
# follow-up after the first answer asks the fact the question needs of that answer, and
# the answer read from a result is that fact, not a word of the page's frame ("Born").

MENTOR_QUESTION = "What is the profession of Ada Quinlan's mentor?"
MENTOR_PAGES = [
    (
        "Ada Quinlan",
        "Ada Quinlan is a person. The profession of Ada Quinlan is weaver. Ada Quinlan was "
        "born in Tessford. Ada Quinlan was mentored by Bram Oster.",
    ),
    (
        "Bram Oster",
        "Bram Oster is a person. Bram Oster was born in Halden. The profession of Bram "
        "Oster is historian. Bram Oster was born in the year 1840.",
    ),
]
MENTOR_FIRST = "Who is Ada Quinlan's mentor?"
MENTOR_NEEDED = "What is the profession of Bram Oster?"


class Pages:
    """The bundled search tool over two pages, recording its queries."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        pages = make_search_tool(MENTOR_PAGES)

        def search(query: str) -> str:
            """Search the pages for facts about people."""
            self.queries.append(query)
            return str(pages.invoke({"query": query}))

        self.tool = search


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_second_follow_up_asks_the_needed_fact_and_reads_it(small_model, mode):
    """The model asks "Who is Bram Oster?" and reads "Born": the tool is asked the
    profession of Bram Oster, and the intermediate answer is "historian"."""
    pages = Pages()
    read = (lambda text: json.dumps({"answer": text})) if mode == "json" else str
    replies = [
        guided_ask(mode, MENTOR_FIRST),
        read("Bram Oster"),
        guided_ask(mode, "Who is Bram Oster?"),
        read("Born"),
        guided_final(mode, "historian"),
    ]
    model, graph = build(mode, replies, [pages.tool])
    out = graph.invoke({"messages": [("user", MENTOR_QUESTION)]})
    assert pages.queries == [MENTOR_FIRST, MENTOR_NEEDED]
    assert out["follow_ups"] == [
        {"question": MENTOR_FIRST, "answer": "Bram Oster", "tool": "search"},
        {"question": MENTOR_NEEDED, "answer": "historian", "tool": "search"},
    ]
    assert out["answer"] == "historian" and out["status"] == "completed"
    assert out["llm_calls"] == len(replies) == model.call_count
    # The second read shows the profession first among the sentences about Bram Oster.
    assert "The profession of Bram Oster is historian." in prompt_text(model.prompts[3])
    if mode != "json":
        assert model.schemas == []
        return
    first, read_first, second, read_second, _ = model.schemas
    assert follow_up_pattern(second).fullmatch("What is the profession of Bram Oster?")
    assert not follow_up_pattern(first).fullmatch("Who is Bram Oster?")
    assert answer_pattern(read_first, "answer").fullmatch("Bram Oster")
    reading = answer_pattern(read_second, "answer")
    assert reading.fullmatch("historian")
    assert not reading.fullmatch("Born")  # "born" frames two sentences of the page


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_follow_up_that_asks_the_needed_fact_is_sent_as_written(small_model, mode):
    pages = Pages()
    asked = "In which profession did Bram Oster work?"
    replies = [guided_ask(mode, MENTOR_FIRST), "Bram Oster", guided_ask(mode, asked)]
    replies += ["historian", guided_final(mode, "historian")]
    _, graph = build(mode, replies, [pages.tool])
    out = graph.invoke({"messages": [("user", MENTOR_QUESTION)]})
    assert pages.queries == [MENTOR_FIRST, asked]
    assert out["answer"] == "historian" and out["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_plain_prompts_ask_the_needed_fact_of_the_last_answer(mode):
    """A capable model (the free grammar) is told that a follow-up after an answer asks
    the fact the question needs of it; its follow-ups go to the tool as written."""
    pages = Pages()
    replies = [ask(mode, MENTOR_FIRST), ask(mode, MENTOR_NEEDED)]
    replies.append("So the final answer is: historian")
    model, graph = build(mode, replies, [pages.tool])
    out = graph.invoke({"messages": [("user", MENTOR_QUESTION)]})
    assert pages.queries == [MENTOR_FIRST, MENTOR_NEEDED]
    assert out["answer"] == "historian" and out["status"] == "completed"
    system = content_text(model.prompts[0][0].content)
    assert "asks about that answer the fact the question" in " ".join(system.split())


@pytest.mark.parametrize(
    ("question", "known", "needed"),
    [
        (MENTOR_QUESTION, [MENTOR_FIRST, "Bram Oster"], ["profession"]),
        (MENTOR_QUESTION, [], ["profession", "Ada", "Quinlan", "mentor"]),
        (
            "Name the mayor of the city where Harrowby Looms is headquartered.",
            ["Where is Harrowby Looms headquartered?", "Tessford"],
            ["mayor", "city"],
        ),
        (
            "Someone founded Harrowby Looms. In which year was that person born?",
            ["Who founded Harrowby Looms?", "Ada Quinlan"],
            ["year", "born"],
        ),
    ],
)
def test_needed_words_are_what_no_follow_up_used_yet(question, known, needed):
    assert needed_words(question, known) == needed


@pytest.mark.parametrize(
    ("follow_up", "ok"),
    [
        ("What is the profession of Bram Oster?", True),
        ("Bram Oster's profession?", True),
        ("Who is Bram Oster?", False),
        ("What is the profession of the mentor?", False),
    ],
)
def test_builds_on_needs_the_answer_and_a_needed_word(follow_up, ok):
    assert builds_on(follow_up, "Bram Oster", ["profession"]) is ok


def test_facts_read_are_the_words_the_question_does_not_use_closest_first():
    page = " ".join(text for _, text in MENTOR_PAGES)
    first = facts_read(page, MENTOR_FIRST, known=MENTOR_QUESTION, page=page)
    assert first[0] == ["Bram", "Oster"]
    found = facts_read(page, "Who is Bram Oster?", "profession", MENTOR_QUESTION, page)
    assert found[0] == ["historian"]
    assert all("born" not in words for words in found)  # it frames two sentences
    assert facts_read(page, "Where was Bram Oster born?")[:2] == [["Halden"], ["year", "1840"]]
    assert facts_read("", "Who?") == []
