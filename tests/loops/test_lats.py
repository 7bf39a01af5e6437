"""LATS scenarios in every tool mode, on the scripted model.

Its candidates are sampled at once, so the scripted model replies by what it is asked
(``Brain``): a candidate turn gets ``propose(seen, k)`` (``seen``: the keys the trajectory
looked up so far; ``k``: which of the identical concurrent requests it is), a value
request the score of the last key looked up, a verdict request whether the answer is one
of the right ones, a reflection request a lesson, the forced answer request its reply.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import PrivateAttr

from loopgraphs import build_loop, prompts
from loopgraphs.graphs.lats import create_lats_graph
from loopgraphs.graphs.lats.judge import TOOL_ERROR_PENALTY
from loopgraphs.graphs.lats.state import call_budget
from loopgraphs.graphs.lats.tree import best_node, new_node, select, uct
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel
from tests.support.scripts import (
    FAST_RETRY,
    LATS_SMALL,
    MODES,
    act,
    final,
    judged,
    model_for,
    valued,
)

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
QUESTION = {"messages": [("user", "Under which letters is alpha filed?")]}
LOOKED = re.compile(r'"key": "(\w+)"')
SCORED = re.compile(r'look\(\{"key": "(\w+)"\}\)')
FINAL = re.compile(r"Final answer: (.*)")


@tool
def look(key: str) -> str:
    """Look a key up in the index."""
    if key == "broken":
        raise ValueError("the index is locked")
    return f"{key} is filed under {key.upper()}"


Proposal = Callable[[tuple[str, ...], int], tuple[str, str]]


class Brain:
    """Replies by what each request asks (see the module's docstring), and keeps the
    prompts of each kind."""

    def __init__(
        self,
        mode: str,
        propose: Proposal,
        *,
        values: dict[str, int] | None = None,
        right: tuple[str, ...] = (),
        forced: str = "ALPHA",
    ) -> None:
        self.mode, self.propose, self.values, self.right = mode, propose, values or {}, right
        self.forced = forced
        self.prompts: dict[str, list[list[BaseMessage]]] = {}
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()

    def keep(self, kind: str, messages: list[BaseMessage]) -> None:
        with self._lock:
            self.prompts.setdefault(kind, []).append(messages)

    def __call__(self, messages: list[BaseMessage]) -> Any:
        text = "\n".join(content_text(m.content) for m in messages)
        if "The attempt is not finished" in text:
            self.keep("value", messages)
            keys = SCORED.findall(text)
            return valued(self.mode, self.values.get(keys[-1] if keys else "", 5))
        if "<answer>" in text:
            self.keep("verdict", messages)
            said = FINAL.findall(text)[-1].strip()
            fine = said in self.right
            return judged(self.mode, fine, "" if fine else f"{said} is not filed there")
        if "Write the reflection" in text:
            self.keep("reflection", messages)
            return "Look the key up before answering."
        if content_text(messages[-1].content) == prompts.FORCE_FINAL_ANSWER:
            self.keep("forced", messages)
            return final(self.mode, self.forced)
        self.keep("candidate", messages)
        with self._lock:
            k = self._asked[text] = self._asked.get(text, -1) + 1
        kind, value = self.propose(tuple(seen_keys(messages)), k)
        if kind == "look":
            return act(self.mode, "look", {"key": value})
        return final(self.mode, value) if kind == "answer" else value


def seen_keys(messages: list[BaseMessage]) -> list[str]:
    """The keys a candidate's trajectory looked up, in order."""
    keys: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            keys += [call["args"]["key"] for call in message.tool_calls]
            if not message.tool_calls:
                keys += LOOKED.findall(content_text(message.content))
    return keys


def build(mode: str, brain: Brain, model: Any = None, **options: Any) -> tuple[Any, Any]:
    model = model or model_for(mode, [brain], repeat_last=True)
    graph = create_lats_graph(model, [look], tool_mode=mode, retry_policy=FAST_RETRY, **options)
    return model, graph


def by_key(out: dict[str, Any], key: str) -> dict[str, Any]:
    """The node whose step looked ``key`` up."""
    return next(n for n in out["tree"] if [a["args"]["key"] for a in n["actions"]] == [key])


def first_alpha_then_answer(seen: tuple[str, ...], k: int) -> tuple[str, str]:
    if not seen:
        return ("look", ("alpha", "beta")[k % 2])
    return ("answer", seen[-1].upper())


# --- the search ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_search_expands_the_best_node_and_stops_on_a_satisfactory_answer(mode):
    brain = Brain(mode, first_alpha_then_answer, values={"alpha": 8, "beta": 3}, right=("ALPHA",))
    model, graph = build(mode, brain, n_candidates=2, max_rollouts=3)
    out = graph.invoke(QUESTION)
    assert (out["status"], out["answer"], out["stop_reason"]) == ("completed", "ALPHA", "solved")
    # 2 candidates, 2 values; 2 alike candidates from alpha (one child), its verdict
    assert out["llm_calls"] == 2 + 2 + 2 + 1 == model.call_count
    assert out["rollouts"] == 2 and out["tool_mode"] == mode
    alpha, beta = by_key(out, "alpha"), by_key(out, "beta")
    assert (alpha["score"], beta["score"]) == (0.8, 0.3)
    (answer_index,) = alpha["children"]
    answer = out["tree"][answer_index]
    assert answer["terminal"] and answer["satisfactory"] and answer["answer"] == "ALPHA"
    assert out["best_node"] == answer_index and answer["depth"] == 2
    assert beta["children"] == [] and out["tree"][0]["visits"] == 3
    # The thread: the question, the loop's message of both calls, their results, the answer.
    human, calls, *results, reply = out["messages"]
    assert isinstance(human, HumanMessage) and isinstance(reply, AIMessage)
    assert sorted(c["args"]["key"] for c in calls.tool_calls) == ["alpha", "beta"]
    assert [type(m) for m in results] == [ToolMessage, ToolMessage]
    assert {m.tool_call_id for m in results} == {c["id"] for c in calls.tool_calls}
    assert content_text(reply.content) == "ALPHA" and not reply.tool_calls
    # Each result went back to its own node.
    for node, key in ((alpha, "alpha"), (beta, "beta")):
        (seen,) = node["observations"]
        assert seen["call_id"] == node["actions"][0]["id"]
        assert f"{key} is filed under {key.upper()}" in seen["content"] and not seen["error"]
    # The second expansion read alpha's trajectory, not beta's.
    second = brain.prompts["candidate"][-1]
    assert "alpha is filed under" in "\n".join(content_text(m.content) for m in second)
    assert "beta is filed under" not in "\n".join(content_text(m.content) for m in second)


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_error_lowers_the_steps_value(mode):
    def propose(seen: tuple[str, ...], k: int) -> tuple[str, str]:
        return ("look", ("broken", "gamma")[k % 2]) if not seen else ("answer", "GAMMA")

    brain = Brain(mode, propose, values={"broken": 8, "gamma": 8}, right=("GAMMA",))
    _, graph = build(mode, brain, n_candidates=2, max_rollouts=2)
    out = graph.invoke(QUESTION)
    broken, gamma = by_key(out, "broken"), by_key(out, "gamma")
    assert broken["observations"][0]["error"] and "locked" in broken["observations"][0]["content"]
    assert broken["score"] == pytest.approx(0.8 - TOOL_ERROR_PENALTY) and gamma["score"] == 0.8
    # UCT then chose the step without the error.
    assert gamma["children"] and not broken["children"]
    assert (out["status"], out["answer"]) == ("completed", "GAMMA")


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_answer_is_reflected_on_and_later_prompts_carry_the_lesson(mode):
    def propose(seen: tuple[str, ...], k: int) -> tuple[str, str]:
        if not seen:
            return ("look", "alpha") if k == 0 else ("answer", "OMEGA")
        return ("answer", "ALPHA")

    brain = Brain(mode, propose, values={"alpha": 6}, right=("ALPHA",))
    _, graph = build(mode, brain, n_candidates=2, max_rollouts=2)
    out = graph.invoke(QUESTION)
    assert (out["status"], out["answer"]) == ("completed", "ALPHA")
    assert out["reflections"] == ["Look the key up before answering."]
    (omega,) = [n for n in out["tree"] if n["answer"] == "OMEGA"]
    assert omega["terminal"] and not omega["satisfactory"] and omega["score"] == 0.0
    assert omega["feedback"] == "OMEGA is not filed there"
    # The lesson was written ahead of the question in the next expansion's prompt, and
    # the reflection read the failed trajectory with the judge's feedback.
    asked = [m for m in brain.prompts["candidate"][-1] if isinstance(m, HumanMessage)]
    question = content_text(asked[0].content)
    assert "Look the key up before answering." in question
    assert question.endswith("Under which letters is alpha filed?")
    reflected = content_text(brain.prompts["reflection"][0][-1].content)
    assert "Final answer: OMEGA" in reflected and "OMEGA is not filed there" in reflected
    # The thread keeps the question as the user wrote it, and no prompt of the loop.
    humans = [m for m in out["messages"] if isinstance(m, HumanMessage)]
    assert [content_text(m.content) for m in humans] == ["Under which letters is alpha filed?"]


@pytest.mark.parametrize("mode", MODES)
def test_out_of_rollouts_one_answer_turn_from_the_best_trajectory(mode):
    brain = Brain(mode, lambda seen, k: ("look", "alpha"), values={"alpha": 7}, forced="ALPHA")
    model, graph = build(mode, brain, n_candidates=2, max_rollouts=1)
    out = graph.invoke(QUESTION)
    assert (out["status"], out["answer"], out["stop_reason"]) == (
        "max_iterations",
        "ALPHA",
        "max_rollouts",
    )
    # 2 alike candidates (one child), its value, the answer turn
    assert out["llm_calls"] == 2 + 1 + 1 == model.call_count
    (forced,) = brain.prompts["forced"]
    assert "alpha is filed under ALPHA" in "\n".join(content_text(m.content) for m in forced)
    assert out["messages"][-1].content == "ALPHA" and out["best_node"] == 1


def test_a_judged_answer_that_is_best_is_the_answer_without_another_call():
    def propose(seen: tuple[str, ...], k: int) -> tuple[str, str]:
        return ("answer", "MAYBE") if k == 0 else ("look", "alpha")

    brain = Brain("native", propose, values={"alpha": 0})
    model, graph = build("native", brain, n_candidates=2, max_rollouts=1)
    out = graph.invoke(QUESTION)
    assert (out["status"], out["answer"]) == ("max_iterations", "MAYBE")
    # 2 candidates; a verdict and a reflection; a value; no answer turn
    assert out["llm_calls"] == 2 + 2 + 1 == model.call_count
    assert "forced" not in brain.prompts


def test_alike_candidates_are_one_child_and_one_call():
    brain = Brain("native", lambda seen, k: ("look", "alpha") if not seen else ("answer", "ALPHA"))
    brain.right = ("ALPHA",)
    _, graph = build("native", brain, n_candidates=3, max_rollouts=2)
    out = graph.invoke(QUESTION)
    assert len(out["tree"]) == 3 and out["tree"][0]["children"] == [1]
    calls = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert [len(m.tool_calls) for m in calls] == [1]
    assert out["llm_calls"] == 3 + 1 + 3 + 1


@pytest.mark.parametrize("mode", ["text", "json"])
def test_a_text_mode_reply_in_no_tool_grammar_is_an_answer_as_react_takes_one(mode):
    """In text mode a candidate written in no tool grammar is an answer as it stands (as
    ReAct takes one); in json mode it is no candidate, as it is not JSON."""
    plain = "So the final answer is: Paris."
    model = model_for(mode, [plain, judged(mode)], repeat_last=True)
    out = create_lats_graph(model, [look], tool_mode=mode, **LATS_SMALL).invoke(QUESTION)
    if mode == "text":
        assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", plain, 2)
    else:
        assert all(not node["terminal"] for node in out["tree"])


def test_nothing_left_to_expand_ends_the_search():
    brain = Brain("native", lambda seen, k: ("look", ("alpha", "beta")[k]), values={"beta": 9})
    _, graph = build("native", brain, n_candidates=2, max_rollouts=5, max_depth=1)
    out = graph.invoke(QUESTION)
    assert (out["stop_reason"], out["rollouts"], out["status"]) == (
        "exhausted",
        1,
        "max_iterations",
    )
    assert out["best_node"] == out["tree"].index(by_key(out, "beta"))


def test_a_run_without_tools_judges_its_answers():
    brain = Brain("native", lambda seen, k: ("answer", ("ALPHA", "BETA")[k]), right=("BETA",))
    model = model_for("native", [brain], repeat_last=True)
    out = create_lats_graph(model, n_candidates=2).invoke(QUESTION)
    assert (out["status"], out["answer"], out["tool_mode"]) == ("completed", "BETA", "none")
    assert all(names == ["Verdict"] for names in model.tool_sets)  # the verdicts' schema


# --- the budget ----------------------------------------------------------------------


def test_call_budget_is_four_calls_per_candidate_per_rollout():
    assert call_budget({"n_candidates": 3, "max_rollouts": 5}) == 60
    assert call_budget({"n_candidates": 1, "max_rollouts": 1}) == 4


def garbage() -> Callable[[list[BaseMessage]], str]:
    """A model whose every reply is new nonsense (no verdict or value can be read)."""
    count = iter(range(10_000))
    lock = threading.Lock()

    def reply(messages: list[BaseMessage]) -> str:
        with lock:
            return f"zorp {next(count)} blat"

    return reply


def test_a_model_answering_nonsense_spends_exactly_the_budget():
    model = ScriptedChatModel(replies=[garbage()], repeat_last=True)
    options = {"n_candidates": 2, "max_rollouts": 3}
    out = build_loop("lats", model, [], **options).invoke(QUESTION)
    # Every rollout's 2 answers fail (2 verdict requests, 1 reflection each), and with no
    # tools nothing is left to expand after the first: one rollout.
    assert out["llm_calls"] == model.call_count == 4 * 2 and out["status"] == "max_iterations"
    tools = build_loop("lats", ScriptedChatModel(replies=[garbage()], repeat_last=True), [look])
    spent = tools.invoke(QUESTION)
    assert spent["llm_calls"] <= call_budget({"n_candidates": 3, "max_rollouts": 5})


def test_every_rollout_at_its_most_spends_the_whole_budget():
    """Each rollout's candidates are failed answers of a step that looked something up:
    the most a rollout can cost, every rollout."""
    count = iter(range(10_000))

    def propose(seen: tuple[str, ...], k: int) -> tuple[str, str]:
        return ("answer", f"WRONG {next(count)}")

    brain = Brain("native", propose)
    brain.prompts = {}

    def reply(messages: list[BaseMessage]) -> Any:
        last = content_text(messages[-1].content)
        if "<answer>" in last:  # unreadable twice
            return "hmm"
        return brain(messages)

    model = model_for("native", [reply], repeat_last=True)
    budget = call_budget({"n_candidates": 2, "max_rollouts": 1})
    out = create_lats_graph(model, [look], n_candidates=2, max_rollouts=1).invoke(QUESTION)
    assert out["llm_calls"] == model.call_count == budget == 8


def test_a_small_recursion_limit_ends_the_run_without_raising():
    brain = Brain("native", lambda seen, k: ("look", f"key{len(seen)}x{k}"))
    model, graph = build("native", brain, n_candidates=2, max_rollouts=50, max_depth=50)
    out = graph.invoke(QUESTION, {"recursion_limit": 14})
    assert out["status"] == "max_iterations" and out["stop_reason"] == "budget"
    assert out["llm_calls"] == model.call_count and out["answer"] == "ALPHA"


def test_the_tool_call_budget_ends_the_search():
    brain = Brain("native", lambda seen, k: ("look", f"key{len(seen)}x{k}"))
    _, graph = build("native", brain, n_candidates=2, max_rollouts=10, max_tool_calls=3)
    out = graph.invoke(QUESTION)
    assert out["stop_reason"] == "budget" and out["status"] == "max_iterations"
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert sum("filed under" in content_text(m.content) for m in results) == 3


def test_the_runs_context_sets_the_rollouts():
    brain = Brain("native", lambda seen, k: ("look", f"key{len(seen)}"))
    _, graph = build("native", brain, n_candidates=1, max_rollouts=5)
    out = graph.invoke(QUESTION, context={"max_iterations": 2})
    assert (out["rollouts"], out["stop_reason"]) == (2, "max_rollouts")


# --- what the candidates are sent with -------------------------------------------------


class Tempered(ScriptedChatModel):
    """A scripted model with a sampling temperature, recording each request's."""

    temperature: float = 0.0
    _sent: list[tuple[str, float]] = PrivateAttr(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        asked = "\n".join(content_text(m.content) for m in messages)
        kind = "value" if "not finished" in asked else "other"
        self._sent.append((kind, kwargs.get("temperature", self.temperature)))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_candidates_are_sampled_at_the_temperature_where_the_model_takes_one(mode):
    brain = Brain(mode, lambda seen, k: ("look", "alpha"))
    profile = model_for(mode, []).profile
    model = Tempered(replies=[brain], repeat_last=True, profile=profile)
    _, graph = build(mode, brain, model, n_candidates=2, max_rollouts=1, temperature=0.7)
    graph.invoke(QUESTION)
    assert sorted(model._sent) == [("other", 0.0), ("other", 0.7), ("other", 0.7), ("value", 0.0)]


def test_a_model_without_a_temperature_is_sent_none():
    seen: list[dict[str, Any]] = []

    class Plain(ScriptedChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
            seen.append(kw)
            return super()._generate(messages, stop, run_manager, **kw)

    brain = Brain("native", lambda s, k: ("look", "alpha"))
    model = Plain(replies=[brain], repeat_last=True, profile=model_for("native", []).profile)
    build("native", brain, model, max_rollouts=1)[1].invoke(QUESTION)
    assert seen and not any("temperature" in kw for kw in seen)


# --- approvals -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_every_candidates_call_is_reviewed_and_edits_and_rejections_hold(mode):
    def propose(seen: tuple[str, ...], k: int) -> tuple[str, str]:
        return ("look", ("alpha", "beta")[k])

    brain = Brain(mode, propose, values={"delta": 9, "beta": 9})
    _, graph = build(
        mode,
        brain,
        n_candidates=2,
        max_rollouts=1,
        interrupt_before_tools=True,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"review-{mode}"}}
    paused = graph.invoke(QUESTION, config)
    asked = paused["__interrupt__"][0].value["action_requests"]
    keys = [request["args"]["key"] for request in asked]
    assert sorted(keys) == ["alpha", "beta"]
    decisions = [
        {"type": "edit", "edited_action": {"name": "look", "args": {"key": "delta"}}}
        if key == "alpha"
        else {"type": "reject", "message": "Not that one."}
        for key in keys
    ]
    out = graph.invoke(Command(resume={"decisions": decisions}), config)
    delta, beta = by_key(out, "delta"), by_key(out, "beta")
    assert "delta is filed under DELTA" in delta["observations"][0]["content"]
    assert (
        beta["observations"][0]["error"] and "Not that one." in beta["observations"][0]["content"]
    )
    assert delta["score"] == 0.9 and beta["score"] == pytest.approx(0.9 - TOOL_ERROR_PENALTY)
    ran = [content_text(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    assert not any("beta is filed" in text for text in ran)


# --- threads, input, the tree --------------------------------------------------------


def test_a_second_turn_on_a_thread_starts_a_new_tree_and_reads_the_first():
    brain = Brain("native", first_alpha_then_answer, right=("ALPHA",))
    _, graph = build("native", brain, n_candidates=1, max_rollouts=2, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "two-turns"}}
    first = graph.invoke(QUESTION, config)
    second = graph.invoke({"messages": [("user", "And beta?")]}, config)
    assert first["answer"] == second["answer"] == "ALPHA"
    assert len(second["tree"]) == 3 and second["rollouts"] == 2
    asked = "\n".join(content_text(m.content) for m in brain.prompts["candidate"][-1])
    assert "Under which letters is alpha filed?" in asked and "And beta?" in asked


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("n_candidates", 0, "n_candidates must be >= 1"),
        ("max_rollouts", "5", "max_rollouts must be an int"),
        ("exploration_weight", -1.0, "exploration_weight must be >= 0"),
        ("temperature", 3, "temperature must be <= 2"),
        ("max_depth", 1.5, "max_depth must be an int"),
    ],
)
def test_a_bad_keyword_names_itself(option, value, error):
    with pytest.raises((TypeError, ValueError), match=error):
        create_lats_graph(ScriptedChatModel(replies=[]), [look], **{option: value})


def test_uct_prefers_value_and_then_the_less_visited():
    tree = [new_node(-1, 0), new_node(0, 1), new_node(0, 1)]
    tree[0].update(visits=4, children=[1, 2])
    tree[1].update(visits=3, value=0.5)
    tree[2].update(visits=1, value=0.5)
    assert uct(tree, 2, 1.0) > uct(tree, 1, 1.0)
    assert select(tree, 1.0, 5) == 2 and select(tree, 0.0, 5) == 1
    tree[2].update(terminal=True, answer="x")
    assert select(tree, 1.0, 5) == 1
    assert select(tree, 1.0, 1) is None
    assert best_node([new_node(-1, 0)]) == 0


def test_graph_shape_snapshot():
    graph = create_lats_graph(ScriptedChatModel(replies=[]), [look])
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "lats.mmd").read_text()
