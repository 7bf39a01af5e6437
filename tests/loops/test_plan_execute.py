"""Plan-and-Execute scenarios in every tool mode, on the scripted model."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from pathlib import Path

import pytest
from langchain.agents.middleware import wrap_model_call
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import prompts
from loopgraphs.graphs.plan_execute import LOOP, create_plan_execute_graph
from loopgraphs.graphs.plan_execute.plans import (
    STEP_CHARS,
    Plan,
    PlanUpdate,
    results_room,
    results_text,
)
from loopgraphs.graphs.plan_execute.state import call_budget
from loopgraphs.nodes.parsing.plans import (
    numbered_items,
    plan_from_text,
    sized_plan,
    update_from_text,
)
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
STEPS = ["find a", "find b", "combine a and b"]


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def structured(mode: str, schema: str, data: dict) -> object:
    """A structured reply: a native call of the schema tool, else the JSON text."""
    if mode == "native":
        return calls(tool_call(schema, data))
    return json.dumps(data)


def text_of(prompt: list) -> str:
    return "\n".join(content_text(m.content) for m in prompt)


def budget_of(*, tool_selection: bool = False, **options) -> int:
    """The run's call budget for ``options`` (the rest at their defaults)."""
    return call_budget(LOOP.resolve(options), tool_selection=tool_selection)


def build(mode: str, replies: list, *, model_kwargs: dict | None = None, **kwargs):
    model = model_for(mode, replies, **(model_kwargs or {}))
    graph = create_plan_execute_graph(
        model, kwargs.pop("tools", [lookup]), tool_mode=mode, retry_policy=FAST_RETRY, **kwargs
    )
    return model, graph


def three_step_script(mode: str) -> list:
    return [
        structured(mode, "Plan", {"steps": STEPS}),
        act(mode, "lookup", {"key": "a"}),
        final(mode, "A=1"),
        act(mode, "lookup", {"key": "b"}),
        final(mode, "B=2"),
        act(mode, "lookup", {"key": "a+b"}),
        final(mode, "A+B=3"),
        "The total is 3.",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_three_step_plan_carries_results_forward(mode):
    model, graph = build(mode, three_step_script(mode))
    out = graph.invoke({"messages": [("user", "Add a and b.")]})
    assert out["plan"] == STEPS
    assert out["status"] == "completed" and out["answer"] == "The total is 3."
    assert out["llm_calls"] == 8 == model.call_count
    assert out["current_step"] == 3
    assert out["tool_mode"] == mode
    assert [(r["step"], r["result"], r["status"]) for r in out["step_results"]] == [
        ("find a", "A=1", "completed"),
        ("find b", "B=2", "completed"),
        ("combine a and b", "A+B=3", "completed"),
    ]
    step1, step2, step3, synthesis = (text_of(model.prompts[i]) for i in (1, 3, 5, 7))
    assert "Add a and b." in step1 and "(none yet)" in step1 and "step 1 only: find a" in step1
    assert "A=1" in step2 and "step 2 only: find b" in step2
    assert "A=1" in step3 and "B=2" in step3 and "step 3 only" in step3
    assert "value of a" in text_of(model.prompts[2])  # the step's own tool observation
    assert all(r in synthesis for r in ("A=1", "B=2", "A+B=3"))
    assert isinstance(out["messages"][-1], AIMessage)
    assert content_text(out["messages"][-1].content) == "The total is 3."
    assert out["usage"]["input_tokens"] > 0


async def test_plan_runs_under_ainvoke():
    model, graph = build("native", three_step_script("native"))
    out = await graph.ainvoke({"messages": [("user", "Add a and b.")]})
    assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", "The total is 3.", 8)
    assert model.call_count == 8


def test_plan_as_plain_numbered_list_in_text_profile():
    listing = "Here is the plan:\n1. find a\n2) find b\n- combine a and b\nThat is all."
    script = [listing, final("text", "A"), final("text", "B"), final("text", "AB"), "Done: AB"]
    model, graph = build("text", script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == STEPS
    assert out["llm_calls"] == 5 == model.call_count
    assert out["answer"] == "Done: AB"


def test_native_planner_reply_in_plain_text_is_still_read():
    listing = "1. find a\n2. find b"
    script = [listing, final("native", "A"), final("native", "B"), "AB"]
    model, graph = build("native", script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["find a", "find b"]
    assert out["llm_calls"] == 4 == model.call_count
    assert "could not be parsed" not in content_text(model.prompts[1][-1].content)


def test_planner_failure_runs_the_request_as_one_step():
    script = ["no plan here", "still no plan", final("native", "42"), "It is 42."]
    model, graph = build("native", script)
    out = graph.invoke({"messages": [("user", "What is six times seven?")]})
    assert out["plan"] == ["What is six times seven?"]
    assert out["answer"] == "It is 42." and out["status"] == "completed"
    assert out["llm_calls"] == 4 == model.call_count


def test_long_plan_is_cut_to_max_steps():
    plan = structured("native", "Plan", {"steps": [f"step {i}" for i in range(1, 6)]})
    model, graph = build(
        "native", [plan, final("native", "1"), final("native", "2"), "12"], max_steps=2
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["step 1", "step 2"] and out["current_step"] == 2
    assert out["llm_calls"] == 4 == model.call_count


def test_inner_max_iterations_is_recorded_and_the_plan_goes_on():
    script = [
        structured("native", "Plan", {"steps": ["slow step", "quick step"]}),
        act("native", "lookup", {"key": "x"}),
        final("native", "partial"),  # the forced final answer of step 1
        final("native", "quick"),
        "partial and quick",
    ]
    model, graph = build("native", script, max_step_iterations=1)
    out = graph.invoke({"messages": [("user", "q")]})
    assert [r["status"] for r in out["step_results"]] == ["max_iterations", "completed"]
    assert out["step_results"][0]["result"] == "partial"
    assert "[max_iterations]" in text_of(model.prompts[3])
    assert out["status"] == "completed" and out["llm_calls"] == 5 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_one_step_plan_is_the_request_itself(mode):
    question = "What is 81 * 31 + 131?"
    script = [
        structured(mode, "Plan", {"steps": ["81 * 31 + 131", "81 * 31 + 131.", "2.1.1"]}),
        act(mode, "lookup", {"key": "81 * 31 + 131"}),
        final(mode, "2642"),
        "It is 2642.",
    ]
    model, graph = build(mode, script)
    out = graph.invoke({"messages": [("user", question)]})
    assert out["plan"] == [question]
    # The step's ReAct run gets the request as it is, not wrapped in the step prompt.
    assert text_of(model.prompts[1]).endswith(question)
    assert "one step of a plan" not in text_of(model.prompts[1])
    assert out["step_results"] == [{"step": question, "result": "2642", "status": "completed"}]
    assert out["answer"] == "It is 2642." and out["status"] == "completed"
    assert out["llm_calls"] == 4 == model.call_count


def always_acting(mode: str, steps: list[str], answer: str = "done"):
    """Plans ``steps``, calls a tool in every step turn and answers the synthesis."""
    counter = itertools.count()

    def reply(messages):
        system = content_text(messages[0].content)
        if "You plan the work" in system:
            return structured(mode, "Plan", {"steps": steps})
        if system.startswith("You write the final answer"):
            return answer
        return act(mode, "lookup", {"key": str(next(counter))})

    return reply


def forced_answers(model: ScriptedChatModel) -> int:
    return sum(prompts.FORCE_FINAL_ANSWER in text_of(p) for p in model.prompts)


@pytest.mark.parametrize("mode", MODES)
def test_each_step_gets_its_share_of_the_calls_left(mode):
    options = {"max_steps": 3, "max_step_iterations": 3}
    model, graph = build(
        mode, [always_acting(mode, STEPS)], model_kwargs={"repeat_last": True}, **options
    )
    out = graph.invoke({"messages": [("user", "q")]})
    budget = budget_of(**options)
    assert budget == 12
    # 12 - 1 (plan) - 2 (synthesis) leaves 9 for 3 steps: 2 iterations and the forced
    # answer each, where 3 iterations each would have spent 14 calls in all.
    assert out["current_step"] == 3 and forced_answers(model) == 3
    assert [r["status"] for r in out["step_results"]] == ["max_iterations"] * 3
    assert out["llm_calls"] == 1 + 3 * 3 + 1 == model.call_count <= budget
    assert out["status"] == "completed" and out["answer"] == "done"


def test_a_one_step_plan_gets_the_whole_step_budget():
    model, graph = build(
        "native",
        [always_acting("native", ["only step"])],
        model_kwargs={"repeat_last": True},
        max_steps=3,
        max_step_iterations=3,
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["q"] and forced_answers(model) == 1
    assert out["llm_calls"] == 1 + (3 + 1) + 1 == model.call_count


@dataclasses.dataclass
class AppContext:
    """A caller's run context without ``max_iterations``."""

    user: str = "u1"


def test_a_step_whose_budget_cannot_be_cut_runs_only_when_it_fits():
    model, graph = build(
        "native",
        [always_acting("native", ["one", "two"])],
        model_kwargs={"repeat_last": True},
        max_steps=2,
        max_step_iterations=3,
        context_schema=AppContext,
    )
    out = graph.invoke({"messages": [("user", "q")]}, context=AppContext())
    # Budget 2 + (3 + 1) + 2 + 2 = 10: the first step takes its full 4 calls (its share
    # cannot reach ReAct through this context), and the 3 left cannot hold the second.
    assert out["current_step"] == 1 and out["status"] == "max_iterations"
    assert out["llm_calls"] == 1 + 4 + 1 == model.call_count


@dataclasses.dataclass
class BudgetContext:
    """A caller's run context with ``max_iterations``."""

    max_iterations: int | None = None
    user: str = "u1"


@pytest.mark.parametrize("kind", ["dict", "dataclass"])
def test_a_context_budget_is_cut_to_the_step_share(kind):
    schema = {"context_schema": BudgetContext} if kind == "dataclass" else {}
    model, graph = build(
        "native",
        [always_acting("native", STEPS)],
        model_kwargs={"repeat_last": True},
        max_steps=3,
        **schema,
    )
    context = BudgetContext(max_iterations=3) if schema else {"max_iterations": 3}
    out = graph.invoke({"messages": [("user", "q")]}, context=context)
    # As with max_step_iterations=3: 2 iterations and the forced answer for each step.
    assert forced_answers(model) == 3
    assert out["llm_calls"] == 1 + 3 * 3 + 1 == model.call_count


def cut(text: str) -> AIMessage:
    return AIMessage(text, response_metadata={"finish_reason": "length"})


@pytest.mark.parametrize("mode", MODES)
def test_cut_synthesis_asks_once_more_for_a_short_answer(mode):
    script = [
        structured(mode, "Plan", {"steps": ["find a", "find b"]}),
        final(mode, "A=1"),
        final(mode, "B=2"),
        cut("The answer, worked out at length, is"),
        "3",
    ]
    model, graph = build(mode, script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert prompts.SHORT_ANSWER in text_of(model.prompts[4])
    assert out["answer"] == "3" and out["status"] == "completed"
    assert out["llm_calls"] == 5 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_synthesis_cut_twice_ends_with_the_last_good_result(mode):
    script = [
        structured(mode, "Plan", {"steps": ["find a", "find b"]}),
        final(mode, "A=1"),
        final(mode, "B=2"),
        cut("The answer is"),
        cut("It is"),
    ]
    model, graph = build(mode, script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["answer"] == "B=2" and out["status"] == "max_iterations"
    assert out["llm_calls"] == 5 == model.call_count


def test_earlier_results_are_cut_to_fit_the_context_window():
    long = " ".join(f"fact{i}" for i in range(250))  # 1,640 characters, no repeats
    script = [
        structured("native", "Plan", {"steps": STEPS}),
        final("native", "A" + long),
        final("native", "B" + long),
        final("native", "C"),
        "ABC",
    ]
    profile = {"tool_calling": True, "structured_output": True, "max_input_tokens": 1000}
    model = ScriptedChatModel(replies=script, profile=profile)
    graph = create_plan_execute_graph(model, [lookup], retry_policy=FAST_RETRY)
    out = graph.invoke({"messages": [("user", "q")]})
    room = results_room(model)
    assert room == (1000 - 500) // 2 * 3  # the reply takes at most half the window
    step3, synthesis = text_of(model.prompts[3]), text_of(model.prompts[4])
    assert "Step 1: find a" in step3 and "Step 2: find b" in step3
    assert "fact249" not in step3 and "fact249" not in synthesis  # cut to their share
    assert len(step3) < room + 1000 and len(synthesis) < room + 1000
    assert out["answer"] == "ABC" and out["llm_calls"] == 5


def test_results_text_shares_the_room_and_leaves_out_the_oldest():
    results = [{"step": f"s{i}", "result": "r" * 500, "status": "completed"} for i in (1, 2, 3)]
    whole = results_text(results)
    assert results_text(results, len(whole)) == whole
    shared = results_text(results, 600)
    assert shared.count("Step ") == 3 and len(shared) <= 600 + 4
    tight = results_text(results, 250)
    assert tight.startswith(prompts.EARLIER_RESULTS_LEFT_OUT.format(count=1))
    assert "Step 1:" not in tight and "Step 2: s2" in tight and "Step 3: s3" in tight
    assert results_room(model_for("native", [])) is None  # the profile does not say


def test_step_error_propagates():
    script = [structured("native", "Plan", {"steps": STEPS}), ProviderError(401, "invalid api key")]
    model, graph = build("native", script)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error" and "401" in out["error"] and "invalid api key" in out["error"]
    assert out["step_results"][0]["status"] == "error"
    # The plan and the step's rejected request both count; a 401 is not retried.
    assert model.call_count == 2 == out["llm_calls"] and out["retries"] == 0
    assert isinstance(out["answer"], str)


def failing_step(mode: str, answer: str) -> list:
    """A step that runs out of its one iteration: a tool call, then the forced answer."""
    return [act(mode, "lookup", {"key": "a"}), final(mode, answer)]


@pytest.mark.parametrize("mode", MODES)
def test_replan_revises_the_remaining_steps_after_a_failed_step(mode):
    script = [
        structured(mode, "Plan", {"steps": STEPS}),
        *failing_step(mode, "A=1"),
        structured(mode, "PlanUpdate", {"steps": ["add 1 and b"]}),
        final(mode, "3"),
        "It is 3.",
    ]
    model, graph = build(mode, script, replan=True, max_step_iterations=1)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["find a", "add 1 and b"]
    assert [r["step"] for r in out["step_results"]] == ["find a", "add 1 and b"]
    assert [r["status"] for r in out["step_results"]] == ["max_iterations", "completed"]
    replan_prompt = text_of(model.prompts[3])
    assert "You keep a plan up to date" in replan_prompt
    assert "A=1" in replan_prompt and "[max_iterations]" in replan_prompt
    assert "find b" in replan_prompt
    assert "step 2 only: add 1 and b" in text_of(model.prompts[4])
    assert out["llm_calls"] == 6 == model.call_count  # no revision after the last step
    assert out["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_replan_is_skipped_after_a_completed_step(mode):
    model, graph = build(mode, three_step_script(mode), replan=True)
    out = graph.invoke({"messages": [("user", "Add a and b.")]})
    assert out["plan"] == STEPS and out["answer"] == "The total is 3."
    assert out["llm_calls"] == 8 == model.call_count  # no revision call
    assert not any("You keep a plan up to date" in text_of(p) for p in model.prompts)


@pytest.mark.parametrize(("mode", "done"), [("native", None), ("text", "DONE")])
def test_replan_can_finish_early(mode, done):
    update = done if done else structured(mode, "PlanUpdate", {"steps": []})
    script = [structured(mode, "Plan", {"steps": STEPS}), *failing_step(mode, "A=1"), update, "1"]
    model, graph = build(mode, script, replan=True, max_step_iterations=1)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["find a"] and out["current_step"] == 1
    assert out["status"] == "completed" and out["answer"] == "1"
    assert out["llm_calls"] == 5 == model.call_count


def test_failed_replan_keeps_the_plan():
    script = [
        structured("native", "Plan", {"steps": ["one", "two"]}),
        *failing_step("native", "1"),
        "garbage",
        "more garbage",
        final("native", "2"),
        "12",
    ]
    model, graph = build("native", script, replan=True, max_step_iterations=1)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["plan"] == ["one", "two"] and out["current_step"] == 2
    assert out["llm_calls"] == 7 == model.call_count


def approval_graph(replies: list):
    model = model_for("native", replies)
    graph = create_plan_execute_graph(
        model, [lookup], approve_plan=True, checkpointer=InMemorySaver(), retry_policy=FAST_RETRY
    )
    return model, graph


def test_approve_plan_interrupts_and_edit_runs_the_edited_steps():
    plan = structured("native", "Plan", {"steps": STEPS})
    model, graph = approval_graph([plan, final("native", "X"), final("native", "Y"), "X and Y"])
    config = {"configurable": {"thread_id": "edit"}}
    paused = graph.invoke({"messages": [("user", "q")]}, config)
    [pending] = paused["__interrupt__"]
    assert pending.value == {"plan": STEPS, "question": "q"}
    assert model.call_count == 1
    out = graph.invoke(
        Command(resume={"type": "edit", "steps": ["first edit", " second edit "]}), config
    )
    assert out["plan"] == ["first edit", "second edit"]
    assert "step 1 only: first edit" in text_of(model.prompts[1])
    assert "step 2 only: second edit" in text_of(model.prompts[2])
    assert out["status"] == "completed" and out["answer"] == "X and Y"
    assert out["llm_calls"] == 4 == model.call_count


def test_approve_plan_approve_runs_the_plan():
    plan = structured("native", "Plan", {"steps": ["only", "then this"]})
    model, graph = approval_graph([plan, final("native", "X"), final("native", "Y"), "X!"])
    config = {"configurable": {"thread_id": "approve"}}
    graph.invoke({"messages": [("user", "q")]}, config)
    out = graph.invoke(Command(resume={"type": "approve"}), config)
    assert out["plan"] == ["only", "then this"] and out["answer"] == "X!"
    assert out["llm_calls"] == 4 == model.call_count


def test_approve_plan_reject_ends_with_error():
    model, graph = approval_graph([structured("native", "Plan", {"steps": STEPS})])
    config = {"configurable": {"thread_id": "reject"}}
    graph.invoke({"messages": [("user", "q")]}, config)
    out = graph.invoke(Command(resume={"type": "reject", "message": "too many steps"}), config)
    assert out["status"] == "error" and out["error"] == "plan rejected: too many steps"
    assert out["step_results"] == [] and model.call_count == 1


@pytest.mark.parametrize(
    "decision",
    [{"type": "edit", "steps": []}, {"type": "edit", "steps": ["ok", 3]}, {"type": "maybe"}, "yes"],
)
def test_malformed_review_decision_raises(decision):
    plan = structured("native", "Plan", {"steps": ["only"]})
    model, graph = approval_graph([plan, final("native", "X"), "X!"])
    config = {"configurable": {"thread_id": "bad"}}
    graph.invoke({"messages": [("user", "q")]}, config)
    with pytest.raises(ValueError, match=r"steps|resume with"):
        graph.invoke(Command(resume=decision), config)
    # LangGraph keeps the answered resume value, so the review is settled from outside:
    graph.update_state(config, {"plan": ["fixed step"]}, as_node="review_plan")
    out = graph.invoke(None, config)
    assert out["plan"] == ["fixed step"] and out["answer"] == "X!"
    assert "step 1 only: fixed step" in text_of(model.prompts[1])


# adversarial models ----------------------------------------------------------------------

ADVERSARIAL = {"max_steps": 3, "max_step_iterations": 2, "replan": True}
BUDGET = budget_of(max_steps=3, max_step_iterations=2, replan=True)


def test_budget_formula():
    # planner + the steps' calls (one full step, two for each other) + revisions
    # + synthesis (and its one retry)
    assert BUDGET == 2 + (2 + 1 + 2 * (3 - 1)) + 2 * (3 - 1) + 2 == 15
    assert budget_of() == 2 + (5 + 1 + 2 * 6) + 2 == 22
    assert budget_of(tool_selection=True) == 22 + 2 * 7
    assert budget_of(max_steps=1, max_step_iterations=1) == 2 + 2 + 2


@pytest.mark.parametrize("mode", MODES)
def test_random_text_model_ends_within_budget(mode):
    rng = random.Random(7)
    words = ["lorem", "ipsum", "{", "}", "Action", "42", "plan", ":", "\n", "zzz"]

    def noise(messages):
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))

    model, graph = build(mode, [noise], model_kwargs={"repeat_last": True}, **ADVERSARIAL)
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] in ("completed", "max_iterations")
    assert isinstance(out["answer"], str)
    assert out["llm_calls"] <= BUDGET and out["llm_calls"] == model.call_count


def never_finishing(mode: str):
    """Always calls a tool, answers the planner and replanner only after a reformat
    request and cuts every synthesis reply, so that every part of the budget is spent."""
    counter = itertools.count()

    def reply(messages):
        system = content_text(messages[0].content)
        reformat = "could not be parsed as the required JSON" in content_text(messages[-1].content)
        if "You plan the work" in system and reformat:
            return structured(mode, "Plan", {"steps": [f"step {i}" for i in range(6)]})
        if "You keep a plan up to date" in system and reformat:
            return structured(mode, "PlanUpdate", {"steps": ["again", "and again", "more"]})
        if system.startswith("You write the final answer"):
            return AIMessage("The answer is", response_metadata={"finish_reason": "length"})
        return act(mode, "lookup", {"key": str(next(counter))})

    return reply


@pytest.mark.parametrize("mode", MODES)
def test_never_finishing_model_spends_exactly_the_budget(mode):
    model, graph = build(
        mode, [never_finishing(mode)], model_kwargs={"repeat_last": True}, **ADVERSARIAL
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["llm_calls"] == BUDGET == model.call_count
    assert [r["status"] for r in out["step_results"]] == ["max_iterations"] * 3
    # The plan ran to its end and the synthesis was cut twice: every step ran out of
    # turns with tool calls only, so the model gave no answer, and the run says so.
    assert (out["status"], out["answer"]) == ("max_iterations", "")
    assert out["error"].startswith("no usable answer:")


@pytest.mark.parametrize("mode", MODES)
def test_permanent_provider_error_ends_with_error(mode):
    model, graph = build(
        mode,
        [ProviderError(401, "invalid api key")],
        model_kwargs={"repeat_last": True},
        **ADVERSARIAL,
    )
    out = graph.invoke({"messages": [("user", "q")]})
    assert out["status"] == "error" and "401" in out["error"]
    # The planner's rejected request counts as a model call; a 401 is not retried.
    assert model.call_count == 1 == out["llm_calls"] and out["retries"] == 0
    assert isinstance(out["answer"], str)


@pytest.mark.parametrize("limit", [4, 7, 12])
def test_small_recursion_limit_never_raises(limit):
    model, graph = build(
        "native",
        [never_finishing("native")],
        model_kwargs={"repeat_last": True},
        max_steps=7,
        replan=True,
    )
    out = graph.invoke({"messages": [("user", "q")]}, {"recursion_limit": limit})
    assert out["status"] == "max_iterations"
    assert out["current_step"] < len(out["plan"])
    assert out["llm_calls"] == model.call_count
    assert out["llm_calls"] <= budget_of(max_steps=7, replan=True)
    assert isinstance(out["answer"], str)


def test_empty_input_is_a_clear_error():
    model, graph = build("native", [])
    out = graph.invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"max_steps": 0}, ValueError, "max_steps"),
        ({"max_steps": 2.5}, TypeError, "max_steps"),
        ({"max_step_iterations": 0}, ValueError, "max_step_iterations"),
        ({"max_step_iterations": "5"}, TypeError, "max_step_iterations"),
        ({"replan": "yes"}, TypeError, "replan"),
        ({"approve_plan": 1}, TypeError, "approve_plan"),
        ({"tool_mode": "xml"}, ValueError, "tool_mode"),
        ({"tool_timeout": 0}, ValueError, "tool_timeout"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_plan_execute_graph(model_for("native", []), [lookup], **kwargs)


# plan parsing ----------------------------------------------------------------------------


def test_numbered_items_reads_common_list_forms():
    text = "Plan:\n1. one\n  2) two\n- three\n* four\nStep 5: five\nnot an item\n6.no space"
    assert numbered_items(text) == ["one", "two", "three", "four", "five"]
    assert plan_from_text("nothing to see") is None
    assert update_from_text("DONE") == {"steps": []}
    assert update_from_text("1. more") == {"steps": ["more"]}
    assert update_from_text("I am not done yet") is None


def test_sized_plan_fits_the_request():
    request = "What is 81 * 31 + 131?"
    assert sized_plan(["81 * 31", "add 131 to it"], request) == ["81 * 31", "add 131 to it"]
    assert sized_plan(["81 * 31 + 131"], request) == [request]
    assert sized_plan(["2.1.1", "8", "81 * 31 + 131"], request) == [request]
    assert sized_plan(["81 * 31 = 2511", "2511 + 131 = 2642"], request) == [request]
    assert sized_plan(["solve x + 1 = 3", "double x"], request) == ["solve x + 1 = 3", "double x"]
    assert sized_plan([request, "What is 81 * 31 + 132?"], request) == [request]
    assert sized_plan([], request) == [request]
    assert Plan.model_validate({"steps": ["find a", "Find  A.", "find b"]}).steps == [
        "find a",
        "find b",
    ]


def test_plan_schema_cleans_what_models_send():
    plan = Plan.model_validate({"plan": ["1. one", {"description": "two"}, "  ", "3) three"]})
    assert plan.steps == ["one", "two", "three"]
    assert Plan.model_validate({"steps": "1. a\n2. b"}).steps == ["a", "b"]
    with pytest.raises(ValueError):
        Plan.model_validate({"steps": ["", " "]})
    assert PlanUpdate.model_validate({"steps": []}).steps == []
    with pytest.raises(ValueError):
        PlanUpdate.model_validate({"unrelated": 1})


def test_the_planner_is_asked_for_a_bounded_list_of_short_steps():
    """The plan and replan schemas the model fills hold at most the steps the run allows,
    each of at most ``STEP_CHARS`` characters (SmolLM2 repeated its one step to the token
    cap in an open list); what the model sends is still read as leniently as before."""
    formats: list = []

    @wrap_model_call
    def record(request, handler):
        formats.append(request.response_format)
        return handler(request)

    # The first step gives no answer (twice), so it failed and the rest is replanned.
    script = [structured("json", "Plan", {"steps": ["one", "two"]})]
    script += [final("json", ""), final("json", ""), json.dumps({"steps": []}), "done"]
    _, graph = build("json", script, max_steps=3, replan=True, middleware=[record])
    graph.invoke({"messages": [("user", "q")]})
    schemas = {f.schema.__name__: f.schema for f in formats if f is not None}
    plan = schemas["Plan"].model_json_schema()["properties"]["steps"]
    assert (plan["minItems"], plan["maxItems"], plan["items"]["maxLength"]) == (1, 3, STEP_CHARS)
    update = schemas["PlanUpdate"].model_json_schema()["properties"]["steps"]
    assert (update["maxItems"], update["items"]["maxLength"]) == (2, STEP_CHARS)
    assert schemas["Plan"].model_validate({"plan": ["1. a", "2. b", "3. c", "4. d"]}).steps == [
        "a",
        "b",
        "c",
        "d",
    ]


def test_graph_shape_snapshot():
    _, graph = build("native", [], replan=True, approve_plan=True)
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "plan_execute.mmd").read_text()
    _, plain = build("native", [])
    nodes = set(plain.get_graph().nodes)
    assert {"plan", "execute", "synthesize"} <= nodes
    assert not {"review_plan", "replan"} & nodes


def test_tool_approval_inside_a_step_pauses_and_resumes():
    plan = structured("native", "Plan", {"steps": ["one", "two"]})
    script = [
        plan,
        act("native", "lookup", {"key": "a"}),
        final("native", "A"),
        final("native", "B"),
        "AB",
    ]
    model = model_for("native", script)
    graph = create_plan_execute_graph(
        model,
        [lookup],
        interrupt_before_tools=True,
        checkpointer=InMemorySaver(),
        retry_policy=FAST_RETRY,
    )
    config = {"configurable": {"thread_id": "tools"}}
    paused = graph.invoke({"messages": [("user", "q")]}, config)
    [pending] = paused["__interrupt__"]
    assert pending.value["action_requests"][0]["name"] == "lookup"
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert "value of a" in text_of(model.prompts[2])
    assert out["status"] == "completed" and out["answer"] == "AB"
    assert out["llm_calls"] == 5 == model.call_count  # the paused step was not re-asked
