"""The loop's instructions to the model never become turns of the conversation.

When a reply cannot be used (cut at the token cap, no answer, no tool call where one is
required, an unreadable action, no follow-up, the budget spent), a loop asks the model
again. The re-ask goes into the request that needs it and nowhere else: every human
message of the thread is one the caller sent, no message of the thread holds a re-ask,
and the next turn's requests hold none. The model's replies, the unusable ones too, stay
in the thread as its own messages. The call counts are those of the loop's budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from loopgraphs import (
    create_cot_graph,
    create_critic_graph,
    create_plan_execute_graph,
    create_react_graph,
    create_reflexion_graph,
    create_self_ask_graph,
    create_tot_graph,
    prompts,
)
from loopgraphs.nodes import grounding
from loopgraphs.nodes.generate import RAW_REPLY
from loopgraphs.nodes.parsing.text import content_text
from tests.behaviour.test_custom_state import satisfied, structured
from tests.support.scripts import FAST_RETRY, act, critique, final, follow_up, model_for, note

REQUIRED_AGAIN = prompts.CRITIQUE_REQUIRED_AGAIN.format(tool="a tool")
REASKS = (
    prompts.SHORT_ANSWER,
    prompts.NO_ANSWER,
    prompts.REQUIRE_TOOL,
    prompts.REFORMAT_ACTION,
    prompts.FORCE_FINAL_ANSWER,
    prompts.SELF_ASK_REQUIRE_FOLLOW_UP,
    prompts.SELF_ASK_CONTINUE,
    prompts.SELF_ASK_CONTINUE_SOLO,
    prompts.SELF_ASK_FORCE_FINAL,
    REQUIRED_AGAIN,
)
RAMBLING = "The order is A-17 " + "and so on " * 60
REASK_NAMES = {getattr(prompts, name): name for name in dir(prompts) if name.isupper()}
REASK_NAMES[REQUIRED_AGAIN] = "CRITIQUE_REQUIRED_AGAIN"


def cut(reply: Any) -> AIMessage:
    """The reply, stopped at the token cap."""
    message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
    return message.model_copy(update={"response_metadata": {"finish_reason": "length"}})


@dataclass
class Scenario:
    """A run whose replies make the loop re-ask: ``reasks`` maps a call's index to the
    re-ask its request ends with."""

    loop: str
    mode: str
    replies: list[Any]
    reasks: dict[int, str]
    options: dict[str, Any] = field(default_factory=dict)
    guided: bool = False

    @property
    def id(self) -> str:
        kinds = "+".join(REASK_NAMES[reask] for reask in self.reasks.values())
        return f"{self.loop}-{self.mode}-{kinds or 'none'}{'-guided' if self.guided else ''}"

    def follow_up_turn(self) -> list[Any]:
        """Replies for a later turn on the thread, which re-asks nothing."""
        mode, said = self.mode, "It was A-17."
        required = self.options.get("tool_choice") == "required"
        if self.loop == "react":
            return [*([act(mode, "note", {"text": "y"})] if required else []), final(mode, said)]
        if self.loop == "self_ask" and self.guided:
            return [guided_ask(mode), "A-17", guided_final(mode, said)]
        if self.loop == "self_ask":
            asked = [follow_up(mode, "y")] if required else []
            return [*asked, f"So the final answer is: {said}"]
        if self.loop == "critic":
            return [said, critique(mode, "y"), said] if required else [said, "VERIFIED"]
        if self.loop == "plan_execute":
            return [structured(mode, "Plan", {"steps": ["Say it."]}), final(mode, said), said]
        if self.loop == "reflexion":
            return [final(mode, said), satisfied(mode)]
        if self.loop == "cot":
            return [f"FINAL ANSWER: {said}"]
        return ["1. Recall.", structured(mode, "Scores", {"scores": [7]}), f"ANSWER: {said}"]


def scenarios() -> list[Scenario]:
    found: list[Scenario] = []
    for mode in ("native", "json", "text"):
        done = final(mode, "A-17")
        found += [
            Scenario("react", mode, [cut(final(mode, RAMBLING)), done], {1: prompts.SHORT_ANSWER}),
            Scenario(
                "react",
                mode,
                [act(mode, "note", {"text": "x"}), final(mode, prompts.CHAT_SYSTEM), done],
                {2: prompts.NO_ANSWER},
            ),
            Scenario(
                "react",
                mode,
                [act(mode, "note", {"text": "x"}), done],
                {1: prompts.FORCE_FINAL_ANSWER},
                {"max_iterations": 1},
            ),
            Scenario(
                "self_ask",
                mode,
                [cut(f"So the final answer is: {RAMBLING}"), "So the final answer is: A-17"],
                {1: prompts.SHORT_ANSWER},
            ),
            Scenario(
                "self_ask",
                mode,
                [
                    follow_up(mode, "x"),
                    "Intermediate answer: noted.",
                    "So the final answer is: A-17",
                ],
                {2: prompts.SELF_ASK_CONTINUE},
            ),
            Scenario(
                "self_ask",
                mode,
                [follow_up(mode, "x"), "So the final answer is: A-17"],
                {1: prompts.SELF_ASK_FORCE_FINAL},
                {"max_follow_ups": 1},
            ),
            Scenario(
                "critic",
                mode,
                [cut(RAMBLING), "A-17", critique(mode, "A-17"), cut(RAMBLING), "A-17"],
                {1: prompts.SHORT_ANSWER, 4: prompts.SHORT_ANSWER},
            ),
            Scenario(
                "plan_execute",
                mode,
                [
                    structured(mode, "Plan", {"steps": ["Note the order.", "Answer."]}),
                    act(mode, "note", {"text": "x"}),
                    final(mode, "noted"),
                    final(mode, "A-17"),
                    cut(RAMBLING),
                    "A-17",
                ],
                {2: prompts.FORCE_FINAL_ANSWER, 5: prompts.SHORT_ANSWER},
                {"max_step_iterations": 1, "max_steps": 2},
            ),
            Scenario(
                "reflexion",
                mode,
                [cut(final(mode, RAMBLING)), done, satisfied(mode)],
                {1: prompts.SHORT_ANSWER},
            ),
            Scenario("cot", mode, [cut(RAMBLING), "FINAL ANSWER: A-17"], {1: prompts.SHORT_ANSWER}),
            Scenario(
                "tot",
                mode,
                ["1. Look it up.", structured(mode, "Scores", {"scores": [7]}), "ANSWER: A-17"],
                {},
            ),
        ]
    for mode in ("json", "text"):
        required = {"tool_choice": "required"}
        found += [
            Scenario(
                "react",
                mode,
                [final(mode, "A-17"), act(mode, "note", {"text": "x"}), final(mode, "A-17")],
                {1: prompts.REQUIRE_TOOL},
                required,
            ),
            Scenario(
                "self_ask",
                mode,
                [
                    "So the final answer is: A-17",
                    follow_up(mode, "x"),
                    "So the final answer is: A-17",
                ],
                {1: prompts.SELF_ASK_REQUIRE_FOLLOW_UP},
                required,
            ),
            Scenario(
                "self_ask",
                mode,
                [
                    guided_ask(mode),
                    "A-17",
                    guided_ask(mode),  # asked again: the answer comes next
                    cut(RAMBLING),
                    guided_final(mode),
                ],
                {4: prompts.SHORT_ANSWER},
                guided=True,
            ),
        ]
    found += [
        Scenario(
            "react",
            "json",
            ["no action here", final("json", "A-17")],
            {1: prompts.REFORMAT_ACTION},
        ),
        Scenario(
            "critic",
            "text",
            ["A-17", "Nothing to check.", critique("text", "A-17"), "A-17"],
            {2: REQUIRED_AGAIN},
            {"tool_choice": "required"},
        ),
        Scenario(
            "self_ask",
            "native",
            [
                "Are follow up questions needed here? Yes.\nFollow up: Which order?",
                "Intermediate answer: A-17\nSo the final answer is: A-17",
            ],
            {1: prompts.SELF_ASK_CONTINUE_SOLO},
            {"tools": []},
        ),
    ]
    return found


def guided_ask(mode: str) -> str:
    if mode == "json":
        return '{"follow_up": "Which order is it?", "tool": "note"}'
    return "Follow up: Which order is it?"


def guided_final(mode: str, answer: str = "A-17") -> str:
    if mode == "json":
        return f'{{"final_answer": "{answer}"}}'
    return f"So the final answer is: {answer}"


def graph_for(case: Scenario, model: Any) -> Any:
    options: dict[str, Any] = {
        "retry_policy": FAST_RETRY,
        "checkpointer": InMemorySaver(),
        **case.options,
    }
    factory = {
        "cot": create_cot_graph,
        "tot": create_tot_graph,
        "react": create_react_graph,
        "plan_execute": create_plan_execute_graph,
        "reflexion": create_reflexion_graph,
        "self_ask": create_self_ask_graph,
        "critic": create_critic_graph,
    }[case.loop]
    if case.loop == "cot":
        return factory(model, **options)
    if case.loop == "tot":
        return factory(model, n_branches=1, beam_width=1, max_depth=1, **options)
    tools = options.pop("tools", [note])
    if case.loop == "critic":
        options.setdefault("max_critique_rounds", 1)
    return factory(model, tools, tool_mode=case.mode, **options)


def reasks_in(message: BaseMessage) -> list[str]:
    """The re-asks a message holds, as its text or as the text its model wrote."""
    texts = [content_text(message.content), str(message.additional_kwargs.get(RAW_REPLY, ""))]
    return [reask for reask in REASKS for text in texts if reask in text]


@pytest.fixture
def small_model(monkeypatch):
    """Treat every model as the embedded small model: Self-Ask is guided in json and
    text modes."""
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")


@pytest.mark.parametrize("case", scenarios(), ids=lambda case: case.id)
def test_a_reask_reaches_the_model_and_never_the_thread(case, request):
    if case.guided:
        request.getfixturevalue("small_model")
    later = case.follow_up_turn()
    model = model_for(case.mode, [*case.replies, *later])
    graph = graph_for(case, model)
    config = {"configurable": {"thread_id": case.id}}
    sent = [HumanMessage("Which order is it?", id="ask-1")]
    out = graph.invoke({"messages": sent}, config)
    assert out["answer"] == "A-17", out.get("error")
    assert out["llm_calls"] == model.call_count == len(case.replies)
    for index, prompt in enumerate(model.prompts):
        last = content_text(prompt[-1].content)
        if index in case.reasks:  # the request that needed it ends with it
            assert isinstance(prompt[-1], HumanMessage) and last == case.reasks[index]
        else:  # and no other request holds it
            assert not any(reasks_in(m) for m in prompt), (index, prompt)
    sent.append(HumanMessage("Which one was it again?", id="ask-2"))
    out = graph.invoke({"messages": sent[-1:]}, config)
    assert out["answer"] == "It was A-17.", out.get("error")
    assert model.call_count == len(case.replies) + len(later)
    for prompt in model.prompts[len(case.replies) :]:
        assert not any(reasks_in(m) for m in prompt), prompt
    thread = graph.get_state(config).values["messages"]
    humans = [m for m in thread if isinstance(m, HumanMessage)]
    assert [(m.id, m.content) for m in humans] == [(m.id, m.content) for m in sent]
    assert not [m for m in thread if reasks_in(m)]
    # The model's unusable replies stay, as its own messages.
    replies = [m for m in thread if isinstance(m, AIMessage)]
    if any(isinstance(reply, AIMessage) and reply.response_metadata for reply in case.replies):
        assert any(RAMBLING.strip() in content_text(m.content) for m in replies)


@pytest.mark.parametrize("mode", ["json", "text"])
def test_a_reask_survives_an_approval_interrupt(mode):
    """A run paused for approval right after a re-ask resumes as the same run: the re-ask
    reached the model once, and the thread holds the caller's one message."""
    script = [
        final(mode, prompts.CHAT_SYSTEM),
        act(mode, "note", {"text": "x"}),
        final(mode, "A-17"),
    ]
    model = model_for(mode, script)
    graph = create_react_graph(
        model, [note], tool_mode=mode, interrupt_before_tools=True, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": f"approval-{mode}"}}
    paused = graph.invoke({"messages": [HumanMessage("Note it.", id="ask-1")]}, config)
    assert paused["__interrupt__"] and model.call_count == 2
    assert content_text(model.prompts[1][-1].content) == prompts.NO_ANSWER
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert (out["status"], out["answer"]) == ("completed", "A-17")
    assert out["llm_calls"] == model.call_count == 3
    assert not any(reasks_in(m) for m in model.prompts[2])
    humans = [m.id for m in out["messages"] if isinstance(m, HumanMessage)]
    assert humans == ["ask-1"]
