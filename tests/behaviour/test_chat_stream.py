"""What a chat sees while a loop runs: what streams as a message is what the thread keeps.

A chat app renders ``stream_mode="messages"`` (LangGraph Studio's chat view,
agent-chat-ui) and then the thread. In every loop and tool mode, plain and with
``subgraphs=True``, sync and async:

- every message id that streams is a message of the final thread (no bubble vanishes);
- nothing that streams in json mode is the model's raw JSON;
- the answer streams as tokens where the model writes it as a chat turn (in json mode,
  ReAct's and Reflexion's, read out of the JSON as it is written), and arrives whole, as
  one message, where it comes out of internal calls (CoT's self-consistency vote, a ToT
  proposal);
- internal calls (plans, verdicts, critiques, proposals, scores, json turns) never stream
  as messages, and carry the ``nostream`` and ``loopgraphs:internal`` tags and their
  purpose in their metadata;
- CRITIC's critique message is readable text; Reflexion's episodes stream as its own
  tokens in a plain call, once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langgraph.constants import TAG_HIDDEN, TAG_NOSTREAM

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
from loopgraphs.nodes.model_call import CALL_METADATA, INTERNAL_TAG, JSON_TURN
from loopgraphs.nodes.model_send import RAW_REPLY
from loopgraphs.nodes.parsing.text import content_text
from tests.behaviour.test_custom_state import satisfied, structured, verdict
from tests.support.fakes import calls, tool_call
from tests.support.scripts import (
    FAST_RETRY,
    LATS_SMALL,
    MODES,
    act,
    final,
    lats_search,
    model_for,
    rewoo_plan,
)

ANSWER = "Plums are in the basket."
QUESTION = {"messages": [("user", "Where are the plums?")]}


def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key}: in the basket"


def critique(mode: str) -> Any:
    """A critique naming one claim to check with ``lookup``, in ``mode``'s form."""
    claim = {"claim": "plums are in a bag", "tool": "lookup", "tool_input": {"key": "plums"}}
    if mode == "native":
        return calls(tool_call("CritiqueReport", {"verified": False, "claims": [claim]}))
    if mode == "json":
        return json.dumps({"verified": False, "claims": [claim]})
    return "CLAIM: plums are in a bag\nTOOL: lookup\nTOOL INPUT: plums"


def self_ask_follow_up(mode: str) -> Any:
    follow = "Are follow up questions needed here? Yes.\nFollow up: where are plums kept?"
    if mode == "native":
        return calls(tool_call("lookup", {"key": "plums"}), content=follow)
    tool_input = json.dumps({"key": "plums"}) if mode == "json" else "plums"
    return f"{follow}\nTool: lookup\nTool Input: {tool_input}"


def chat_graph(loop: str, mode: str) -> Any:
    """Each loop with a script whose answer is ``ANSWER``, in ``mode``."""
    options: dict[str, Any] = {"tool_mode": mode, "retry_policy": FAST_RETRY}
    if loop == "react":
        script = [act(mode, "lookup", {"key": "plums"}), final(mode, ANSWER)]
        return create_react_graph(model_for(mode, script), [lookup], **options)
    if loop == "plan_execute":
        script = [
            structured(mode, "Plan", {"steps": ["look the plums up", "say where they are"]}),
            act(mode, "lookup", {"key": "plums"}),
            final(mode, "They are in the basket."),
            final(mode, "In the basket."),
            ANSWER,
        ]
        return create_plan_execute_graph(model_for(mode, script), [lookup], **options)
    if loop == "reflexion":
        script = [
            act(mode, "lookup", {"key": "plums"}),
            final(mode, "They are somewhere."),
            verdict(mode),
            "Reflection: say where they are.",
            final(mode, ANSWER),
            satisfied(mode),
        ]
        return create_reflexion_graph(model_for(mode, script), [lookup], **options)
    if loop == "self_ask":
        script = [self_ask_follow_up(mode), f"So the final answer is: {ANSWER}"]
        return create_self_ask_graph(model_for(mode, script), [lookup], **options)
    if loop == "critic":
        script = ["Plums are in a bag.", critique(mode), ANSWER]
        model = model_for(mode, script)
        return create_critic_graph(model, [lookup], max_critique_rounds=1, **options)
    if loop == "rewoo":
        script = [rewoo_plan(mode, ("lookup", "plums")), ANSWER]
        return create_rewoo_graph(model_for(mode, script), [lookup], **options)
    if loop == "lats":  # the answer is a candidate's, judged satisfactory
        script = lats_search(mode, "lookup", {"key": "plums"}, ANSWER)
        return create_lats_graph(model_for(mode, script), [lookup], **LATS_SMALL, **options)
    del options["tool_mode"]
    if loop == "cot":
        script = [f"They were put there. FINAL ANSWER: {ANSWER}"]
        return create_cot_graph(model_for(mode, script), **options)
    if loop == "cot_voting":
        script = [f"FINAL ANSWER: {ANSWER}"] * 3
        return create_cot_graph(model_for(mode, script), self_consistency=3, **options)
    if loop == "tot":  # no thought answers: final_answer asks the best branch
        script = [
            "1. Look in the basket.",
            structured(mode, "Scores", {"scores": [9]}),
            f"ANSWER: {ANSWER}",
        ]
        model = model_for(mode, script)
        return create_tot_graph(model, n_branches=1, beam_width=1, max_depth=1, **options)
    assert loop == "tot_proposal"  # a proposed thought holds the answer
    script = [f"1. ANSWER: {ANSWER}"]
    model = model_for(mode, script)
    return create_tot_graph(model, n_branches=1, beam_width=1, max_depth=1, **options)


LOOPS = tuple(registry.LOOPS)
VARIANTS = ("cot_voting", "tot_proposal")
CASES = [(loop, mode) for loop in (*LOOPS, *VARIANTS) for mode in MODES]


@dataclass
class Chat:
    """A run as a chat app streams it: each message streamed (with its namespace and
    metadata) and the final state."""

    streamed: list[tuple[tuple[str, ...], BaseMessage, dict[str, Any]]]
    final: dict[str, Any]

    def ids(self) -> set[str]:
        return {message.id or "" for _, message, _ in self.streamed}

    def chunks_of(self, message_id: str) -> list[tuple[tuple[str, ...], BaseMessage]]:
        return [(ns, m) for ns, m, _ in self.streamed if m.id == message_id]

    def text_of(self, message_id: str) -> str:
        return "".join(content_text(m.content) for _, m in self.chunks_of(message_id))

    def answer_message(self) -> AIMessage:
        message = self.final["messages"][-1]
        assert isinstance(message, AIMessage)
        assert content_text(message.content) == self.final["answer"] == ANSWER
        return message


def chat(graph: Any, *, subgraphs: bool, asynchronous: bool, config: Any = None) -> Chat:
    """Stream ``QUESTION`` through ``graph`` with ``messages`` and ``values`` modes."""
    modes = ["messages", "values"]
    if asynchronous:

        async def collect() -> list[Any]:
            stream = graph.astream(QUESTION, config, stream_mode=modes, subgraphs=subgraphs)
            return [item async for item in stream]

        items = asyncio.run(collect())
    else:
        items = list(graph.stream(QUESTION, config, stream_mode=modes, subgraphs=subgraphs))
    streamed, final = [], {}
    for item in items:
        ns, kind, data = item if subgraphs else ((), *item)
        if kind == "messages":
            message, meta = data
            streamed.append((ns, message, meta))
        elif not ns:
            final = data
    assert final.get("status") == "completed", final.get("error")
    return Chat(streamed, final)


PATHS = [(False, False), (True, False), (False, True), (True, True)]
PATH_IDS = ["plain-sync", "subgraphs-sync", "plain-async", "subgraphs-async"]


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
@pytest.mark.parametrize(("loop", "mode"), CASES)
def test_every_streamed_message_is_kept_in_the_thread(loop, mode, subgraphs, asynchronous):
    run = chat(chat_graph(loop, mode), subgraphs=subgraphs, asynchronous=asynchronous)
    kept = {message.id for message in run.final["messages"]}
    assert run.streamed
    assert run.ids() <= kept, [
        content_text(m.content) for _, m, _ in run.streamed if m.id not in kept
    ]


def raw_json(text: str) -> bool:
    """Whether a message's text is JSON (a reply a schema constrained)."""
    return text.strip().startswith(("{", "["))


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("loop", [*LOOPS, *VARIANTS])
def test_nothing_streams_raw_json_in_json_mode(loop, subgraphs, asynchronous):
    run = chat(chat_graph(loop, "json"), subgraphs=subgraphs, asynchronous=asynchronous)
    for message_id in run.ids():
        assert not raw_json(run.text_of(message_id)), run.text_of(message_id)


# How the answer reaches a plain call: as tokens of the reply that writes it (a json
# turn's answer read out of its JSON as it is written), or whole, as one message the node
# stores (internal calls made it).
WHOLE = {
    *(("cot_voting", mode) for mode in MODES),
    *(("lats", mode) for mode in MODES),
    *(("tot_proposal", mode) for mode in MODES),
}
# The loops whose answer is a json turn's in json mode: what streams is the answer, not
# the reply's JSON.
JSON_ANSWERS = {("react", "json"), ("reflexion", "json")}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(("loop", "mode"), CASES)
def test_the_answer_streams_as_tokens_or_arrives_whole(loop, mode, asynchronous):
    run = chat(chat_graph(loop, mode), subgraphs=False, asynchronous=asynchronous)
    answer = run.answer_message()
    arrived = run.chunks_of(answer.id or "")
    assert all(ns == () for ns, _ in arrived)
    if (loop, mode) in WHOLE:
        assert [(type(m), content_text(m.content)) for _, m in arrived] == [(AIMessage, ANSWER)]
        return
    tokens = [m for _, m in arrived if content_text(m.content)]
    assert len(tokens) > 2 and all(isinstance(m, AIMessageChunk) for m in tokens)
    written = answer.additional_kwargs.get(RAW_REPLY, content_text(answer.content))
    if (loop, mode) in JSON_ANSWERS:
        written = ANSWER
    assert run.text_of(answer.id or "") == written


PURPOSES: dict[str, set[str]] = {
    "react": set(),
    "plan_execute": {"plan"},
    "reflexion": {"evaluation", "reflection"},
    "self_ask": set(),
    "critic": {"critique"},
    "cot": set(),
    "cot_voting": {"sample"},
    "tot": {"proposal", "score"},
    "tot_proposal": {"proposal"},
    "rewoo": {"plan"},
    "lats": {"expansion", "evaluation"},
}


def purposes(loop: str, mode: str) -> set[str]:
    """The internal calls a case makes: its loop's, and json turns in json mode."""
    steps_in_json = mode == "json" and loop in ("react", "plan_execute", "reflexion")
    return PURPOSES[loop] | ({JSON_TURN} if steps_in_json else set())


class ModelRuns(BaseCallbackHandler):
    """Records the tags and metadata of every chat model run."""

    def __init__(self) -> None:
        self.runs: dict[UUID, tuple[list[str], dict[str, Any]]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.runs[run_id] = (list(kwargs.get("tags") or []), dict(kwargs.get("metadata") or {}))


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
@pytest.mark.parametrize(("loop", "mode"), CASES)
def test_internal_calls_do_not_stream_as_messages(loop, mode, subgraphs, asynchronous):
    runs = ModelRuns()
    graph = chat_graph(loop, mode)
    run = chat(graph, subgraphs=subgraphs, asynchronous=asynchronous, config={"callbacks": [runs]})
    internal = {
        f"lc_run--{run_id}": metadata[CALL_METADATA]
        for run_id, (tags, metadata) in runs.runs.items()
        if INTERNAL_TAG in tags and TAG_NOSTREAM in tags
    }
    assert set(internal.values()) == purposes(loop, mode)
    tagged = [tags for tags, _ in runs.runs.values() if INTERNAL_TAG in tags]
    assert len(tagged) == len(internal)  # every internal call is tagged nostream
    for _, message, _ in run.streamed:
        # A json turn's answer streams as it is written, and its reply is kept as the
        # chat shows it; no other internal reply streams, or is kept at all.
        assert internal.get(message.id or "", JSON_TURN) == JSON_TURN
        if isinstance(message, AIMessageChunk) and message.id in internal:
            assert not raw_json(content_text(message.content))


@pytest.mark.parametrize(("loop", "mode"), CASES)
async def test_internal_calls_are_found_in_astream_events(loop, mode):
    found = [
        event
        async for event in chat_graph(loop, mode).astream_events(QUESTION, version="v2")
        if event["event"] == "on_chat_model_start" and INTERNAL_TAG in event["tags"]
    ]
    assert {event["metadata"][CALL_METADATA] for event in found} == purposes(loop, mode)
    assert all(TAG_NOSTREAM in event["tags"] for event in found)


@pytest.mark.parametrize("mode", MODES)
def test_the_critique_message_is_readable_and_the_claims_are_records(mode):
    updates = list(chat_graph("critic", mode).stream(QUESTION, stream_mode="updates"))
    (written,) = [update["critique"] for update in updates if "critique" in update]
    (message,) = written["messages"]
    assert content_text(message.content) == "Checking: plums are in a bag (with lookup: plums)"
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("lookup", {"key": "plums"})]
    assert RAW_REPLY not in message.additional_kwargs
    (pending,) = written["pending"]
    assert (pending["claim"], pending["tool"], pending["args"]) == (
        "plums are in a bag",
        "lookup",
        {"key": "plums"},
    )
    out = chat_graph("critic", mode).invoke(QUESTION)
    (checked,) = out["claims"]
    assert (checked["claim"], checked["tool"]) == ("plums are in a bag", "lookup")
    assert checked["observation"] == "plums: in the basket"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("mode", ["native", "text"])
def test_reflexion_streams_its_episodes_as_its_own_tokens(mode, asynchronous):
    plain = chat(chat_graph("reflexion", mode), subgraphs=False, asynchronous=asynchronous)
    answer = plain.answer_message()
    tokens = [m for ns, m in plain.chunks_of(answer.id or "") if content_text(m.content)]
    assert len(tokens) > 2
    assert {meta["langgraph_node"] for _, m, meta in plain.streamed if m.id == answer.id} == {
        "generate"
    }
    # Both episodes' replies stream, each once, as Reflexion's own.
    replies = [m for m in plain.final["messages"] if isinstance(m, AIMessage)]
    for reply in replies:
        written = reply.additional_kwargs.get(RAW_REPLY, content_text(reply.content))
        assert plain.text_of(reply.id or "") == written
    nested = chat(chat_graph("reflexion", mode), subgraphs=True, asynchronous=asynchronous)
    for reply in (m for m in nested.final["messages"] if isinstance(m, AIMessage)):
        written = reply.additional_kwargs.get(RAW_REPLY, content_text(reply.content))
        assert nested.text_of(reply.id or "") == written  # not twice
        assert {ns for ns, _ in nested.chunks_of(reply.id or "")} == {()}


async def test_reflexion_turns_show_once_in_events_not_tagged_nostream():
    """``astream_events`` reports a relayed turn twice: as the episode's own run (tagged
    ``nostream``) and as the run of Reflexion's step (tagged ``langsmith:hidden``, which
    tracing hides); the events without ``nostream`` are what ``messages`` mode shows."""
    shown: dict[str, str] = {}
    hidden = 0
    async for event in chat_graph("reflexion", "native").astream_events(QUESTION, version="v2"):
        if event["event"] != "on_chat_model_stream" or TAG_NOSTREAM in event["tags"]:
            continue
        chunk = event["data"]["chunk"]
        shown[chunk.id] = shown.get(chunk.id, "") + content_text(chunk.content)
        hidden += TAG_HIDDEN in event["tags"]
    assert hidden and sorted(shown.values()) == sorted(["", "They are somewhere.", ANSWER])


@pytest.mark.filterwarnings("ignore:The v3 streaming protocol")
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_reflexion_streams_its_episodes_in_protocol_events(asynchronous):
    """LangGraph's newer streaming (``stream_events(version="v3")``, the protocol of
    langgraph-api's v2 endpoints) sends content-block events: the relay passes those on
    too, so the episodes' text streams in Reflexion's namespace, delta by delta."""
    graph = chat_graph("reflexion", "native")
    if asynchronous:

        async def collect() -> list[Any]:
            run = await graph.astream_events(QUESTION, version="v3")
            return [event async for event in run]

        events = asyncio.run(collect())
    else:
        events = list(graph.stream_events(QUESTION, version="v3"))
    deltas: dict[tuple[str, ...], list[str]] = {}
    for event in events:
        data = event["params"]["data"] if event["method"] == "messages" else None
        if data and isinstance(data[0], dict) and data[0]["event"] == "content-block-delta":
            namespace = tuple(event["params"]["namespace"])
            deltas.setdefault(namespace, []).append(data[0]["delta"].get("text", ""))
    assert list(deltas) == [()]
    assert "".join(deltas[()]) == "They are somewhere." + ANSWER
    assert len(deltas[()]) > 6


def synthesis_cut_once() -> Any:
    script = [
        structured("native", "Plan", {"steps": ["say where the plums are"]}),
        final("native", "In the basket."),
        "The plums are " + "in the basket and " * 20,  # repeats itself until the cap
        ANSWER,
    ]
    return create_plan_execute_graph(model_for("native", script), [lookup])


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
def test_a_synthesis_asked_again_keeps_the_reply_that_streamed(subgraphs, asynchronous):
    run = chat(synthesis_cut_once(), subgraphs=subgraphs, asynchronous=asynchronous)
    run.answer_message()
    kept = {message.id for message in run.final["messages"]}
    assert run.ids() <= kept
    assert any(run.text_of(i).startswith("The plums are in the basket and") for i in run.ids())


@pytest.fixture
def small_model(monkeypatch):
    """Treat every model as the embedded small model, which Self-Ask guides."""
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
def test_guided_json_self_ask_streams_no_json(small_model, subgraphs, asynchronous):
    script = [
        json.dumps({"follow_up": "Where are plums kept?", "tool": "lookup"}),
        json.dumps({"answer": "in the basket"}),  # read from the tool result
        json.dumps({"follow_up": "Where are plums kept?", "tool": "lookup"}),  # asked again
        json.dumps({"final_answer": ANSWER}),
    ]
    graph = create_self_ask_graph(model_for("json", script), [lookup], tool_mode="json")
    run = chat(graph, subgraphs=subgraphs, asynchronous=asynchronous)
    assert run.final["answer"] == ANSWER
    assert run.ids() <= {message.id for message in run.final["messages"]}
    for message_id in run.ids():
        assert not raw_json(run.text_of(message_id)), run.text_of(message_id)
    assert [content_text(m.content) for m in run.final["messages"][1:] if m.type == "ai"] == [
        "Follow up: Where are plums kept?",
        "in the basket",
        "Follow up: Where are plums kept?",
        ANSWER,
    ]


@pytest.mark.parametrize(("subgraphs", "asynchronous"), PATHS, ids=PATH_IDS)
def test_a_guided_json_revision_streams_no_json(small_model, subgraphs, asynchronous):
    claim = {"claim": "plums are in a bag", "tool": "lookup", "tool_input": "plums"}
    script = [
        "Plums are in a bag.",
        json.dumps({"claims": [claim]}),
        json.dumps({"answer": ANSWER}),
    ]
    model = model_for("json", script)
    graph = create_critic_graph(model, [lookup], tool_mode="json", max_critique_rounds=1)
    run = chat(graph, subgraphs=subgraphs, asynchronous=asynchronous)
    assert run.answer_message().additional_kwargs[RAW_REPLY] == json.dumps({"answer": ANSWER})
    assert run.ids() <= {message.id for message in run.final["messages"]}
    for message_id in run.ids():
        assert not raw_json(run.text_of(message_id)), run.text_of(message_id)
