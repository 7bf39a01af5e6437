"""The loops served by ``langgraph dev`` and chatted with the way agent-chat-ui does it.

``tests/support/chat_ui.py`` drives a thread as the UI does (its input, stream modes and
resume command); the model behind the served graphs is a ``ProviderServer`` speaking
OpenAI's Chat Completions, named by the assistant's context, so every reply is scripted.
What a person chatting relies on:

1. what streams is what the thread keeps: no bubble vanishes when the run ends, no bubble
   shows the model's raw JSON, and the thread's last AI message is the run's answer;
2. the library never speaks as the user, also in runs whose first reply (cut at the token
   cap, empty, not the JSON the schema asks for) the loop asks the model again about;
3. a follow-up turn remembers the earlier one;
4. a tool call waiting for approval shows langchain's approval request, and the UI's
   approve or reject finishes the run;
5. a second turn sent while a run is in flight (each multitask strategy), a cancelled
   run, or a new message over a pending approval leave a thread the next turn completes on.

The chats of 1 to 4 are independent, so each group is sent at once (``all_at_once``) and
its tests read the outcome of their own chat; those of 5 run one at a time.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopgraphs import LOOPS
from loopgraphs.nodes.parsing.text import content_text
from tests.services.test_provider_loops import ANSWER, finisher, forced_tool
from tests.support.chat_ui import ChatUI, Streamed, assistant_for, is_raw_json
from tests.support.langgraph_server import served_config
from tests.support.provider_server import Call, ProviderServer, Request, Turn
from tests.support.scripts import MODES
from tests.support.served_graphs import TOOL_LOOPS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        sys.version_info < (3, 11) or importlib.util.find_spec("langgraph_api") is None,
        reason="langgraph dev needs langgraph-api, which needs Python 3.11+ "
        '(pip install "loopgraphs[studio]")',
    ),
]

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    (loop, mode) for loop in sorted(LOOPS) for mode in (MODES if loop in TOOL_LOOPS else [None])
]
TOOL_CASES = [(loop, mode) for loop in TOOL_LOOPS for mode in MODES]
BUDGET = 3  # max_iterations of every served run: a re-ask, a tool call, the answer


def case_id(loop: str, mode: str | None) -> str:
    return loop if mode is None else f"{loop}-{mode}"


CASE_IDS = [case_id(*case) for case in CASES]
TOOL_CASE_IDS = [case_id(*case) for case in TOOL_CASES]


# --- the model: scripted replies in each loop's form ---------------------------------------

SUM = {"expression": "6*7"}


def tool_names(request: Request) -> list[str]:
    return [
        (tool.get("function") or tool).get("name", "") for tool in request.body.get("tools") or []
    ]


def system_text(request: Request) -> str:
    return "\n".join(text for role, text in request.messages if role == "system")


def plans_for_rewoo(request: Request) -> bool:
    """Whether a request is ReWOO's planner's (its instructions name the evidence ``#E1``)."""
    return "#E1" in system_text(request)


def asks_for_a_tool(request: Request) -> bool:
    """Whether a request lets the model call the calculator: a critique, ReWOO's plan, or
    a step whose tools (native), schema (json) or instructions (text) offer it."""
    if request.last_user_text.startswith("Draft answer to check") or plans_for_rewoo(request):
        return True
    if "calculator" in tool_names(request):
        return forced_tool(request) is None
    if request.schema is not None:
        return "calculator" in json.dumps(request.schema)
    return forced_tool(request) is None and "calculator" in system_text(request)


def calculator_turn(loop: str, mode: str, request: Request) -> Turn:
    """A reply that calls the calculator once, in the loop's and the mode's form."""
    if request.last_user_text.startswith("Draft answer to check"):
        claim = {"claim": "6*7 is 42", "tool": "calculator", "tool_input": SUM}
        if mode == "text":
            return Turn(text="CLAIM: 6*7 is 42\nTOOL: calculator\nTOOL INPUT: 6*7")
        report = {"verified": False, "claims": [claim]}
        forced = forced_tool(request)
        if forced is None:
            return Turn(text=json.dumps(report))
        name, parameters = forced
        args = {key: value for key, value in report.items() if key in parameters["properties"]}
        return Turn(tool_calls=[Call(name, args)])
    if plans_for_rewoo(request):
        plan = {"plan": "Multiply.", "evidence": "#E1", "tool": "calculator", "tool_input": SUM}
        if mode == "text":
            return Turn(text="Plan: Multiply.\n#E1 = calculator[6*7]")
        forced = forced_tool(request)
        if forced is None:
            return Turn(text=json.dumps({"steps": [plan]}))
        return Turn(tool_calls=[Call(forced[0], {"steps": [plan]})])
    if loop == "self_ask":
        line = "Are follow up questions needed here? Yes.\nFollow up: What is 6*7?"
        if mode == "native":
            return Turn(text=line, tool_calls=[Call("calculator", SUM)])
        tool_input = json.dumps(SUM) if mode == "json" else "6*7"
        return Turn(text=f"{line}\nTool: calculator\nTool Input: {tool_input}")
    if mode == "native":
        return Turn(tool_calls=[Call("calculator", SUM)])
    step = {"thought": "I need the calculator.", "action": "calculator", "action_input": SUM}
    if mode == "json":
        return Turn(text=json.dumps({"value": step}))
    return Turn(
        text=f"Thought: {step['thought']}\nAction: calculator\nAction Input: {json.dumps(SUM)}"
    )


def no_plan(request: Request) -> Turn:
    """ReWOO's planner's reply with no steps, in the request's form."""
    forced = forced_tool(request)
    if forced is None:
        return Turn(text=json.dumps({"steps": []}))
    return Turn(tool_calls=[Call(forced[0], {"steps": []})])


def calls_the_calculator_once(loop: str, mode: str | None) -> Callable[[Request], Turn]:
    """A model that calls the calculator the first time it may, then finishes (a later
    plan of ReWOO's has no steps)."""
    called = threading.Event()

    def respond(request: Request) -> Turn:
        if mode is not None and not called.is_set() and asks_for_a_tool(request):
            called.set()
            return calculator_turn(loop, mode, request)
        if mode is not None and plans_for_rewoo(request):
            return no_plan(request)
        return finisher(request)

    return respond


# --- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(langgraph_dev_url: str) -> Any:
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=langgraph_dev_url, api_key=None)


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    with ProviderServer(responder=finisher) as server:
        yield server


def open_chat(client: Any, server: ProviderServer, graph: str, mode: str | None) -> ChatUI:
    """A new thread on a new assistant of ``graph`` whose model is ``server``."""
    context: dict[str, Any] = {"model": server.openai_url, "max_iterations": BUDGET}
    if mode is not None:
        context["tool_mode"] = mode
    return ChatUI(client, assistant_for(client, graph, context))


def text_of(message: dict[str, Any]) -> str:
    return content_text(message.get("content") or "")


def shown(messages: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The messages as a failure shows them: id, type and the start of the text."""
    return [(m.get("id") or "", m["type"], text_of(m)[:60]) for m in messages]


def humans(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["id"], text_of(m)) for m in messages if m["type"] == "human"]


def dangling_calls(messages: list[dict[str, Any]]) -> list[str]:
    """The ids of AI tool calls no tool message of the thread answers."""
    answered = {m.get("tool_call_id") for m in messages if m["type"] == "tool"}
    calls = [c for m in messages if m["type"] == "ai" for c in m.get("tool_calls") or []]
    return [c["id"] for c in calls if c["id"] not in answered]


def all_at_once(work: Callable[..., Any], client: Any, cases: list[Any]) -> dict[Any, Future[Any]]:
    """``work(client, *case)`` for every case, sent at once: the server runs several
    chats together, each on its own model server. A failure stays in its case's future."""
    with ThreadPoolExecutor(8) as pool:
        return {case: pool.submit(work, client, *case) for case in cases}


def finished(chat: ChatUI, streamed: Streamed) -> dict[str, Any]:
    """The thread's values after a run that must have ended with an answer."""
    values = chat.state()["values"]
    assert not streamed.errors, streamed.errors
    assert values["status"] in ("completed", "max_iterations"), values.get("error")
    return values


# --- the config served ---------------------------------------------------------------------


def test_the_test_server_serves_langgraph_json_and_the_approval_graphs():
    """The test config serves the production graphs exactly as langgraph.json lists them,
    plus one approval variant per tool loop."""
    production = json.loads((ROOT / "langgraph.json").read_text())
    served = served_config()
    assert served["dependencies"] == production["dependencies"]
    extra = {name: path for name, path in served["graphs"].items() if name not in LOOPS}
    assert {name: served["graphs"][name] for name in LOOPS} == production["graphs"]
    assert extra == {
        f"{loop}_approval": f"./tests/support/served_graphs.py:{loop}_approval"
        for loop in TOOL_LOOPS
    }


# --- 1 and 2: one served turn per loop, mode and script -------------------------------------

SCRIPTS: dict[str, tuple[Turn, ...]] = {
    "tool": (),  # the model calls the calculator once, then answers
    # A first reply the loop must ask again about: cut at the token cap, empty, not JSON
    # where the json mode's schema asks for it.
    "cut": (Turn(text="The refund of order A-17 is", stop="length"),),
    "empty": (Turn(text=""),),
    "off-grammar": (Turn(text="{ let me think about the refund"),),
}
REASKS = ("cut", "empty", "off-grammar")
SCHEMA_FIRST = ("plan_execute", "react", "reflexion")  # json mode's first request has a schema
RUNS = [
    (loop, mode, script)
    for loop, mode in CASES
    for script in SCRIPTS
    if script != "off-grammar" or (mode == "json" and loop in SCHEMA_FIRST)
]
RUN_IDS = [f"{case_id(loop, mode)}-{script}" for loop, mode, script in RUNS]


@dataclass
class Turned:
    """One turn as the chat saw it: what was sent, what streamed, the thread after it."""

    sent: list[dict[str, Any]]
    streamed: Streamed
    values: dict[str, Any]
    requests: list[Request]


def one_turn(client: Any, loop: str, mode: str | None, script: str) -> Turned:
    with ProviderServer(responder=calls_the_calculator_once(loop, mode)) as server:
        server.script(*SCRIPTS[script])
        chat = open_chat(client, server, loop, mode)
        streamed = chat.send("What is 6*7?")
        return Turned(chat.sent, streamed, chat.state()["values"], server.requests)


@pytest.fixture(scope="module")
def turns(client: Any) -> dict[tuple[str, str | None, str], Future[Turned]]:
    """Every run of ``RUNS``; the tests below read the ones they check."""
    return all_at_once(one_turn, client, RUNS)


def turn(turns: dict[Any, Future[Turned]], run: tuple[str, str | None, str]) -> Turned:
    """A run's turn, which must have streamed no error."""
    done = turns[run].result()
    assert not done.streamed.errors, done.streamed.errors
    return done


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_no_streamed_bubble_vanishes(turns, run):
    """Every message that streamed, in any namespace, is a message of the thread when the
    run ends: the UI shows streamed chunks by message id, then the thread's values, so a
    streamed id the thread lacks is a bubble that vanishes."""
    done = turn(turns, run)
    kept = [m["id"] for m in done.values["messages"]]
    assert done.streamed.chunks
    vanished = {i: done.streamed.text_of(i) for i in done.streamed.ids() if i not in kept}
    assert not vanished, f"streamed {vanished}; the thread keeps {shown(done.values['messages'])}"


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_no_bubble_shows_raw_json(turns, run):
    """No AI message the chat shows, streamed or in the thread's values, is the model's
    raw JSON (a json-mode action, a plan, a verdict, a critique)."""
    done = turn(turns, run)
    streamed = {i: t for i, t in done.streamed.bubbles().items() if is_raw_json(t)}
    kept = {m["id"]: text_of(m) for m in done.values["messages"] if m["type"] == "ai"}
    assert not streamed, f"streamed raw JSON: {streamed}"
    assert not {i: t for i, t in kept.items() if is_raw_json(t)}, f"the thread shows {kept}"


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_the_last_ai_message_is_the_answer(turns, run):
    """The thread's last AI message, the one the chat ends on, is the run's answer."""
    done = turn(turns, run)
    ai = [m for m in done.values["messages"] if m["type"] == "ai"]
    assert ai and text_of(ai[-1]) == done.values["answer"], shown(done.values["messages"])


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_every_script_ends_with_the_models_answer(turns, run):
    """Each script's model answers in the end: a first reply that is cut, empty or out of
    the mode's grammar is asked again (the runs the next test checks did re-ask)."""
    done = turn(turns, run)
    values = done.values
    assert (values["status"], values["error"]) == ("completed", ""), len(done.requests)
    assert values["answer"] in (ANSWER, "Paris", "Paris.")
    if run[2] in REASKS:
        assert len(done.requests) >= 2


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_the_thread_holds_only_the_human_messages_sent(turns, run):
    """The thread's human messages are exactly the ones the user sent, with their ids and
    text, also after replies that made the loop ask the model again: a re-ask goes to the
    model, never into the conversation."""
    done = turn(turns, run)
    sent = [(m["id"], "What is 6*7?") for m in done.sent]
    assert humans(done.values["messages"]) == sent, shown(done.values["messages"])


# --- json mode: the answer streams in pieces ----------------------------------------------

LONG_ANSWER = "The capital of France is Paris, on the Seine, since the tenth century."


def final_action(data: Any) -> dict[str, Any] | None:
    """The final-answer action in a json-mode reply's object (its root maybe wrapped)."""
    if isinstance(data, dict):
        if data.get("action") == "final_answer":
            return data
        for value in data.values():
            found = final_action(value)
            if found is not None:
                return found
    return None


def answers_at_length(request: Request) -> Turn:
    """``finisher``, whose json-mode final answers are a sentence long."""
    reply = finisher(request)
    if request.schema is None or not reply.text:
        return reply
    data = json.loads(reply.text)
    action = final_action(data)
    if action is None:
        return reply
    action["action_input"] = LONG_ANSWER
    return Turn(text=json.dumps(data))


def json_answer_turn(client: Any, loop: str) -> tuple[Streamed, dict[str, Any]]:
    with ProviderServer(responder=answers_at_length) as server:
        chat = open_chat(client, server, loop, "json")
        streamed = chat.send("What is the capital of France?")
        return streamed, finished(chat, streamed)


@pytest.mark.parametrize("loop", ["react", "reflexion"])
def test_a_json_mode_answer_streams_in_pieces_never_as_json(client, loop):
    """A json-mode turn's answer is read out of its JSON as it is written and streams as
    the chat's reply, under the id the thread keeps it by."""
    streamed, values = json_answer_turn(client, loop)
    answer = [m for m in values["messages"] if m["type"] == "ai"][-1]
    assert values["answer"] == LONG_ANSWER == text_of(answer)
    pieces = [chunk.text for chunk in streamed.chunks if chunk.id == answer["id"] and chunk.text]
    assert len(pieces) > 3 and "".join(pieces) == LONG_ANSWER, pieces
    assert not any(is_raw_json(text) for text in streamed.bubbles().values())


# --- 3. a follow-up remembers ----------------------------------------------------------------


@dataclass
class Talk:
    """Two turns on one thread and the model requests of the second."""

    values: dict[str, Any]
    second: list[Request]


def two_turns(client: Any, loop: str, mode: str | None) -> Talk:
    with ProviderServer(responder=finisher) as server:
        chat = open_chat(client, server, loop, mode)
        finished(chat, chat.send("Refund order A-17"))
        before = len(server.requests)
        values = finished(chat, chat.send("Which order did I mention before?"))
        return Talk(values, server.requests[before:])


@pytest.fixture(scope="module")
def talks(client: Any) -> dict[tuple[str, str | None], Future[Talk]]:
    return all_at_once(two_turns, client, CASES)


@pytest.mark.parametrize(("loop", "mode"), CASES, ids=CASE_IDS)
def test_a_follow_up_turn_remembers_the_first(talks, loop, mode):
    """Turn 2 asks about turn 1: every model request of turn 2 that works on its question
    carries turn 1's order number."""
    second = talks[(loop, mode)].result().second
    working = [r for r in second if "Which order did I mention" in r.text]
    assert working, [r.last_user_text for r in second]
    forgetting = [r.last_user_text for r in working if "A-17" not in r.text]
    assert not forgetting, f"requests of turn 2 without A-17: {forgetting}"


# --- 4. approvals through the server ---------------------------------------------------------


APPROVALS = [(*case, "approve") for case in TOOL_CASES]
APPROVALS += [(loop, "native", "reject") for loop in TOOL_LOOPS]
APPROVAL_IDS = [f"{case_id(loop, mode)}-{decision}" for loop, mode, decision in APPROVALS]


@dataclass
class Review:
    """A run paused for approval, and resumed with the UI's decision."""

    paused: Streamed
    requests: list[Any]
    resumed: Streamed
    values: dict[str, Any]
    left: list[Any]


def review(client: Any, loop: str, mode: str, decision: str) -> Review:
    with ProviderServer(responder=calls_the_calculator_once(loop, mode)) as server:
        chat = open_chat(client, server, f"{loop}_approval", mode)
        paused = chat.send("What is 6*7?")
        requests = chat.interrupts()
        resumed = chat.resume([{"type": decision}])
        return Review(paused, requests, resumed, chat.state()["values"], chat.interrupts())


@pytest.fixture(scope="module")
def reviews(client: Any) -> dict[tuple[str, str, str], Future[Review]]:
    return all_at_once(review, client, APPROVALS)


@pytest.mark.parametrize(("loop", "mode", "decision"), APPROVALS, ids=APPROVAL_IDS)
def test_an_approval_pauses_and_the_uis_decision_finishes_the_run(reviews, loop, mode, decision):
    """A served graph that asks before tool calls pauses with langchain's approval request
    (what the UI's inbox reads, also streamed as the run's interrupt); resuming with the
    UI's command finishes the run, the tool's result or the rejection answering the call."""
    done = reviews[(loop, mode, decision)].result()
    assert not done.paused.errors and done.paused.interrupts, done.paused.errors
    (request,) = done.requests
    assert [(a["name"], a["args"]) for a in request["action_requests"]] == [("calculator", SUM)]
    (config,) = request["review_configs"]
    assert config["action_name"] == "calculator"
    assert {"approve", "reject"} <= set(config["allowed_decisions"])

    assert not done.resumed.errors, done.resumed.errors
    assert done.left == [] and done.values["status"] == "completed", done.values["error"]
    assert dangling_calls(done.values["messages"]) == []
    results = [text_of(m) for m in done.values["messages"] if m["type"] == "tool"]
    expected = "42" if decision == "approve" else "Rejected by the user"
    assert any(expected in r for r in results), results


# --- 5. double-texting and cancel -------------------------------------------------------------


class Held:
    """A model that, asked ``question``, calls the calculator, then holds its next reply
    until released: the run is certainly in flight, a tool call and its result behind it,
    while the test acts."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.waiting = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: Request) -> Turn:
        if request.last_user_text == self.question and not self.release.is_set():
            if not any(role == "tool" for role, _ in request.messages):
                return Turn(tool_calls=[Call("calculator", SUM)])
            self.waiting.set()
            self.release.wait(timeout=60)
        return finisher(request)


@pytest.fixture
def held(provider: ProviderServer) -> Iterator[Held]:
    model = Held("Refund order B-2")
    provider.responder = model
    yield model
    model.release.set()


def consistent(chat: ChatUI) -> list[dict[str, Any]]:
    """The thread's messages, checked: no tool call without its result."""
    messages = chat.messages()
    assert dangling_calls(messages) == [], shown(messages)
    return messages


@pytest.mark.parametrize("strategy", ["interrupt", "rollback", "reject", "enqueue"])
def test_a_second_turn_while_a_run_is_in_flight(client, provider, held, strategy):
    """The user sends a second message while the first run waits on the model, with a
    multitask strategy: the thread stays consistent and the turn after completes."""
    chat = open_chat(client, provider, "react", "native")
    finished(chat, chat.send("Refund order A-17"))
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(chat.send, "Refund order B-2")
        assert held.waiting.wait(timeout=60)
        if strategy == "enqueue":
            queued = threading.Event()
            second = pool.submit(
                chat.send,
                "And order C-3?",
                multitask_strategy=strategy,
                on_run_created=lambda _: queued.set(),
            )
            assert queued.wait(timeout=60)
            held.release.set()
            second.result(timeout=60)
        elif strategy == "reject":
            from langgraph_sdk.errors import ConflictError

            with pytest.raises(ConflictError):
                chat.send("And order C-3?", multitask_strategy=strategy)
            held.release.set()
        else:
            chat.send("And order C-3?", multitask_strategy=strategy)
            held.release.set()
        first.result(timeout=60)
    consistent(chat)
    last = chat.send("Which order did I mention before?")
    values = finished(chat, last)
    sent = [(m["id"], text_of(m)) for m in chat.sent]
    kept = humans(consistent(chat))
    if strategy == "rollback":  # the overtaken run and its input are removed
        sent = [s for s in sent if s[1] != "Refund order B-2"]
    elif strategy == "reject":  # the second message was refused
        sent = [s for s in sent if s[1] != "And order C-3?"]
    assert kept == sent
    assert values["status"] == "completed"


@pytest.mark.parametrize("action", ["interrupt", "rollback"])
def test_a_cancelled_run_leaves_a_thread_the_next_turn_completes_on(client, provider, held, action):
    """``runs.cancel`` on a run waiting on the model: no tool call is left without its
    result, and the next turn completes."""
    chat = open_chat(client, provider, "react", "native")
    finished(chat, chat.send("Refund order A-17"))
    started = threading.Event()
    run: dict[str, str] = {}

    def created(meta: Any) -> None:
        run["id"] = str(meta["run_id"])
        started.set()

    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(chat.send, "Refund order B-2", on_run_created=created)
        assert held.waiting.wait(timeout=60) and started.wait(timeout=60)
        client.runs.cancel(chat.thread_id, run["id"], wait=True, action=action)
        held.release.set()
        first.result(timeout=60)
    consistent(chat)
    values = finished(chat, chat.send("Which order did I mention before?"))
    assert values["status"] == "completed"
    assert text_of(values["messages"][-1]) == values["answer"]


@pytest.mark.parametrize("loop", TOOL_LOOPS)
def test_a_new_message_while_an_approval_waits(client, provider, loop):
    """The user types a new message instead of answering a pending approval: the UI
    answers the waiting call with its placeholder result, and the new turn completes on a
    thread whose every tool call has a result."""
    provider.responder = calls_the_calculator_once(loop, "native")
    chat = open_chat(client, provider, f"{loop}_approval", "native")
    chat.send("What is 6*7?")
    assert chat.interrupts()
    values = finished(chat, chat.send("Never mind. Which order did I mention before?"))
    assert values["status"] == "completed"
    assert dangling_calls(values["messages"]) == []
    assert chat.interrupts() == []
