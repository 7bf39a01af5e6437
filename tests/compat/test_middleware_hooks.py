"""Middleware node hooks: before/after agent and model, jumps, state updates, state schemas.

Ports of langchain ``agents/middleware/core/test_framework.py``, ``test_decorators.py``,
``test_composition.py`` (hook order), ``test_sync_async_wrappers.py`` (sync/async
choice), ``test_tools.py`` and ``test_dynamic_tools.py`` (middleware tools). Each case
runs against ``create_agent`` and loopgraphs' ReAct (see ``middleware_support``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    after_agent,
    after_model,
    before_agent,
    before_model,
    dynamic_prompt,
    hook_config,
)
from langchain.agents.middleware.types import OmitFromInput, OmitFromOutput, PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import InjectedState
from langgraph.runtime import Runtime

from tests.compat import middleware_support
from tests.compat.middleware_support import (
    LOOP_SCRIPTS,
    ai_texts,
    call,
    calls,
    humans_seen,
    message_text,
    native,
    system_text,
    tool_results,
)

agent = middleware_support.agent
loop_agent = middleware_support.loop_agent


@tool
def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()


def one_call_then(answer: str = "done", text: str = "yo") -> list[Any]:
    """A script: one call of ``shout``, then a final answer."""
    return [calls(call("shout", {"text": text})), answer]


class Recorder(AgentMiddleware):
    """Logs every node hook and model wrap under its own label."""

    def __init__(self, label: str, log: list[str]) -> None:
        super().__init__()
        self.label, self.log = label, log

    @property
    def name(self) -> str:
        return f"Recorder{self.label}"

    def before_agent(self, state: AgentState, runtime: Runtime) -> None:
        self.log.append(f"{self.label}.before_agent")

    def before_model(self, state: AgentState, runtime: Runtime) -> None:
        self.log.append(f"{self.label}.before_model")

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        self.log.append(f"{self.label}.wrap_model_call")
        return handler(request)

    def after_model(self, state: AgentState, runtime: Runtime) -> None:
        self.log.append(f"{self.label}.after_model")

    def after_agent(self, state: AgentState, runtime: Runtime) -> None:
        self.log.append(f"{self.label}.after_agent")


# -- order ----------------------------------------------------------------------------


def test_hook_order_with_two_middleware(agent):
    """before_* and wrap run first-to-last, after_* last-to-first, around each model call;
    the agent hooks once per run (ports test_create_agent_invoke)."""
    log: list[str] = []
    model = native(one_call_then())
    graph = agent(model, [shout], middleware=[Recorder("A", log), Recorder("B", log)])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    per_call = [
        "A.before_model",
        "B.before_model",
        "A.wrap_model_call",
        "B.wrap_model_call",
        "B.after_model",
        "A.after_model",
    ]
    assert log == [
        "A.before_agent",
        "B.before_agent",
        *per_call,
        *per_call,
        "B.after_agent",
        "A.after_agent",
    ]
    assert model.call_count == 2
    assert tool_results(out) == [("shout", "YO")]
    assert ai_texts(out)[-1] == "done"


def test_hooks_run_around_the_tools(agent):
    """The tool runs between the first after_model and the second before_model."""
    log: list[str] = []

    @tool
    def note(text: str) -> str:
        """Take a note."""
        log.append("tool")
        return "noted"

    model = native([calls(call("note", {"text": "x"})), "done"])
    graph = agent(model, [note], middleware=[Recorder("A", log)])
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert log.index("tool") == 4
    assert log[3] == "A.after_model" and log[5] == "A.before_model"


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_agent_hooks_see_the_run_edges(agent, how):
    """before_agent sees the input; after_agent sees the final answer."""
    seen: dict[str, Any] = {}

    @before_agent
    def first(state: AgentState, runtime: Runtime) -> None:
        seen["before"] = [message_text(m) for m in state["messages"]]

    @after_agent
    def last(state: AgentState, runtime: Runtime) -> None:
        seen["after"] = message_text(state["messages"][-1])

    graph = agent(native(one_call_then("all done")), [shout], middleware=[first, last])
    request = {"messages": [HumanMessage("hello")]}
    if how == "invoke":
        graph.invoke(request)
    else:
        await graph.ainvoke(request)
    assert seen == {"before": ["hello"], "after": "all done"}


def test_before_agent_runs_on_every_run_of_a_thread(agent):
    log: list[str] = []
    model = native(["one", "two"])
    graph = agent(model, [], middleware=[Recorder("A", log)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("first")]}, config)
    graph.invoke({"messages": [HumanMessage("second")]}, config)
    assert log.count("A.before_agent") == 2
    assert log.count("A.after_agent") == 2
    assert humans_seen(model.prompts[1]) == ["first", "second"]


# -- decorators -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_before_model_decorator_adds_a_message_the_model_sees(agent, how):
    @before_model
    def remind(state: AgentState, runtime: Runtime) -> dict[str, Any]:
        return {"messages": [HumanMessage("be brief")]}

    model = native(["ok"])
    graph = agent(model, [], middleware=[remind])
    request = {"messages": [HumanMessage("hello")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert humans_seen(model.prompts[0]) == ["hello", "be brief"]
    assert [message_text(m) for m in out["messages"] if m.type == "human"] == [
        "hello",
        "be brief",
    ]


async def test_async_decorators_run_under_ainvoke(agent):
    """Coroutine functions under the decorators (ports the async decorator tests)."""
    log: list[str] = []

    @before_agent
    async def a_before_agent(state: AgentState, runtime: Runtime) -> None:
        log.append("before_agent")

    @before_model
    async def a_before_model(state: AgentState, runtime: Runtime) -> None:
        log.append("before_model")

    @after_model
    async def a_after_model(state: AgentState, runtime: Runtime) -> None:
        log.append("after_model")

    @after_agent
    async def a_after_agent(state: AgentState, runtime: Runtime) -> None:
        log.append("after_agent")

    middleware = [a_before_agent, a_before_model, a_after_model, a_after_agent]
    graph = agent(native(["ok"]), [], middleware=middleware)
    await graph.ainvoke({"messages": [HumanMessage("hello")]})
    assert log == ["before_agent", "before_model", "after_model", "after_agent"]


def test_after_model_rewrites_the_reply(agent):
    """after_model replaces the AI message by returning one with the same id."""

    @after_model
    def polish(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and not last.tool_calls:
            return {"messages": [AIMessage(content="polished", id=last.id)]}
        return None

    graph = agent(native(["rough"]), [], middleware=[polish])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert ai_texts(out) == ["polished"]


def test_after_agent_update_is_in_the_output(agent):
    @after_agent
    def sign(state: AgentState, runtime: Runtime) -> dict[str, Any]:
        return {"messages": [AIMessage("-- signed")]}

    graph = agent(native(["answer"]), [], middleware=[sign])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert ai_texts(out)[-2:] == ["answer", "-- signed"]


def test_decorator_names_two_middleware_apart(agent):
    """Two decorated functions are two middleware: both run (names differ)."""
    log: list[str] = []

    @before_model(name="First")
    def one(state: AgentState, runtime: Runtime) -> None:
        log.append("one")

    @before_model(name="Second")
    def two(state: AgentState, runtime: Runtime) -> None:
        log.append("two")

    graph = agent(native(["ok"]), [], middleware=[one, two])
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert log == ["one", "two"]


def test_duplicate_middleware_names_are_refused(agent):
    """Two instances with the same name are a configuration error (create_agent:
    AssertionError at build time)."""
    log: list[str] = []
    with pytest.raises((AssertionError, ValueError)):
        agent(native(["ok"]), [], middleware=[Recorder("A", log), Recorder("A", log)])


# -- dynamic prompt -------------------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_dynamic_prompt_from_state(agent, how):
    """@dynamic_prompt computes the system prompt per call from the state."""

    @dynamic_prompt
    def by_length(request: ModelRequest) -> str:
        return f"Messages so far: {len(request.state['messages'])}."

    model = native(one_call_then())
    graph = agent(model, [shout], middleware=[by_length], system_prompt="ORIGINAL")
    request = {"messages": [HumanMessage("hello")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert system_text(model.prompts[0]).startswith("Messages so far: 1.")
    assert system_text(model.prompts[1]).startswith("Messages so far: 3.")
    assert all("ORIGINAL" not in system_text(p) for p in model.prompts)
    assert ai_texts(out)[-1] == "done"


def test_dynamic_prompt_reads_the_runtime_context(agent):
    @dataclass
    class Who:
        user: str

    @dynamic_prompt
    def greet(request: ModelRequest) -> str:
        return f"You are talking to {request.runtime.context.user}."

    model = native(["hi"])
    graph = agent(model, [], middleware=[greet], context_schema=Who)
    graph.invoke({"messages": [HumanMessage("hello")]}, context=Who(user="Ada"))
    assert system_text(model.prompts[0]).startswith("You are talking to Ada.")


def test_static_system_prompt_reaches_the_request(agent):
    """``request.system_prompt`` is the caller's prompt; the model sees it first."""
    got: list[str | None] = []

    class Peek(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            got.append(request.system_prompt)
            return handler(request)

    model = native(["hi"])
    graph = agent(model, [], middleware=[Peek()], system_prompt="Be kind.")
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert got and got[0] is not None and got[0].startswith("Be kind.")
    assert system_text(model.prompts[0]).startswith("Be kind.")


# -- sync and async -------------------------------------------------------------------


class Both(AgentMiddleware):
    """Sync and async versions of every hook, logging which one ran."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def before_model(self, state, runtime):
        self.log.append("before_model")

    async def abefore_model(self, state, runtime):
        self.log.append("abefore_model")

    def wrap_model_call(self, request, handler):
        self.log.append("wrap_model_call")
        return handler(request)

    async def awrap_model_call(self, request, handler):
        self.log.append("awrap_model_call")
        return await handler(request)

    def after_model(self, state, runtime):
        self.log.append("after_model")

    async def aafter_model(self, state, runtime):
        self.log.append("aafter_model")

    def wrap_tool_call(self, request, handler):
        self.log.append("wrap_tool_call")
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        self.log.append("awrap_tool_call")
        return await handler(request)


def test_invoke_runs_the_sync_versions(agent):
    log: list[str] = []
    graph = agent(native(one_call_then()), [shout], middleware=[Both(log)])
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert log == [
        "before_model",
        "wrap_model_call",
        "after_model",
        "wrap_tool_call",
        "before_model",
        "wrap_model_call",
        "after_model",
    ]


async def test_ainvoke_prefers_the_async_versions(agent):
    log: list[str] = []
    graph = agent(native(one_call_then()), [shout], middleware=[Both(log)])
    out = await graph.ainvoke({"messages": [HumanMessage("hello")]})
    assert log == [
        "abefore_model",
        "awrap_model_call",
        "aafter_model",
        "awrap_tool_call",
        "abefore_model",
        "awrap_model_call",
        "aafter_model",
    ]
    assert tool_results(out) == [("shout", "YO")]


async def test_sync_only_hooks_run_under_ainvoke(agent):
    """ports test_create_agent_mixed_sync_async_middleware_async_invoke."""
    log: list[str] = []

    class SyncOnly(AgentMiddleware):
        def before_model(self, state, runtime):
            log.append("sync.before_model")

        def after_model(self, state, runtime):
            log.append("sync.after_model")

    class AsyncOnly(AgentMiddleware):
        async def abefore_model(self, state, runtime):
            log.append("async.before_model")

        async def awrap_model_call(self, request, handler):
            log.append("async.wrap_model_call")
            return await handler(request)

        async def aafter_model(self, state, runtime):
            log.append("async.after_model")

    graph = agent(native(["ok"]), [], middleware=[SyncOnly(), AsyncOnly()])
    await graph.ainvoke({"messages": [HumanMessage("hello")]})
    assert log == [
        "sync.before_model",
        "async.before_model",
        "async.wrap_model_call",
        "async.after_model",
        "sync.after_model",
    ]


# -- jumps ----------------------------------------------------------------------------


class EndBeforeModel(AgentMiddleware):
    @hook_config(can_jump_to=["end"])
    def before_model(self, state, runtime):
        return {"jump_to": "end"}


@before_model(can_jump_to=["end"])
def end_before_model(state: AgentState, runtime: Runtime) -> dict[str, Any]:
    return {"jump_to": "end"}


@pytest.mark.parametrize("style", ["class", "decorator"])
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_jump_to_end_before_the_model(agent, style, how):
    """ports test_create_agent_jump / test_create_agent_async_jump: nothing runs."""
    ran: list[str] = []

    @tool
    def never(text: str) -> str:
        """Never called."""
        ran.append(text)
        return text

    jumper = EndBeforeModel() if style == "class" else end_before_model
    model = native([calls(call("never", {"text": "x"})), "done"])
    graph = agent(model, [never], middleware=[jumper])
    request = {"messages": [HumanMessage("hello")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert model.call_count == 0
    assert ran == []
    assert ai_texts(out) == []
    assert "jump_to" not in out


def test_jump_to_end_after_the_model_skips_the_tools(agent):
    ran: list[str] = []

    @tool
    def risky(text: str) -> str:
        """A tool that must not run."""
        ran.append(text)
        return text

    @after_model(can_jump_to=["end"])
    def stop_on_calls(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return {"jump_to": "end"}
        return None

    model = native([calls(call("risky", {"text": "x"})), "done"])
    graph = agent(model, [risky], middleware=[stop_on_calls])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert ran == []
    assert model.call_count == 1
    assert not [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "jump_to" not in out


def test_jump_to_model_asks_again(agent):
    """after_model sends an unwanted reply back to the model."""
    seen_jump: list[bool] = []

    @after_model(can_jump_to=["model"])
    def insist(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        seen_jump.append("jump_to" in state)
        if message_text(state["messages"][-1]) == "lazy":
            return {"messages": [HumanMessage("try again")], "jump_to": "model"}
        return None

    model = native(["lazy", "proper answer"])
    graph = agent(model, [], middleware=[insist])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert model.call_count == 2
    assert humans_seen(model.prompts[1]) == ["hello", "try again"]
    assert ai_texts(out) == ["lazy", "proper answer"]
    assert seen_jump == [False, False]
    assert "jump_to" not in out


def test_jump_to_tools_runs_pending_calls_first(agent):
    """before_model jumps straight to the tools when the history ends in pending calls."""
    ran: list[str] = []

    @tool
    def record(text: str) -> str:
        """Record the text."""
        ran.append(text)
        return f"recorded {text}"

    @before_model(can_jump_to=["tools"])
    def resume_calls(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return {"jump_to": "tools"}
        return None

    pending = AIMessage(content="", tool_calls=[call("record", {"text": "a"}, id="p1")])
    model = native(["finished"])
    graph = agent(model, [record], middleware=[resume_calls])
    out = graph.invoke({"messages": [HumanMessage("hello"), pending]})
    assert ran == ["a"]
    assert model.call_count == 1
    assert "recorded a" in "\n".join(message_text(m) for m in model.prompts[0])
    assert ai_texts(out)[-1] == "finished"


def test_undeclared_jump_is_ignored(agent):
    """A jump_to the hook did not declare with can_jump_to has no effect."""

    calls_to_hook: list[int] = []

    @before_model
    def sneaky(state: AgentState, runtime: Runtime) -> dict[str, Any]:
        calls_to_hook.append(len(state["messages"]))
        return {"jump_to": "end"}

    model = native(["still answered"])
    graph = agent(model, [], middleware=[sneaky])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert calls_to_hook == [1]
    assert model.call_count == 1
    assert ai_texts(out) == ["still answered"]
    assert "jump_to" not in out


def test_jump_to_end_from_before_agent(agent):
    @before_agent(can_jump_to=["end"])
    def gate(state: AgentState, runtime: Runtime) -> dict[str, Any]:
        return {"messages": [AIMessage("refused")], "jump_to": "end"}

    model = native(["never"])
    graph = agent(model, [], middleware=[gate])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert model.call_count == 0
    assert ai_texts(out) == ["refused"]


@pytest.mark.parametrize("kind", ["react", *LOOP_SCRIPTS])
def test_jump_to_end_without_an_answer_takes_no_earlier_turns(kind):
    """A ``before_agent`` hook ends the second turn of a thread before any model call,
    without a message: the run has no answer, and the first turn's is not taken for one."""

    @before_agent(can_jump_to=["end"])
    def closed(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        return {"jump_to": "end"} if len(state["messages"]) > 2 else None

    model = native(["The mill opened in 1812."], repeat_last=True)
    graph = middleware_support.factory(kind)(
        model, [], middleware=[closed], checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": kind}}
    first = graph.invoke({"messages": [HumanMessage("When did the mill open?")]}, thread)
    calls_made = model.call_count
    second = graph.invoke({"messages": [HumanMessage("And when did it close?")]}, thread)
    assert first["answer"]
    assert model.call_count == calls_made
    assert second["answer"] == ""
    assert second["status"] == "max_iterations"


# -- updates through reducers ---------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_remove_all_messages_replaces_the_history(agent, how):
    @before_model
    def compact(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        if len(state["messages"]) > 1:
            return {
                "messages": [
                    RemoveMessage(id=REMOVE_ALL_MESSAGES),
                    HumanMessage("summary: the user said hi twice"),
                ]
            }
        return None

    model = native(["answer"])
    graph = agent(model, [], middleware=[compact])
    request = {"messages": [HumanMessage("hi"), AIMessage("hello"), HumanMessage("hi")]}
    out = graph.invoke(request) if how == "invoke" else await graph.ainvoke(request)
    assert humans_seen(model.prompts[0]) == ["summary: the user said hi twice"]
    assert [m.type for m in model.prompts[0] if m.type != "system"] == ["human"]
    assert [message_text(m) for m in out["messages"]] == [
        "summary: the user said hi twice",
        "answer",
    ]


def test_remove_one_message_by_id(agent):
    @before_model
    def drop_noise(state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        noise = [m for m in state["messages"] if message_text(m) == "noise"]
        return {"messages": [RemoveMessage(id=m.id) for m in noise]} if noise else None

    model = native(["answer"])
    graph = agent(model, [], middleware=[drop_noise])
    out = graph.invoke({"messages": [HumanMessage("noise", id="n1"), HumanMessage("question")]})
    assert humans_seen(model.prompts[0]) == ["question"]
    assert [message_text(m) for m in out["messages"]] == ["question", "answer"]


class Tally(AgentState):
    tally: Annotated[list[str], operator.add]


class TallyMiddleware(AgentMiddleware):
    state_schema = Tally

    def before_model(self, state, runtime):
        return {"tally": [f"call {len(state.get('tally', [])) + 1}"]}


def test_hook_updates_go_through_the_key_reducer(agent):
    graph = agent(native(one_call_then()), [shout], middleware=[TallyMiddleware()])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert out["tally"] == ["call 1", "call 2"]


def test_hooks_see_earlier_hook_updates(agent):
    """A later middleware's before_model sees what an earlier one wrote."""
    seen: list[list[str]] = []

    @before_model
    def add_note(state: AgentState, runtime: Runtime) -> dict[str, Any]:
        return {"messages": [HumanMessage("note")]}

    @before_model
    def read_notes(state: AgentState, runtime: Runtime) -> None:
        seen.append([message_text(m) for m in state["messages"]])

    graph = agent(native(["ok"]), [], middleware=[add_note, read_notes])
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert seen == [["hello", "note"]]


# -- state schema ---------------------------------------------------------------------


class Profile(AgentState):
    user_name: str


class ProfileMiddleware(AgentMiddleware):
    state_schema = Profile

    def __init__(self) -> None:
        super().__init__()
        self.hook_saw: list[Any] = []
        self.request_saw: list[Any] = []

    def before_model(self, state, runtime):
        self.hook_saw.append(state.get("user_name"))

    def wrap_model_call(self, request, handler):
        self.request_saw.append(request.state.get("user_name"))
        return handler(request)


def test_middleware_state_key_in_input_hooks_request_and_output(agent):
    mw = ProfileMiddleware()
    graph = agent(native(["hi Ada"]), [], middleware=[mw])
    out = graph.invoke({"messages": [HumanMessage("hello")], "user_name": "Ada"})
    assert mw.hook_saw == ["Ada"]
    assert mw.request_saw == ["Ada"]
    assert out["user_name"] == "Ada"


def test_hook_writes_a_middleware_state_key(agent):
    class Namer(AgentMiddleware):
        state_schema = Profile

        def before_agent(self, state, runtime):
            return {"user_name": "Grace"}

    graph = agent(native(["hi"]), [], middleware=[Namer()])
    out = graph.invoke({"messages": [HumanMessage("hello")]})
    assert out["user_name"] == "Grace"


def test_middleware_state_key_reaches_injected_state(agent):
    """ports test_injected_state_in_middleware_agent."""
    got: list[Any] = []

    @tool
    def whoami(state: Annotated[dict, InjectedState]) -> str:
        """Say who the user is."""
        got.append(state.get("user_name"))
        return f"user is {state.get('user_name')}"

    model = native([calls(call("whoami", {})), "done"])
    graph = agent(model, [whoami], middleware=[ProfileMiddleware()])
    out = graph.invoke({"messages": [HumanMessage("who am I?")], "user_name": "Ada"})
    assert got == ["Ada"]
    assert tool_results(out) == [("whoami", "user is Ada")]


def test_middleware_state_key_is_checkpointed(agent):
    saver = InMemorySaver()
    graph = agent(native(["one", "two"]), [], middleware=[TallyMiddleware()], checkpointer=saver)
    config = {"configurable": {"thread_id": "tally"}}
    graph.invoke({"messages": [HumanMessage("first")]}, config)
    assert graph.get_state(config).values["tally"] == ["call 1"]
    out = graph.invoke({"messages": [HumanMessage("second")]}, config)
    assert out["tally"] == ["call 1", "call 2"]


class Visibility(AgentState):
    omit_input: Annotated[str, OmitFromInput]
    omit_output: Annotated[str, OmitFromOutput]
    private_state: Annotated[str, PrivateStateAttr]


def test_omit_from_input_output_and_private_keys(agent):
    """ports test_public_private_state_for_custom_middleware."""
    seen: list[dict[str, bool]] = []

    class Writer(AgentMiddleware):
        state_schema = Visibility

        def before_model(self, state, runtime):
            seen.append({k: k in state for k in ("omit_input", "omit_output", "private_state")})
            return {"omit_input": "set", "omit_output": "set", "private_state": "set"}

    graph = agent(native(["ok"]), [], middleware=[Writer()])
    out = graph.invoke(
        {
            "messages": [HumanMessage("hello")],
            "omit_input": "from caller",
            "omit_output": "from caller",
            "private_state": "from caller",
        }
    )
    assert seen == [{"omit_input": False, "omit_output": True, "private_state": False}]
    assert out.get("omit_input") == "set"
    assert "omit_output" not in out
    assert "private_state" not in out


def test_runtime_context_reaches_hooks(agent):
    @dataclass
    class Tenant:
        name: str

    got: list[str] = []

    @before_model
    def read(state: AgentState, runtime: Runtime[Tenant]) -> None:
        got.append(runtime.context.name)

    graph = agent(native(["ok"]), [], middleware=[read], context_schema=Tenant)
    graph.invoke({"messages": [HumanMessage("hello")]}, context=Tenant("acme"))
    assert got == ["acme"]


# -- middleware tools -----------------------------------------------------------------


@tool
def middleware_lookup(key: str) -> str:
    """Look a key up in the middleware's table."""
    return f"value of {key}"


class LookupMiddleware(AgentMiddleware):
    tools = [middleware_lookup]  # noqa: RUF012


def test_middleware_tools_join_the_agent_tools(agent):
    """ports test_middleware_with_additional_tools."""
    model = native([calls(call("middleware_lookup", {"key": "k"})), "done"])
    graph = agent(model, [shout], middleware=[LookupMiddleware()])
    out = graph.invoke({"messages": [HumanMessage("look k up")]})
    assert set(model.tool_sets[0]) >= {"shout", "middleware_lookup"}
    assert tool_results(out) == [("middleware_lookup", "value of k")]


def test_middleware_tools_without_agent_tools(agent):
    model = native([calls(call("middleware_lookup", {"key": "z"})), "done"])
    graph = agent(model, [], middleware=[LookupMiddleware()])
    out = graph.invoke({"messages": [HumanMessage("look z up")]})
    assert "middleware_lookup" in model.tool_sets[0]
    assert tool_results(out) == [("middleware_lookup", "value of z")]


def test_request_tools_are_the_agent_and_middleware_tools(agent):
    """ports test_model_request_tools_are_base_tools."""
    names: list[set[str]] = []

    class Peek(AgentMiddleware):
        tools = [middleware_lookup]  # noqa: RUF012

        def wrap_model_call(self, request, handler):
            names.append({t.name for t in request.tools})
            return handler(request)

    graph = agent(native(["ok"]), [shout], middleware=[Peek()])
    graph.invoke({"messages": [HumanMessage("hello")]})
    assert names == [{"shout", "middleware_lookup"}]


# -- the other tool loops -------------------------------------------------------------


def test_other_loops_run_hooks_around_every_model_call(loop_agent):
    log: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search for an answer."""
        return "42"

    model = native(LOOP_SCRIPTS[loop_agent.kind]("search", {"query": "x"}))
    graph = loop_agent(model, [search], middleware=[Recorder("A", log)])
    out = graph.invoke({"messages": [HumanMessage("What is the answer?")]})
    assert log[0] == "A.before_agent" and log[-1] == "A.after_agent"
    assert log.count("A.before_model") == model.call_count
    assert log.count("A.wrap_model_call") == model.call_count
    assert log.count("A.after_model") == model.call_count
    assert "42" in out["answer"]
