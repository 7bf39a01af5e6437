"""Exact results that mutation testing (``make mutate``) found unpinned.

Each test builds what it checks itself (no shared fixture), so that the mutation run,
which runs for each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated
from unittest.mock import patch

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId
from langchain_core.tools import tool as dec_tool
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt.tool_node import ToolInvocationError
from langgraph.types import Command, Overwrite, RetryPolicy
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from loopgraphs import create_react_graph
from loopgraphs.nodes.call_tool import (
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
from loopgraphs.nodes.errors import (
    all_failed,
    failed_calls,
    failed_requests,
    mark_sent,
)
from loopgraphs.nodes.parsing.react import (
    Step,
    parse_json_action,
    parse_json_text,
    parse_react_text,
)
from loopgraphs.nodes.parsing.text import (
    FINAL_ANSWER_RE,
    ListItem,
    after_marker,
    best_effort_answer,
    clip,
    content_text,
    final_answer_of,
    list_items,
    strip_marker,
    tidy,
)
from loopgraphs.nodes.review import (
    answer_without_running,
    ask_reviewer,
    config_for,
    decision_problem,
    flagged_calls,
    review_policy,
    reviewed_call,
)
from loopgraphs.nodes.runner import guard
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step as NodeStep
from loopgraphs.state import (
    add_totals,
    add_usage,
    empty_usage,
    new_fence,
    run_defaults,
    usage_of,
)
from loopgraphs.toolkits import files
from loopgraphs.toolkits.files import make_file_tools
from loopgraphs.toolkits.registry import ToolRegistry
from tests.support.scripts import act, final, model_for

# --- File tools: what the model reads -----------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello world", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("A", encoding="utf-8")
    return tmp_path


def test_file_tools_are_named_and_typed(root: Path) -> None:
    read_file, list_files = make_file_tools(root)
    assert (read_file.name, list_files.name) == ("read_file", "list_files")
    assert read_file.args_schema is files.ReadFileInput
    assert list_files.args_schema is files.ListFilesInput
    assert read_file.description.startswith("Read a UTF-8 text file from the workspace.")
    assert list_files.description.startswith("List the entries of a workspace directory")


def test_read_file_returns_the_text_exactly(root: Path) -> None:
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "notes.txt"}) == "hello world"
    assert read_file.invoke({"path": "docs/a.md"}) == "A"


def test_read_file_refuses_what_is_not_a_text_file(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"ab\x00cd")
    (root / "latin.txt").write_bytes(b"caf\xe9")
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "docs"}) == (
        "Error: 'docs' is a directory; use list_files to see its entries."
    )
    assert read_file.invoke({"path": "blob.bin"}) == "Error: 'blob.bin' is a binary file, not text."
    assert read_file.invoke({"path": "latin.txt"}) == (
        "Error: 'latin.txt' is a binary file or not UTF-8 text."
    )


def test_read_file_cuts_long_text_across_chunks(root: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_READ_CHARS", 10)
    monkeypatch.setattr(files, "_CHUNK_BYTES", 4)
    (root / "long.txt").write_text("0123456789abcdefghij", encoding="utf-8")
    (root / "fits.txt").write_text("0123456789", encoding="utf-8")
    # Multi-byte characters split across chunk boundaries still count as one each.
    (root / "wide.txt").write_text("é" * 12, encoding="utf-8")
    read_file, _ = make_file_tools(root)
    assert read_file.invoke({"path": "long.txt"}) == (
        "0123456789\n\n[truncated: 10 more characters not shown of 20]"
    )
    assert read_file.invoke({"path": "fits.txt"}) == "0123456789"
    assert read_file.invoke({"path": "wide.txt"}) == (
        "é" * 10 + "\n\n[truncated: 2 more characters not shown of 12]"
    )


def test_list_files_lists_sorted_entries_with_directories_marked(root: Path) -> None:
    _, list_files = make_file_tools(root)
    assert list_files.invoke({}) == "docs/\nempty/\nnotes.txt"
    assert list_files.invoke({"path": "docs"}) == "a.md"
    assert list_files.invoke({"path": "empty"}) == "'empty' is an empty directory."
    assert list_files.invoke({"path": "notes.txt"}) == (
        "Error: 'notes.txt' is a file, not a directory; use read_file to read it."
    )


def test_list_files_caps_long_listings(root: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_LIST_ENTRIES", 2)
    _, list_files = make_file_tools(root)
    assert list_files.invoke({}) == "docs/\nempty/\n[... 1 more entries not shown]"
    (root / "one").mkdir()
    (root / "one" / "x").write_text("x", encoding="utf-8")
    (root / "one" / "y").write_text("y", encoding="utf-8")
    assert list_files.invoke({"path": "one"}) == "x\ny"  # exactly the cap: nothing cut


def test_the_root_must_be_an_existing_directory(root: Path) -> None:
    missing = root / "missing"
    with pytest.raises(ValueError) as raised:
        make_file_tools(missing)
    assert str(raised.value) == f"root {str(missing)!r} does not exist"
    with pytest.raises(ValueError) as raised:
        make_file_tools(root / "notes.txt")
    assert str(raised.value) == f"root {str(root / 'notes.txt')!r} is not a directory"


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
    assert (
        content_text(result.content) == "<<tool_output f00>>\nvalue of a\n<<end_tool_output f00>>"
    )


def test_the_budget_holds_without_the_loop_break() -> None:
    guard = guard_for(max_tool_calls=1, loop_break=False)
    results = run_guarded(
        guard, [ask(("lookup", {"key": "a"}, "c1"), ("lookup", {"key": "b"}, "c2"))]
    )
    by_id = {r.tool_call_id: r for r in results}
    assert by_id["c1"].status == "success"
    assert "budget of 1 tool calls is used up" in content_text(by_id["c2"].content)


def test_the_sync_path_fences_output_and_keeps_the_graph_context() -> None:
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
        assert content_text(result.content) == "<<tool_output f00>>\nran k\n<<end_tool_output f00>>"
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


# --- Approval: policies, requests and decisions -----------------------------------------


def test_review_policy_normalises_every_accepted_form() -> None:
    everything = {"allowed_decisions": ["approve", "edit", "reject", "respond"]}
    assert review_policy(True, ["a", "b"]) == {"*": everything}
    assert review_policy(False, ["a"]) == {}
    assert review_policy(["a"], ["a", "b"]) == {"a": everything}
    assert review_policy({"a": True, "b": False}, ["a", "b"]) == {"a": everything}
    assert review_policy({"b": False, "a": True}, ["a", "b"]) == {"a": everything}
    configured = {"a": {"allowed_decisions": ["approve"], "description": "Check it"}}
    assert review_policy(configured, ["a"]) == {
        "a": {"allowed_decisions": ["approve"], "description": "Check it"}
    }
    assert review_policy({"a": {}}, ["a"]) == {"a": everything}
    assert review_policy({"a": {"description": ""}}, ["a"]) == {"a": everything}


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("a", TypeError, "interrupt_before_tools must be a bool, a list of tool names or a dict"),
        (["zz", "a", "yy"], ValueError, "names unknown tools ['yy', 'zz']; tools are ['a']"),
        ({"a": 3}, TypeError, "interrupt_before_tools['a'] must be a bool or a dict"),
        (
            {"a": {"allowed_decisions": ["approve", "maybe"]}},
            ValueError,
            "interrupt_before_tools['a']['allowed_decisions'] must name some of approve, edit, "
            "reject, respond; got ['approve', 'maybe']",
        ),
        ({"a": {"allowed_decisions": []}}, ValueError, "must name some of"),
    ],
)
def test_review_policy_names_what_is_wrong(value, error, message) -> None:
    with pytest.raises(error) as raised:
        review_policy(value, ["a"])
    assert message in str(raised.value)


def test_flagged_calls_are_the_reviewed_tools_calls_of_a_reply() -> None:
    reply = ask(("a", {}, "c1"), ("b", {}, "c2"))
    assert [c["id"] for c in flagged_calls(review_policy(["b"], ["a", "b"]), reply)] == ["c2"]
    assert [c["id"] for c in flagged_calls(review_policy(True, ["a", "b"]), reply)] == ["c1", "c2"]
    assert flagged_calls({}, reply) == []
    assert flagged_calls(review_policy(True, ["a"]), HumanMessage("a")) == []
    specific = {"a": {"allowed_decisions": ["approve"]}, "*": {"allowed_decisions": ["edit"]}}
    assert config_for(specific, "a") == {"allowed_decisions": ["approve"]}
    assert config_for(specific, "b") == {"allowed_decisions": ["edit"]}
    assert config_for({}, "a") is None


@pytest.mark.parametrize(
    ("decisions", "problem"),
    [
        ([{"type": "approve"}], ""),
        ("approve", "one decision per tool call: expected 1, got 0"),
        ([], "expected 1, got 0"),
        ([{"type": "approve"}] * 2, "expected 1, got 2"),
        (["approve"], "decision for a must be one of approve, edit; got None"),
        ([{"type": "reject"}], "decision for a must be one of approve, edit; got 'reject'"),
        (
            [{"type": "edit"}],
            "an edit decision needs 'edited_action': {'name': ..., 'args': {...}}",
        ),
        ([{"type": "edit", "edited_action": {"name": "a", "args": {}}}], ""),
    ],
)
def test_decision_problem_checks_each_decision(decisions, problem) -> None:
    configs = [{"allowed_decisions": ["approve", "edit"]}]
    found = decision_problem(decisions, [tool_call_of("a")], configs)
    if problem.startswith("an edit") or not problem:
        assert found == problem
    else:
        assert problem in found


def test_a_respond_decision_needs_its_message() -> None:
    configs = [{"allowed_decisions": ["respond"]}]
    assert decision_problem([{"type": "respond"}], [tool_call_of("a")], configs) == (
        "a respond decision needs 'message': the text the model gets as the result"
    )
    assert (
        decision_problem([{"type": "respond", "message": "hi"}], [tool_call_of("a")], configs) == ""
    )


def test_a_decision_without_allowed_decisions_may_be_any_kind() -> None:
    assert decision_problem([{"type": "respond", "message": "x"}], [tool_call_of("a")], [{}]) == ""


def test_answers_given_without_running_the_tool() -> None:
    call = tool_call_of("a")
    responded = answer_without_running(call, {"type": "respond", "message": "42"})
    assert (responded.content, responded.name, responded.tool_call_id, responded.status) == (
        "42",
        "a",
        "c-a",
        "success",
    )
    rejected = answer_without_running(call, {"type": "reject"})
    assert (rejected.content, rejected.status, rejected.tool_call_id, rejected.name) == (
        "Rejected by the user: The user rejected this tool call.",
        "error",
        "c-a",
        "a",
    )
    reason = answer_without_running(call, {"type": "reject", "message": "no"})
    assert reason.content == "Rejected by the user: no"
    assert answer_without_running(call, {"type": "approve"}) is None
    assert answer_without_running(call, None) is None
    unnamed = {**call, "id": None}
    assert answer_without_running(unnamed, {"type": "reject"}).tool_call_id == ""
    assert answer_without_running(unnamed, {"type": "respond", "message": "x"}).tool_call_id == ""


def test_reviewed_call_applies_only_an_edit() -> None:
    call = tool_call_of("a", {"x": 1})
    assert reviewed_call(call, None) is call
    assert reviewed_call(call, {"type": "approve"}) is call
    assert reviewed_call(call, {"type": "edit", "edited_action": {"args": {"x": 2}}}) == {
        "name": "a",
        "args": {"x": 2},
        "id": "c-a",
        "type": "tool_call",
    }
    assert reviewed_call(call, {"type": "edit", "edited_action": {"name": "b"}})["args"] == {"x": 1}
    assert reviewed_call(call, {"type": "edit"}) == {**call, "type": "tool_call"}


def test_the_review_request_describes_each_flagged_call() -> None:
    policy = review_policy(
        {"a": True, "b": {"allowed_decisions": ["approve"], "description": "Check b"}},
        ["a", "b", "c"],
    )
    when = datetime.date(2024, 5, 1)
    reply = ask(("a", {"q": "ü", "when": when}, "c1"), ("b", {}, "c2"), ("c", {}, "c3"))
    seen: list = []
    answers = iter(
        [
            {"decisions": [{"type": "approve"}]},
            "approve",  # not a dict: asked again
            {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        ]
    )

    def answer(request: dict) -> object:
        seen.append(request)
        return next(answers)

    with patch("loopgraphs.nodes.review.interrupt", answer):
        decisions = ask_reviewer(policy, reply, {"a": "Does a."})
    assert decisions == {"c1": {"type": "approve"}, "c2": {"type": "approve"}}
    first, second, third = seen
    assert first == {
        "action_requests": [
            {
                "name": "a",
                "args": {"q": "ü", "when": when},
                "description": 'Tool call a({"q": "ü", "when": "2024-05-01"}): Does a.',
            },
            {"name": "b", "args": {}, "description": "Check b"},
        ],
        "review_configs": [
            {"action_name": "a", "allowed_decisions": ["approve", "edit", "reject", "respond"]},
            {"action_name": "b", "allowed_decisions": ["approve"]},
        ],
    }
    assert second == {**first, "error": second["error"]} and "expected 2, got 1" in second["error"]
    assert third == {**first, "error": third["error"]} and "expected 2, got 0" in third["error"]
    with patch(
        "loopgraphs.nodes.review.interrupt", lambda request: {"decisions": [{"type": "approve"}]}
    ):
        unknown = ask_reviewer(review_policy(["c"], ["c"]), ask(("c", {}, "c3")), {})
    assert unknown == {"c3": {"type": "approve"}}


def test_a_tool_with_no_description_is_described_as_unknown() -> None:
    requests: list = []

    def answer(request: dict) -> dict:
        requests.append(request)
        return {"decisions": [{"type": "approve"}]}

    with patch("loopgraphs.nodes.review.interrupt", answer):
        ask_reviewer(review_policy(True, ["c"]), ask(("c", {"n": 1}, "c3")), {})
    assert requests[0]["action_requests"][0]["description"] == 'Tool call c({"n": 1}): unknown tool'


def tool_call_of(name: str, args: dict | None = None) -> dict:
    return {"name": name, "args": args or {}, "id": f"c-{name}"}


# --- Tool guard: what a tool returns besides text ---------------------------------------


def test_error_results_are_named_once_and_cut() -> None:
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
    by_id = {r.tool_call_id: content_text(r.content) for r in results}
    assert by_id["c1"] == "<<tool_output f00>>\nError: quota spent\n<<end_tool_output f00>>"
    assert by_id["c2"] == (
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
    text, image = result.content
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
    assert [content_text(m.content).startswith("<<tool_output ") for m in tools] == [True]
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


# --- Accounting: usage records, counters, failed requests and the node guard -------------


def test_usage_records_add_field_by_field() -> None:
    assert empty_usage() == {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
    left = {"input_tokens": 5, "output_tokens": 2, "cached_tokens": 1}
    right = {"input_tokens": 7, "output_tokens": None, "cached_tokens": 3}
    assert add_usage(left, right) == {"input_tokens": 12, "output_tokens": 2, "cached_tokens": 4}
    assert add_usage(None, left) == left
    assert add_usage(left, {"output_tokens": 1}) == {
        "input_tokens": 5,
        "output_tokens": 3,
        "cached_tokens": 1,
    }
    assert add_usage(left, None) == empty_usage()  # a None update resets the record
    assert add_usage({}, {"input_tokens": 1}) == {
        "input_tokens": 1,
        "output_tokens": 0,
        "cached_tokens": 0,
    }


def test_usage_of_reads_the_providers_metadata() -> None:
    reply = AIMessage(
        "x",
        usage_metadata={
            "input_tokens": 9,
            "output_tokens": 4,
            "total_tokens": 13,
            "input_token_details": {"cache_read": 6, "cache_creation": 2},
        },
    )
    assert usage_of(reply) == {"input_tokens": 9, "output_tokens": 4, "cached_tokens": 6}
    assert usage_of(AIMessage("x")) == empty_usage()
    assert usage_of(object()) == empty_usage()
    bare = AIMessage("x", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2})
    assert usage_of(bare) == {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 0}


def test_add_totals_adds_each_reported_count_to_the_run() -> None:
    state = {"llm_calls": 3, "retries": 1, "usage": {"input_tokens": 10, "output_tokens": 5}}
    update = {"llm_calls": 2, "usage": {"input_tokens": 1, "cached_tokens": 4}, "answer": "a"}
    assert add_totals(state, update) == {
        "llm_calls": 5,
        "usage": {"input_tokens": 11, "output_tokens": 5, "cached_tokens": 4},
        "answer": "a",
    }
    assert add_totals({}, {"retries": None, "llm_calls": 1}) == {"retries": 0, "llm_calls": 1}
    assert add_totals(state, {"llm_calls": Overwrite(7), "retries": 2}) == {
        "llm_calls": 7,
        "retries": 3,
    }


def test_a_run_starts_from_zero_with_a_new_scratch() -> None:
    question = HumanMessage("q", id="h1")
    assert run_defaults({"messages": [question]}, iterations=0) == {
        "llm_calls": 0,
        "retries": 0,
        "usage": empty_usage(),
        "status": "running",
        "answer": "",
        "error": "",
        "scratch": {
            "fence": new_fence([question]),
            "transcript_start": 1,
            "seen": "h1",
            "iterations": 0,
        },
    }
    empty = run_defaults({"messages": []})
    assert (empty["status"], empty["scratch"]["seen"], empty["scratch"]["transcript_start"]) == (
        "error",
        "",
        0,
    )
    assert empty["error"] == (
        "the input has no messages: pass {'messages': [('user', 'your question')]}"
    )
    assert run_defaults({})["status"] == "error"


def test_failed_requests_are_counted_on_their_exceptions() -> None:
    first, second, third = ValueError("a"), ValueError("b"), ValueError("c")
    assert failed_calls(first) == 0
    mark_sent(first)
    mark_sent(second, 3)
    assert (failed_calls(first), failed_calls(second)) == (1, 3)
    assert failed_requests([first, "ok", second, third]) == 4
    joined = all_failed(["ok", first, second])
    assert joined is first and failed_calls(first) == 4

    @dataclasses.dataclass(frozen=True)
    class Frozen(Exception):
        code: int = 0

    frozen = Frozen()
    mark_sent(frozen, 2)  # an exception that takes no attributes is left as it is
    assert failed_calls(frozen) == 0


def run_logic(logic, state: dict, *, attempt: int | None, policy=None):
    runtime = SimpleNamespace(execution_info=SimpleNamespace(node_attempt=attempt))
    steps = guard(logic, policy)(state, NodeStep(LoopSettings(model=None), runtime, {}))
    try:
        next(steps)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the logic yielded")


def failing(exc: Exception, sent: int = 0):
    def logic(state, step):
        if sent:
            mark_sent(exc, sent)
        raise exc
        yield  # a generator, as node logic is

    return logic


def succeeding(update: dict):
    def logic(state, step):
        return update
        yield

    return logic


def test_the_guard_turns_a_failure_into_an_error_end_that_counts_every_attempt() -> None:
    state = {"answer": "draft", "messages": []}
    assert run_logic(failing(ValueError("boom\nmore"), sent=2), state, attempt=3) == {
        "status": "error",
        "error": "ValueError: boom",
        "answer": "draft",
        "llm_calls": 6,
        "retries": 2,
    }
    out = run_logic(failing(ValueError("boom")), state, attempt=3)
    assert (out["llm_calls"], out["retries"]) == (2, 2)
    first = run_logic(failing(ValueError("boom"), sent=1), state, attempt=None)
    assert (first["llm_calls"], first["retries"]) == (1, 0)
    said = [HumanMessage("q"), AIMessage("partial answer")]
    fallback = run_logic(failing(ValueError("x")), {"messages": said}, attempt=1)
    assert fallback["answer"] == best_effort_answer(said)


def test_the_guard_lets_a_retried_failure_escape() -> None:
    policy = RetryPolicy(max_attempts=3, retry_on=ValueError)
    with pytest.raises(ValueError):
        run_logic(failing(ValueError("again")), {}, attempt=2, policy=policy)
    last = run_logic(failing(ValueError("again")), {}, attempt=3, policy=policy)
    assert last["status"] == "error" and last["retries"] == 2


def test_the_guard_adds_earlier_attempts_to_a_success() -> None:
    assert run_logic(succeeding({"llm_calls": 1, "answer": "a"}), {}, attempt=3) == {
        "llm_calls": 3,
        "answer": "a",
        "retries": 2,
    }
    assert run_logic(succeeding({"answer": "a"}), {}, attempt=2) == {
        "answer": "a",
        "llm_calls": 1,
        "retries": 1,
    }
    assert run_logic(succeeding({"answer": "a"}), {}, attempt=1) == {"answer": "a"}
    runtime = SimpleNamespace()  # no execution info: the first attempt
    steps = guard(succeeding({"answer": "a"}), None)(
        {}, NodeStep(LoopSettings(model=None), runtime, {})
    )
    with pytest.raises(StopIteration) as stop:
        next(steps)
    assert stop.value.value == {"answer": "a"}


def test_the_guard_hands_the_logic_its_step() -> None:
    seen: list = []

    def logic(state, step):
        seen.append(step)
        return {}
        yield

    runtime = SimpleNamespace(execution_info=SimpleNamespace(node_attempt=1))
    step = NodeStep(LoopSettings(model=None), runtime, {"configurable": {"thread_id": "t"}})
    with pytest.raises(StopIteration):
        next(guard(logic, None)({}, step))
    assert seen == [step]


# --- Parsing: the ReAct grammars and their precedence ------------------------------------


@pytest.mark.parametrize(
    ("text", "step"),
    [
        # The answer marker wins over an action in the same reply.
        (
            "Thought: done\nAction: search\nAction Input: x\nFINAL_ANSWER: 42",
            Step("final", thought="done", answer="42"),
        ),
        ("final answer:  the end  ", Step("final", answer="the end")),
        (
            "Thought: t\nFINAL_ANSWER: 7\nObservation: made up",
            Step("final", thought="t", answer="7"),
        ),
        (
            'Thought: look\nAction: `search`\nAction Input: {"q": "a"}',
            Step("action", thought="look", action="search", action_input={"q": "a"}),
        ),
        (
            "Action: **calc**\nAction Input: 1+1\nObservation: 2\nmore",
            Step("action", action="calc", action_input="1+1"),
        ),
        ("Action: lookup", Step("action", action="lookup", action_input="")),
        (
            "Action: Final Answer\nAction Input: blue\nObservation: x",
            Step("final", answer="blue"),
        ),
        (
            "Thought: t\nAction: finish\nAction Input:  done ",
            Step("final", thought="t", answer="done"),
        ),
        ("Thought: hmm\nAction:   \n", Step("none", thought="hmm")),
        ("just words", Step("none")),
        (
            "  thought :  spaced  \nACTION : go",
            Step("action", thought="spaced", action="go", action_input=""),
        ),
    ],
)
def test_parse_react_text(text: str, step: Step) -> None:
    assert parse_react_text(text) == step


@pytest.mark.parametrize(
    ("data", "step"),
    [
        (None, Step("none")),
        ([1], Step("none")),
        (
            {"thought": "t", "action": "search", "action_input": {"q": "a"}},
            Step("action", thought="t", action="search", action_input={"q": "a"}),
        ),
        (
            {"reasoning": "r", "tool": " calc ", "args": "1+1"},
            Step("action", thought="r", action="calc", action_input="1+1"),
        ),
        (
            {"name": "calc", "arguments": {"e": 1}},
            Step("action", action="calc", action_input={"e": 1}),
        ),
        ({"action": "calc", "input": 5}, Step("action", action="calc", action_input="5")),
        (
            {"action": "calc", "action_input": 1, "args": 2},
            Step("action", action="calc", action_input="1"),
        ),
        (
            {"action": {"name": "calc", "args": {"e": 2}}},
            Step("action", action="calc", action_input={"e": 2}),
        ),
        (
            {"action": {"tool": "calc", "action_input": {"e": 3}, "args": {"e": 4}}},
            Step("action", action="calc", action_input={"e": 3}),
        ),
        (
            {"action": {"tool": "calc"}, "args": {"e": 5}},
            Step("action", action="calc", action_input={"e": 5}),
        ),
        (
            {"thought": "t", "action": " Final_Answer ", "action_input": " 42 "},
            Step("final", thought="t", answer="42"),
        ),
        ({"action": "answer", "action_input": {"text": "t"}}, Step("final", answer="t")),
        ({"action": "final", "action_input": {"value": 3}}, Step("final", answer="3")),
        (
            {"action": "finish", "action_input": {"other": "ü"}},
            Step("final", answer='{"other": "ü"}'),
        ),
        ({"action": "final_answer", "action_input": None}, Step("final", answer="")),
        ({"action": "final_answer", "action_input": 12}, Step("final", answer="12")),
        ({"action": "final_answer"}, Step("final", answer="{}")),
        ({"final_answer": " x ", "thought": "t"}, Step("final", thought="t", answer="x")),
        ({"answer": {"final_answer": "y"}}, Step("final", answer="y")),
        ({"answer": "z", "action": "calc"}, Step("action", action="calc", action_input={})),
        ({"action": "  "}, Step("none")),
        ({"action": 3, "thought": "t"}, Step("none", thought="t")),
        ({"thought": None, "reasoning": "why"}, Step("none", thought="why")),
    ],
)
def test_parse_json_action(data, step: Step) -> None:
    assert parse_json_action(data) == step


def test_parse_json_text_reads_the_object_in_free_text() -> None:
    text = 'Sure: {"action": "calc", "action_input": {"e": 1}} done'
    assert parse_json_text(text) == Step("action", action="calc", action_input={"e": 1})
    assert parse_json_text("no object") == Step("none")


def test_text_helpers() -> None:
    assert clip("abcdef", 3) == "abc" and clip("abc", 3) == "abc"
    assert content_text(["a", {"type": "text", "text": "b"}, {"type": "image"}, 3]) == "ab"
    assert content_text([{"type": "text"}]) == "" and content_text(None) == ""
    assert content_text(12) == "12"
    assert tidy("  **`x`**  ") == "x"
    assert after_marker("pre FINAL ANSWER:  y ", FINAL_ANSWER_RE) == "y"
    assert after_marker("nothing", FINAL_ANSWER_RE) is None
    assert final_answer_of("  plain  ") == "plain"
    assert final_answer_of("FINAL_ANSWER:") == "FINAL_ANSWER:"
    assert final_answer_of("a\nFinal_Answer: b") == "b"


def test_best_effort_answer_prefers_the_last_assistant_text() -> None:
    call = AIMessage("calling", tool_calls=[{"name": "t", "args": {}, "id": "1"}])
    said = [
        AIMessage(" first "),
        ToolMessage(" result one ", tool_call_id="1"),
        call,
        AIMessage("   "),
    ]
    assert best_effort_answer(said) == "first"
    tools_only = [
        call,
        ToolMessage(" early ", tool_call_id="1"),
        ToolMessage(" late ", tool_call_id="1"),
    ]
    assert best_effort_answer(tools_only) == ""  # a tool result is not the model's answer
    assert best_effort_answer([HumanMessage("q")]) == ""


def test_list_markers() -> None:
    assert strip_marker("  2) second ") == "second"
    assert strip_marker("- bullet") == "bullet"
    assert strip_marker("**Step 3**: go") == "go"
    assert strip_marker("plain line") == "plain line"
    assert strip_marker("3.5 is a number") == "3.5 is a number"
    text = "intro\n1. one\n   more\n\n2) two\n- three\n**Candidate 4 -** four\n* five"
    assert list_items(text) == [
        ListItem(1, "one", ("more",)),
        ListItem(2, "two"),
        ListItem(None, "three"),
        ListItem(4, "four"),
        ListItem(None, "five"),
    ]
    assert list_items("1:7\n2:5", separators=":", tight=True) == [
        ListItem(1, "7"),
        ListItem(2, "5"),
    ]
    assert list_items("1. __one__\n2. *two*") == [ListItem(1, "one"), ListItem(2, "two")]
    assert list_items("1:7") == []
    assert list_items("no list here") == []


def test_a_command_update_has_its_tool_messages_fenced() -> None:
    @dec_tool
    def note(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Note a key."""
        return Command(
            update={"messages": [ToolMessage(f"noted {key}", tool_call_id=tool_call_id)]}
        )

    (result,) = run_guarded(guard_for(note), [ask(("note", {"key": "k"}, "c1"))])
    assert content_text(result.content) == "<<tool_output f00>>\nnoted k\n<<end_tool_output f00>>"
