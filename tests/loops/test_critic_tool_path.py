"""CRITIC's claim checks take the one tool-call path: an assistant message with the
round's tool calls (seen by ``after_model`` middleware), the shared tool step, and the
calls with their results in the run's transcript."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware, after_model, before_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs.graphs.critic import create_critic_graph
from loopgraphs.nodes.parsing.text import content_text
from tests.loops.test_critic import DRAFT, QUESTION, REVISED, Search, critique, verified
from tests.support.scripts import FAST_RETRY, MODES, Refunds, model_for, run_in_parent

SECOND = "The Eiffel Tower was finished in 1889."


def build(mode: str, replies: list[Any], tools: list[Any], **options: Any) -> Any:
    model = model_for(mode, replies)
    graph = create_critic_graph(model, tools, tool_mode=mode, retry_policy=FAST_RETRY, **options)
    return model, graph


def refund_script(mode: str) -> list[Any]:
    return [DRAFT, critique(mode, [("order A1 was refunded", "refund", "A1")]), REVISED]


@pytest.mark.parametrize("mode", MODES)
def test_the_transcript_holds_each_check_and_its_result(mode):
    search = Search({"eiffel": "Finished on 31 March 1889."})
    replies = [DRAFT, critique(mode, [("built 1887", "search", "eiffel")]), REVISED, verified(mode)]
    _model, graph = build(mode, replies, [search.tool])

    out = graph.invoke(QUESTION)

    own = out["messages"][1:]
    assert [type(m).__name__ for m in own] == ["AIMessage", "AIMessage", "ToolMessage", "AIMessage"]
    draft, checks, result, revision = own
    assert (draft.content, revision.content) == (DRAFT, REVISED)
    assert [(c["name"], c["args"]) for c in checks.tool_calls] == [("search", {"query": "eiffel"})]
    assert content_text(checks.content)  # the critique is the message's text
    assert result.tool_call_id == checks.tool_calls[0]["id"]
    assert "Finished on 31 March 1889." in content_text(result.content)
    assert out["claims"][0]["observation"] == "Finished on 31 March 1889."


@pytest.mark.parametrize("mode", MODES)
def test_claims_sharing_a_check_share_one_call_in_the_transcript(mode):
    search = Search()
    claims = [("built 1887", "search", "eiffel"), ("opened 1889", "search", "eiffel")]
    replies = [DRAFT, critique(mode, claims), REVISED, verified(mode)]
    _model, graph = build(mode, replies, [search.tool])

    out = graph.invoke(QUESTION)

    checks = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert len(checks) == 1 and len(checks[0].tool_calls) == 1
    assert len([m for m in out["messages"] if isinstance(m, ToolMessage)]) == 1
    assert [c["observation"] for c in out["claims"]] == ["nothing about eiffel"] * 2


@pytest.mark.parametrize("mode", MODES)
def test_approval_middleware_pauses_before_a_claim_check(mode):
    refunds = Refunds()
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    _model, graph = build(
        mode,
        [*refund_script(mode), verified(mode)],
        [refunds.tool],
        middleware=[approval],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"approve-{mode}"}}

    graph.invoke(QUESTION, config)

    (pause,) = graph.get_state(config).interrupts
    (request,) = pause.value["action_requests"]
    assert (request["name"], request["args"]) == ("refund", {"order": "A1"})
    assert pause.value["review_configs"][0]["action_name"] == "refund"
    assert refunds.done == []

    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    assert refunds.done == ["A1"]
    assert out["status"] == "completed" and out["answer"] == REVISED
    assert out["claims"][0]["observation"] == "refunded A1"


@pytest.mark.parametrize("mode", MODES)
def test_a_rejected_claim_check_does_not_run_and_the_revision_sees_why(mode):
    refunds = Refunds()
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    model, graph = build(
        mode,
        [*refund_script(mode), verified(mode)],
        [refunds.tool],
        middleware=[approval],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"reject-{mode}"}}
    graph.invoke(QUESTION, config)

    reject = {"type": "reject", "message": "Refunds need a manager."}
    out = graph.invoke(Command(resume={"decisions": [reject]}), config)

    assert refunds.done == []
    assert "Refunds need a manager." in out["claims"][0]["observation"]
    assert "Refunds need a manager." in content_text(model.prompts[2][-1].content)
    assert out["status"] == "completed" and out["answer"] == REVISED


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_claim_check_runs_as_edited(mode):
    refunds = Refunds()
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    model, graph = build(
        mode,
        [*refund_script(mode), verified(mode)],
        [refunds.tool],
        middleware=[approval],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"edit-{mode}"}}
    graph.invoke(QUESTION, config)

    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "B2"}}}
    out = graph.invoke(Command(resume={"decisions": [edit]}), config)

    assert refunds.done == ["B2"]
    observation = out["claims"][0]["observation"]
    assert "replaced this tool call" in observation and "refunded B2" in observation
    assert "refunded B2" in content_text(model.prompts[2][-1].content)


@tool
def hand_over(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the question to the fact desk."""
    note = ToolMessage("Passed to the fact desk.", tool_call_id=tool_call_id, name="hand_over")
    return Command(goto="elsewhere", graph=Command.PARENT, update={"messages": [note]})


@pytest.mark.parametrize("mode", MODES)
def test_a_check_handing_over_routes_the_parent_graph(mode):
    replies = [DRAFT, critique(mode, [("built 1887", "hand_over", "eiffel")]), REVISED]
    _model, critic = build(mode, replies, [hand_over])

    request = {"messages": [HumanMessage("When was the tower finished?")]}
    visited, out = run_in_parent(critic, request)

    assert visited == ["elsewhere"]
    notes = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(notes) == 1 and "Passed to the fact desk." in content_text(notes[0].content)


@pytest.mark.parametrize("mode", MODES)
def test_the_loop_break_answers_a_check_repeated_in_a_later_round(mode):
    search = Search({"eiffel": "Finished on 31 March 1889."})
    check = [("built 1887", "search", "eiffel")]
    replies = [DRAFT, critique(mode, check), REVISED, critique(mode, check), SECOND]
    _model, graph = build(mode, replies, [search.tool])

    out = graph.invoke(QUESTION)

    assert search.queries == ["eiffel"]
    assert out["claims"][1]["observation"].startswith("You already called search")
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 2 and "You already called search" in content_text(results[1].content)
    assert out["answer"] == SECOND


@pytest.mark.parametrize("mode", MODES)
def test_max_tool_calls_counts_the_checks_of_every_round(mode):
    search = Search()
    replies = [
        DRAFT,
        critique(mode, [("built 1887", "search", "eiffel")]),
        REVISED,
        critique(mode, [("in Paris", "search", "paris")]),
        SECOND,
    ]
    _model, graph = build(mode, replies, [search.tool], max_tool_calls=1)

    out = graph.invoke(QUESTION)

    assert search.queries == ["eiffel"]
    assert out["claims"][1]["observation"].startswith("Not run: this run's budget of 1")
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 2 and "Not run" in content_text(results[1].content)


@pytest.mark.parametrize("mode", MODES)
def test_a_return_direct_check_ends_the_run_with_its_result(mode):
    @tool(return_direct=True)
    def lookup(query: str) -> str:
        """Look a fact up."""
        return f"The record says: {query} in 1889."

    replies = [DRAFT, critique(mode, [("built 1887", "lookup", "eiffel")]), REVISED]
    model, graph = build(mode, replies, [lookup])

    out = graph.invoke(QUESTION)

    assert out["status"] == "completed" and model.call_count == 2
    assert out["answer"] == "The record says: eiffel in 1889."
    assert isinstance(out["messages"][-1], ToolMessage)
    assert [c["observation"] for c in out["claims"]] == ["The record says: eiffel in 1889."]


@pytest.mark.parametrize("mode", MODES)
def test_interrupt_before_tools_edits_a_claim_check_in_the_transcript(mode):
    refunds = Refunds()
    _model, graph = build(
        mode,
        [*refund_script(mode), verified(mode)],
        [refunds.tool],
        interrupt_before_tools=True,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"review-{mode}"}}
    graph.invoke(QUESTION, config)

    (pause,) = graph.get_state(config).interrupts
    assert [r["args"] for r in pause.value["action_requests"]] == [{"order": "A1"}]
    assert refunds.done == []
    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "B2"}}}
    out = graph.invoke(Command(resume={"decisions": [edit]}), config)

    assert refunds.done == ["B2"]
    assert out["claims"][0]["tool_input"] == {"order": "B2"}
    assert out["claims"][0]["observation"] == "refunded B2"
    checks = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert [c["args"] for c in checks[0].tool_calls] == [{"order": "B2"}]


@before_model
def looks_before(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@after_model
def looks_after(state: Any, runtime: Any) -> None:
    """A hook that changes nothing."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("limit", range(2, 22))
def test_a_small_recursion_limit_with_model_hooks_never_raises(mode, limit):
    search = Search()
    replies = [DRAFT, critique(mode, [("built 1887", "search", "eiffel")]), REVISED] * 3
    _model, graph = build(mode, replies, [search.tool], middleware=[looks_before, looks_after])

    out = graph.invoke(QUESTION, {"recursion_limit": limit})

    assert out["status"] in ("completed", "max_iterations")
    assert out["round"] <= 2
    results = {m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)}
    calls = {c["id"] for m in out["messages"] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls == results  # no check is left without its result
