"""CRITIC scenarios in every tool mode, on the scripted model."""

from __future__ import annotations

import json
import random
import re
import string
import threading
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from loopgraphs.graphs.critic import create_critic_graph
from loopgraphs.graphs.critic.checks import CritiqueReport
from loopgraphs.nodes import grounding, model_send
from loopgraphs.nodes.parsing.critic import parse_critique
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.prompts import CRITIQUE_TEXT_SYSTEM
from tests.support.fakes import ProviderError, ScriptedChatModel, calls, tool_call
from tests.support.scripts import FAST_RETRY, MODES, model_for

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
QUESTION = {"messages": [("user", "When was the Eiffel Tower completed?")]}
DRAFT = "The Eiffel Tower was completed in 1887."
REVISED = "The Eiffel Tower was completed in 1889."


class Search:
    """A search tool recording its queries."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.queries: list[str] = []
        self.answers = answers or {}

        def search(query: str) -> str:
            """Search the web."""
            self.queries.append(query)
            return self.answers.get(query, f"nothing about {query}")

        self.tool = search


def critique(mode: str, claims: list[tuple[str, str, str]]):
    """A critique listing claims, in the form each mode asks for."""
    items = [{"claim": c, "tool": t, "tool_input": i} for c, t, i in claims]
    if mode == "native":
        return calls(tool_call("CritiqueReport", {"verified": False, "claims": items}))
    if mode == "json":
        return json.dumps({"verified": False, "claims": items})
    return "\n\n".join(f"CLAIM: {c}\nTOOL: {t}\nTOOL INPUT: {i}" for c, t, i in claims)


def verified(mode: str):
    if mode == "native":
        return calls(tool_call("CritiqueReport", {"verified": True, "claims": []}))
    if mode == "json":
        return '{"verified": true, "claims": []}'
    return "VERIFIED: all claims are correct."


def build(mode: str, replies: list, tools=None, **kwargs):
    model = model_for(mode, replies, **kwargs.pop("model_kwargs", {}))
    graph = create_critic_graph(model, tools, tool_mode=mode, retry_policy=FAST_RETRY, **kwargs)
    return model, graph


@pytest.mark.parametrize("mode", MODES)
def test_verified_draft_costs_two_calls(mode):
    search = Search()
    model, graph = build(
        mode, ["The Eiffel Tower was completed in 1889.", verified(mode)], [search.tool]
    )
    out = graph.invoke(QUESTION)
    assert out["answer"] == "The Eiffel Tower was completed in 1889."
    assert out["status"] == "completed" and out["verified"] is True
    assert out["llm_calls"] == 2 == model.call_count
    assert out["claims"] == [] and out["round"] == 1 and search.queries == []
    assert "1889" in content_text(model.prompts[1][-1].content)


@pytest.mark.parametrize("mode", MODES)
def test_corrected_claim_is_revised(mode):
    search = Search({"Eiffel Tower completion year": "Construction ran from 1887 to 1889."})
    replies = [
        DRAFT,
        critique(mode, [("completed in 1887", "search", "Eiffel Tower completion year")]),
        REVISED,
        verified(mode),
    ]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == ["Eiffel Tower completion year"]
    assert out["answer"] == REVISED and out["draft"] == REVISED
    assert out["status"] == "completed" and out["verified"] is True
    assert out["llm_calls"] == 4 == model.call_count
    assert out["round"] == 2
    assert out["claims"] == [
        {
            "claim": "completed in 1887",
            "tool": "search",
            "tool_input": "Eiffel Tower completion year",
            "observation": "Construction ran from 1887 to 1889.",
            "round": 1,
        }
    ]
    revise_prompt = content_text(model.prompts[2][-1].content)
    assert DRAFT in revise_prompt and "Construction ran from 1887 to 1889." in revise_prompt
    second_critique = content_text(model.prompts[3][-1].content)
    assert REVISED in second_critique and "Evidence already gathered" in second_critique
    said = [m.content for m in out["messages"] if isinstance(m, AIMessage) and not m.tool_calls]
    assert said == [DRAFT, REVISED]


@pytest.mark.parametrize("run_async", [False, True])
async def test_claims_are_verified_concurrently(run_async):
    active = {"now": 0, "max": 0}
    lock = threading.Lock()

    def make(name: str):
        @tool(name)
        def check(query: str) -> str:
            """Check a fact."""
            with lock:
                active["now"] += 1
                active["max"] = max(active["max"], active["now"])
            time.sleep(0.3)
            with lock:
                active["now"] -= 1
            return f"{name} confirms {query}"

        return check

    tools = [make("atlas"), make("almanac"), make("encyclopedia")]
    claims = [
        ("height", "atlas", "tower height"),
        ("year", "almanac", "tower year"),
        ("city", "encyclopedia", "tower city"),
    ]
    _model, graph = build(
        "text", [DRAFT, critique("text", claims), REVISED, verified("text")], tools
    )
    out = await graph.ainvoke(QUESTION) if run_async else graph.invoke(QUESTION)
    assert active["max"] == 3
    assert [c["observation"] for c in out["claims"]] == [
        "atlas confirms tower height",
        "almanac confirms tower year",
        "encyclopedia confirms tower city",
    ]
    assert out["answer"] == REVISED and out["llm_calls"] == 4


def test_claims_sharing_a_check_run_it_once():
    search = Search()
    claims = [("built 1887", "search", "eiffel"), ("opened 1889", "search", "eiffel")]
    model, graph = build(
        "text", [DRAFT, critique("text", claims), REVISED, "VERIFIED"], [search.tool]
    )
    out = graph.invoke(QUESTION)
    assert search.queries == ["eiffel"]
    assert [c["observation"] for c in out["claims"]] == ["nothing about eiffel"] * 2
    assert out["answer"] == REVISED and model.call_count == 4


def test_without_tools_the_draft_is_the_answer():
    model = ScriptedChatModel(replies=[DRAFT])
    out = create_critic_graph(model).invoke(QUESTION)
    assert out["answer"] == DRAFT and out["status"] == "completed"
    assert out["llm_calls"] == 1 == model.call_count
    assert out["tool_mode"] == "none"


def test_claims_as_a_json_list_in_text_mode():
    search = Search()
    listed = json.dumps([{"claim": "completed in 1887", "tool": "search", "tool_input": "eiffel"}])
    _model, graph = build(
        "text", [DRAFT, f"Claims to check:\n{listed}", REVISED, "VERIFIED"], [search.tool]
    )
    out = graph.invoke(QUESTION)
    assert search.queries == ["eiffel"] and out["answer"] == REVISED


@pytest.mark.parametrize("mode", ["json", "native"])
def test_structured_modes_also_read_claim_blocks(mode):
    search = Search()
    _model, graph = build(
        mode,
        [DRAFT, critique("text", [("year", "search", "eiffel year")]), REVISED, "VERIFIED"],
        [search.tool],
    )
    out = graph.invoke(QUESTION)
    assert search.queries == ["eiffel year"] and out["answer"] == REVISED and out["llm_calls"] == 4


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_in_a_claim_becomes_an_observation(mode):
    search = Search()
    replies = [DRAFT, critique(mode, [("year", "wikipedia", "eiffel")]), REVISED, verified(mode)]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert "unknown tool 'wikipedia'" in out["claims"][0]["observation"]
    assert "unknown tool 'wikipedia'" in content_text(model.prompts[2][-1].content)
    assert out["status"] == "completed" and out["answer"] == REVISED


def test_unreadable_critique_accepts_the_draft():
    search = Search()
    _model, graph = build("text", [DRAFT, "Looks mostly fine to me, but who knows."], [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == DRAFT and out["status"] == "completed" and out["verified"] is False
    assert out["llm_calls"] == 2 and search.queries == []


def never_satisfied(mode: str):
    """Drafts, then reports a new claim in every critique and revises every time."""
    counter = iter(range(10_000))

    def reply(messages):
        system = content_text(messages[0].content)
        if "check a draft answer" in system:
            number = next(counter)
            return critique(mode, [(f"claim {number}", "search", f"query {number}")])
        if "revise a draft" in system:
            return f"revision {next(counter)}"
        return DRAFT

    return reply


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rounds", [1, 3])
def test_model_that_always_reports_claims_stops_at_the_budget(mode, rounds):
    search = Search()
    model, graph = build(
        mode,
        [never_satisfied(mode)],
        [search.tool],
        max_critique_rounds=rounds,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION)
    assert out["llm_calls"] == 1 + 2 * rounds == model.call_count
    assert out["status"] == "completed"
    assert out["answer"].startswith("revision") and out["answer"] == out["draft"]
    assert out["round"] == rounds and len(search.queries) == rounds


def garbage(messages) -> str:
    rng = random.Random(sum(len(content_text(m.content)) for m in messages))
    return "".join(
        rng.choice(string.ascii_letters + string.digits + " \n{}[]:") for _ in range(400)
    )


@pytest.mark.parametrize("mode", MODES)
def test_random_garbage_ends_within_budget(mode):
    search = Search()
    model, graph = build(mode, [garbage], [search.tool], model_kwargs={"repeat_last": True})
    out = graph.invoke(QUESTION)
    assert out["llm_calls"] == model.call_count <= 5
    assert out["status"] == "completed" and isinstance(out["answer"], str) and out["answer"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failing_call", [0, 1, 2])
def test_permanent_error_ends_with_status_error(mode, failing_call):
    search = Search()
    replies = [DRAFT, critique(mode, [("year", "search", "eiffel")]), REVISED][:failing_call]
    model, graph = build(
        mode,
        [*replies, ProviderError(401, "invalid api key")],
        [search.tool],
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION)
    assert out["status"] == "error" and "401" in out["error"]
    # The replies before the failure and the rejected request all count; a 401 is not
    # retried.
    assert out["llm_calls"] == failing_call + 1 == model.call_count
    assert out["llm_calls"] <= 5 and out["retries"] == 0
    assert isinstance(out["answer"], str)
    if failing_call:
        assert out["answer"] == DRAFT


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("limit", range(2, 16))
def test_small_recursion_limit_never_raises(mode, limit):
    search = Search()
    model, graph = build(
        mode,
        [never_satisfied(mode)],
        [search.tool],
        max_critique_rounds=5,
        model_kwargs={"repeat_last": True},
    )
    out = graph.invoke(QUESTION, {"recursion_limit": limit})
    assert out["llm_calls"] == model.call_count <= 11
    assert out["status"] in ("completed", "max_iterations")
    assert isinstance(out["answer"], str)


def test_critique_prompt_lists_the_tools_and_the_format():
    search = Search()
    model, graph = build("text", [DRAFT, "VERIFIED"], [search.tool])
    graph.invoke(QUESTION)
    system = content_text(model.prompts[1][0].content)
    assert system == CRITIQUE_TEXT_SYSTEM.format(
        tools="- search: Search the web.\n  arguments: query (string, required)",
        fence_note=system.split("VERIFIED.\n", 1)[1],
    )
    assert "CLAIM:" in system and "TOOL INPUT:" in system


@pytest.mark.parametrize(
    ("text", "verified", "claims"),
    [
        ("VERIFIED", True, []),
        ("**Verified**: all good", True, []),
        ("NOT VERIFIED, unclear", False, []),
        ("nothing here", False, []),
        (
            "1. **CLAIM:** built in 1887\n   **TOOL:** search\n   **TOOL INPUT:** eiffel built\n",
            False,
            [{"claim": "built in 1887", "tool": "search", "tool_input": "eiffel built"}],
        ),
        (
            'CLAIM: a\nTOOL: calc\nTOOL INPUT: {\n  "x": 1\n}\nCLAIM: b\nTOOL: search',
            False,
            [
                {"claim": "a", "tool": "calc", "tool_input": {"x": 1}},
                {"claim": "b", "tool": "search", "tool_input": "b"},
            ],
        ),
        ("CLAIM: no tool given", False, []),
        (
            "TOOL: search(eiffel height)",
            False,
            [{"claim": "eiffel height", "tool": "search", "tool_input": "eiffel height"}],
        ),
        (
            '{"verified": false, "claims": [{"claim": "c", "tool": "t", "tool_input": "i"}]}',
            False,
            [{"claim": "c", "tool": "t", "tool_input": "i"}],
        ),
        ('{"verified": true}', True, []),
    ],
)
def test_parse_critique(text, verified, claims):
    found = parse_critique(text)
    assert found.verified is verified
    assert found.claims == claims


@pytest.mark.parametrize(
    "text",
    [
        "CLAIM: x\n" * 30_000,
        "TOOL INPUT: {" + "{" * 200_000,
        "[" + '{"claim": 1},' * 20_000,
        " " * 200_000 + "VERIFIED",
    ],
)
def test_parse_critique_is_fast_on_hostile_input(text):
    started = time.monotonic()
    found = parse_critique(text)
    assert time.monotonic() - started < 1.0
    assert len(found.claims) <= 10


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"max_critique_rounds": 0}, ValueError, "max_critique_rounds"),
        ({"max_critique_rounds": 1.5}, TypeError, "max_critique_rounds"),
        ({"tool_mode": "xml"}, ValueError, "tool_mode"),
        ({"tool_timeout": -1}, ValueError, "tool_timeout"),
        ({"interrupt_before_tools": "yes"}, TypeError, "interrupt_before_tools"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_critic_graph(ScriptedChatModel(replies=[]), [Search().tool], **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_graph_shape_snapshot(mode):
    _, graph = build(mode, [], [Search().tool])
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "critic.mmd").read_text()


CHECK = [("completed in 1887", "search", "Eiffel Tower completion year")]


@pytest.mark.parametrize("mode", MODES)
def test_required_tool_choice_checks_a_claim_before_accepting(mode):
    """tool_choice="required": the first critique must list a claim (native and json by
    a schema with at least one claim, text by asking once more after a VERIFIED)."""
    search = Search({"Eiffel Tower completion year": "Construction ran from 1887 to 1889."})
    items = [{"claim": c, "tool": t, "tool_input": i} for c, t, i in CHECK]
    first = {
        "native": [calls(tool_call("RequiredCritique", {"claims": items}))],
        "json": [json.dumps({"claims": items})],
        "text": [verified("text"), critique("text", CHECK)],
    }[mode]
    replies = [DRAFT, *first, REVISED, verified(mode)]
    model, graph = build(mode, replies, [search.tool], tool_choice="required")
    out = graph.invoke(QUESTION)
    assert search.queries == ["Eiffel Tower completion year"]
    assert out["answer"] == REVISED and out["verified"] is True
    assert out["llm_calls"] == len(replies) == model.call_count
    assert "No claim has been checked yet" in content_text(model.prompts[1][-1].content)
    if mode == "native":
        assert model.tool_sets == [["RequiredCritique"], ["CritiqueReport"]]
    if mode == "text":
        assert "at least one claim" in content_text(model.prompts[2][-1].content)
    # Once a claim has been checked, a critique may accept the draft.
    assert "Evidence already gathered" in content_text(model.prompts[-1][-1].content)


def test_required_tool_choice_accepts_a_draft_when_asked_twice_in_vain():
    search = Search()
    replies = [DRAFT, verified("text"), verified("text")]
    model, graph = build("text", replies, [search.tool], tool_choice="search")
    out = graph.invoke(QUESTION)
    assert out["answer"] == DRAFT and out["status"] == "completed" and search.queries == []
    assert out["llm_calls"] == 3 == model.call_count
    assert "the search tool" in content_text(model.prompts[2][-1].content)


# ---------------------------------------------------------------- small local models
# On a model whose tool call is required by default (the embedded small model) the first
# critique must name a claim for a tool in every mode; json mode decodes the critique and
# the revision under grounded schemas.


@pytest.fixture
def small_model(monkeypatch):
    """Treat every model as the embedded small model: a tool call required by default, and
    its guided schemas sent as written (its server makes them a grammar)."""
    monkeypatch.setattr(grounding, "default_tool_choice", lambda model: "required")
    monkeypatch.setattr(model_send, "needs_guided_steps", lambda model: True)


def schema_pattern(field) -> re.Pattern[str]:
    return re.compile(field["pattern"])


@pytest.mark.parametrize("mode", MODES)
def test_small_model_checks_a_claim_by_default(small_model, mode):
    search = Search({"Eiffel Tower completed": "Construction ran from 1887 to 1889."})
    check = [("The Eiffel Tower was completed in 1887.", "search", "Eiffel Tower completed")]
    items = [{"claim": c, "tool": t, "tool_input": i} for c, t, i in check]
    first = {
        "native": [calls(tool_call("RequiredCritique", {"claims": items}))],
        "json": [json.dumps({"claims": items})],
        "text": [verified("text"), critique("text", check)],
    }[mode]
    revised = json.dumps({"answer": REVISED}) if mode == "json" else REVISED
    replies = [DRAFT, *first, revised, verified(mode)]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert search.queries == ["Eiffel Tower completed"]
    assert out["answer"] == REVISED and out["status"] == "completed" and out["verified"]
    assert out["llm_calls"] == len(replies) == model.call_count
    if mode != "json":
        return
    critique_schema, revision_schema, second = model.schemas
    body = critique_schema  # as sent: the schema with its name as title
    assert body["title"] == "critique"
    assert body["required"] == ["claims"] and body["properties"]["claims"]["minItems"] == 1
    (item,) = body["properties"]["claims"]["items"]["anyOf"]
    assert item["properties"]["tool"] == {"const": "search"}
    claim = schema_pattern(item["properties"]["claim"])
    assert claim.fullmatch("The Eiffel Tower was completed in 1887.")
    assert not claim.fullmatch("The Louvre opened in 1793.")  # nowhere in question or draft
    query = schema_pattern(item["properties"]["tool_input"])
    assert query.fullmatch("Eiffel Tower completed") and not query.fullmatch("Louvre")
    # The revision is written from the question, the draft and the evidence.
    answer = schema_pattern(revision_schema["schema"]["properties"]["answer"])
    assert answer.fullmatch("The Eiffel Tower was completed in 1889.")
    assert answer.fullmatch("False, 1889.") is None and answer.fullmatch("false 1889")
    assert not answer.fullmatch("It was completed in 1901.")
    # Once a claim is checked, the critique may accept the draft.
    assert second["properties"]["claims"]["minItems"] == 0
    assert list(second["properties"]) == ["verified", "claims"]


def test_small_model_with_auto_tool_choice_may_accept_at_once(small_model):
    search = Search()
    model, graph = build("json", [DRAFT, verified("json")], [search.tool], tool_choice="auto")
    out = graph.invoke(QUESTION)
    assert out["answer"] == DRAFT and out["llm_calls"] == 2 and search.queries == []
    assert model.schemas == [CritiqueReport]


def test_guided_evidence_shows_the_sentences_that_bear_on_the_claim(small_model):
    filler = " ".join(f"Paris has sight number {n}." for n in range(20))
    search = Search({"Eiffel Tower completed": f"{filler} The Eiffel Tower was completed in 1889."})
    check = [("The Eiffel Tower was completed in 1887.", "search", "Eiffel Tower completed")]
    items = [{"claim": c, "tool": t, "tool_input": i} for c, t, i in check]
    replies = [DRAFT, json.dumps({"claims": items}), json.dumps({"answer": REVISED})]
    model, graph = build("json", replies, [search.tool], max_critique_rounds=1)
    out = graph.invoke(QUESTION)
    assert out["answer"] == REVISED and out["status"] == "completed"
    revise_prompt = content_text(model.prompts[2][-1].content)
    assert "The Eiffel Tower was completed in 1889." in revise_prompt
    assert "sight number 3." not in revise_prompt
    assert out["claims"][0]["observation"].startswith("Paris has sight number 0.")  # kept whole


def cut(text: str) -> AIMessage:
    """A reply stopped at the token cap."""
    return AIMessage(content=text, response_metadata={"finish_reason": "length"})


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_draft_is_asked_once_for_a_short_answer(mode):
    search = Search()
    replies = [cut("The tower " * 50), DRAFT, verified(mode)]
    model, graph = build(mode, replies, [search.tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == DRAFT and out["status"] == "completed"
    assert out["llm_calls"] == 3 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_a_draft_cut_twice_is_no_answer(mode):
    model, graph = build(mode, [cut("The tower " * 50), cut("It " * 80)], [Search().tool])
    out = graph.invoke(QUESTION)
    assert out["answer"] == "" and out["status"] == "max_iterations"
    assert out["llm_calls"] == 2 == model.call_count


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_revision_keeps_the_checked_draft_and_is_not_completed(mode):
    search = Search({"Eiffel Tower completion year": "Construction ran from 1887 to 1889."})
    replies = [
        DRAFT,
        critique(mode, [("completed in 1887", "search", "Eiffel Tower completion year")]),
        cut("1889 " * 100),
        cut("1889 " * 100),
    ]
    model, graph = build(mode, replies, [search.tool], max_critique_rounds=1)
    out = graph.invoke(QUESTION)
    assert out["answer"] == DRAFT and out["status"] == "max_iterations"
    assert out["llm_calls"] == 4 == model.call_count


def test_small_model_naming_no_claim_twice_has_its_draft_checked(small_model):
    search = Search()
    replies = [DRAFT, verified("text"), verified("text"), REVISED, verified("text")]
    model, graph = build("text", replies, [search.tool])
    out = graph.invoke(QUESTION)
    question = QUESTION["messages"][0][1]
    assert search.queries == [question]
    assert out["claims"][0]["claim"] == DRAFT and out["claims"][0]["tool"] == "search"
    assert out["answer"] == REVISED and out["llm_calls"] == len(replies) == model.call_count
