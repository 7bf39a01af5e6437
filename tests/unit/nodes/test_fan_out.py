"""The kit's steps run as concurrent tasks (``LoopBuild.step(..., fan_out=...)``), and the
keyword checks and per-sample requests Tree-of-Thoughts needed from the kit."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Send

from loopgraphs.nodes import (
    END,
    FanOutState,
    LoopOptions,
    LoopSpec,
    LoopState,
    Option,
    RunResult,
    TotalsState,
    samples,
)
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.fan_out import as_failure
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ProviderError, ScriptedChatModel


class Opts(LoopOptions[Any, Any], total=False):
    tasks: Annotated[int, Option(2, "Tasks per round.", minimum=1)]
    kept: Annotated[int, Option(1, "Results kept.", minimum=1, maximum="tasks")]
    mode: Annotated[Literal["fast", "slow"], Option("fast", "How to go.")]


class State(FanOutState, LoopState, total=False):
    said: Annotated[list[str], lambda left, right: [*(left or []), *right]]


class Plain(LoopState, total=False):
    pass


class Totals(FanOutState, TotalsState, total=False):
    pass


def tasks(state: Any) -> list[Send]:
    return [Send("work", {**state, "number": n}) for n in range(2)]


def work(state: Any, step: Any) -> Any:
    turn = yield from ask(state, step, f"task {state['number']}")
    return {**turn[1], "said": [content_text(turn[0][0].content)]}


def ask(state: Any, step: Any, text: str) -> Any:
    return (yield from samples(step, state, [HumanMessage(text)], 1))


def join(state: Any, step: Any) -> dict[str, object]:
    failures = state.get("failures") or []
    if failures:
        return {"status": "error", "error": failures[0]}
    return {"status": "completed", "answer": " ".join(sorted(state.get("said") or []))}


def wired(state: type[Any] = State, order: str = "fan_out_first") -> LoopSpec[Opts]:
    def wire(loop: Any) -> None:
        if order != "fan_out_first":
            loop.start("work")
        loop.step("work", work, model=True, fan_out=tasks, then="join")
        loop.step("join", join, then=END)
        if order == "fan_out_first":
            loop.start("work")

    return LoopSpec(
        "fanned",
        wire,
        state=state,
        output=RunResult,
        options=Opts,
        summary="x",
        takes_tools=False,
        budget_option="tasks",
    )


def test_a_fan_out_step_runs_one_task_per_send_and_joins_once():
    model = ScriptedChatModel(replies=["a", "b"])
    out = wired().create(model, None).invoke({"messages": [("user", "go")]})
    assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", "a b", 2)


def test_a_failed_task_is_a_failure_record_the_join_ends_the_run_with():
    model = ScriptedChatModel(replies=["a", ProviderError(401, "invalid api key")])
    out = wired().create(model, None, retry_policy=None).invoke({"messages": [("user", "go")]})
    assert out["status"] == "error" and "401" in out["error"]
    assert out["llm_calls"] == 2  # the failed request counts


def test_as_failure_keeps_an_error_apart_from_the_status():
    failed = as_failure({"status": "error", "error": "down", "llm_calls": 1, "retries": 0})
    assert failed == {"failures": ["down"], "llm_calls": 1, "retries": 0}
    assert as_failure({"llm_calls": 1}) == {"llm_calls": 1}


@pytest.mark.parametrize(
    ("state", "order", "error", "text"),
    [
        (Plain, "fan_out_first", TypeError, "FanOutState"),
        (Totals, "fan_out_first", TypeError, "TotalsState"),
        (State, "start_first", ValueError, "before the steps that lead to it"),
    ],
)
def test_a_fan_out_step_is_refused_where_its_tasks_could_not_run(state, order, error, text):
    with pytest.raises(error, match=text):
        wired(state, order).create(ScriptedChatModel(replies=[]), None)


def test_a_literal_keyword_out_of_its_choices_is_a_value_error():
    with pytest.raises(ValueError, match="mode must be one of 'fast', 'slow'"):
        wired().resolve({"mode": "sideways"})
    with pytest.raises(TypeError, match="mode must be one of"):
        wired().resolve({"mode": 3})


def test_a_bound_may_name_another_keyword():
    assert wired().resolve({"tasks": 3, "kept": 3})["kept"] == 3
    with pytest.raises(ValueError, match=r"kept must be <= tasks \(2\); got 3"):
        wired().resolve({"kept": 3})


def test_a_bound_naming_no_keyword_is_refused():
    class Bad(LoopOptions[Any, Any], total=False):
        kept: Annotated[int, Option(1, "Results kept.", maximum="nothing")]

    with pytest.raises(TypeError, match="bounded by 'nothing'"):
        LoopSpec(
            "bad",
            lambda loop: None,
            state=State,
            output=RunResult,
            options=Bad,
            summary="",
            takes_tools=False,
            budget_option="kept",
        )


def test_samples_may_give_each_sample_its_own_request():
    model = ScriptedChatModel(replies=["one", "two", "three"])
    step = wired().step("work", model)
    state = {"messages": [HumanMessage("go")]}
    replies, spent = run_sync(samples(step, state, lambda k: [HumanMessage(f"attempt {k}")], 3), {})
    assert sorted(content_text(m[-1].content) for m in model.prompts) == [
        "attempt 1",
        "attempt 2",
        "attempt 3",
    ]
    assert len(replies) == 3 and spent["llm_calls"] == 3
