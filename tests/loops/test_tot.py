"""Tree-of-Thoughts scenarios on the scripted model.

Replies are chosen by prompt content (calls of one level run concurrently, so their
order is not fixed): a proposal prompt, a sampling prompt, a batched or single scoring
prompt, or the forced final answer.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from langchain.agents.middleware import wrap_model_call
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import prompts
from loopgraphs.graphs.tot import LOOP, create_tot_graph
from loopgraphs.graphs.tot import thoughts as thoughts_module
from loopgraphs.graphs.tot.state import call_budget
from loopgraphs.graphs.tot.steps import close_level
from loopgraphs.graphs.tot.thoughts import THOUGHT_TOKENS
from loopgraphs.nodes.driver import run_sync
from loopgraphs.nodes.judging import scores_for
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.parsing.thoughts import parse_score, parse_scores, parse_thoughts
from tests.support.fakes import ProviderError, ScriptedChatModel
from tests.support.scripts import FAST_RETRY

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
COMBOS = [
    ("propose", "batched"),
    ("propose", "per_branch"),
    ("sample", "batched"),
    ("sample", "per_branch"),
]
STEP_RE = re.compile(r"Step \d+: (.*)")
ATTEMPT_RE = re.compile(r"attempt (\d+) of")


def budget(**options) -> int:
    """The call budget of a graph built with ``options`` (the rest at their defaults)."""
    return call_budget(LOOP.resolve(options))


def prompt_text(messages) -> str:
    return "\n".join(content_text(m.content) for m in messages)


def last_steps(block: str) -> str:
    steps = STEP_RE.findall(block)
    return steps[-1] if steps else ""


def path_of(text: str) -> list[str]:
    """The thoughts shown under "Steps so far" in an expansion or final prompt."""
    shown = text.split("Steps so far:", 1)[1]
    return STEP_RE.findall(shown.split("\n\n", 1)[0])


def brain(*, propose=None, sample=None, scores=None, final="ANSWER: done"):
    """A reply function routing by prompt kind.

    propose(path) -> reply text; sample(path, k) -> reply text; scores: dict mapping a
    thought to its score (missing: 5); final: the forced answer's reply.
    """
    scores = scores or {}

    def default_propose(path):
        tag = "".join(path)[-20:]
        return "\n".join(f"{i}. {tag}t{len(path)}{i}" for i in (1, 2, 3))

    def reply(messages):
        text = prompt_text(messages)
        if "attempt" in text and "Write the single next step" in text:
            k = int(ATTEMPT_RE.search(text).group(1))
            path = path_of(text)
            return sample(path, k) if sample else f"s{len(path)}{k}"
        if "Score each candidate" in text:
            blocks = re.split(r"Candidate \d+:", text.split("Candidate lines of reasoning:", 1)[1])
            values = [scores.get(last_steps(block), 5) for block in blocks[1:]]
            return "\n".join(f"{i}: {v}" for i, v in enumerate(values, 1))
        if "How promising" in text:
            thought = text.split("Proposed next step: ", 1)[1].split("\n", 1)[0]
            return f'{{"score": {scores.get(thought, 5)}, "reason": "looks fine"}}'
        if "exploration is over" in text:
            return final
        if "Propose" in text:
            return (propose or default_propose)(path_of(text))
        raise AssertionError(f"unexpected prompt: {text[:200]}")

    return reply


def scripted(reply, **kwargs) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[reply], repeat_last=True, **kwargs)


def run(model, inputs="Solve it.", config=None, **options):
    graph = create_tot_graph(model, retry_policy=FAST_RETRY, **options)
    return graph.invoke({"messages": [("user", inputs)]}, config)


# --- the search ---------------------------------------------------------------------


def test_answer_in_first_level_ends_after_one_call():
    model = scripted(brain(propose=lambda path: "1. try 6*7\n2. ANSWER: 42\n3. guess"))
    out = run(model)
    assert (out["answer"], out["status"], out["stop_reason"]) == ("42", "completed", "answer")
    assert out["llm_calls"] == 1 == model.call_count
    assert out["depth"] == 1
    assert out["best_path"] == ["ANSWER: 42"]
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].content == "42"


def test_answer_in_sampled_thought_costs_one_round_of_samples():
    model = scripted(brain(sample=lambda path, k: "ANSWER: 9" if k == 2 else f"idea {k}"))
    out = run(model, generation="sample")
    assert (out["answer"], out["status"]) == ("9", "completed")
    assert out["llm_calls"] == 3 == model.call_count


def test_answer_at_second_level_skips_its_scoring():
    def propose(path):
        if not path:
            return "1. a\n2. b\n3. c"
        return "1. ANSWER: from b" if path == ["b"] else "1. more"

    model = scripted(brain(propose=propose, scores={"a": 2, "b": 9, "c": 6}))
    out = run(model)
    assert out["answer"] == "from b" and out["status"] == "completed"
    # root expansion + one scoring call + two concurrent expansions; no second scoring
    assert out["llm_calls"] == 4 == model.call_count
    assert out["depth"] == 2
    assert out["best_path"] == ["b", "ANSWER: from b"]


def test_max_depth_forces_one_final_answer_from_best_branch():
    model = scripted(brain(scores={"t01": 1, "t02": 8, "t03": 3}, final="ANSWER: 7"))
    out = run(model)
    assert (out["answer"], out["status"], out["stop_reason"]) == ("7", "completed", "max_depth")
    assert out["depth"] == 3
    assert out["llm_calls"] == 9 == model.call_count == budget()
    final_prompt = prompt_text(model.prompts[-1])
    assert "exploration is over" in final_prompt
    assert path_of(final_prompt) == out["best_path"] == out["branches"][0]["thoughts"]
    assert out["best_path"][0] == "t02"
    assert len(out["best_path"]) == 3
    assert len(out["candidates"]) == 6 and all(c["score"] is not None for c in out["candidates"])


def test_beam_keeps_top_beam_width_by_score_with_stable_ties():
    model = scripted(brain(scores={"t01": 4, "t02": 9, "t03": 4}))
    out = run(model, max_depth=1)
    assert out["branches"] == [
        {"thoughts": ["t02"], "score": 9.0},
        {"thoughts": ["t01"], "score": 4.0},
    ]
    assert [c["score"] for c in out["candidates"]] == [4.0, 9.0, 4.0]


def test_next_level_expands_only_the_kept_branches():
    model = scripted(brain(scores={"t01": 1, "t02": 7, "t03": 8}), delay=0.0)
    run(model, max_depth=2)
    expanded = [path_of(prompt_text(p)) for p in model.prompts if "Propose" in prompt_text(p)]
    assert sorted(expanded) == [[], ["t02"], ["t03"]]


def test_beam_width_one_follows_a_single_path():
    model = scripted(brain(scores={"t01": 1, "t02": 3, "t03": 9}))
    out = run(model, beam_width=1, max_depth=2)
    assert len(out["branches"]) == 1
    assert out["best_path"][0] == "t03"
    assert out["llm_calls"] == budget(beam_width=1, max_depth=2) == 5


# --- call counts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("generation", "scoring", "expected"),
    [
        ("propose", "batched", 9),
        ("propose", "per_branch", 21),
        ("sample", "batched", 19),
        ("sample", "per_branch", 31),
    ],
)
def test_calls_of_a_full_search_match_the_documented_formula(generation, scoring, expected):
    model = scripted(brain(final="no marker here"))
    out = run(model, generation=generation, scoring=scoring)
    assert (
        out["llm_calls"]
        == expected
        == budget(scoring=scoring, generation=generation)
        == model.call_count
    )
    assert out["status"] == "completed" and out["answer"] == "no marker here"


@pytest.mark.parametrize(("b", "d"), [(3, 3), (2, 4), (4, 2)])
def test_sample_per_branch_with_a_beam_of_one_makes_the_seeds_call_count(b, d):
    model = scripted(brain())
    out = run(
        model, generation="sample", scoring="per_branch", n_branches=b, beam_width=1, max_depth=d
    )
    assert out["llm_calls"] == d * b * 2 + 1 == model.call_count


def test_per_branch_scoring_makes_one_call_per_candidate():
    model = scripted(brain(scores={"t01": 2, "t02": 6, "t03": 9}))
    out = run(model, scoring="per_branch", max_depth=1)
    single = [p for p in model.prompts if "How promising" in prompt_text(p)]
    assert len(single) == 3
    assert [c["score"] for c in out["candidates"]] == [2.0, 6.0, 9.0]
    assert out["best_path"] == ["t03"]


def test_fewer_proposals_than_asked_are_used_and_counted():
    model = scripted(brain(propose=lambda path: "1. only one idea", scores={"only one idea": 3}))
    out = run(model, max_depth=2)
    assert len(out["branches"]) == 1
    # root + scoring + one expansion (the beam held one branch) + scoring + final
    assert out["llm_calls"] == 5 == model.call_count


# --- concurrency -------------------------------------------------------------------


@pytest.mark.parametrize("run_async", [False, True])
async def test_branches_of_a_level_are_expanded_concurrently(run_async):
    model = scripted(brain(), delay=0.2)
    graph = create_tot_graph(model, beam_width=2, max_depth=2, retry_policy=FAST_RETRY)
    inputs = {"messages": [("user", "q")]}
    out = await graph.ainvoke(inputs) if run_async else graph.invoke(inputs)
    # batched scoring and the final answer are single calls: only the two expansions of
    # level 1 can be in flight together
    assert model.max_concurrency >= 2
    assert out["llm_calls"] == budget(max_depth=2) == model.call_count


async def test_sampled_and_per_branch_calls_overlap_async():
    model = scripted(brain(), delay=0.1)
    graph = create_tot_graph(
        model, generation="sample", scoring="per_branch", beam_width=1, max_depth=1
    )
    out = await graph.ainvoke({"messages": [("user", "q")]})
    assert model.max_concurrency == 3
    assert out["llm_calls"] == 7


# --- adversarial models ----------------------------------------------------------


@pytest.mark.parametrize(("generation", "scoring"), COMBOS)
def test_random_text_every_call_stays_within_budget(generation, scoring):
    rng = random.Random(f"{generation}{scoring}")
    alphabet = 'abc 0123456789\n:.-[]{}"ANSWER*'

    def noise(messages):
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))

    model = scripted(noise)
    out = run(model, generation=generation, scoring=scoring)
    assert out["status"] in ("completed", "max_iterations")
    assert isinstance(out["answer"], str)
    assert out["llm_calls"] <= budget(scoring=scoring, generation=generation)
    assert out["llm_calls"] == model.call_count


@pytest.mark.parametrize(("generation", "scoring"), COMBOS)
def test_model_that_never_answers_gets_one_forced_answer(generation, scoring):
    model = scripted(lambda messages: "Hmm, let me think more about it.")
    out = run(model, generation=generation, scoring=scoring)
    most = budget(scoring=scoring, generation=generation)
    assert out["llm_calls"] == model.call_count <= most
    assert (out["status"], out["stop_reason"]) == ("completed", "max_depth")
    assert out["answer"] == "Hmm, let me think more about it."
    assert out["branches"][0]["score"] == 0.0


def test_empty_replies_end_in_a_dead_end_with_best_effort():
    model = scripted(lambda messages: "")
    out = run(model)
    assert out["stop_reason"] == "dead_end" and out["depth"] == 1
    assert out["status"] == "max_iterations" and out["answer"] == ""
    assert out["llm_calls"] == 2 == model.call_count


@pytest.mark.parametrize("generation", ["propose", "sample"])
def test_permanent_provider_error_ends_with_status_error(generation):
    model = scripted(ProviderError(401, "invalid api key"))
    out = run(model, generation=generation)
    assert out["status"] == "error"
    assert "401" in out["error"] and "invalid api key" in out["error"]
    assert isinstance(out["answer"], str)
    # Every rejected request counts as a model call (one proposal, or all three samples);
    # a 401 is not retried.
    assert model.call_count == (1 if generation == "propose" else 3)
    assert out["llm_calls"] == model.call_count
    assert out["retries"] == 0


def test_provider_error_while_scoring_ends_with_status_error():
    ok = brain()

    def reply(messages):
        if "Score each candidate" in prompt_text(messages):
            raise ProviderError(401, "invalid api key")
        return ok(messages)

    model = scripted(reply)
    out = run(model)
    assert out["status"] == "error" and "401" in out["error"]
    # The proposal and the rejected scoring request both count; a 401 is not retried.
    assert out["llm_calls"] == 2 == model.call_count and isinstance(out["answer"], str)
    assert out["retries"] == 0


def test_transient_error_in_one_branch_is_retried():
    good = brain()
    failed = {"done": False}

    def reply(messages):
        text = prompt_text(messages)
        if "Propose" in text and path_of(text) == ["t02"] and not failed["done"]:
            failed["done"] = True
            raise ProviderError(503, "overloaded")
        return good(messages)

    model = scripted(reply)
    out = run(model, max_depth=2)
    assert out["status"] == "completed"
    # The failed attempt's request counts on top of the budget, and it was retried once.
    assert out["llm_calls"] == budget(max_depth=2) + 1 == model.call_count
    assert out["retries"] == 1


def test_small_recursion_limit_never_raises():
    for limit in range(2, 20):
        model = scripted(brain(final="ANSWER: cut"))
        out = run(model, config={"recursion_limit": limit}, max_depth=12)
        assert out["status"] == "max_iterations", limit
        assert out["llm_calls"] == model.call_count <= budget(max_depth=12)
        assert out["answer"] == ("cut" if limit >= 3 else "")


# --- interface ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"n_branches": 0}, ValueError, "n_branches"),
        ({"n_branches": "3"}, TypeError, "n_branches"),
        ({"beam_width": 0}, ValueError, "beam_width"),
        ({"beam_width": 4}, ValueError, "beam_width"),
        ({"max_depth": 0}, ValueError, "max_depth"),
        ({"max_depth": 2.5}, TypeError, "max_depth"),
        ({"scoring": "x"}, ValueError, "scoring"),
        ({"generation": "y"}, ValueError, "generation"),
        ({"tools": "calculator"}, TypeError, "tools"),
        ({"system_prompt": 3}, TypeError, "system_prompt"),
    ],
)
def test_bad_factory_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        create_tot_graph(ScriptedChatModel(replies=[]), **kwargs)


async def test_invoke_and_ainvoke_give_the_same_result():
    graph_args = {"max_depth": 2, "retry_policy": FAST_RETRY}
    model = scripted(brain(scores={"t01": 9}))
    sync = create_tot_graph(model, **graph_args).invoke({"messages": [("user", "q")]})
    model_async = scripted(brain(scores={"t01": 9}))
    graph = create_tot_graph(model_async, **graph_args)
    out = await graph.ainvoke({"messages": [("user", "q")]})
    for key in ("answer", "status", "llm_calls", "branches", "best_path", "depth"):
        assert out[key] == sync[key], key
    assert out["best_path"][0] == "t01"


def test_tools_are_refused_with_a_clear_error():
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    with pytest.raises(TypeError, match="unexpected keyword argument 'tools' for tot"):
        create_tot_graph(scripted(brain()), tools=[multiply])
    with pytest.raises(TypeError):
        create_tot_graph(scripted(brain()), [multiply])  # type: ignore[misc]


def test_problem_and_system_prompt_reach_every_call():
    model = scripted(brain())
    run(model, inputs="How many legs do 3 spiders have?", max_depth=1, system_prompt="Be terse.")
    assert model.call_count == 3
    for prompt in model.prompts:
        text = prompt_text(prompt)
        assert "How many legs do 3 spiders have?" in text and "Be terse." in text


def test_callers_messages_are_not_mutated_and_answer_is_appended():
    history = [HumanMessage("2+2?")]
    model = scripted(brain(propose=lambda path: "1. ANSWER: 4"))
    out = create_tot_graph(model).invoke({"messages": history})
    assert len(history) == 1
    assert [type(m) for m in out["messages"]] == [HumanMessage, AIMessage]


def test_empty_input_is_a_clear_error():
    model = ScriptedChatModel(replies=[])
    out = create_tot_graph(model).invoke({"messages": []})
    assert out["status"] == "error" and "no messages" in out["error"]
    assert model.call_count == 0


def test_second_run_on_a_thread_starts_fresh():
    model = scripted(brain())
    graph = create_tot_graph(model, max_depth=2, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [("user", "q1")]}, config)
    second = graph.invoke({"messages": [("user", "q2")]}, config)
    assert first["llm_calls"] == second["llm_calls"] == budget(max_depth=2)
    assert len(second["candidates"]) == 6 and second["depth"] == 2
    assert "q2" in prompt_text(model.prompts[-1])


def test_graph_shape_snapshot():
    graph = create_tot_graph(ScriptedChatModel(replies=[]))
    assert graph.get_graph().draw_mermaid() == (SNAPSHOTS / "tot.mmd").read_text()


# --- parsers and scoring helpers ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. a\n2. b\n3. c\n4. d", ["a", "b", "c"]),
        ("Ideas:\n1) first\n   continued\n2) second", ["first\ncontinued", "second"]),
        ("- x\n* y", ["x", "y"]),
        ("**1.** bold\nStep 2: plain", ["bold", "plain"]),
        ('["p", "q"]', ["p", "q"]),
        ('{"thoughts": [{"thought": "r"}, "s"]}', ["r", "s"]),
        ('```json\n["u"]\n```', ["u"]),
        ("just one idea", ["just one idea"]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_parse_thoughts(text, expected):
    assert parse_thoughts(text, 3) == expected


def test_parse_thoughts_is_linear_on_hostile_input():
    started = time.monotonic()
    stars = ("*" * 60_000 + "\n") * 3
    assert parse_thoughts(stars, 3) == []  # empty bullets
    spaced = "1" + " " * 150_000 + "x"
    assert parse_thoughts(spaced, 3) == [spaced[:2000]]
    words = "step " * 30_000
    assert parse_thoughts(words, 3) == [words.strip()[:2000]]
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Score: 7/10", 7),
        ("I'd say 8 out of 10", 8),
        ("step 42 looks like a 6", 6),
        ("no number", None),
    ],
)
def test_parse_score(text, expected):
    found = parse_score(text)
    assert (found["score"] if found else None) == expected


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        ("1: 7\n2: 3\n3: 9", 3, [7, 3, 9]),
        ("Candidate 2 - 4\nCandidate 1: score 8", 3, [8, 4, 0]),
        ("scores: [5, 6, 7, 8]", 2, [5, 6]),
        ("7, 12", 3, [7, 10, 0]),
        ("nothing useful", 2, None),
    ],
)
def test_parse_scores(text, count, expected):
    found = parse_scores(text, count)
    assert (found["scores"] if found else None) == expected


@pytest.mark.parametrize(
    ("reply", "thoughts", "expected"),
    [
        ('{"scores": [4]}', ["a", "b", "c"], [4.0, 0.0, 0.0]),
        ('{"scores": [4, 5, 6]}', ["a"], [4.0]),
        ("no idea", ["a", "b"], [0.0, 0.0]),
    ],
)
def test_batched_scores_are_padded_and_cut_to_the_candidates(reply, thoughts, expected):
    model = ScriptedChatModel(replies=[reply])
    step = LOOP.step("score_branches", model, max_depth=1, n_branches=3, beam_width=1)
    candidates = [
        {"thoughts": [t], "score": None, "parent": 0, "index": i, "answer": ""}
        for i, t in enumerate(thoughts)
    ]
    state = {"messages": [HumanMessage("p")], "depth": 0, "candidates": candidates}
    update = run_sync(close_level(state, step), {})
    assert [c["score"] for c in update["candidates"]] == expected
    assert update["llm_calls"] == 1 == model.call_count


def test_batched_scoring_asks_for_exactly_one_bounded_score_per_candidate():
    formats: list = []

    @wrap_model_call
    def record(request, handler):
        formats.append(request.response_format)
        return handler(request)

    model = scripted(brain(propose=lambda path: "1. a\n2. b\n3. c"))
    create_tot_graph(model, max_depth=1, middleware=[record], retry_policy=FAST_RETRY).invoke(
        {"messages": [("user", "Solve it.")]}
    )
    asked = [f.schema for f in formats if f is not None]
    assert asked and all(schema.__name__ == "Scores" for schema in asked)
    scores = asked[0].model_json_schema()["properties"]["scores"]
    assert (scores["minItems"], scores["maxItems"]) == (3, 3)
    assert (scores["items"]["minimum"], scores["items"]["maximum"]) == (0, 10)
    # The bounds steer the decoder; a reply of another length is still read (fitted).
    assert scores_for(3).model_validate({"scores": [1, 2]}).scores == [1, 2]


@pytest.mark.parametrize(
    "generation, cap",
    [
        ("propose", {"max_tokens": 3 * THOUGHT_TOKENS, "stop": ["\n\n", "\n4."]}),
        ("sample", {"max_tokens": THOUGHT_TOKENS, "stop": ["\n\n"]}),
    ],
)
@pytest.mark.parametrize("embedded", [True, False])
def test_thoughts_are_capped_only_for_guided_models(monkeypatch, generation, cap, embedded):
    """On a small model that needs guided steps (the embedded one) a reply of thoughts has
    a token cap per thought and ends at a blank line (a proposal also at the item after
    the last one asked for)."""
    monkeypatch.setattr(thoughts_module, "needs_guided_steps", lambda model: embedded)
    settings: list[dict] = []

    @wrap_model_call
    def record(request, handler):
        settings.append(dict(request.model_settings))
        return handler(request)

    model = scripted(brain())
    graph = create_tot_graph(
        model, generation=generation, max_depth=1, middleware=[record], retry_policy=FAST_RETRY
    )
    graph.invoke({"messages": [("user", "Solve it.")]})
    expanding = settings[: 1 if generation == "propose" else 3]
    assert expanding == [cap if embedded else {}] * len(expanding)
    assert cap not in settings[len(expanding) :]  # scoring and answer: not capped


def test_scoring_reads_the_proposals_system_text_first():
    """Scoring requests start like the proposals (the same system text, then the
    problem), so a server's prompt cache reuses what the proposals read."""
    model = scripted(brain(propose=lambda path: "1. a\n2. b\n3. c"))
    create_tot_graph(model, max_depth=1, retry_policy=FAST_RETRY).invoke(
        {"messages": [("user", "Solve it.")]}
    )
    proposal, scoring = model.prompts[0], model.prompts[1]
    assert isinstance(scoring[0], SystemMessage) and scoring[0].content.startswith(
        prompts.TOT_SYSTEM
    )
    assert proposal[0].content == prompts.TOT_SYSTEM
    first_line = content_text(proposal[1].content).split("\n")[0]
    assert content_text(scoring[1].content).startswith(first_line + "\n")
