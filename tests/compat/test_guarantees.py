"""Where loopgraphs differs from the peers on purpose, asserted as loopgraphs behaves.

Each difference is a row of DIFFERENCES.md; the peer case it departs from is named in
the docstring.
"""

import asyncio
import re
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode

from loopgraphs import create_react_graph
from loopgraphs.nodes.settings import make_settings
from loopgraphs.nodes.tool_step import ToolStep
from tests.compat.fake import FakeToolModel, call, message_text
from tests.compat.support import (
    MODES,
    act,
    answered_once,
    final,
    model_for,
    seen,
    sent_results,
    tool_messages,
    tool_text,
)

FENCED = re.compile(r"\A<<tool_output (\S+)>>\n(.*)\n<<end_tool_output \1>>\Z", re.DOTALL)


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


class Counter:
    def __init__(self, fail_first: int = 0) -> None:
        self.calls: list[str] = []
        self.fail_first = fail_first

        def fetch(key: str) -> str:
            """Fetch a key."""
            self.calls.append(key)
            if len(self.calls) <= self.fail_first:
                raise RuntimeError("temporarily unavailable")
            return f"data for {key}"

        self.tool = fetch


# --- the transcript ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_transcript_holds_tool_calls_and_tool_messages(mode):
    """In every tool mode the transcript uses AIMessage.tool_calls and ToolMessages
    (peers: native tool calling only; test_react_agent's transcripts)."""
    model = model_for(mode, [act(mode, "lookup", {"key": "a"}), final(mode, "A")])
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke({"messages": [("user", "a?")]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    ai, tool_message = out["messages"][1], out["messages"][2]
    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("lookup", {"key": "a"})]
    assert tool_message.tool_call_id == ai.tool_calls[0]["id"] and ai.tool_calls[0]["id"]
    assert tool_message.name == "lookup"
    assert tool_text(tool_message) == "value of a"
    assert out["tool_mode"] == mode
    if mode != "native":
        assert message_text(ai).strip(), "the model's text reply is kept"


@pytest.mark.parametrize("mode", MODES)
def test_output_keys(mode):
    """The output adds answer/status/llm_calls/usage/tool_mode to ``messages``
    (peers return ``messages`` and ``structured_response`` only)."""
    model = model_for(mode, [act(mode, "lookup", {"key": "a"}), final(mode, "A")])
    out = create_react_graph(model, [lookup], tool_mode=mode).invoke({"messages": [("user", "a?")]})
    assert out["answer"] == "A"
    assert out["status"] == "completed"
    assert out["llm_calls"] == 2 == model.call_count
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
    assert out["tool_mode"] == mode


def test_node_names():
    """Nodes are generate/call_tool, not the peers' agent/model/tools."""
    graph = create_react_graph(FakeToolModel(turns=[]), [lookup], tool_mode="native")
    names = set(graph.nodes)
    assert {"generate", "call_tool"} <= names
    assert not names & {"agent", "model", "tools"}


def test_call_tool_runs_langgraphs_tool_node():
    """The tool step runs LangGraph's ``ToolNode`` for the run's tools (see
    DIFFERENCES.md: the graph node itself is a thin step around it)."""
    graph = create_react_graph(FakeToolModel(turns=[]), [lookup], tool_mode="native")
    step = graph.nodes["call_tool"].bound
    assert step.name == "call_tool"
    settings = make_settings("react", FakeToolModel(turns=[]), [lookup], {})
    node = ToolStep(settings).node_for(settings)
    assert isinstance(node, ToolNode) and list(node.tools_by_name) == ["lookup"]


def test_graph_name():
    """``name`` names the compiled graph (the peers also stamp it on AIMessage.name and
    stream metadata: langchain test_agent_name.py; see DIFFERENCES.md)."""
    graph = create_react_graph(FakeToolModel(turns=[]), [lookup], name="weather_agent")
    assert graph.get_name() == "weather_agent"


def test_model_gets_loopgraphs_system_prompt():
    """Without a system prompt the model still gets loopgraphs' own one first (peers send
    the bare history: test_no_prompt)."""
    model = FakeToolModel(turns=["ok"])
    create_react_graph(model, [lookup], tool_mode="native").invoke({"messages": [("user", "hi")]})
    (prompt,) = model.prompts
    assert isinstance(prompt[0], SystemMessage) and message_text(prompt[0]).strip()
    assert isinstance(prompt[-1], HumanMessage) and message_text(prompt[-1]) == "hi"


# --- fenced, truncated tool output ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tool_output_is_fenced(mode):
    """Tool text is fenced as untrusted data with a per-run marker in what the model is
    sent; the marker follows the run's input (the same input, the same prompts). The
    thread keeps the output as the tool returned it, as the peers do (test_tool_node's
    ``content == "1 - foo"``)."""

    def script():
        return model_for(
            mode,
            [
                act(mode, "lookup", {"key": "a"}),
                act(mode, "lookup", {"key": "b"}),
                final(mode, "ok"),
            ],
        )

    def markers(question: str) -> tuple[list[tuple[str, str]], list[str]]:
        model = script()
        out = create_react_graph(model, [lookup], tool_mode=mode).invoke(
            {"messages": [("user", question)]}
        )
        return sent_results(model.prompts[-1]), [message_text(m) for m in tool_messages(out)]

    sent, kept = markers("go")
    assert kept == ["value of a", "value of b"]
    assert [text for _, text in sent] == ["value of a", "value of b"]
    assert len({marker for marker, _ in sent}) == 1, "one marker per run"
    assert {marker for marker, _ in markers("go")[0]} == {sent[0][0]}
    assert {marker for marker, _ in markers("go on")[0]} != {sent[0][0]}


@pytest.mark.parametrize("mode", MODES)
def test_tool_output_is_truncated(mode):
    """Long output is cut to max_tool_output_chars (peers pass it whole)."""

    def dump(key: str) -> str:
        """Return a lot of text."""
        return "a" * 150 + "TAIL" * 100

    model = model_for(mode, [act(mode, "dump", {"key": "k"}), final(mode, "ok")])
    out = create_react_graph(model, [dump], tool_mode=mode, max_tool_output_chars=150).invoke(
        {"messages": [("user", "go")]}
    )
    assert tool_text(tool_messages(out)[0]) == "a" * 150 + "TAIL" * 100  # kept whole
    ((_, shown),) = sent_results(model.prompts[1])
    assert shown.startswith("a" * 150) and "TAIL" not in shown
    assert "truncated 400 of 550 characters" in shown


# --- failures never raise ------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_timeout_becomes_an_error_message(mode):
    """A tool running past tool_timeout is an error the model sees (peers have no tool
    timeout)."""

    def slow(key: str) -> str:
        """Sleeps."""
        time.sleep(1.0)
        return "late"

    model = model_for(mode, [act(mode, "slow", {"key": "k"}), final(mode, "gave up")])
    out = create_react_graph(model, [slow], tool_mode=mode, tool_timeout=0.2).invoke(
        {"messages": [("user", "go")]}
    )
    (message,) = tool_messages(out)
    assert message.status == "error"
    assert re.search(r"time", tool_text(message), re.IGNORECASE)
    assert out["answer"] == "gave up" and out["status"] == "completed"


async def test_async_timeout_becomes_an_error_message():
    """tool_timeout on an async tool under ainvoke."""

    async def slow(key: str) -> str:
        """Sleeps."""
        await asyncio.sleep(2.0)
        return "late"

    model = FakeToolModel(turns=[[call("slow", {"key": "k"})], "gave up"])
    started = time.monotonic()
    out = await create_react_graph(model, [slow], tool_mode="native", tool_timeout=0.2).ainvoke(
        {"messages": [("user", "go")]}
    )
    assert time.monotonic() - started < 1.9
    assert tool_messages(out)[0].status == "error"
    assert out["status"] == "completed"


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_no_exception_escapes_from_tools(how):
    """Every kind of tool failure is an error ToolMessage, never an exception out of
    invoke (create_agent re-raises tool exceptions by default: test_tool_node's
    test_tool_node_error_handling_default_exception)."""

    def boom(key: str) -> str:
        """Always fails."""
        raise KeyError(key)

    async def aboom(key: str) -> str:
        """Always fails, asynchronously."""
        raise OSError("disk gone")

    model = FakeToolModel(
        turns=[
            [
                call("boom", {"key": "a"}),
                call("aboom", {"key": "b"}),
                call("boom", {"wrong": 1}),
                call("missing", {}),
            ],
            "recovered",
        ]
    )
    graph = create_react_graph(model, [boom, aboom], tool_mode="native")
    inputs = {"messages": [("user", "go")]}
    out = graph.invoke(inputs) if how == "invoke" else await graph.ainvoke(inputs)
    assert [m.status for m in tool_messages(out)] == ["error"] * 4
    assert answered_once(out)
    assert out["answer"] == "recovered" and out["status"] == "completed"


# --- budgets ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_max_iterations_ends_with_a_best_effort_answer(mode):
    """A model that never stops ends with status "max_iterations" (peers: the
    recursion limit raises GraphRecursionError or returns "need more steps")."""
    counter = iter(range(100))
    model = model_for(
        mode, [lambda _m: act(mode, "lookup", {"key": f"k{next(counter)}"})], repeat_last=True
    )
    out = create_react_graph(model, [lookup], tool_mode=mode, max_iterations=3).invoke(
        {"messages": [("user", "loop forever")]}
    )
    assert out["status"] == "max_iterations"
    assert isinstance(out["answer"], str)
    assert model.call_count <= 4
    assert len(tool_messages(out)) >= 2


def test_small_recursion_limit_does_not_raise():
    """A tight recursion_limit ends the run early instead of raising."""
    counter = iter(range(100))
    model = FakeToolModel(
        turns=[lambda _m: [call("lookup", {"key": f"k{next(counter)}"})] for _ in range(40)]
    )
    graph = create_react_graph(model, [lookup], tool_mode="native", max_iterations=30)
    out = graph.invoke({"messages": [("user", "loop")]}, {"recursion_limit": 12})
    assert out["status"] in {"max_iterations", "completed"}
    assert isinstance(out["answer"], str)


# --- loop break -----------------------------------------------------------------------


def test_repeated_successful_call_is_answered_from_history():
    """A call identical to an earlier successful one in the run is not run again; the
    model gets the earlier result (peers run every call)."""
    counter = Counter()
    model = FakeToolModel(
        turns=[[call("fetch", {"key": "a"})], [call("fetch", {"key": "a"})], "done"]
    )
    out = create_react_graph(model, [counter.tool], tool_mode="native").invoke(
        {"messages": [("user", "go")]}
    )
    assert counter.calls == ["a"]
    _first, second = tool_messages(out)
    assert "data for a" in tool_text(second)
    assert "data for a" in seen(model.prompts[2])
    assert answered_once(out)


def test_repeated_failed_call_runs_again():
    """A call that failed is run again when repeated."""
    counter = Counter(fail_first=1)
    model = FakeToolModel(
        turns=[[call("fetch", {"key": "a"})], [call("fetch", {"key": "a"})], "done"]
    )
    out = create_react_graph(model, [counter.tool], tool_mode="native").invoke(
        {"messages": [("user", "go")]}
    )
    assert counter.calls == ["a", "a"]
    first, second = tool_messages(out)
    assert first.status == "error" and second.status == "success"
    assert tool_text(second) == "data for a"


def test_loop_break_off_runs_every_call():
    """loop_break=False runs repeated calls like the peers do."""
    counter = Counter()
    model = FakeToolModel(
        turns=[[call("fetch", {"key": "a"})], [call("fetch", {"key": "a"})], "done"]
    )
    graph = create_react_graph(model, [counter.tool], tool_mode="native", loop_break=False)
    out = graph.invoke({"messages": [("user", "go")]})
    assert counter.calls == ["a", "a"]
    assert [tool_text(m) for m in tool_messages(out)] == ["data for a", "data for a"]


def test_loop_break_is_per_run():
    """A new run on the same thread runs the call again."""
    counter = Counter()
    model = FakeToolModel(
        turns=[[call("fetch", {"key": "a"})], "one", [call("fetch", {"key": "a"})], "two"]
    )
    graph = create_react_graph(
        model, [counter.tool], tool_mode="native", checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "go")]}, config)
    out = graph.invoke({"messages": [("user", "again")]}, config)
    assert counter.calls == ["a", "a"]
    assert tool_text(tool_messages(out)[-1]) == "data for a"


# --- bad history ---------------------------------------------------------------------


def test_dangling_tool_call_rejected_even_with_checkpointer():
    """A history whose last AIMessage has unanswered calls is refused before any model
    call, also when it comes from the caller on an existing thread."""
    model = FakeToolModel(turns=["ok", "never"])
    graph = create_react_graph(model, [lookup], tool_mode="native", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "hi")]}, config)
    dangling = AIMessage("", tool_calls=[{"id": "c9", "name": "lookup", "args": {"key": "x"}}])
    with pytest.raises(ValueError):
        graph.invoke({"messages": [dangling]}, config)
    assert model.call_count == 1
