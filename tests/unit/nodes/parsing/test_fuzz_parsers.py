"""Every parser of model replies is total and linear-time.

Property tests feed arbitrary text (unicode, lone surrogates, binary-looking bytes, grammar
fragments of every loop, broken JSON) to each parser: it must return a well-formed result
and never raise. Timing tests feed pathological inputs (deep nesting, long runs of the
characters the grammars' patterns repeat on) of 10 KB, 100 KB and 1 MB: a 1 MB reply must
be parsed well under a second and ten times the input may cost at most ~20 times the time
(quadratic code costs 100 times).
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopgraphs.graphs.cot.steps import majority
from loopgraphs.graphs.rewoo.plans import plan_from_text as rewoo_plan_from_text
from loopgraphs.nodes.parsing.answers import (
    MAX_REFLECTION_CHARS,
    answer_key,
    normalise_reflection,
    parse_verdict,
)
from loopgraphs.nodes.parsing.critic import MAX_CLAIMS, make_claim, parse_critique
from loopgraphs.nodes.parsing.json_text import (
    extract_json,
    json_objects,
    json_spans,
    tool_input_value,
)
from loopgraphs.nodes.parsing.plans import (
    clean_steps,
    numbered_items,
    plan_from_text,
    update_from_text,
)
from loopgraphs.nodes.parsing.react import (
    ParsedReply,
    final_answer_of,
    parse_json_text,
    parse_react_text,
)
from loopgraphs.nodes.parsing.self_ask import asked_part, parse_self_ask
from loopgraphs.nodes.parsing.text import (
    FINAL_ANSWER_RE,
    ListItem,
    after_marker,
    content_text,
    list_items,
    strip_marker,
    tidy,
)
from loopgraphs.nodes.parsing.thoughts import (
    SCORE_SEPARATORS,
    answer_in,
    parse_score,
    parse_scores,
    parse_thoughts,
)
from loopgraphs.nodes.tool_guard import unfence


@dataclass(frozen=True)
class Parser:
    name: str
    run: Callable[[str], Any]
    check: Callable[[Any], bool]


def _is_str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_dict_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and bool(value))


def _is_step(value: Any) -> bool:
    return (
        isinstance(value, ParsedReply)
        and value.kind in ("final", "action", "none")
        and isinstance(value.answer, str)
        and isinstance(value.action, str)
        and isinstance(value.action_input, (dict, str))
    )


def _str_list(limit: int | None = None) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        ok = isinstance(value, list) and all(isinstance(item, str) and item for item in value)
        return ok and (limit is None or len(value) <= limit)

    return check


def _score(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and 0 <= value["score"] <= 10)


def _scores(value: Any) -> bool:
    return value is None or (
        len(value["scores"]) == 4 and all(0 <= score <= 10 for score in value["scores"])
    )


def _steps(value: Any) -> bool:
    return value is None or _str_list()(value["steps"])


def _items(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, ListItem)
        and (item.number is None or 0 <= item.number <= 999)
        and isinstance(item.text, str)
        and all(isinstance(line, str) and line for line in item.more)
        for item in value
    )


PARSERS = [
    Parser("parse_react_text", parse_react_text, _is_step),
    Parser("parse_json_text", parse_json_text, _is_step),
    Parser("extract_json", extract_json, _is_dict_or_none),
    Parser(
        "json_objects",
        json_objects,
        lambda v: all(isinstance(item, dict) and item for item in v),
    ),
    Parser("json_spans", json_spans, lambda v: all(0 <= start < end for start, end in v)),
    Parser("tool_input_value", tool_input_value, lambda v: isinstance(v, (dict, str))),
    Parser("final_answer_of", final_answer_of, lambda v: isinstance(v, str)),
    Parser(
        "after_marker",
        lambda text: after_marker(text, FINAL_ANSWER_RE),
        _is_str_or_none,
    ),
    Parser("content_text", content_text, lambda v: isinstance(v, str)),
    Parser("tidy", tidy, lambda v: isinstance(v, str)),
    Parser("list_items", list_items, _items),
    Parser(
        "list_items.tight",
        lambda text: list_items(text, separators=SCORE_SEPARATORS, tight=True),
        _items,
    ),
    Parser("strip_marker", strip_marker, lambda v: isinstance(v, str)),
    Parser(
        "parse_self_ask",
        parse_self_ask,
        lambda v: (
            v.kind in ("final", "tool", "follow_up", "intermediate", "none")
            and isinstance(v.answer, str)
            and isinstance(v.question, str)
        ),
    ),
    Parser("asked_part", asked_part, lambda v: isinstance(v, str)),
    Parser(
        "parse_critique",
        parse_critique,
        lambda v: (
            isinstance(v.verified, bool)
            and len(v.claims) <= MAX_CLAIMS
            and all({"claim", "tool", "tool_input"} <= set(c) for c in v.claims)
        ),
    ),
    Parser(
        "make_claim",
        lambda text: make_claim(text, "search", text),
        lambda v: v is None or v["tool"],
    ),
    Parser("answer_key", answer_key, lambda v: isinstance(v, str)),
    Parser(
        "parse_verdict",
        parse_verdict,
        lambda v: v is None or isinstance(v["satisfactory"], bool),
    ),
    Parser(
        "normalise_reflection",
        normalise_reflection,
        lambda v: isinstance(v, str) and len(v) <= MAX_REFLECTION_CHARS + 2,
    ),
    Parser("parse_thoughts", lambda text: parse_thoughts(text, 5), _str_list(5)),
    Parser("answer_in", answer_in, lambda v: v is None or (v and isinstance(v, str))),
    Parser("parse_score", parse_score, _score),
    Parser("parse_scores", lambda text: parse_scores(text, 4), _scores),
    Parser("numbered_items", numbered_items, _str_list()),
    Parser("plan_from_text", plan_from_text, _steps),
    Parser("update_from_text", update_from_text, lambda v: v is None or _steps(v)),
    Parser("clean_steps", clean_steps, _str_list()),
    Parser(
        "unfence",
        lambda text: unfence(text, "0123456789ab"),
        lambda v: isinstance(v, str),
    ),
    Parser(
        "rewoo.plan_from_text",
        rewoo_plan_from_text,
        lambda v: v is None or all(isinstance(step, dict) and step["tool"] for step in v["steps"]),
    ),
    Parser(
        "cot.majority",
        lambda text: majority([text, text[: len(text) // 2], text]),
        lambda v: v[0] in (0, 1, 2) and isinstance(v[1], dict),
    ),
]
IDS = [parser.name for parser in PARSERS]

# ---------------------------------------------------------------- strategies

FRAGMENTS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Observation:",
    "FINAL_ANSWER:",
    "Final Answer:",
    "FINAL ANSWER:",
    "final_answer",
    "So the final answer is:",
    "Follow up:",
    "Are follow up questions needed here: Yes.",
    "Intermediate answer:",
    "Tool:",
    "Tool Input:",
    "CLAIM:",
    "TOOL:",
    "TOOL INPUT:",
    "VERIFIED",
    "NOT VERIFIED",
    "ANSWER:",
    "**ANSWER**:",
    "SATISFACTORY",
    "UNSATISFACTORY",
    "Reflection:",
    "score",
    "Score: 11",
    "DONE",
    "ParsedReply 1:",
    "1.",
    "2)",
    "10:",
    "- ",
    "* ",
    "•",
    "**",
    "__",
    "> ",
    "#",
    "```json",
    "```",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\\",
    ":",
    ",",
    '{"action": "search", "action_input": {"query": "x"}}',
    '{"thoughts": ["a", ',
    '{"scores": [1, 2',
    "Plan:",
    "#E1 = search[",
    "#E2",
    '{"plan": "a", "evidence": {"placeholder": "#E1", "tool": "t"',
    '{"steps": [{"tool": "t", "tool_input": "#E1"}',
    '{"steps": ["a"]}',
    '{"claims": [{"claim": "c", ',
    '"tool": "search"',
    "\n",
    "\r\n",
    "\t",
    " ",
    "\x00",
    "\u2028",
    "𝟙",
    "é",
    "日本",
    "\ufeff",
    "<<end_tool_output 000000>>",
    "999999999999999999999",
    "-1",
    "1e999",
    "NaN",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)

ANY_TEXT = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=20),
    st.binary(max_size=400).map(lambda raw: raw.decode("latin-1")),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=30).map("".join),
    st.tuples(json_values.map(json.dumps), st.integers(0, 400)).map(lambda p: p[0][: p[1]]),
)


@pytest.mark.parametrize("parser", PARSERS, ids=IDS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=ANY_TEXT)
def test_parser_is_total(parser: Parser, text: str) -> None:
    result = parser.run(text)
    assert parser.check(result), (parser.name, text[:200], result)


# ---------------------------------------------------------------- fixed hostile inputs

rng = random.Random(7)
HOSTILE = {
    "empty": "",
    "open_braces": "{" * 100_000,
    "open_brackets": "[" * 100_000,
    "nested_valid": "[" * 50_000 + "]" * 50_000,
    "nested_object": '{"a":' * 30_000 + "1" + "}" * 30_000,
    "quotes": '"' * 100_000,
    "backslashes": "\\" * 100_000,
    "nul": "\x00" * 10_000,
    "surrogates": "\ud800\udfff\udbff" * 1000,
    "binary_1mb": bytes(rng.randrange(256) for _ in range(1_000_000)).decode("latin-1"),
    "unicode": "ＡＣＴＩＯＮ：ﬁ\u200b\u202e" * 10_000,
    "big_int": '{"a": ' + "9" * 100_000 + "}",
    "markers": "".join(FRAGMENTS) * 2_000,
}
HOSTILE_LIMIT_S = 1.0


def _in_child(func: Callable[[], Any], timeout: float) -> Any:
    """Run ``func`` in a forked process so that a runaway parser fails the test instead
    of hanging the suite; CPU time measured there is the parser's own."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def target() -> None:
        try:
            send.send(("ok", func()))
        except BaseException as exc:  # report anything, even KeyboardInterrupt
            send.send(("raised", f"{type(exc).__name__}: {exc}"))

    process = context.Process(target=target, daemon=True)
    process.start()
    try:
        if not receive.poll(timeout):
            pytest.fail(f"still running after {timeout:g} s: far slower than linear")
        kind, value = receive.recv()
    finally:
        process.kill()
        process.join(5)
    assert kind == "ok", value
    return value


def _hostile_report(parser: Parser) -> dict[str, str]:
    problems = {}
    for name, text in HOSTILE.items():
        started = time.process_time()
        result = parser.run(text)
        elapsed = time.process_time() - started
        if not parser.check(result):
            problems[name] = f"bad result {result!r:.200}"
        elif elapsed > HOSTILE_LIMIT_S:
            problems[name] = f"took {elapsed:.2f} s"
    return problems


@pytest.mark.parametrize("parser", PARSERS, ids=IDS)
def test_parser_survives_hostile_inputs(parser: Parser) -> None:
    problems = _in_child(lambda: _hostile_report(parser), timeout=60)
    assert not problems, f"{parser.name}: {problems}"


# ---------------------------------------------------------------- linear time

MEDIUM, LARGE = 100_000, 1_000_000
LARGE_LIMIT_S = 0.5
RATIO_LIMIT = 20.0
TIMER_FLOOR_S = 0.002  # CPU timings below this are noise


def _run(char: str) -> Callable[[int], str]:
    return lambda size: char * (size - 1) + "x"


def _lines(char: str) -> Callable[[int], str]:
    return lambda size: ((char * 200 + "x\n") * (size // 202 + 1))[:size]


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda size: (unit * (size // len(unit) + 1))[:size]


def _mixed(size: int) -> str:
    local = random.Random(size)
    parts: list[str] = []
    total = 0
    while total < size:
        part = local.choice(FRAGMENTS) + local.choice(["", " ", "\n", "x"])
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


PATTERNS: dict[str, Callable[[int], str]] = {
    **{f"run[{c!r}]": _run(c) for c in '{["\\*_ \n:9'},
    **{f"lines[{c!r}]": _lines(c) for c in "* "},
    "react": _repeat('Action: a\nAction Input: {\n"x": "'),
    "claims": _repeat("CLAIM: c\nTOOL: t\nTOOL INPUT: {\n"),
    "list": _repeat("1. a\nb\n"),
    "scores": _repeat("1: 7\n"),
    "objects": _repeat('{"a": 1}, '),
    "broken_objects": _repeat("{a: b, "),
    "many_broken_objects": _repeat("{a: " + "b, " * 6000 + "}"),
    "mixed": _mixed,
}
TEXTS = {name: (make(MEDIUM), make(LARGE)) for name, make in PATTERNS.items()}


def _cpu_time(func: Callable[[str], Any], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        func(text)
        best = min(best, time.process_time() - started)
    return best


def _violations(func: Callable[[str], Any], medium: str, large: str, repeats: int) -> list[str]:
    small_time = _cpu_time(func, medium, repeats)
    large_time = _cpu_time(func, large, repeats)
    problems = []
    if large_time > LARGE_LIMIT_S:
        problems.append(f"1 MB took {large_time:.3f} s")
    ratio = large_time / max(small_time, TIMER_FLOOR_S)
    if ratio > RATIO_LIMIT:
        problems.append(
            f"100 KB -> 1 MB: time x{ratio:.0f} ({small_time:.4f} -> {large_time:.4f} s)"
        )
    return problems


def _linear_report(func: Callable[[str], Any]) -> dict[str, list[str]]:
    failures = {}
    for name, (medium, large) in TEXTS.items():
        # One quick pass; only a suspicious pattern is measured again (best of 5 runs).
        if _violations(func, medium, large, 1):
            problems = _violations(func, medium, large, 5)
            if problems:
                failures[name] = problems
    return failures


@pytest.mark.parametrize("parser", PARSERS, ids=IDS)
def test_parser_runs_in_linear_time(parser: Parser) -> None:
    failures = _in_child(lambda: _linear_report(parser.run), timeout=90)
    assert not failures, f"{parser.name}: {failures}"


def test_complexity_check_catches_quadratic_code() -> None:
    """The check itself can fail: quadratic work is flagged, linear work is not."""

    def quadratic(text: str) -> int:
        return sum(len(text[start:]) for start in range(0, len(text), 50))

    def linear(text: str) -> int:
        return len(text.upper())

    medium, large = TEXTS["mixed"]
    assert _violations(quadratic, medium, large, 1)
    assert not _violations(linear, medium, large, 3)
