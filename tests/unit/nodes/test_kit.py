"""The loop kit (``loopgraphs.nodes``) on its own: declaring a loop, wiring it, the nodes,
and the errors that say how to fix a bad declaration or a bad call."""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Literal

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import PrivateAttr
from typing_extensions import TypedDict

from loopgraphs import build_loop
from loopgraphs.graphs import registry
from loopgraphs.nodes import (
    END,
    LogicOf,
    LoopBuild,
    LoopOptions,
    LoopSpec,
    LoopState,
    Option,
    RunResult,
    Step,
    ToolLoopOptions,
    Value,
    Verdict,
    act,
    evaluate,
    generate,
    parse,
    prompt_message,
    read_action,
    reask_for,
    reflect,
    score_branches,
    tool_calls,
)
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.plan import count_steps
from loopgraphs.prompts import NO_ANSWER, SHORT_ANSWER
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call

QUESTION = {"messages": [HumanMessage("What is 6 * 7?")]}


class EchoOptions(LoopOptions[Any, Any], total=False):
    rounds: Annotated[int, Option(2, "Rounds.", minimum=1, maximum=5)]
    style: Annotated[Literal["short", "long"], Option("short", "How to answer.")]


class EchoState(LoopState, total=False):
    said: list[str]


class EchoOutput(RunResult[Any]):
    said: list[str]


def answer(state: EchoState, step: Step[EchoOptions]) -> LogicOf[EchoState]:
    turn = yield from generate(step, state, [prompt_message(state, "Answer: 6 * 7")])
    return {
        **turn.spent,
        "said": [turn.text],
        "answer": turn.text,
        "status": "completed",
        "messages": turn.messages,
    }


def wire_echo(loop: LoopBuild[EchoOptions]) -> None:
    loop.start("answer")
    loop.step("answer", answer, model=True, then=END)


def echo_spec(**changes: Any) -> LoopSpec[EchoOptions]:
    fields: dict[str, Any] = {
        "name": "echo",
        "wire": wire_echo,
        "state": EchoState,
        "output": EchoOutput,
        "options": EchoOptions,
        "summary": "answers once",
        "takes_tools": False,
        "budget_option": "rounds",
        **changes,
    }
    return LoopSpec(**fields)


def scripted(*replies: Any, **kwargs: Any) -> ScriptedChatModel:
    profile = {"tool_calling": True, "structured_output": True}
    return ScriptedChatModel(replies=list(replies), profile=profile, **kwargs)


def test_a_loop_of_the_kit_runs_and_returns_what_every_loop_returns():
    model = scripted("42")
    out = echo_spec().create(model).invoke(QUESTION)
    assert (out["status"], out["answer"], out["said"], out["llm_calls"]) == (
        "completed",
        "42",
        ["42"],
        1,
    )
    assert out["messages"][-1].content == "42"


def test_keywords_are_checked_against_their_option():
    spec = echo_spec()
    with pytest.raises(ValueError, match="echo: rounds must be >= 1; got 0"):
        spec.create(scripted(), rounds=0)
    with pytest.raises(ValueError, match="rounds must be <= 5"):
        spec.create(scripted(), rounds=9)
    with pytest.raises(TypeError, match="rounds must be an int; got '2'"):
        spec.create(scripted(), rounds="2")
    with pytest.raises(ValueError, match="style must be one of 'short', 'long'; got 'tiny'"):
        spec.create(scripted(), style="tiny")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'round'.*accepted: rounds"):
        spec.create(scripted(), round=3)
    with pytest.raises(TypeError, match="echo takes no tools"):
        spec.create(scripted(), [calls])


def test_a_required_keyword_missing_is_named():
    class Needs(LoopOptions[Any, Any], total=False):
        depth: Annotated[int, Option(doc="How deep.")]

    spec = echo_spec(options=Needs, budget_option="depth")
    with pytest.raises(TypeError, match="missing keyword 'depth' \\(an int\\): pass depth="):
        spec.create(scripted())
    assert spec.step("answer", scripted(), depth=2).options == {"depth": 2}


def test_a_keyword_without_an_option_says_how_to_declare_it():
    class Bare(LoopOptions[Any, Any], total=False):
        depth: int

    with pytest.raises(
        TypeError, match=r"Bare.depth has no Option: declare it as depth: Annotated"
    ):
        echo_spec(options=Bare, budget_option="depth")


def test_options_must_extend_the_shared_options():
    class Alone(TypedDict, total=False):
        rounds: Annotated[int, Option(1)]

    with pytest.raises(TypeError, match="Alone must extend LoopOptions"):
        echo_spec(options=Alone)
    with pytest.raises(TypeError, match="must extend ToolLoopOptions"):
        echo_spec(takes_tools=True)


def test_a_state_without_the_kits_keys_names_the_base_to_extend():
    class Lonely(TypedDict, total=False):
        said: list[str]

    with pytest.raises(TypeError, match=r"its state Lonely lacks .*scratch.*LoopState"):
        echo_spec(state=Lonely)
    with pytest.raises(TypeError, match=r"its output Lonely lacks .*RunResult"):
        echo_spec(output=Lonely)


def test_a_budget_keyword_the_loop_does_not_declare_is_refused():
    with pytest.raises(ValueError, match="'turns' is not one of its keywords \\(rounds, style\\)"):
        echo_spec(budget_option="turns")
    with pytest.raises(ValueError, match="an identifier"):
        echo_spec(name="my loop")


def test_a_build_without_a_start_says_to_add_one():
    def no_start(loop: LoopBuild[EchoOptions]) -> None:
        loop.step("answer", answer, model=True, then=END)

    with pytest.raises(ValueError, match=r"added no start; call loop.start\('<first step>'\)"):
        echo_spec(wire=no_start).create(scripted())


@pytest.mark.parametrize("name", ["call_tool", "review", "prepare", "finish", "stopped"])
def test_the_kits_step_names_are_kept_for_the_kit(name):
    """Also the names of the nodes middleware hooks add (``finish``, ``stopped``): a step
    named so is refused when the loop is built, with or without middleware."""

    def clash(loop: LoopBuild[EchoOptions]) -> None:
        loop.start(name)
        loop.step(name, answer, then=END)

    with pytest.raises(ValueError, match=f"'{name}' is the name of a kit step"):
        echo_spec(wire=clash).create(scripted())


def test_a_tool_step_needs_a_loop_that_takes_tools():
    def tools_anyway(loop: LoopBuild[EchoOptions]) -> None:
        loop.start("answer")
        loop.step("answer", answer, then=END)
        loop.tool_step("answer")

    with pytest.raises(ValueError, match="takes no tools: declare it with takes_tools=True"):
        echo_spec(wire=tools_anyway).create(scripted())


def test_the_factory_shows_the_loops_keywords_with_their_defaults():
    spec = echo_spec()

    @spec.factory
    def create_echo_graph(model: Any, **options: Any) -> Any:
        return spec.create(model, **options)

    parameters = inspect.signature(create_echo_graph).parameters
    assert [(p.name, p.default) for p in parameters.values()][:3] == [
        ("model", inspect.Parameter.empty),
        ("rounds", 2),
        ("style", "short"),
    ]
    assert spec.public_factory is create_echo_graph


def test_register_loop_adds_a_loop_and_refuses_a_second_of_the_same_name(monkeypatch):
    for table in (registry.LOOP_SPECS, registry.LOOPS):
        monkeypatch.setitem(table, "echo", None)
        del table["echo"]
    spec = registry.register_loop(echo_spec())
    assert build_loop("echo", scripted("7")).invoke(QUESTION)["answer"] == "7"
    assert build_loop(spec, scripted("8")).invoke(QUESTION)["answer"] == "8"
    assert registry.register_loop(echo_spec()) is not spec  # the same loop defined again

    def other(loop: LoopBuild[EchoOptions]) -> None:
        wire_echo(loop)

    with pytest.raises(ValueError, match="a loop named 'echo' is registered already"):
        registry.register_loop(echo_spec(wire=other))
    with pytest.raises(TypeError, match=r"register_loop takes a loopgraphs\.nodes\.LoopSpec"):
        registry.register_loop("echo")  # type: ignore[arg-type]


def test_steps_are_counted_on_the_wiring_with_each_hook_node():
    wiring = {"prepare": ["turn"], "turn": ["tools", "finish"], "tools": ["turn"], "finish": [END]}
    counts = count_steps(wiring, {"turn": 3})
    assert counts["turn"].round == 4  # turn (with its two hook nodes), tools
    assert counts["turn"].finish == 1
    assert counts["turn"].another_round == 5
    assert counts["prepare"].shortest_finish == 4


def test_a_running_steps_own_after_hooks_count_in_its_finish():
    wiring = {"prepare": ["turn"], "turn": ["tools", "finish"], "tools": ["turn"], "finish": [END]}
    counts = count_steps(wiring, {"turn": 3}, {"turn": 1})
    assert counts["turn"].round == 4  # its hooks come round with it
    assert (counts["turn"].finish, counts["turn"].shortest_finish) == (2, 2)
    assert counts["turn"].another_round == 6
    assert counts["prepare"].shortest_finish == 4  # the turn's hooks in its weight


def test_a_plain_function_step_and_a_literal_router():
    def count(state: EchoState, step: Step[EchoOptions]) -> EchoState:
        return {"said": [*state.get("said", []), "x"]}

    def again(state: EchoState, step: Step[EchoOptions]) -> Literal["count", "__end__"]:
        return "count" if len(state.get("said", [])) < step.options["rounds"] else END

    def wire(loop: LoopBuild[EchoOptions]) -> None:
        loop.start("count")
        loop.step("count", count, then=again)

    out = echo_spec(wire=wire).create(scripted()).invoke(QUESTION, {"recursion_limit": 50})
    assert out["said"] == ["x", "x"]


def test_prompt_message_carries_the_requests_images_in_both_forms():
    image = {"type": "image", "url": "https://example.com/cat.png"}
    legacy = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    state = {"messages": [HumanMessage([{"type": "text", "text": "What is it?"}, image, legacy])]}
    message = prompt_message(state, "Describe the request.")
    assert message.content == [{"type": "text", "text": "Describe the request."}, image, legacy]
    assert prompt_message(QUESTION, "Plain.").content == "Plain."


def kit_step(model: ScriptedChatModel) -> Step[EchoOptions]:
    return echo_spec().step("answer", model)


def test_generate_asks_once_more_after_a_cut_reply_and_keeps_both_replies():
    cut = AIMessage("The answer is", response_metadata={"finish_reason": "length"})
    model = scripted(cut, "42")
    turn = run_sync(generate(kit_step(model), QUESTION, QUESTION["messages"]), {})
    assert turn.text == "42" and turn.spent["llm_calls"] == 2
    assert [m.content for m in turn.messages] == ["The answer is", "42"]
    asked_again = model.prompts[1][-1]
    assert isinstance(asked_again, HumanMessage) and "short" in asked_again.content.lower()


def test_reask_for_names_the_reask_generate_sends():
    cut = AIMessage("The answer is", response_metadata={"finish_reason": "length"})
    assert reask_for(cut) == SHORT_ANSWER
    assert reask_for(AIMessage("")) == NO_ANSWER
    assert reask_for(calls(tool_call("multiply", {"a": 6, "b": 7}))) is None
    assert reask_for(AIMessage("42")) is None


def test_an_internal_turn_is_kept_out_of_the_thread():
    model = scripted("a plan")
    turn = run_sync(generate(kit_step(model), QUESTION, QUESTION["messages"], purpose="plan"), {})
    assert turn.text == "a plan" and turn.messages == []


def test_parse_reads_with_a_reader_and_asks_once_more():
    model = scripted("no idea", "NUMBER: 42")

    def number(text: str) -> int | None:
        return int(text.split(":")[1]) if text.startswith("NUMBER:") else None

    parsed = run_sync(parse(kit_step(model), QUESTION, QUESTION["messages"], reader=number), {})
    assert (parsed.value, parsed.level, parsed.spent["llm_calls"]) == (42, "reader", 2)
    with pytest.raises(TypeError, match="exactly one of them"):
        run_sync(parse(kit_step(model), QUESTION, QUESTION["messages"]), {})


def test_parse_reads_a_schema_through_the_ladder():
    model = scripted('{"score": 7, "reason": "close"}')
    parsed = run_sync(parse(kit_step(model), QUESTION, QUESTION["messages"], schema=Value), {})
    assert parsed.value == Value(score=7, reason="close") and parsed.ok


def test_parse_returns_the_providers_refusal_of_every_level_when_asked_to():
    refusal = ProviderError(400, "this model does not support tools")
    asked = QUESTION["messages"]
    kept = parse(
        kit_step(scripted(refusal)), QUESTION, asked, schema=Value, levels=["native"], max_calls=1
    )
    with pytest.raises(ProviderError):
        run_sync(kept, {})
    step = kit_step(scripted(refusal))
    returned = parse(step, QUESTION, asked, schema=Value, levels=["native"], raise_refused=False)
    parsed = run_sync(returned, {})
    assert (parsed.value, parsed.level, parsed.refused) == (None, "refused", ["native"])
    assert parsed.spent["llm_calls"] == 1 and not parsed.replies


def test_evaluate_gives_a_verdict_or_a_value_and_reflect_a_lesson():
    model = scripted(
        '{"satisfactory": false, "feedback": "wrong product"}',
        "SCORE: 3",
        "",
    )
    step = kit_step(model)
    verdict = run_sync(evaluate(step, QUESTION, "41"), {})
    assert verdict.value == Verdict(satisfactory=False, feedback="wrong product")
    value = run_sync(evaluate(step, QUESTION, "41", schema=Value, max_calls=1), {})
    assert value.value is not None and value.value.score == 3
    lesson = run_sync(reflect(step, QUESTION, "41", "wrong product"), {})
    assert "wrong product" in lesson.text and lesson.spent["llm_calls"] == 1
    with pytest.raises(TypeError, match="no prompt for Scores"):
        from loopgraphs.nodes.judging import Scores

        run_sync(evaluate(step, QUESTION, "41", schema=Scores), {})


def test_evaluate_and_reflect_send_the_candidates_images_after_the_prompt():
    chart = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    model = scripted('{"satisfactory": false, "feedback": "misread"}', "Read the axis.")
    step = kit_step(model)
    run_sync(evaluate(step, QUESTION, "the chart shows 3", media=[chart]), {})
    run_sync(reflect(step, QUESTION, "the chart shows 3", "misread", media=[chart]), {})
    for prompt in model.prompts:
        asked = prompt[-1]
        assert isinstance(asked, HumanMessage) and asked.content[1:] == [chart]


@pytest.mark.parametrize("batched", [True, False])
def test_score_branches_in_one_call_or_one_each(batched):
    replies = ['{"scores": [2, 9]}'] if batched else ['{"score": 2}', '{"score": 9}']
    model = scripted(*replies)
    scored = run_sync(
        score_branches(
            kit_step(model),
            QUESTION,
            ["forty", "forty-two"],
            ask_all=lambda options: "Score: " + ", ".join(options),
            ask_one=lambda option: f"Score: {option}",
            batched=batched,
        ),
        {},
    )
    assert sorted(scored.scores) == [2, 9] and scored.spent["llm_calls"] == (1 if batched else 2)


class ToolLoopState(LoopState, total=False):
    turns: int


class LookOptions(ToolLoopOptions[Any, Any], total=False):
    turns: Annotated[int, Option(3, "Turns.", minimum=1)]


def look(state: ToolLoopState, step: Step[LookOptions]) -> LogicOf[ToolLoopState]:
    turn = yield from act(step, state, list(state["messages"]))
    reading = read_action(step, state, turn)
    update: ToolLoopState = {**turn.spent, "messages": [reading.message]}
    if reading.outcome == "final":
        update.update(answer=reading.answer, status="completed")
    return update


def after_look(state: ToolLoopState, step: Step[LookOptions]) -> Any:
    return tool_calls(state, step) or END


def wire_look(loop: LoopBuild[LookOptions]) -> None:
    loop.start("look")
    loop.step("look", look, model=True, calls_tools=True, then=after_look, targets=[END])
    loop.tool_step("look")


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def look_spec() -> LoopSpec[LookOptions]:
    return LoopSpec(
        "look",
        wire_look,
        state=ToolLoopState,
        output=EchoOutput,
        options=LookOptions,
        summary="calls tools",
        budget_option="turns",
    )


class TemperedModel(ScriptedChatModel):
    """A scripted model with a sampling temperature, recording the one each request had."""

    temperature: float = 0.0
    _temperatures: list[float] = PrivateAttr(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        self._temperatures.append(kwargs.get("temperature", self.temperature))
        return super()._generate(messages, stop, run_manager, **kwargs)


class Tags(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.tags.append(list(kwargs.get("tags") or []))


@pytest.mark.parametrize("mode", ["native", "json", "text"])
def test_an_internal_act_turn_takes_model_settings_and_stays_out_of_the_thread(mode):
    profile = {
        "native": {"tool_calling": True, "structured_output": True},
        "json": {"tool_calling": False, "structured_output": True},
        "text": {"tool_calling": False, "structured_output": False},
    }[mode]
    model = TemperedModel(replies=["FINAL_ANSWER: 42"], repeat_last=True, profile=profile)
    step = look_spec().step("look", model, [multiply], tool_mode=mode)
    state = {**QUESTION, "tool_mode": mode}
    tags = Tags()
    turn = run_sync(
        act(
            step,
            state,
            QUESTION["messages"],
            purpose="expansion",
            model_settings={"temperature": 0.9},
        ),
        {"callbacks": [tags]},
    )
    assert turn.messages == [] and turn.tool_mode == mode
    assert model._temperatures == [0.9]
    assert all("nostream" in sent for sent in tags.tags)
    chat = run_sync(act(step, state, QUESTION["messages"]), {})
    assert chat.messages == [chat.reply] and model._temperatures[-1] == 0.0


def test_a_temperature_is_sent_only_to_a_model_that_takes_one():
    from langchain_openai import ChatOpenAI

    from loopgraphs.models import takes_temperature

    assert takes_temperature(ChatOpenAI(model="gpt-4o-mini", api_key="x"))
    assert takes_temperature(ChatOpenAI(model="gpt-5-chat-latest", api_key="x"))
    assert not takes_temperature(ChatOpenAI(model="o3-mini", api_key="x"))
    assert not takes_temperature(ChatOpenAI(model="gpt-5", api_key="x"))
    assert not takes_temperature(ChatOpenAI(model="gpt-4o", api_key="x", reasoning_effort="low"))
    assert not takes_temperature(scripted())
    assert takes_temperature(TemperedModel(replies=[]).bind(stop=["x"]))


def test_a_users_tool_loop_gets_the_tool_step_and_approvals():
    model = scripted(calls(tool_call("multiply", {"a": 6, "b": 7}, id="m1")), "42")
    graph = look_spec().create(
        model, [multiply], interrupt_before_tools=True, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke(QUESTION, config)
    asked = paused["__interrupt__"][0].value["action_requests"]
    assert [(a["name"], a["args"]) for a in asked] == [("multiply", {"a": 6, "b": 7})]
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert (out["status"], out["answer"]) == ("completed", "42")
    result = next(m for m in out["messages"] if m.type == "tool")
    assert "42" in result.content


def judge(state: ToolLoopState, step: Step[LookOptions]) -> LogicOf[ToolLoopState]:
    verdict = yield from evaluate(step, state, "42")
    return {**verdict.spent, "answer": "42", "status": "completed"}


def wire_look_then_judge(loop: LoopBuild[LookOptions]) -> None:
    loop.start("look")
    loop.step("look", look, model=True, calls_tools=True, then=after_look, targets=[END])
    loop.tool_step("judge")
    loop.step("judge", judge, model=True, then=END)


def test_an_after_model_hook_of_a_step_that_adds_no_reply_sees_an_empty_one():
    """``judge``'s call is internal: its after_model hook must not take ``look``'s calls,
    which the tools answered, for its reply (a review would ask about them again)."""
    from langchain.agents.middleware import after_model

    from loopgraphs.nodes.own_reply import NO_REPLY_ID

    seen: list[list[str]] = []

    @after_model
    def record(state: Any, runtime: Any) -> None:
        last = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        seen.append([call["name"] for call in last.tool_calls])

    model = scripted(
        calls(tool_call("multiply", {"a": 6, "b": 7}, id="m1")),
        '{"satisfactory": true, "feedback": ""}',
    )
    spec = LoopSpec(
        "look_then_judge",
        wire_look_then_judge,
        state=ToolLoopState,
        output=EchoOutput,
        options=LookOptions,
        summary="calls a tool, then judges",
        budget_option="turns",
    )
    out = spec.create(model, [multiply], middleware=[record]).invoke(QUESTION)
    assert out["status"] == "completed" and seen == [["multiply"], []]
    assert all(message.id != NO_REPLY_ID for message in out["messages"])


def test_a_kit_node_called_outside_a_loops_step_says_where_its_step_comes_from():
    with pytest.raises(TypeError, match=r"generate\(step, state, ...\): step must be the Step"):
        run_sync(generate({"messages": []}, QUESTION, []), {})  # type: ignore[arg-type]


def test_the_tool_step_in_a_graph_without_messages_names_what_the_state_needs():
    from langgraph.graph import START, StateGraph

    from loopgraphs.nodes import call_tool
    from loopgraphs.nodes.settings import make_settings

    class Bare(TypedDict, total=False):
        notes: list[str]

    settings = make_settings("bare", scripted(), [multiply], {})
    graph = StateGraph(Bare)
    graph.add_node("call_tool", call_tool(settings))
    graph.add_edge(START, "call_tool")
    with pytest.raises(ValueError, match="state has no 'messages' \\(its keys: notes\\)"):
        graph.compile().invoke({"notes": ["x"]})
