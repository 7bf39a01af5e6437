"""Every loop reads the conversation so far: a follow-up on a thread can refer to an
earlier turn.

Each model call that works on the user's request reads the earlier turns as the state
holds them when it is made, within ``max_history_tokens``. The calls that can carry tool
traffic (ReAct's and Self-Ask's turns, Reflexion's episodes) read the thread as it is;
the others read the user's turns and the answers they got, never an earlier run's tool
calls and results. Self-Ask's guided read of one tool result is the one call that reads
no history: it answers a follow-up from a tool result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import (
    create_cot_graph,
    create_critic_graph,
    create_plan_execute_graph,
    create_react_graph,
    create_reflexion_graph,
    create_self_ask_graph,
    create_tot_graph,
)
from loopgraphs.graphs import registry
from loopgraphs.graphs.lats import create_lats_graph
from loopgraphs.graphs.rewoo import create_rewoo_graph
from loopgraphs.nodes import grounding
from loopgraphs.nodes.parsing.text import content_text
from tests.behaviour.test_custom_state import satisfied, structured, verdict
from tests.support.fakes import ScriptedChatModel
from tests.support.scripts import (
    FAST_RETRY,
    LATS_SMALL,
    MODES,
    act,
    critique,
    final,
    follow_up,
    lats_search,
    model_for,
    note,
    rewoo_plan,
)

LOOPS = tuple(registry.LOOPS)
FIRST, FIRST_ANSWER = "Refund order A-17", "Refunded order A-17."
SECOND, SECOND_ANSWER = "Refund order B-22", "Refunded order B-22."
FOLLOW_UP = "Which order did I mention before?"


def spare_tool(index: int) -> Any:
    @tool(f"spare_{index}")
    def spare(text: str) -> str:
        """A tool the run does not need."""
        return text

    return spare


# Above 12 tools ReAct selects its tools first: that call reads the history too.
MANY_TOOLS = [note, *(spare_tool(index) for index in range(12))]

# Per loop, the model calls of one run of ``script``, in order, and what each reads
# besides the earlier turns: "thread" (the thread as it is, an earlier run's tool calls
# and results included), "step" (a Plan-and-Execute step's ReAct run: the earlier turns,
# then the step's own tool calls and results) or "turns" (no tool call or result at all).
CALLS: dict[str, list[tuple[str, str]]] = {
    "cot": [("generate", "turns")],
    "react": [
        ("select_tools", "turns"),
        ("generate", "thread"),
        ("final_answer", "thread"),
        ("synthesize", "turns"),
    ],
    "plan_execute": [
        ("plan", "turns"),
        ("step 1", "step"),
        ("step 1, its forced answer", "step"),
        ("replan", "turns"),
        ("step 2", "step"),
        ("synthesize", "turns"),
    ],
    "reflexion": [
        ("episode 1", "thread"),
        ("episode 1, after its tool call", "thread"),
        ("evaluate", "turns"),
        ("reflect", "turns"),
        ("episode 2", "thread"),
        ("evaluate", "turns"),
    ],
    "self_ask": [("turn", "thread"), ("final_answer", "thread")],
    "critic": [("draft", "turns"), ("critique", "turns"), ("revise", "turns")],
    "tot": [("propose", "turns"), ("score", "turns"), ("final_answer", "turns")],
    "rewoo": [("plan", "turns"), ("solve", "turns")],
    # the second expansion reads its trajectory: the run's own call and result
    "lats": [("expand", "turns"), ("value", "turns"), ("expand", "step"), ("verdict", "turns")],
}


def script(loop: str, mode: str, answer: str, word: str) -> list[Any]:
    """Replies for one run of ``loop`` answering ``answer`` that makes every call of
    ``CALLS[loop]``; its tool calls note ``word``."""
    if loop == "cot":
        return [f"Step 1: look.\nFINAL ANSWER: {answer}"]
    if loop == "react":
        choice = structured(mode, "ToolSelection", {"tools": ["note"]})
        return [choice, act(mode, "note", {"text": word}), final(mode, answer), answer]
    if loop == "plan_execute":
        return [
            structured(mode, "Plan", {"steps": [f"Note {word}.", "Answer."]}),
            act(mode, "note", {"text": word}),
            final(mode, f"noted {word}"),
            structured(mode, "PlanUpdate", {"steps": ["Answer."]}),
            final(mode, answer),
            answer,
        ]
    if loop == "reflexion":
        return [
            act(mode, "note", {"text": word}),
            final(mode, "Not sure."),
            verdict(mode),
            "Say which order it was.",
            final(mode, answer),
            satisfied(mode),
        ]
    if loop == "self_ask":
        return [follow_up(mode, word), f"So the final answer is: {answer}"]
    if loop == "critic":
        return [f"Draft: {answer}", critique(mode, word), answer]
    if loop == "rewoo":
        return [rewoo_plan(mode, ("note", word)), answer]
    if loop == "lats":
        return lats_search(mode, "note", {"text": word}, answer)
    return [
        "1. Look at the order.",
        structured(mode, "Scores", {"scores": [7]}),
        f"ANSWER: {answer}",
    ]


def graph_for(loop: str, mode: str, model: ScriptedChatModel, **options: Any) -> Any:
    shared: dict[str, Any] = {"retry_policy": FAST_RETRY, **options}
    if loop == "cot":
        return create_cot_graph(model, **shared)
    if loop == "tot":
        return create_tot_graph(model, n_branches=1, beam_width=1, max_depth=1, **shared)
    shared["tool_mode"] = mode
    if loop == "react":
        return create_react_graph(
            model, MANY_TOOLS, max_iterations=1, synthesize_answer=True, **shared
        )
    if loop == "plan_execute":
        return create_plan_execute_graph(
            model, [note], max_steps=2, max_step_iterations=1, replan=True, **shared
        )
    if loop == "reflexion":
        return create_reflexion_graph(model, [note], max_reflections=2, **shared)
    if loop == "self_ask":
        return create_self_ask_graph(model, [note], max_follow_ups=1, **shared)
    if loop == "rewoo":
        return create_rewoo_graph(model, [note], **shared)
    if loop == "lats":
        return create_lats_graph(model, [note], **LATS_SMALL, **shared)
    return create_critic_graph(model, [note], max_critique_rounds=1, **shared)


def text_of(prompt: list[BaseMessage]) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def check_calls(
    loop: str, prompts: list[list[BaseMessage]], present: str, absent: str = "\0"
) -> None:
    """Each call of one run of ``loop`` reads ``present`` and not ``absent``; a call that
    reads the turns only holds no tool call or result, and only the calls that read the
    thread hold the first run's tool result ("noted first")."""
    expected = CALLS[loop]
    assert len(prompts) == len(expected), [name for name, _ in expected]
    for (name, reads), prompt in zip(expected, prompts, strict=True):
        text = text_of(prompt)
        assert present in text, f"{loop}'s {name} call does not read {present!r}"
        assert absent not in text, f"{loop}'s {name} call reads {absent!r}"
        if reads != "thread":
            assert "noted first" not in text, f"{loop}'s {name} reads an earlier tool result"
        if reads == "turns":
            traffic = [
                m
                for m in prompt
                if isinstance(m, ToolMessage) or (isinstance(m, AIMessage) and m.tool_calls)
            ]
            assert not traffic, f"{loop}'s {name} reads tool calls: {traffic}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", LOOPS)
def test_a_follow_up_on_a_thread_reads_the_first_turn(loop, mode):
    first = script(loop, mode, FIRST_ANSWER, "first")
    model = model_for(mode, [*first, *script(loop, mode, "A-17", "second")])
    graph = graph_for(loop, mode, model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"orders-{loop}-{mode}"}}
    out = graph.invoke({"messages": [("user", FIRST)]}, config)
    assert out["answer"] == FIRST_ANSWER, out.get("error")
    out = graph.invoke({"messages": [("user", FOLLOW_UP)]}, config)
    assert out["answer"] == "A-17", out.get("error")
    later = model.prompts[len(first) :]
    check_calls(loop, later, FIRST)
    for (name, reads), prompt in zip(CALLS[loop], later, strict=True):
        assert FIRST_ANSWER in text_of(prompt), f"{loop}'s {name} misses the first answer"
        if reads == "thread":
            assert "noted first" in text_of(prompt), f"{loop}'s {name} misses the tool result"


def earlier_conversation() -> list[BaseMessage]:
    return [
        HumanMessage(FIRST, id="h1"),
        AIMessage(FIRST_ANSWER, id="a1"),
        HumanMessage(SECOND, id="h2"),
        AIMessage(SECOND_ANSWER, id="a2"),
        HumanMessage("Which orders did I mention?", id="h3"),
    ]


@pytest.mark.parametrize("given", ["option", "context"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", LOOPS)
def test_max_history_tokens_leaves_the_oldest_turns_out(loop, mode, given):
    """Each earlier message counts 9 tokens (``count_tokens_approximately``): 20 keep
    the last exchange, 0 none of them; the request is read either way."""
    for bound, present, absent in ((20, SECOND, FIRST), (0, "Which orders", SECOND)):
        model = model_for(mode, script(loop, mode, "A-17 and B-22", "now"))
        options = {"max_history_tokens": bound} if given == "option" else {}
        graph = graph_for(loop, mode, model, **options)
        context = {"max_history_tokens": bound} if given == "context" else None
        out = graph.invoke({"messages": earlier_conversation()}, context=context)
        assert out["answer"] == "A-17 and B-22", out.get("error")
        check_calls(loop, model.prompts, present, absent)
        if bound:
            check_calls(loop, model.prompts, SECOND_ANSWER, FIRST_ANSWER)


class ForgetTheFirstOrder(AgentMiddleware):
    """A ``before_model`` hook that removes the first exchange from the state."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        gone = [m for m in state["messages"] if m.id in ("h1", "a1")]
        return {"messages": [RemoveMessage(id=m.id) for m in gone]} if gone else None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loop", LOOPS)
def test_every_call_reads_the_conversation_as_a_before_model_hook_left_it(loop, mode):
    model = model_for(mode, script(loop, mode, "B-22", "now"))
    graph = graph_for(loop, mode, model, middleware=[ForgetTheFirstOrder()])
    out = graph.invoke({"messages": earlier_conversation()})
    assert out["answer"] == "B-22", out.get("error")
    check_calls(loop, model.prompts, SECOND_ANSWER, FIRST)
    assert [m.id for m in out["messages"][:3]] == ["h2", "a2", "h3"]


@pytest.fixture
def small_model(monkeypatch):
    """Treat every model as the embedded small model: Self-Ask is guided in json and text
    modes."""
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")


def guided_script(mode: str, answer: str, question: str) -> list[Any]:
    """A guided Self-Ask run: a follow-up, the read of its result, the answer."""
    if mode == "json":
        return [
            json.dumps({"follow_up": question, "tool": "note"}),
            json.dumps({"answer": "noted"}),
            json.dumps({"final_answer": answer}),
        ]
    return [f"Follow up: {question}", "noted", f"So the final answer is: {answer}"]


@pytest.mark.parametrize("mode", ["json", "text"])
def test_guided_self_ask_turns_read_the_first_turn(small_model, mode):
    """Each guided turn reads the earlier turns after its worked example; the read of a
    tool result does not."""
    first = guided_script(mode, FIRST_ANSWER, "Which order is it")
    model = model_for(mode, [*first, *guided_script(mode, "A-17", "Which order did I mention")])
    graph = create_self_ask_graph(model, [note], tool_mode=mode, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"guided-{mode}"}}
    assert graph.invoke({"messages": [("user", FIRST)]}, config)["answer"] == FIRST_ANSWER
    out = graph.invoke({"messages": [("user", FOLLOW_UP)]}, config)
    assert (out["status"], out["answer"]) == ("completed", "A-17"), out.get("error")
    turn, read, last = model.prompts[len(first) :]
    for prompt in (turn, last):
        assert FIRST in text_of(prompt) and FIRST_ANSWER in text_of(prompt)
        assert "noted Which order is it" not in text_of(prompt)
        assert content_text(prompt[-1].content).startswith(f"Question: {FOLLOW_UP}")
    assert FIRST not in text_of(read)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, "max_history_tokens must be >= 0; got -1"),
        ("many", "max_history_tokens must be an int; got str"),
        (True, "max_history_tokens must be an int; got bool"),
        (2.5, "max_history_tokens must be an int; got float"),
    ],
)
def test_a_bad_history_bound_is_refused_with_its_name(loop, value, error):
    model = model_for("native", ["unused"])
    with pytest.raises((TypeError, ValueError), match=error):
        graph_for(loop, "native", model, max_history_tokens=value)
    graph = graph_for(loop, "native", model)
    with pytest.raises((TypeError, ValueError), match=error):
        graph.invoke({"messages": [("user", FIRST)]}, context={"max_history_tokens": value})
    assert model.call_count == 0
