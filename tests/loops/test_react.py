"""ReAct scenarios in every tool mode, on the scripted model."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import create_react_graph, prompts
from loopgraphs.nodes import run_context as settings_module
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.settings import make_settings
from loopgraphs.state import new_fence
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for, step_alternatives

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def transcript(out: dict) -> str:
    return "\n".join(content_text(m.content) for m in out["messages"])


def build(mode: str, replies: list, tools=None, **kwargs):
    model = model_for(mode, replies, **kwargs.pop("model_kwargs", {}))
    graph = create_react_graph(
        model,
        tools if tools is not None else [multiply],
        tool_mode=mode,
        retry_policy=FAST_RETRY,
        **kwargs,
    )
    return model, graph


@pytest.mark.parametrize("mode", MODES)
def test_happy_path_two_calls(mode):
    model, graph = build(mode, [act(mode, "multiply", {"a": 17, "b": 19}), final(mode, "323")])
    out = graph.invoke({"messages": [("user", "What is 17*19?")]})
    assert out["answer"] == "323"
    assert out["status"] == "completed"
    assert out["llm_calls"] == 2 == model.call_count
    assert out["tool_mode"] == mode
    assert "323" in transcript(out)
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0


@pytest.mark.parametrize("mode", MODES)
async def test_direct_answer_one_call_async(mode):
    _model, graph = build(mode, [final(mode, "Paris")])
    out = await graph.ainvoke({"messages": [("user", "Capital of France?")]})
    assert (out["answer"], out["status"], out["llm_calls"]) == ("Paris", "completed", 1)


def test_no_tools_is_plain_chat():
    model = ScriptedChatModel(replies=["Hello there."])
    out = create_react_graph(model).invoke({"messages": [("user", "hi")]})
    assert out["answer"] == "Hello there."
    assert out["tool_mode"] == "none"
    assert model.tool_sets == []


@pytest.mark.parametrize("mode", ["text", "json"])
def test_final_answer_wins_over_action(mode):
    reply = 'Thought: done\nAction: multiply\nAction Input: {"a": 1, "b": 2}\nFINAL_ANSWER: 42'
    ran = []

    def probe(x: str) -> str:
        """Record a call."""
        ran.append(x)
        return x

    _model, graph = build(mode, [reply], tools=[probe])
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["answer"] == "42" and ran == []


def test_multiline_json_action_input():
    reply = 'Thought: compute\nAction: multiply\nAction Input: {\n  "a": 6,\n  "b": 7\n}\n'
    model, graph = build("text", [reply, final("text", "42")])
    out = graph.invoke({"messages": [("user", "6*7?")]})
    assert "Observation:" in content_text(model.prompts[1][-1].content)
    assert "42" in content_text(model.prompts[1][-1].content)
    assert out["answer"] == "42"


def test_invalid_json_then_recovery():
    model, graph = build(
        "json",
        ["I think I'll multiply", act("json", "multiply", {"a": 2, "b": 3}), final("json", "6")],
    )
    out = graph.invoke({"messages": [("user", "2*3?")]})
    assert out["answer"] == "6" and out["status"] == "completed"
    assert out["llm_calls"] == 3
    assert "could not be parsed" in content_text(model.prompts[1][-1].content)


def test_text_mode_without_action_returns_reply_as_is():
    _model, graph = build("text", ["Just an answer with no markers."])
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["answer"] == "Just an answer with no markers."


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_becomes_observation(mode):
    model, graph = build(mode, [act(mode, "divide", {"a": 1}), final(mode, "sorry")])
    out = graph.invoke({"messages": [("user", "q")]})
    seen = content_text(model.prompts[1][-1].content)
    assert "unknown tool 'divide'" in seen and "multiply" in seen
    assert out["answer"] == "sorry"


@pytest.mark.parametrize("mode", MODES)
def test_bad_arguments_become_observation(mode):
    model, graph = build(mode, [act(mode, "multiply", {"a": "x"}), final(mode, "oops")])
    graph.invoke({"messages": [("user", "q")]})
    seen = content_text(model.prompts[1][-1].content)
    assert "invalid arguments" in seen and "b" in seen


@pytest.mark.parametrize("mode", MODES)
def test_tool_exception_becomes_observation(mode):
    def explode(x: str) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model, graph = build(
        mode, [act(mode, "explode", {"x": "1"}), final(mode, "gave up")], tools=[explode]
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert "RuntimeError: disk on fire" in content_text(model.prompts[1][-1].content)
    assert out["status"] == "completed"


def test_tool_timeout_becomes_observation():
    def slow(x: str) -> str:
        """Sleeps."""
        time.sleep(2)
        return x

    model, graph = build(
        "native",
        [act("native", "slow", {"x": "1"}), final("native", "ok")],
        tools=[slow],
        tool_timeout=0.2,
    )
    started = time.monotonic()
    graph.invoke({"messages": [("user", "q")]})
    assert "timed out after 0.2 s" in content_text(model.prompts[1][-1].content)
    assert time.monotonic() - started < 1.9


@pytest.mark.parametrize("run_async", [False, True])
async def test_parallel_tool_calls_overlap(run_async):
    active = {"now": 0, "max": 0}
    lock = threading.Lock()

    @tool
    def wait(label: str) -> str:
        """Wait a little and echo the label."""
        with lock:
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        time.sleep(0.3)
        with lock:
            active["now"] -= 1
        return f"done {label}"

    reply = calls(*(tool_call("wait", {"label": str(i)}, id=f"c{i}") for i in range(4)))
    _model, graph = build("native", [reply, final("native", "all done")], tools=[wait])
    inputs = {"messages": [("user", "go")]}
    out = await graph.ainvoke(inputs) if run_async else graph.invoke(inputs)
    assert active["max"] == 4
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c0", "c1", "c2", "c3"]
    assert [("done " + str(i)) in m.content for i, m in enumerate(results)] == [True] * 4


@pytest.mark.parametrize("mode", MODES)
def test_repeated_identical_call_is_not_run_again(mode):
    ran = []

    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    script = [
        act(mode, "lookup", {"key": "k"}),
        act(mode, "lookup", {"key": "k"}),
        final(mode, "v"),
    ]
    model, graph = build(mode, script, tools=[lookup])
    out = graph.invoke({"messages": [("user", "q")]})
    assert ran == ["k"]
    assert "already called lookup" in content_text(model.prompts[2][-1].content)
    assert out["answer"] == "v"


@pytest.mark.parametrize("mode", MODES)
def test_max_iterations_asks_once_for_final_answer(mode):
    counter = iter(range(10_000))

    def never_stop(messages):
        if "used all the steps" in content_text(messages[-1].content):
            return final(mode, "best guess")
        return act(mode, "multiply", {"a": next(counter), "b": 1})

    model, graph = build(mode, [never_stop], max_iterations=3, model_kwargs={"repeat_last": True})
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "max_iterations"
    assert out["answer"] == "best guess"
    assert out["llm_calls"] == 4 == model.call_count


def test_small_recursion_limit_never_raises():
    counter = iter(range(10_000))
    model, graph = build(
        "native",
        [lambda m: act("native", "multiply", {"a": next(counter), "b": 2})],
        max_iterations=50,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke({"messages": [("user", "q")]}, {"recursion_limit": 12})
    assert out["status"] == "max_iterations"
    assert out["llm_calls"] == model.call_count


def test_provider_rejecting_tools_falls_back_to_json():
    model = ScriptedChatModel(
        replies=[act("json", "multiply", {"a": 2, "b": 2}), final("json", "4")],
        rejects_tools=True,
    )
    out = create_react_graph(model, [multiply], retry_policy=FAST_RETRY).invoke(
        {"messages": [("user", "2*2")]}
    )
    assert out["tool_mode"] == "json"
    assert out["answer"] == "4"
    # The request the provider rejected counts too, but it is not a retry.
    assert out["llm_calls"] == 3 == model.call_count
    assert out["retries"] == 0


def test_transient_errors_are_retried():
    model, graph = build(
        "native",
        [ProviderError(503, "overloaded"), ConnectionError("reset"), final("native", "fine")],
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "completed" and out["answer"] == "fine"
    # Both failed attempts sent a request: all three count, two of them were retried.
    assert out["llm_calls"] == 3 == model.call_count
    assert out["retries"] == 2


def test_permanent_error_ends_with_status_error():
    model, graph = build("native", [ProviderError(401, "invalid api key")])
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error"
    assert "invalid api key" in out["error"] and "401" in out["error"]
    assert model.call_count == 1


def test_transient_errors_exhausting_retries_end_with_status_error():
    model, graph = build(
        "native", [ProviderError(429, "slow down")], model_kwargs={"repeat_last": True}
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error" and "429" in out["error"]
    assert model.call_count == FAST_RETRY.max_attempts


def test_callers_messages_are_not_mutated():
    history = [HumanMessage("What is 2*3?")]
    _model, graph = build(
        "native", [act("native", "multiply", {"a": 2, "b": 3}), final("native", "6")]
    )
    out = graph.invoke({"messages": history})
    assert len(history) == 1 and len(out["messages"]) == 4


def test_empty_input_is_a_clear_error():
    model, graph = build("native", [])
    out = graph.invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


@pytest.mark.parametrize("mode", MODES)
def test_each_run_on_a_thread_reports_only_its_own_calls(mode):
    """The run is set up inside its first step (no separate superstep): counters, the
    iteration budget and the transcript start are fresh for every run on a thread."""
    replies = [
        act(mode, "multiply", {"a": 2, "b": 3}),
        final(mode, "6"),
        act(mode, "multiply", {"a": 4, "b": 5}),
        final(mode, "20"),
    ]
    model, graph = build(mode, replies, max_iterations=2, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [("user", "2*3?")]}, config)
    scratch = graph.get_state(config).values["scratch"]
    second = graph.invoke({"messages": [("user", "4*5?")]}, config)
    assert (first["answer"], first["status"], first["llm_calls"]) == ("6", "completed", 2)
    assert (second["answer"], second["status"], second["llm_calls"]) == ("20", "completed", 2)
    replies_of_second = [m for m in second["messages"][4:] if isinstance(m, AIMessage)]
    spent = sum(m.usage_metadata["input_tokens"] for m in replies_of_second)
    assert second["usage"]["input_tokens"] == spent and model.call_count == 4
    assert len(second["messages"]) == 8
    again = graph.get_state(config).values["scratch"]
    assert (scratch["transcript_start"], again["transcript_start"]) == (1, 5)
    assert again["fence"] == scratch["fence"]  # a thread keeps its fence marker


def test_a_run_left_unfinished_does_not_leak_into_the_next():
    """A run that stopped without finishing (cancelled mid-way) leaves its status
    "running" in the checkpoint; the next run on the thread still starts afresh."""
    replies = [act("native", "multiply", {"a": 2, "b": 2}), final("native", "done")]
    _model, graph = build("native", replies, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.update_state(
        config,
        {
            "messages": [("user", "old")],
            "status": "running",
            "scratch": {"iterations": 10},
            "llm_calls": 7,
        },
        as_node="select_tools",
    )
    out = graph.invoke({"messages": [("user", "new")]}, config)
    assert (out["answer"], out["status"], out["llm_calls"]) == ("done", "completed", 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_human_message_a_tool_adds_does_not_start_a_new_run(mode):
    """A new run starts when the conversation ends with a human message the run has not
    taken in (new input); one that a tool adds through a Command is part of the run."""

    @tool
    def ask_back(question: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Pass a question back to the conversation."""
        reply = ToolMessage("passed on", tool_call_id=tool_call_id)
        return Command(update={"messages": [reply, HumanMessage(f"Note: {question}")]})

    replies = [act(mode, "ask_back", {"question": "units?"}), final(mode, "metres")]
    model, graph = build(mode, replies, tools=[ask_back], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"messages": [("user", "How far?")]}, config)
    assert (out["answer"], out["status"], out["llm_calls"]) == ("metres", "completed", 2)
    assert model.call_count == 2
    scratch = graph.get_state(config).values["scratch"]
    assert scratch["iterations"] == 2 and scratch["transcript_start"] == 1
    assert scratch["seen"] == next(
        m.id for m in out["messages"] if content_text(m.content) == "Note: units?"
    )


def test_a_failing_first_step_counts_only_its_own_run():
    replies = [final("native", "first"), ProviderError(400, "bad request")]
    model, graph = build("native", replies, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"messages": [("user", "a")]}, config)["llm_calls"] == 1
    out = graph.invoke({"messages": [("user", "b")]}, config)
    assert (out["status"], out["llm_calls"], out["retries"]) == ("error", 1, 0)
    assert "400" in out["error"] and model.call_count == 2


def numbered_tools(count: int) -> list:
    def make(i):
        def fn(x: str) -> str:
            return f"tool {i}: {x}"

        fn.__name__ = f"tool_{i}"
        fn.__doc__ = f"Tool number {i}."
        return fn

    return [make(i) for i in range(count)]


def test_tool_selection_above_twelve_tools():
    selection = calls(tool_call("ToolSelection", {"tools": ["tool_3", "tool_7"]}))
    model, graph = build("native", [selection, final("native", "done")], tools=numbered_tools(15))
    out = graph.invoke({"messages": [("user", "use tool 3")]})
    assert "scratch" not in out and "selected_tools" not in out
    assert model.tool_sets[-1] == ["tool_3", "tool_7"]
    assert out["llm_calls"] == 2


def test_tool_selection_failure_keeps_all_tools():
    model, graph = build(
        "native", ["no idea", "still no idea", final("native", "done")], tools=numbered_tools(13)
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert len(model.tool_sets[-1]) == 13
    assert out["llm_calls"] == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"tool_mode": "xml"}, ValueError, "tool_mode"),
        ({"max_iterations": 0}, ValueError, "max_iterations"),
        ({"max_iterations": "5"}, TypeError, "max_iterations"),
        ({"tool_timeout": -1}, ValueError, "tool_timeout"),
        ({"interrupt_before_tools": ["nope"]}, ValueError, "interrupt_before_tools"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_react_graph(ScriptedChatModel(replies=[]), [multiply], **kwargs)


def test_model_must_be_a_chat_model():
    with pytest.raises(TypeError, match="model must be"):
        create_react_graph(42, [multiply])
    with pytest.raises(TypeError, match=r"tools\[1\]"):
        create_react_graph(ScriptedChatModel(replies=[]), [multiply, 3])


@pytest.mark.parametrize("mode", MODES)
def test_graph_shape_snapshot(mode):
    _, graph = build(mode, [])
    drawing = graph.get_graph().draw_mermaid()
    expected = (SNAPSHOTS / "react.mmd").read_text()
    assert drawing == expected


def test_streaming_updates_show_each_step():
    _model, graph = build(
        "native", [act("native", "multiply", {"a": 3, "b": 3}), final("native", "9")]
    )
    nodes = [
        next(iter(chunk))
        for chunk in graph.stream({"messages": [("user", "3*3")]}, stream_mode="updates")
    ]
    # The first turn starts the run itself: one superstep less than a start of its own.
    assert nodes == ["generate", "call_tool", "generate"]


@pytest.mark.parametrize("mode", MODES)
def test_required_tool_choice_makes_the_model_call_a_tool_first(mode):
    """tool_choice="required": native binds it, json drops the final answer from the
    schema, text asks again; after the first call the model may answer."""
    replies = [
        final(mode, "guessing 42"),
        act(mode, "multiply", {"a": 6, "b": 7}),
        final(mode, "42"),
    ]
    if mode == "native":
        replies = replies[1:]  # the provider enforces the call
    model, graph = build(mode, replies, tool_choice="required")
    out = graph.invoke({"messages": [("user", "6*7?")]})
    assert out["status"] == "completed" and out["answer"] == "42"
    assert out["llm_calls"] == len(replies) == model.call_count
    assert [m.name for m in out["messages"] if isinstance(m, ToolMessage)] == ["multiply"]
    if mode == "native":
        assert model.tool_choices == ["required", None]
    elif mode == "json":
        actions = [
            [alt["properties"]["action"]["const"] for alt in step_alternatives(schema)]
            for schema in model.schemas
        ]
        assert actions == [["multiply"], ["multiply"], ["multiply", "final_answer"]]
        assert "first call one of the tools" in content_text(model.prompts[1][-1].content)
    else:
        assert "first call one of the tools" in content_text(model.prompts[1][-1].content)


def test_tool_choice_names_an_existing_tool():
    with pytest.raises(ValueError, match="tool_choice"):
        build("native", [], tool_choice="no_such_tool")
    model, graph = build(
        "native",
        [act("native", "multiply", {"a": 2, "b": 3}), final("native", "6")],
        tool_choice="multiply",
    )
    assert graph.invoke({"messages": [("user", "2*3")]})["answer"] == "6"
    assert model.tool_choices == ["multiply", None]


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_restating_the_expression_is_the_tool_result(mode):
    """A final answer that only restates the expression the tool computed is that
    expression's result; others are kept, and an empty one is never filled in from the
    tool result (the loop asks again: see the next test)."""

    def calc(expression: str) -> str:
        """Compute an arithmetic expression."""
        return {"17 * 19": "323"}[expression]

    def run(answer: str) -> str:
        script = [act(mode, "calc", {"expression": "17 * 19"}), final(mode, answer)]
        _, graph = build(mode, script, tools=[calc])
        return graph.invoke({"messages": [("user", "17*19?")]})["answer"]

    assert run("17*19") == "323"
    assert run("323") == "323"
    assert run("It is 323.") == "It is 323."
    assert run("17") == "17"


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_saying_nothing_after_a_tool_error_is_asked_for_once_more(mode):
    """A final answer that says nothing (here the run's fence marker) after the tool
    refused its input is never the answer, nor is the refusal: the loop asks once more,
    and a second such reply ends the run "max_iterations" with no answer."""

    def calc(expression: str) -> str:
        """Compute an arithmetic expression."""
        return {"17 * 19": "323"}.get(expression, "Error: invalid syntax")

    def run(*answers: str) -> tuple[dict, ScriptedChatModel]:
        script = [act(mode, "calc", {"expression": ", 17 *"})]
        script += [final(mode, answer) for answer in answers]
        model, graph = build(mode, script, tools=[calc])
        return graph.invoke({"messages": [("user", "17*19?")]}), model

    marker = new_fence([HumanMessage("17*19?")])
    out, model = run(marker, "323")
    assert (out["status"], out["answer"]) == ("completed", "323")
    assert out["llm_calls"] == model.call_count == 3
    assert content_text(model.prompts[2][-1].content) == prompts.NO_ANSWER
    out, model = run(marker, "")
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"] == "no usable answer: the model gave none before the run ended"
    assert out["llm_calls"] == model.call_count == 3


@pytest.mark.parametrize("mode", MODES)
def test_an_empty_answer_after_a_result_is_not_filled_in_from_it(mode):
    """The tool found the answer but the model's final reply is empty: the result is not
    made the answer; the loop asks once more and the run ends with the model's reply."""

    def calc(expression: str) -> str:
        """Compute an arithmetic expression."""
        return "323"

    script = [act(mode, "calc", {"expression": "17 * 19"}), final(mode, ""), final(mode, "323")]
    model, graph = build(mode, script, tools=[calc])
    out = graph.invoke({"messages": [("user", "17*19?")]})
    assert (out["status"], out["answer"], out["error"]) == ("completed", "323", "")
    assert content_text(model.prompts[2][-1].content) == prompts.NO_ANSWER


def test_forced_final_answer_offers_no_tool_and_takes_no_tool_result_for_an_answer():
    """When the budget is spent, the json schema of the last call has only the final
    answer; a reply that still asks for a tool gives no answer (the tool's result is not
    the model's answer) and the run says so."""
    again = act("json", "multiply", {"a": 6, "b": 7})
    model, graph = build("json", [again, again, again], max_iterations=2)
    out = graph.invoke({"messages": [("user", "6*7?")]})
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"] == "no usable answer: the model gave none before the run ended"
    last = step_alternatives(model.schemas[-1])
    assert [alt["properties"]["action"]["const"] for alt in last] == ["final_answer"]


async def test_a_context_model_is_loaded_off_the_event_loop(monkeypatch):
    """Under ainvoke the run context's model is loaded in a worker thread, also for the
    run's first step: loading may block (a server started, a profile read over HTTP) and
    must not stall the event loop."""
    model = model_for("native", [final("native", "ok")])
    loaded_in = []

    @functools.lru_cache
    def load(spec: str):
        loaded_in.append(threading.current_thread())
        return model

    monkeypatch.setattr(settings_module, "cached_model", load)
    graph = create_react_graph(None, [multiply], tool_mode="native")
    out = await graph.ainvoke({"messages": [("user", "hi")]}, context={"model": "some-spec"})
    assert out["answer"] == "ok" and len(loaded_in) == 1
    assert loaded_in[0] is not threading.main_thread()


def test_a_run_context_names_one_tool_registry_per_tool_set():
    """Every step of a run whose context names its tools gets the same registry, so what
    is made per tool set (the model with the tools bound, the instructions) is made once."""
    settings = make_settings("react", ScriptedChatModel(replies=[]), [multiply], {})
    runtime = SimpleNamespace(context={"tools": ["calculator"]})
    first, second = settings.for_run(runtime), settings.for_run(runtime)
    assert first.tools is second.tools and first.tools.names == ["calculator"]


def test_a_hand_edit_made_as_generate_goes_on_with_a_goto():
    """generate routes itself, so a write made as it has no next step (an edge would have
    routed it); Command(goto=...) says where the run goes on, as the docs show."""
    replies = [final("native", "The answer is 5."), final("native", "It is 7.")]
    model, graph = build("native", replies, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    graph.invoke({"messages": [("user", "2+2?")]}, config)
    call = {"name": "multiply", "args": {"a": 3, "b": 4}, "id": "call_edit"}
    graph.update_state(config, {"messages": [AIMessage("", tool_calls=[call])]}, as_node="generate")
    assert graph.get_state(config).next == ()
    out = graph.invoke(Command(goto="call_tool"), config)
    assert [m.type for m in out["messages"][-3:]] == ["ai", "tool", "ai"]
    assert "12" in content_text(out["messages"][-2].content)
    assert (out["answer"], out["status"], model.call_count) == ("It is 7.", "completed", 2)
