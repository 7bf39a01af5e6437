"""Failed requests (``nodes/errors.py``) and the node guard (``nodes/driver.py``): what a
failed or retried step counts.

These are exact results that mutation testing (``make mutate``) found unpinned. Each test
builds what it checks itself (no shared fixture), so that the mutation run, which runs for
each mutant only the tests that reached the mutated function, runs it.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import RetryPolicy

from loopgraphs.nodes.driver import guard
from loopgraphs.nodes.errors import (
    all_failed,
    failed_calls,
    failed_requests,
    mark_sent,
)
from loopgraphs.nodes.parsing.text import (
    best_effort_answer,
)
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.nodes.step import Step as NodeStep

# --- Accounting: failed requests and the node guard -------------------------------------


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
