"""ReWOO on the scripted model, in every tool mode: the plan, the worker's waves, the
evidence, the solver, and the cases where NeMo Agent Toolkit's ReWOO breaks."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from loopgraphs import build_loop, prompts
from loopgraphs.graphs.rewoo import LOOP, create_rewoo_graph
from loopgraphs.graphs.rewoo import steps as rewoo_steps
from loopgraphs.graphs.rewoo.state import call_budget
from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, model_for

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


def step(n: int, tool: str, tool_input: Any, *, name: str = "", plan: str = "") -> dict[str, Any]:
    """A planned step storing its result under ``#E<n>`` (or ``name``)."""
    return {
        "plan": plan or f"Step {n}.",
        "evidence": name or f"#E{n}",
        "tool": tool,
        "tool_input": tool_input,
    }


def planned(mode: str, steps: list[dict[str, Any]]) -> Any:
    """The planner's reply with these steps, in the form of ``mode``."""
    if mode == "native":
        return calls(tool_call("Plan", {"steps": steps}))
    return json.dumps({"steps": steps})


class Tools:
    """``lookup``, ``echo`` and ``explode``, recording every call that ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

        @tool
        def lookup(key: str) -> str:
            """Look a key up."""
            self.ran.append(("lookup", key))
            return f"value of {key}"

        @tool
        def echo(text: str) -> str:
            """Say the text back."""
            self.ran.append(("echo", text))
            return text

        @tool
        def explode(x: str) -> str:
            """Always fails."""
            self.ran.append(("explode", x))
            raise RuntimeError("disk on fire")

        self.all = [lookup, echo, explode]


def build(mode: str, replies: list[Any], tools: Tools | None = None, **options: Any):
    tools = tools or Tools()
    model = model_for(mode, replies, **options.pop("model_kwargs", {}))
    graph = create_rewoo_graph(model, tools.all, tool_mode=mode, retry_policy=FAST_RETRY, **options)
    return model, graph, tools


def ask(text: str = "What is b?") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def waves(out: dict[str, Any]) -> list[list[tuple[str, dict[str, Any]]]]:
    """The worker's replies: each wave's calls (name and arguments), in order."""
    return [
        [(call["name"], call["args"]) for call in message.tool_calls]
        for message in out["messages"]
        if isinstance(message, AIMessage) and message.tool_calls
    ]


def solver_prompt(model: ScriptedChatModel) -> str:
    return "\n".join(content_text(m.content) for m in model.prompts[-1])


# --- the method ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_two_calls_whatever_the_number_of_steps(mode):
    steps = [
        step(1, "lookup", "a"),
        step(2, "lookup", "b"),
        step(3, "echo", "#E1 and #E2"),
        step(4, "echo", {"text": "then #E3"}),
    ]
    model, graph, _tools = build(mode, [planned(mode, steps), "It is b."])
    out = graph.invoke(ask())
    assert (out["status"], out["answer"]) == ("completed", "It is b.")
    assert out["llm_calls"] == 2 == model.call_count
    # Independent steps at once; a step waits for the wave that gathers what it names.
    assert waves(out) == [
        [("lookup", {"key": "a"}), ("lookup", {"key": "b"})],
        [("echo", {"text": "value of a and value of b"})],
        [("echo", {"text": "then value of a and value of b"})],
    ]
    assert out["evidence"] == [
        "value of a",
        "value of b",
        "value of a and value of b",
        "then value of a and value of b",
    ]
    assert [s["evidence"] for s in out["plan"]] == ["#E1", "#E2", "#E3", "#E4"]
    assert out["tool_mode"] == mode
    assert out["usage"]["input_tokens"] > 0
    # The solver reads the plan and every step's evidence, fenced as tool output.
    seen = solver_prompt(model)
    assert "#E3 = echo[value of a and value of b]" in seen
    assert "<<tool_output " in seen and "then value of a and value of b" in seen
    # The last message is the answer; the plan's call never shows in the thread.
    assert content_text(out["messages"][-1].content) == "It is b."
    assert not any("Plan" in str(m.additional_kwargs) for m in out["messages"])


@pytest.mark.parametrize("mode", MODES)
async def test_independent_steps_run_at_once_async(mode):
    active = {"now": 0, "most": 0}
    lock = threading.Lock()

    @tool
    def wait(label: str) -> str:
        """Wait a little and say the label."""
        with lock:
            active["now"] += 1
            active["most"] = max(active["most"], active["now"])
        time.sleep(0.2)
        with lock:
            active["now"] -= 1
        return f"done {label}"

    steps = [step(n, "wait", str(n)) for n in (1, 2, 3)]
    model = model_for(mode, [planned(mode, steps), "All done."])
    graph = create_rewoo_graph(model, [wait], tool_mode=mode)
    out = await graph.ainvoke(ask("Wait three times."))
    assert active["most"] == 3
    assert out["evidence"] == ["done 1", "done 2", "done 3"]
    assert out["llm_calls"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_parallel_steps_false_runs_one_step_at_a_time_in_order(mode):
    steps = [step(1, "lookup", "a"), step(2, "lookup", "b"), step(3, "echo", "#E1")]
    _model, graph, tools = build(mode, [planned(mode, steps), "Done."], parallel_steps=False)
    out = graph.invoke(ask())
    assert waves(out) == [
        [("lookup", {"key": "a"})],
        [("lookup", {"key": "b"})],
        [("echo", {"text": "value of a"})],
    ]
    assert tools.ran == [("lookup", "a"), ("lookup", "b"), ("echo", "value of a")]
    assert out["status"] == "completed" and out["llm_calls"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_the_classic_text_form_is_read(mode):
    reply = (
        "Plan: Find a.\n#E1 = lookup[a]\n"
        "Plan: Say what a is.\n#E2 = Echo[a is #E1]\n"
        'Plan: Args as JSON.\n#E3 = echo[{"text": "json #E2"}]'
    )
    _model, graph, tools = build(mode, [reply, "It seems a is value of a."])
    out = graph.invoke(ask("What is a?"))
    assert [s["plan"] for s in out["plan"]] == ["Find a.", "Say what a is.", "Args as JSON."]
    # A tool's name written in another case is the run's tool.
    assert tools.ran == [
        ("lookup", "a"),
        ("echo", "a is value of a"),
        ("echo", "json a is value of a"),
    ]
    assert out["status"] == "completed" and out["llm_calls"] == 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"steps": [STEPS]}\n```',
        "```json\n[STEPS]\n```",
        "```\n[STEPS]\n```",
        "Here is the plan:\n```\nPlan: Find a.\n#E1 = lookup[a]\n"
        "Plan: Echo it.\n#E2 = echo[#E1]\n```",
    ],
    ids=["json-object", "json-list", "plain-fence-list", "plain-fence-classic"],
)
def test_a_plan_in_a_code_fence_is_read(mode, reply):
    objects = ", ".join(json.dumps(s) for s in (step(1, "lookup", "a"), step(2, "echo", "#E1")))
    _model, graph, tools = build(mode, [reply.replace("STEPS", objects), "It is value of a."])
    out = graph.invoke(ask("What is a?"))
    assert tools.ran == [("lookup", "a"), ("echo", "value of a")]
    assert out["evidence"] == ["value of a", "value of a"]
    assert (out["status"], out["llm_calls"]) == ("completed", 2)


@pytest.mark.parametrize("mode", MODES)
def test_nemo_agent_toolkits_nested_steps_are_read(mode):
    nested = [
        {
            "plan": "Find a.",
            "evidence": {"placeholder": "#E1", "tool": "lookup", "tool_input": "a"},
        },
        {"plan": "Echo.", "evidence": {"placeholder": "#E2", "tool": "echo", "tool_input": "#E1"}},
    ]
    _model, graph, tools = build(mode, [f"```json\n{json.dumps(nested)}\n```", "ok then"])
    graph.invoke(ask("What is a?"))
    assert tools.ran == [("lookup", "a"), ("echo", "value of a")]


@pytest.mark.parametrize("mode", MODES)
def test_an_empty_plan_goes_straight_to_the_solver(mode):
    model, graph, tools = build(mode, [planned(mode, []), "Hello there."])
    out = graph.invoke(ask("Say hello."))
    assert (out["status"], out["answer"]) == ("completed", "Hello there.")
    assert out["plan"] == [] and out["evidence"] == [] and tools.ran == []
    assert waves(out) == [] and out["llm_calls"] == 2
    assert prompts.REWOO_NO_PLAN in solver_prompt(model)


@pytest.mark.parametrize("mode", MODES)
def test_an_unreadable_plan_is_asked_for_once_more_then_the_solver_answers(mode):
    model, graph, tools = build(mode, ["no idea", "still none", "I answer anyway."])
    out = graph.invoke(ask())
    assert out["llm_calls"] == 3 == model.call_count
    assert (out["status"], out["answer"]) == ("completed", "I answer anyway.")
    assert tools.ran == []


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_that_raises_is_evidence_never_retried_nor_raised(mode):
    steps = [step(1, "explode", "now"), step(2, "echo", "after #E1")]
    model, graph, tools = build(mode, [planned(mode, steps), "It failed."])
    out = graph.invoke(ask())
    assert tools.ran[0] == ("explode", "now") and len(tools.ran) == 2  # run once
    failure = "Error: explode failed: RuntimeError: disk on fire"
    assert out["evidence"][0] == failure
    # The later step gets the failure's text in place of #E1.
    assert tools.ran[1] == ("echo", f"after {failure}")
    assert out["status"] == "completed" and out["answer"] == "It failed."
    assert failure in solver_prompt(model)


@pytest.mark.parametrize("mode", MODES)
def test_an_undefined_placeholder_is_never_passed_to_a_tool(mode):
    steps = [step(1, "lookup", "a"), step(2, "echo", "with #E5 and #E1")]
    _model, graph, tools = build(mode, [planned(mode, steps), "Partly known."])
    graph.invoke(ask())
    missing = prompts.REWOO_MISSING_EVIDENCE.format(name="#E5")
    assert tools.ran[1] == ("echo", f"with {missing} and value of a")
    assert not any("#E5" in text.replace(missing, "") for _, text in tools.ran)
    # A name only a later step writes is missing too (no waiting on the future).
    forward = [step(1, "echo", "#E2"), step(2, "lookup", "b")]
    _model, graph, tools = build(mode, [planned(mode, forward), "ok"])
    out = graph.invoke(ask())
    assert ("echo", prompts.REWOO_MISSING_EVIDENCE.format(name="#E2")) in tools.ran
    assert len(waves(out)) == 1


@pytest.mark.parametrize("mode", MODES)
def test_two_steps_writing_one_placeholder_both_run_and_a_reference_reads_the_latest(mode):
    steps = [
        step(1, "lookup", "a"),
        step(2, "echo", "first #E1"),
        step(3, "lookup", "b", name="#E1"),
        step(4, "echo", "second #E1"),
    ]
    _model, graph, tools = build(mode, [planned(mode, steps), "ok"])
    out = graph.invoke(ask())
    assert ("lookup", "a") in tools.ran and ("lookup", "b") in tools.ran
    assert ("echo", "first value of a") in tools.ran
    assert ("echo", "second value of b") in tools.ran
    assert out["evidence"] == ["value of a", "first value of a", "value of b", "second value of b"]


@pytest.mark.parametrize("mode", MODES)
def test_a_follow_up_turn_plans_and_solves_with_the_conversation_so_far(mode):
    script = [
        planned(mode, [step(1, "lookup", "plums")]),
        "Plums are value of plums.",
        planned(mode, [step(1, "lookup", "figs")]),
        "Figs too.",
    ]
    model, graph, _tools = build(mode, script, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"rewoo-follow-up-{mode}"}}
    graph.invoke(ask("What about plums?"), config)
    out = graph.invoke(ask("And figs?"), config)
    assert (out["status"], out["answer"]) == ("completed", "Figs too.")
    assert out["evidence"] == ["value of figs"] and len(out["plan"]) == 1
    for prompt in (model.prompts[2], model.prompts[3]):  # the planner's and the solver's
        said = [content_text(m.content) for m in prompt]
        assert "What about plums?" in said and "Plums are value of plums." in said
    assert "And figs?" in content_text(model.prompts[2][-1].content) + "".join(
        content_text(m.content) for m in model.prompts[2]
    )
    # No instruction of the loop is kept as a human message.
    humans = [m.content for m in out["messages"] if isinstance(m, HumanMessage)]
    assert humans == ["What about plums?", "And figs?"]


@pytest.mark.parametrize("mode", MODES)
def test_approvals_pause_before_the_calls_and_an_edit_and_a_reject_work(mode):
    steps = [step(1, "lookup", "a"), step(2, "lookup", "b"), step(3, "echo", "#E1 / #E2")]
    model, graph, tools = build(
        mode,
        [planned(mode, steps), "Only z."],
        checkpointer=InMemorySaver(),
        interrupt_before_tools=True,
    )
    config = {"configurable": {"thread_id": f"rewoo-approve-{mode}"}}
    paused = graph.invoke(ask(), config)
    assert "__interrupt__" in paused and tools.ran == []
    edit = {"type": "edit", "edited_action": {"name": "lookup", "args": {"key": "z"}}}
    reject = {"type": "reject", "message": "not b"}
    paused = graph.invoke(Command(resume={"decisions": [edit, reject]}), config)
    assert tools.ran == [("lookup", "z")]
    assert "__interrupt__" in paused  # the next wave is reviewed too
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert tools.ran[-1] == ("echo", "value of z / Rejected by the user: not b")
    assert out["evidence"][:2] == ["value of z", "Rejected by the user: not b"]
    assert "#E1 = lookup[z]" in solver_prompt(model)  # the call as it ran
    assert (out["status"], out["answer"]) == ("completed", "Only z.")
    assert out["llm_calls"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_max_tool_calls_stops_the_worker_and_the_solver_still_answers(mode):
    steps = [step(1, "lookup", "a"), step(2, "lookup", "b"), step(3, "echo", "#E1")]
    _model, graph, tools = build(mode, [planned(mode, steps), "Only a."], max_tool_calls=1)
    out = graph.invoke(ask())
    assert tools.ran == [("lookup", "a")]
    assert waves(out) == [[("lookup", {"key": "a"})]]  # the wave is cut to the budget
    assert out["evidence"] == ["value of a", prompts.REWOO_NOT_RUN, prompts.REWOO_NOT_RUN]
    assert (out["status"], out["answer"]) == ("max_iterations", "Only a.")
    assert out["llm_calls"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_the_loop_break_answers_a_repeated_step_with_the_first_ones_result(mode):
    steps = [
        step(1, "lookup", "a"),
        step(2, "lookup", "a"),  # the same call in the same wave
        step(3, "echo", "a"),
        step(4, "echo", "#E3"),  # the call of step 3 again, a wave later
    ]
    _model, graph, tools = build(mode, [planned(mode, steps), "ok"])
    out = graph.invoke(ask())
    assert tools.ran.count(("lookup", "a")) == 1 and tools.ran.count(("echo", "a")) == 1
    answered = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(answered) == 2  # the tool step answered both repeats without running them
    assert out["evidence"] == ["value of a", "value of a", "a", "a"]
    _, graph, tools = build(mode, [planned(mode, steps[:2]), "ok"], loop_break=False)
    graph.invoke(ask())
    assert tools.ran == [("lookup", "a"), ("lookup", "a")]


@pytest.mark.parametrize("mode", MODES)
def test_max_steps_cuts_a_longer_plan(mode):
    steps = [step(n, "lookup", str(n)) for n in range(1, 5)]
    _model, graph, tools = build(mode, [planned(mode, steps), "Two known."], max_steps=2)
    out = graph.invoke(ask())
    assert [s["tool_input"] for s in out["plan"]] == ["1", "2"]
    assert sorted(tools.ran) == [("lookup", "1"), ("lookup", "2")]
    assert (out["status"], out["answer"]) == ("max_iterations", "Two known.")


@pytest.mark.parametrize("mode", MODES)
def test_tool_choice_required_asks_again_for_a_plan_with_a_step(mode):
    again = planned(mode, [step(1, "lookup", "a")])
    model, graph, tools = build(mode, [planned(mode, []), again, "a."], tool_choice="required")
    out = graph.invoke(ask())
    assert tools.ran == [("lookup", "a")]
    assert out["llm_calls"] == 3
    planner = "\n".join(content_text(m.content) for m in model.prompts[0])
    assert prompts.REWOO_PLAN_MUST_CALL in planner


def test_without_tools_the_solver_answers_alone():
    model = ScriptedChatModel(replies=["Hi."])
    out = create_rewoo_graph(model).invoke(ask("hi"))
    assert (out["status"], out["answer"], out["llm_calls"]) == ("completed", "Hi.", 1)
    assert out["plan"] == []


def test_a_return_direct_tool_ends_the_run_with_its_result():
    @tool(return_direct=True)
    def finish(text: str) -> str:
        """Finish with this text."""
        return f"final: {text}"

    model = model_for("native", [planned("native", [step(1, "finish", "x")])])
    out = create_rewoo_graph(model, [finish]).invoke(ask())
    assert (out["status"], out["answer"]) == ("completed", "final: x")
    assert out["llm_calls"] == 1


def test_the_plans_schema_bounds_the_steps_and_names_the_tools():
    model, graph, _ = build("json", [planned("json", [step(1, "lookup", "a")]), "ok"], max_steps=3)
    graph.invoke(ask())
    schema = json.dumps(model.schemas[0])
    assert '"maxItems": 3' in schema and '"lookup"' in schema and '"explode"' in schema


# --- the budget ------------------------------------------------------------------------


def capped(text: str) -> AIMessage:
    return AIMessage(text, response_metadata={"finish_reason": "length"})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "reply",
    [
        "garbage #E1 = [",
        capped("Plan: #E1 = lookup[a"),
        calls(tool_call("lookup", {"key": "a"})),
        AIMessage(""),
    ],
    ids=["garbage", "cut", "tool-call", "empty"],
)
def test_a_hostile_model_stays_within_the_budget(mode, reply):
    model, graph, _ = build(mode, [reply], model_kwargs={"repeat_last": True})
    out = graph.invoke(ask())
    assert out["llm_calls"] == model.call_count <= call_budget(LOOP.defaults) == 4
    assert out["status"] in ("completed", "max_iterations", "error")
    if out["status"] == "error":
        assert out["error"].startswith("no usable answer")


@pytest.mark.parametrize("limit", range(2, 16))
def test_a_small_recursion_limit_ends_the_run_without_raising(limit):
    steps = [step(1, "lookup", "a"), step(2, "echo", "#E1"), step(3, "echo", "#E2")]
    _, graph, _ = build("native", [planned("native", steps), "Done."])
    try:
        out = graph.invoke(ask(), {"recursion_limit": limit})
    except GraphRecursionError:  # pragma: no cover - the failure this test is for
        pytest.fail(f"recursion_limit={limit} raised")
    assert out["status"] in ("completed", "max_iterations")
    if out["status"] == "completed":
        assert out["answer"] == "Done." and len(waves(out)) == 3


def test_a_cut_answer_is_asked_for_once_more_then_ends_without_one():
    plan = planned("native", [step(1, "lookup", "a")])
    model, graph, _ = build("native", [plan, capped("It is"), capped("It is")])
    out = graph.invoke(ask())
    assert (out["status"], out["answer"], out["llm_calls"]) == ("max_iterations", "", 3)
    assert prompts.SHORT_ANSWER in content_text(model.prompts[2][-1].content)


# --- the build -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"max_steps": 0}, ValueError, "max_steps must be >= 1"),
        ({"max_steps": "3"}, TypeError, "max_steps must be an int"),
        ({"parallel_steps": 1}, TypeError, "parallel_steps must be True or False"),
        ({"max_step": 3}, TypeError, "max_step"),
    ],
)
def test_bad_keywords_name_themselves(options, error, text):
    with pytest.raises(error, match=text):
        create_rewoo_graph(ScriptedChatModel(replies=[]), Tools().all, **options)


def test_the_registry_builds_it_by_name():
    model = model_for("native", [planned("native", [step(1, "lookup", "a")]), "ok"])
    out = build_loop("rewoo", model, Tools().all).invoke(ask())
    assert out["status"] == "completed"


def test_graph_drawing_snapshot():
    drawing = create_rewoo_graph(ScriptedChatModel(replies=[])).get_graph().draw_mermaid()
    assert drawing == (SNAPSHOTS / "rewoo.mmd").read_text()


# --- approvals by middleware ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_human_in_the_loop_middleware_reviews_every_wave(mode):
    """Its ``after_model`` hook reads model replies only: the loop's own calls pause in
    the kit's review with the middleware's ``interrupt_on``."""
    steps = [step(1, "lookup", "a"), step(2, "echo", "#E1"), step(3, "explode", "x")]
    approval = HumanInTheLoopMiddleware(
        interrupt_on={"lookup": True, "explode": {"allowed_decisions": ["reject"]}}
    )
    _model, graph, tools = build(
        mode, [planned(mode, steps), "Done."], checkpointer=InMemorySaver(), middleware=[approval]
    )
    config = {"configurable": {"thread_id": f"rewoo-hitl-{mode}"}}
    paused = graph.invoke(ask(), config)
    (interrupt,) = paused["__interrupt__"]
    names = [action["name"] for action in interrupt.value["action_requests"]]
    assert names == ["lookup", "explode"] and tools.ran == []
    reviews = interrupt.value["review_configs"]
    assert reviews[1]["allowed_decisions"] == ["reject"]
    edit = {"type": "edit", "edited_action": {"name": "lookup", "args": {"key": "z"}}}
    out = graph.invoke(Command(resume={"decisions": [edit, {"type": "reject"}]}), config)
    # echo is not reviewed: the second wave runs without a pause.
    assert tools.ran == [("lookup", "z"), ("echo", "value of z")]
    assert out["evidence"][2].startswith("Rejected by the user")
    assert (out["status"], out["answer"]) == ("completed", "Done.")


def test_a_human_in_the_loop_middleware_per_call_reviews_in_the_tool_step():
    steps = [step(1, "lookup", "a")]
    approval = HumanInTheLoopMiddleware(interrupt_on={"lookup": True}, interrupt_mode="per_call")
    _model, graph, tools = build(
        "native",
        [planned("native", steps), "Done."],
        checkpointer=InMemorySaver(),
        middleware=[approval],
    )
    config = {"configurable": {"thread_id": "rewoo-hitl-per-call"}}
    paused = graph.invoke(ask(), config)
    assert "__interrupt__" in paused and tools.ran == []
    assert "review" not in graph.get_graph().nodes  # the middleware's own pause
    (interrupt,) = paused["__interrupt__"]
    out = graph.invoke(Command(resume={interrupt.id: {"type": "approve"}}), config)
    assert tools.ran == [("lookup", "a")] and out["status"] == "completed"


# --- a small model ----------------------------------------------------------------------


class Stops(BaseCallbackHandler):
    """Records the ``stop`` sequences each model request was sent with."""

    def __init__(self) -> None:
        self.stops: list[Any] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.stops.append((kwargs.get("invocation_params") or {}).get("stop"))


def test_a_small_model_writes_short_inputs_and_a_one_line_answer(monkeypatch):
    monkeypatch.setattr(rewoo_steps, "needs_guided_steps", lambda model: True)
    model, graph, _ = build("json", [planned("json", [step(1, "lookup", "a")]), "It is a."])
    stops = Stops()
    out = graph.invoke(ask(), {"callbacks": [stops]})
    assert out["status"] == "completed"
    assert stops.stops == [None, ["\n"]]  # the plan as the grammar ends it; the answer's line
    (schema,) = model.schemas
    written = json.dumps(schema)
    assert '"tool_input": {"description"' in written and '"maxLength": 100' in written
