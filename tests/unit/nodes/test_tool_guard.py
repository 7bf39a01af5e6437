"""The tool guard (``nodes/tool_guard.py``): call identity, error text, budgets, the sync
path, what a tool returns besides text, and the fence around what the model is sent of it
(``nodes/generate.py``'s ``fenced_result``: the thread keeps a result as the tool returned
it).

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

import datetime
import threading
from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId
from langchain_core.tools import tool as dec_tool
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt.tool_node import ToolInvocationError
from langgraph.types import Command
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from loopgraphs import create_react_graph
from loopgraphs.nodes.generate import fenced_result
from loopgraphs.nodes.parsing.text import (
    content_text,
)
from loopgraphs.nodes.tool_guard import (
    TOOL_THREADS,
    ToolGuard,
    _same_args,
    call_key,
    describe_tool_error,
    fence_output,
    make_tool_node,
    tool_threads,
    unfence,
)
from loopgraphs.toolkits.registry import ToolRegistry
from tests.support.scripts import act, final, model_for

# --- Tool guard: fences, call identity, error text, budgets, the sync path --------------


class GuardState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    scratch: dict


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def run_guarded(guard: ToolGuard, messages: list, *, start: int = 0) -> list[ToolMessage]:
    """The tool results of a ``call_tool`` step guarded by ``guard`` (run in a graph, as
    ``ToolNode`` needs a runtime), with fence ``f00`` and the run starting at ``start``."""
    builder = StateGraph(GuardState)
    builder.add_node("call_tool", make_tool_node(guard))
    builder.add_edge(START, "call_tool")
    builder.add_edge("call_tool", END)
    scratch = {"fence": "f00", "transcript_start": start}
    out = builder.compile().invoke({"messages": messages, "scratch": scratch})
    return [m for m in out["messages"][len(messages) :] if isinstance(m, ToolMessage)]


def guard_for(*tools, **options) -> ToolGuard:
    settings = {"timeout": None, "max_output_chars": 100, **options}
    return ToolGuard(registry=ToolRegistry(tools or (lookup,)), **settings)


def ask(*calls: tuple[str, dict, str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


def test_fence_output_keeps_text_at_the_limit_and_removes_forged_markers() -> None:
    assert fence_output("abcd", "f00", 4) == "<<tool_output f00>>\nabcd\n<<end_tool_output f00>>"
    assert fence_output("abcde", "f00", 4) == (
        "<<tool_output f00>>\nabcd\n[... truncated 1 of 5 characters]\n<<end_tool_output f00>>"
    )
    assert fence_output("x f00 y", "f00") == (
        "<<tool_output f00>>\nx [marker removed] y\n<<end_tool_output f00>>"
    )


def test_unfence_strips_only_a_whole_fence() -> None:
    assert unfence(fence_output(" text ", "f00"), "f00") == "text"
    assert unfence("text\n<<end_tool_output f00>>", "f00") == "text\n<<end_tool_output f00>>"
    assert unfence("<<tool_output f00>>\ntext", "f00") == "<<tool_output f00>>\ntext"
    assert unfence(fence_output("text", "f00"), "") == fence_output("text", "f00")


def test_call_key_ignores_argument_order_and_takes_any_value() -> None:
    when = datetime.date(2024, 5, 1)
    assert call_key({"name": "t", "args": {"b": 1, "a": when}}) == 't:{"a": "2024-05-01", "b": 1}'
    assert call_key({"name": "t", "args": {"a": 2, "b": 1}}) == call_key(
        {"name": "t", "args": {"b": 1, "a": 2}}
    )


def test_equal_values_of_different_types_are_different_calls() -> None:
    assert not _same_args({"name": "t", "args": {"x": 1}}, {"name": "t", "args": {"x": 1.0}})
    assert _same_args({"name": "t", "args": {"x": 1}}, {"name": "t", "args": {"x": 1}})


def test_invalid_arguments_are_described_field_by_field() -> None:
    class Two(BaseModel):
        a: int
        b: int

    try:
        Two.model_validate({"a": "x"})
    except ValidationError as exc:
        source = exc
    error = ToolInvocationError("t", source, {"a": "x"})
    assert describe_tool_error(error) == (
        "invalid arguments (a: Input should be a valid integer, unable to parse string as an "
        "integer; b: Field required)"
    )
    only = [{**source.errors()[1], "loc": ()}]
    assert describe_tool_error(ToolInvocationError("t", source, {}, only)) == (
        "invalid arguments (input: Field required)"
    )
    assert describe_tool_error(KeyError("k")) == "KeyError: 'k'"

    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        inner: Inner

    try:
        Outer.model_validate({"inner": {}})
    except ValidationError as exc:
        nested = exc
    assert describe_tool_error(ToolInvocationError("t", nested, {})) == (
        "invalid arguments (inner.n: Field required)"
    )


def test_an_unknown_tool_is_answered_with_the_tools_there_are() -> None:
    (result,) = run_guarded(guard_for(lookup, where_to), [ask(("nope", {}, "c1"))])
    assert (result.name, result.tool_call_id, result.status) == ("nope", "c1", "error")
    assert content_text(result.content) == (
        "Error: unknown tool 'nope'. Available tools: lookup, where_to."
    )


def where_to(place: str) -> str:
    """Give directions."""
    return f"go to {place}"


def test_identical_calls_in_one_step_run_once() -> None:
    results = run_guarded(
        guard_for(), [ask(("lookup", {"key": "a"}, "c1"), ("lookup", {"key": "a"}, "c2"))]
    )
    by_id = {r.tool_call_id: r for r in results}
    assert "value of a" in content_text(by_id["c1"].content)
    assert by_id["c2"].status == "error" and by_id["c2"].name == "lookup"
    assert (
        "Not run: the same call of lookup is already running in this step; use its result."
        in content_text(by_id["c2"].content)
    )


def test_a_repeated_call_is_answered_with_its_own_earlier_result() -> None:
    history = [
        HumanMessage("go"),
        ask(("lookup", {"key": "a"}, "c1")),
        ToolMessage("value of a", tool_call_id="c1", name="lookup"),
        ask(("lookup", {"key": "b"}, "c2")),
        ToolMessage("value of b", tool_call_id="c2", name="lookup"),
        ask(("lookup", {"key": "a"}, "c3")),
    ]
    (result,) = run_guarded(guard_for(), history, start=1)
    assert result.status == "error" and result.tool_call_id == "c3"
    assert (
        "You already called lookup with these arguments. The result was:\nvalue of a\nDo not "
        "repeat the call: use a different approach or give the final answer."
    ) in content_text(result.content)


def test_the_run_starts_at_the_first_message_when_the_transcript_starts_there() -> None:
    history = [
        ask(("lookup", {"key": "a"}, "c1")),
        ToolMessage("value of a", tool_call_id="c1", name="lookup"),
        ask(("lookup", {"key": "b"}, "c2")),
    ]
    (result,) = run_guarded(guard_for(max_tool_calls=1), history, start=0)
    assert result.status == "error"
    assert content_text(result.content) == (
        "Not run: this run's budget of 1 tool calls is used up. Answer with what you have."
    )
    # A message of the run that is not the model's is passed over, not the end of the scan.
    asked = [HumanMessage("and b?"), *history]
    (result,) = run_guarded(guard_for(max_tool_calls=1), asked, start=0)
    assert "budget of 1 tool calls is used up" in content_text(result.content)


def test_without_the_loop_break_a_repeated_call_runs_again() -> None:
    history = [
        ask(("lookup", {"key": "a"}, "c1")),
        ToolMessage("value of a", tool_call_id="c1", name="lookup"),
        ask(("lookup", {"key": "a"}, "c2")),
    ]
    (result,) = run_guarded(guard_for(max_tool_calls=5, loop_break=False), history)
    assert result.status == "success"
    assert content_text(result.content) == "value of a"


def test_the_budget_holds_without_the_loop_break() -> None:
    guard = guard_for(max_tool_calls=1, loop_break=False)
    results = run_guarded(
        guard, [ask(("lookup", {"key": "a"}, "c1"), ("lookup", {"key": "b"}, "c2"))]
    )
    by_id = {r.tool_call_id: r for r in results}
    assert by_id["c1"].status == "success"
    assert "budget of 1 tool calls is used up" in content_text(by_id["c2"].content)


def test_the_sync_path_keeps_output_as_returned_and_the_graph_context() -> None:
    """``ToolNode``'s sync path (``wrap``), without and with a timeout: the tool runs in
    the node's context (its config reaches the tool in the guard's thread)."""
    seen: list = []

    def where(key: str) -> str:
        """Say where the call runs."""
        seen.append(
            (get_config()["configurable"].get("thread_id"), threading.current_thread().name)
        )
        return f"ran {key}"

    for timeout in (None, 5.0):
        guard = guard_for(where, timeout=timeout)
        builder = StateGraph(GuardState)
        builder.add_node("call_tool", make_tool_node(guard))
        builder.add_edge(START, "call_tool")
        builder.add_edge("call_tool", END)
        graph = builder.compile()
        state = {"messages": [ask(("where", {"key": "k"}, "c1"))], "scratch": {"fence": "f00"}}
        out = graph.invoke(state, {"configurable": {"thread_id": f"t-{timeout}"}})
        (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert content_text(result.content) == "ran k"
    assert [thread for thread, _ in seen] == ["t-None", "t-5.0"]
    assert seen[1][1].startswith("loopgraphs-tool")


def test_tool_threads_run_many_slow_calls_at_once() -> None:
    pool = tool_threads()
    try:
        gate = threading.Barrier(TOOL_THREADS, timeout=10)
        names = list(
            pool.map(
                lambda _: (gate.wait(), threading.current_thread().name)[1], range(TOOL_THREADS)
            )
        )
    finally:
        pool.shutdown()
    assert all(name.startswith("loopgraphs-tool") for name in names)


def test_the_tool_node_is_named_as_asked() -> None:
    guard = guard_for()
    assert make_tool_node(guard).name == "call_tool"
    assert make_tool_node(guard, "tools").name == "tools"


# --- Tool guard: what a tool returns besides text ---------------------------------------


def test_error_results_are_named_once_and_cut_in_what_the_model_is_sent() -> None:
    @dec_tool
    def quota(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Fail with an error of its own."""
        return ToolMessage("Error: quota spent", tool_call_id=tool_call_id, status="error")

    @dec_tool
    def broken(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Fail with a bare message."""
        return ToolMessage("x" * 50, tool_call_id=tool_call_id, name="broken", status="error")

    results = run_guarded(
        guard_for(quota, broken, max_output_chars=30),
        [ask(("quota", {"key": "a"}, "c1"), ("broken", {"key": "a"}, "c2"))],
    )
    by_id = {r.tool_call_id: r for r in results}
    assert content_text(by_id["c1"].content) == "Error: quota spent"
    assert content_text(by_id["c2"].content) == "Error: broken failed: " + "x" * 50
    sent = {i: content_text(fenced_result(r, "f00", 30).content) for i, r in by_id.items()}
    assert sent["c1"] == "<<tool_output f00>>\nError: quota spent\n<<end_tool_output f00>>"
    assert sent["c2"] == (
        "<<tool_output f00>>\nError: broken failed: xxxxxxxx\n"
        "[... truncated 42 of 72 characters]\n<<end_tool_output f00>>"
    )


def test_text_blocks_are_fenced_and_cut_and_other_blocks_kept() -> None:
    @dec_tool
    def blocks(key: str) -> list:
        """Return content blocks."""
        return [{"type": "text", "text": "y" * 40}, {"type": "image", "url": "http://x/y.png"}]

    (result,) = run_guarded(
        guard_for(blocks, max_output_chars=10), [ask(("blocks", {"key": "a"}, "c1"))]
    )
    assert result.content[0] == {"type": "text", "text": "y" * 40}
    text, image = fenced_result(result, "f00", 10).content
    assert text == {
        "type": "text",
        "text": "<<tool_output f00>>\nyyyyyyyyyy\n[... truncated 30 of 40 characters]\n"
        "<<end_tool_output f00>>",
    }
    assert image == {"type": "image", "url": "http://x/y.png"}


def command_graph(tool, replies: list):
    model = model_for("native", replies)
    return model, create_react_graph(model, [lookup, tool], tool_mode="native")


def test_a_tool_ending_the_run_gives_its_result_as_the_answer() -> None:
    @dec_tool
    def finish(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """End the run with a result."""
        message = ToolMessage(f"finished {key}", tool_call_id=tool_call_id)
        return Command(update={"messages": [message, HumanMessage("kept as sent")]}, goto=END)

    model, graph = command_graph(finish, [act("native", "finish", {"key": "k"})])
    out = graph.invoke({"messages": [("user", "go")]})
    assert (out["status"], out["answer"], model.call_count) == ("completed", "finished k", 1)
    tools = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [content_text(m.content) for m in tools] == ["finished k"]
    assert content_text(out["messages"][-1].content) == "kept as sent"


def test_a_tool_may_not_jump_to_another_node() -> None:
    @dec_tool
    def jump(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Try to route the loop."""
        message = ToolMessage("jumped", tool_call_id=tool_call_id)
        return Command(update={"messages": [message]}, goto="generate")

    model, graph = command_graph(jump, [act("native", "jump", {"key": "k"}), final("native", "ok")])
    out = graph.invoke({"messages": [("user", "go")]})
    assert (out["status"], out["answer"], model.call_count) == ("completed", "ok", 2)
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert (result.status, result.name) == ("error", "jump")
    assert content_text(result.content) == (
        "Error: jump returned Command(goto='generate'); inside a loopgraphs loop a tool may "
        "only end the run (goto=END) or route the parent graph (graph=Command.PARENT)."
    )


def test_a_command_updates_tool_messages_are_kept_as_returned() -> None:
    @dec_tool
    def note(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Note a key."""
        return Command(
            update={"messages": [ToolMessage(f"noted {key}", tool_call_id=tool_call_id)]}
        )

    (result,) = run_guarded(guard_for(note), [ask(("note", {"key": "k"}, "c1"))])
    assert content_text(result.content) == "noted k"
    sent = fenced_result(result, "f00", 100)
    assert content_text(sent.content) == "<<tool_output f00>>\nnoted k\n<<end_tool_output f00>>"
