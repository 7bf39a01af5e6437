"""Evaluate the loops on task suites generated from the bundled knowledge base.

Three suites, each generated deterministically from a seed (``random.Random(seed)``):

* ``arithmetic``: multi-step integer arithmetic where the calculator helps; the answer is
  the exact integer.
* ``multihop``: two-hop questions over the fictional knowledge base, e.g. "In which place
  was the founder of Quillmark Instruments born?"; the answer is read from the facts.
* ``verify``: a claim about one fact, true or false, e.g. "Claim: Quillmark Instruments
  was founded in the year 1921. Is this true? If false, give the correct value."; the
  answer is ``"true"`` or the correct value.

Scoring rule (``score``), applied to the loop's ``answer``:

1. Both texts are normalised (``normalise``): Unicode-folded and case-folded, accents
   dropped, punctuation removed, the articles "a", "an" and "the" dropped, whitespace
   collapsed, and numbers written canonically (``"1,234.0"`` becomes ``"1234"``).
2. A prediction is correct when it equals the expected answer (or an alias) after
   normalisation, or when it has at most ``SHORT_PREDICTION_WORDS`` (30) words and
   contains the normalised expected answer as a whole word or phrase ("The answer is
   11,297." matches ``11297``; "112970" does not).
3. ``verify`` items first read the prediction's verdict, ignoring its questions (sentences
   ending in "?") and the sentences of 3 or more words it copies from the task: it says
   *true* when it holds one of "true", "yes", "correct", "right", "accurate" (not as in
   "the correct answer") and none of the negations "false", "no", "not", "incorrect",
   "wrong", "untrue", "inaccurate" (any length). A true claim is answered correctly by a
   true verdict only. A false claim is answered correctly by a prediction that gives the
   correct value (rule 2) without a true verdict.

The suites never hold an item whose expected answer already appears in its question (an
organisation founded by its own chief executive, a false claim about "Greywillow
Shipping" whose correct industry is "shipping"), so rule 2 cannot be met by echoing it.

``evaluate`` runs every (loop, task) pair with bounded concurrency on ``graph.ainvoke``;
a run that raises is recorded with status ``"error"`` and never stops the evaluation.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import statistics
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from loopgraphs.graphs.registry import LOOP_SPECS, LOOPS, build_loop
from loopgraphs.models import describe_model
from loopgraphs.nodes.errors import describe_error
from loopgraphs.toolkits import calculator, load_knowledge_base, make_search_tool
from loopgraphs.toolkits.knowledge import render_fact

SUITES: tuple[str, ...] = ("arithmetic", "multihop", "verify")
DEFAULT_SEED = 20250101
SUITE_SIZE = 40
SHORT_PREDICTION_WORDS = 30
ECHO_WORDS = 3  # a sentence this long found in the question is an echo, not a verdict
STATUSES: tuple[str, ...] = ("completed", "max_iterations", "error")

ARTICLES = frozenset({"a", "an", "the"})
TRUE_WORDS = frozenset({"true", "yes", "correct", "right", "accurate"})
NEGATION_WORDS = frozenset({"false", "no", "not", "incorrect", "wrong", "untrue", "inaccurate"})
QUALIFIERS = frozenset({"correct", "right", "accurate"})
QUALIFIED_NOUNS = frozenset(
    {"answer", "value", "one", "year", "number", "name", "place", "result", "response"}
)

VERIFY_TEMPLATE = "Claim: {claim} Is this true? If false, give the correct value."

MULTIHOP_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    ("founded_by", "born_in", "In which place was the founder of {name} born?"),
    ("founded_by", "profession", "What is the profession of the founder of {name}?"),
    ("founded_by", "born_year", "In which year was the founder of {name} born?"),
    ("headquartered_in", "country", "In which country is {name} headquartered?"),
    ("headquartered_in", "river", "On which river lies the city where {name} is headquartered?"),
    ("headquartered_in", "mayor", "Who is the mayor of the place where {name} is headquartered?"),
    ("ceo", "born_in", "In which place was the chief executive of {name} born?"),
    ("born_in", "country", "In which country was {name} born?"),
    ("born_in", "river", "On which river lies the birthplace of {name}?"),
    ("works_for", "headquartered_in", "Where is the employer of {name} headquartered?"),
    ("works_for", "founded_by", "Who founded the organisation that {name} works for?"),
    ("mentor", "profession", "What is the profession of the mentor of {name}?"),
    ("mentor", "born_in", "In which place was the mentor of {name} born?"),
    ("spouse", "profession", "What is the profession of the spouse of {name}?"),
    ("mayor", "profession", "What is the profession of the mayor of {name}?"),
    ("mayor", "born_year", "In which year was the mayor of {name} born?"),
)
"""Two-hop question templates: ``(first relation, second relation, question)``."""

_TOKEN = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)|\w+")
_NUMBER = re.compile(r"-?[\d,]+(?:\.\d+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?\n])")


@dataclass(frozen=True)
class Task:
    """One question of a suite.

    Attributes:
        id: Unique within the suite, e.g. ``"multihop-007"``.
        suite: The suite's name.
        question: The text sent to the loop as the user message.
        answer: The expected answer (``"true"`` for a true claim of ``verify``).
        aliases: Other answers accepted as equally correct.
    """

    id: str
    suite: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------
# Suites


def _arithmetic_item(rng: random.Random) -> tuple[str, int]:
    kind = rng.randrange(8)
    a, b = rng.randint(12, 99), rng.randint(12, 99)
    c, d = rng.randint(101, 999), rng.randint(3, 29)
    if kind == 0:
        return f"What is {a} * {b} + {c}?", a * b + c
    if kind == 1:
        return f"What is ({a} + {b}) * {d} - {c}?", (a + b) * d - c
    if kind == 2:
        return f"What is {a} * {b} - {d} * {c}?", a * b - d * c
    if kind == 3:
        return f"What is {c} * {d} + {a} * {b}?", c * d + a * b
    if kind == 4:
        divisor = rng.choice((2, 3, 4, 5, 6, 8))
        product = a * divisor * b
        return f"What is {product} / {divisor} + {c}?", product // divisor + c
    if kind == 5:
        return (
            f"A warehouse holds {a} crates of {b} bottles each. {c} bottles are sold. "
            "How many bottles are left?",
            a * b - c,
        )
    if kind == 6:
        return (
            f"A train has {d} carriages with {a + b} seats each, and {b} seats are taken in "
            "every carriage. How many seats are free in total?",
            d * a,
        )
    return (
        f"A printer prints {c} pages an hour for {d} hours, then {a} more pages. "
        "How many pages did it print?",
        c * d + a,
    )


def arithmetic_suite(seed: int = DEFAULT_SEED, size: int = SUITE_SIZE) -> list[Task]:
    """Multi-step integer arithmetic; every answer is an exact integer."""
    rng = random.Random(seed)
    tasks: list[Task] = []
    seen: set[str] = set()
    while len(tasks) < size:
        question, value = _arithmetic_item(rng)
        if question in seen or contains_phrase(normalise(question), normalise(str(value))):
            continue
        seen.add(question)
        tasks.append(Task(f"arithmetic-{len(tasks):03d}", "arithmetic", question, str(value)))
    return tasks


def _facts() -> dict[str, dict[str, str]]:
    return {entity.name: entity.facts for entity in load_knowledge_base()}


def multihop_suite(seed: int = DEFAULT_SEED, size: int = SUITE_SIZE) -> list[Task]:
    """Two-hop questions whose answers are read from the knowledge base."""
    facts = _facts()
    candidates: list[tuple[str, str]] = []
    for name, own in facts.items():
        for first, second, template in MULTIHOP_TEMPLATES:
            middle = own.get(first)
            answer = facts.get(middle or "", {}).get(second)
            question = template.format(name=name)
            # skip questions that hold their own answer (an organisation founded by its CEO)
            if answer is not None and not contains_phrase(normalise(question), normalise(answer)):
                candidates.append((question, answer))
    rng = random.Random(seed)
    chosen = rng.sample(candidates, min(size, len(candidates)))
    return [
        Task(f"multihop-{index:03d}", "multihop", question, answer)
        for index, (question, answer) in enumerate(chosen)
    ]


def verify_suite(seed: int = DEFAULT_SEED, size: int = SUITE_SIZE) -> list[Task]:
    """Claims about single facts, every other one false (with a value of the same relation
    taken from another entity); the answer is ``"true"`` or the correct value."""
    facts = _facts()
    values: dict[str, list[str]] = {}
    for own in facts.values():
        for relation, value in own.items():
            values.setdefault(relation, [])
            if value not in values[relation]:
                values[relation].append(value)
    triples = [
        (name, relation, value) for name, own in facts.items() for relation, value in own.items()
    ]
    rng = random.Random(seed)
    tasks: list[Task] = []
    for subject, relation, value in rng.sample(triples, len(triples)):
        others = [v for v in values[relation] if v != value]
        if others and len(tasks) % 2:  # every other claim is false
            claim, answer = render_fact(subject, relation, rng.choice(others)), value
            if contains_phrase(normalise(claim), normalise(value)):
                continue  # the correct value is written in the claim (a company's name)
        else:
            claim, answer = render_fact(subject, relation, value), "true"
        question = VERIFY_TEMPLATE.format(claim=claim)
        tasks.append(Task(f"verify-{len(tasks):03d}", "verify", question, answer))
        if len(tasks) == size:
            break
    return tasks


SUITE_BUILDERS: dict[str, Callable[[int, int], list[Task]]] = {
    "arithmetic": arithmetic_suite,
    "multihop": multihop_suite,
    "verify": verify_suite,
}


def make_suite(name: str, seed: int = DEFAULT_SEED, size: int = SUITE_SIZE) -> list[Task]:
    """Generate one suite by name; the same seed always gives the same tasks.

    Raises:
        ValueError: ``name`` is not one of ``SUITES``.
    """
    if name not in SUITE_BUILDERS:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}")
    return SUITE_BUILDERS[name](seed, size)


# ---------------------------------------------------------------------------------------
# Scoring


def _canonical_number(token: str) -> str:
    text = token.replace(",", "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    negative = text.startswith("-")
    digits = text.lstrip("-").lstrip("0")
    if not digits or digits.startswith("."):
        digits = "0" + digits
    return f"-{digits}" if negative and digits != "0" else digits


def normalise(text: str) -> str:
    """Normalise an answer for comparison (see the module docstring).

    >>> normalise("The answer: 1,234.0!")
    'answer 1234'
    """
    folded = unicodedata.normalize("NFKD", str(text).casefold())
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    words: list[str] = []
    for token in _TOKEN.findall(folded):
        if _NUMBER.fullmatch(token) and any(char.isdigit() for char in token):
            words.append(_canonical_number(token))
        elif token not in ARTICLES:
            words.append(token.replace("_", " ").strip() or token)
    return " ".join(word for word in " ".join(words).split())


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether normalised ``phrase`` occurs in normalised ``text`` as whole words."""
    return bool(phrase) and f" {phrase} " in f" {text} "


def verdict_is_true(prediction: str, question: str = "") -> bool:
    """Whether a prediction asserts that a claim is true (see the module docstring).

    Sentences that are questions, or that repeat a part of ``question``, are not read.
    """
    asked = normalise(question)
    kept = []
    for sentence in _SENTENCE_END.split(prediction):
        said = normalise(sentence)
        copied = len(said.split()) >= ECHO_WORDS and contains_phrase(asked, said)
        if said and not sentence.rstrip().endswith("?") and not copied:
            kept.append(said)
    words = " ".join(kept).split()
    affirmed = any(
        word in TRUE_WORDS and not (word in QUALIFIERS and following in QUALIFIED_NOUNS)
        for word, following in pairwise([*words, ""])
    )
    return affirmed and not set(words) & NEGATION_WORDS


def matches(prediction: str, expected: Iterable[str]) -> bool:
    """Exact match after normalisation, or a whole-phrase match in a short prediction."""
    said = normalise(prediction)
    short = len(str(prediction).split()) <= SHORT_PREDICTION_WORDS
    for answer in expected:
        wanted = normalise(answer)
        if wanted and (said == wanted or (short and contains_phrase(said, wanted))):
            return True
    return False


def score(prediction: str, task: Task) -> bool:
    """Whether ``prediction`` answers ``task`` correctly (see the module docstring)."""
    prediction = prediction or ""
    expected = (task.answer, *task.aliases)
    if task.suite == "verify":
        verdict = verdict_is_true(prediction, task.question)
        if normalise(task.answer) == "true":
            return verdict
        return not verdict and matches(prediction, expected)
    return matches(prediction, expected)


# ---------------------------------------------------------------------------------------
# Running


@dataclass
class RunResult:
    """The outcome of one loop on one task."""

    loop: str
    suite: str
    task_id: str
    question: str
    expected: str
    answer: str
    correct: bool
    status: str
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency: float
    error: str = ""


@dataclass
class Summary:
    """Aggregates of one loop on one suite (``suite == "all"`` for every suite together)."""

    loop: str
    suite: str
    n: int
    correct: int
    accuracy: float
    mean_llm_calls: float
    mean_tokens: float
    mean_latency: float
    statuses: dict[str, int]


def summarise(loop: str, suite: str, runs: Sequence[RunResult]) -> Summary:
    """Accuracy, means and status counts of some runs."""
    n = len(runs)

    def mean(values: Iterable[float]) -> float:
        items = list(values)
        return statistics.fmean(items) if items else math.nan

    counts = Counter(run.status for run in runs)
    statuses = {status: counts.get(status, 0) for status in STATUSES}
    statuses.update({k: v for k, v in counts.items() if k not in statuses})
    correct = sum(run.correct for run in runs)
    return Summary(
        loop=loop,
        suite=suite,
        n=n,
        correct=correct,
        accuracy=correct / n if n else math.nan,
        mean_llm_calls=mean(run.llm_calls for run in runs),
        mean_tokens=mean(run.input_tokens + run.output_tokens for run in runs),
        mean_latency=mean(run.latency for run in runs),
        statuses=statuses,
    )


@dataclass
class EvalReport:
    """Every run of an evaluation, with summaries, a table, JSON and a chart."""

    results: list[RunResult]
    loops: list[str]
    suites: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    def runs(self, loop: str, suite: str | None = None) -> list[RunResult]:
        """The runs of one loop, on one suite or (``None``) on every suite."""
        return [r for r in self.results if r.loop == loop and suite in (None, r.suite)]

    def summary(self, *, overall: bool = False) -> list[Summary]:
        """One summary per loop and suite, in the order asked for; with ``overall`` also
        one per loop over every suite (``suite="all"``)."""
        rows: list[Summary] = []
        for loop in self.loops:
            rows.extend(summarise(loop, suite, self.runs(loop, suite)) for suite in self.suites)
            if overall:
                rows.append(summarise(loop, "all", self.runs(loop)))
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``to_json`` writes)."""
        return {
            "meta": self.meta,
            "summary": [asdict(row) for row in self.summary(overall=True)],
            "results": [asdict(result) for result in self.results],
        }

    @classmethod
    def from_json(cls, path: str | Path) -> EvalReport:
        """Read a report written by ``to_json`` (to redraw its table or chart)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        meta = data.get("meta", {})
        results = [RunResult(**item) for item in data.get("results", [])]
        return cls(results=results, loops=meta["loops"], suites=meta["suites"], meta=meta)

    def to_json(self, path: str | Path) -> Path:
        """Write the report as JSON; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str)
        target.write_text(text + "\n", encoding="utf-8")
        return target

    def _rows(self) -> list[list[str]]:
        rows = []
        for row in self.summary():
            statuses = ", ".join(f"{k} {v}" for k, v in row.statuses.items() if v)
            rows.append(
                [
                    row.loop,
                    row.suite,
                    str(row.n),
                    f"{100 * row.accuracy:.0f}%" if row.n else "-",
                    f"{row.mean_llm_calls:.1f}",
                    f"{row.mean_tokens:,.0f}",
                    f"{row.mean_latency:.2f}",
                    statuses,
                ]
            )
        return rows

    HEADERS = ("loop", "suite", "n", "accuracy", "calls", "tokens", "latency s", "status")

    def table(self) -> Table:
        """A rich table: per loop and suite, accuracy and means per run."""
        table = Table(title=self.meta.get("title", "evaluation"))
        for header in self.HEADERS:
            table.add_column(header, justify="left" if header in ("loop", "suite") else "right")
        for row in self._rows():
            table.add_row(*row)
        return table

    def markdown(self) -> str:
        """The same table in Markdown, preceded by the run's settings."""
        meta = self.meta
        lines = [
            f"Evaluation of {', '.join(self.loops)} on {describe_meta(meta)}.",
            "",
            "Calls, tokens (input + output) and latency are means per run.",
            "",
            "| " + " | ".join(self.HEADERS) + " |",
            "|" + "|".join(":--" if h in ("loop", "suite") else "--:" for h in self.HEADERS) + "|",
        ]
        lines.extend("| " + " | ".join(row) + " |" for row in self._rows())
        return "\n".join(lines) + "\n"

    def chart(self, path: str | Path) -> Path:
        """Save a PNG bar chart: accuracy per loop and suite, and mean model calls per loop.

        Raises:
            RuntimeError: matplotlib is not installed.
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as error:
            raise RuntimeError(
                'The chart needs matplotlib: pip install "loopgraphs[eval]" '
                "(or pip install matplotlib)."
            ) from error
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        loops = self.loops
        width = 0.8 / max(len(self.suites), 1)
        figure, (left, right) = plt.subplots(
            1,
            2,
            figsize=(max(8.0, 1.6 * len(loops) + 4), 4.2),
            gridspec_kw={"width_ratios": [3, 2]},
        )
        for index, suite in enumerate(self.suites):
            values = [
                100 * summarise(loop, suite, self.runs(loop, suite)).accuracy for loop in loops
            ]
            positions = [
                i + (index - (len(self.suites) - 1) / 2) * width for i in range(len(loops))
            ]
            bars = left.bar(
                positions, [0 if math.isnan(v) else v for v in values], width, label=suite
            )
            left.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
        left.set_xticks(range(len(loops)), loops, rotation=30, ha="right")
        left.set_ylabel("accuracy (%)")
        left.set_ylim(0, 105)
        left.set_title("accuracy per suite")
        left.legend(fontsize="small")
        calls = [summarise(loop, "all", self.runs(loop)).mean_llm_calls for loop in loops]
        bars = right.bar(
            range(len(loops)), [0 if math.isnan(v) else v for v in calls], color="tab:gray"
        )
        right.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
        right.set_xticks(range(len(loops)), loops, rotation=30, ha="right")
        right.set_ylabel("model calls per run (mean)")
        right.set_title("cost")
        figure.suptitle(describe_meta(self.meta), fontsize="small")
        figure.tight_layout()
        figure.savefig(target, dpi=120)
        plt.close(figure)
        return target


def describe_meta(meta: Mapping[str, Any]) -> str:
    """One line naming the model, date and limits of an evaluation."""
    parts = [str(meta.get("model", "a model"))]
    if meta.get("date"):
        parts.append(str(meta["date"])[:10])
    if meta.get("limit"):
        parts.append(f"{meta['limit']} items per suite")
    if meta.get("max_tokens"):
        parts.append(f"max_tokens {meta['max_tokens']}")
    if meta.get("seed") is not None:
        parts.append(f"seed {meta['seed']}")
    return ", ".join(parts)


def uses_tools(loop: str) -> bool:
    """Whether a registered loop calls tools."""
    return LOOP_SPECS[loop].takes_tools


def eval_tools() -> list[BaseTool]:
    """The tools given to tool-using loops: the calculator and the knowledge-base search."""
    return [calculator, make_search_tool()]


def _names(value: str | Sequence[str] | None, known: Sequence[str], kind: str) -> list[str]:
    if value is None or value == "all" or (not isinstance(value, str) and list(value) == ["all"]):
        return list(known)
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown {kind} {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


async def aevaluate(
    model: Any,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    limit: int | None = None,
    concurrency: int = 4,
    loop_options: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Async form of :func:`evaluate`."""
    loop_names = _names(loops, list(LOOPS), "loop")
    suite_names = _names(suites, SUITES, "suite")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1; got {concurrency!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be an int >= 1 or None; got {limit!r}")
    options = {name: dict((loop_options or {}).get(name, {})) for name in loop_names}
    tools = eval_tools()
    graphs = {name: build_loop(name, model, tools, **options[name]) for name in loop_names}
    tasks = {suite: make_suite(suite, seed)[:limit] for suite in suite_names}
    jobs = [(loop, task) for loop in loop_names for suite in suite_names for task in tasks[suite]]
    semaphore = asyncio.Semaphore(concurrency)
    progress = Progress(
        TextColumn("[bold]eval[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        disable=not show_progress,
        transient=False,
    )
    started = datetime.now(timezone.utc)
    done: list[RunResult] = []
    # a console that is not a terminal shows no live bar: print a line every 10% instead
    log_lines = show_progress and not progress.console.is_terminal

    async def run(loop: str, task: Task, bar: Any) -> RunResult:
        async with semaphore:
            begin = time.perf_counter()
            try:
                out = await graphs[loop].ainvoke({"messages": [("user", task.question)]})
            except Exception as exc:
                out = {"status": "error", "error": describe_error(exc)}
            latency = time.perf_counter() - begin
        answer = str(out.get("answer") or "")
        usage = out.get("usage") or {}
        result = RunResult(
            loop=loop,
            suite=task.suite,
            task_id=task.id,
            question=task.question,
            expected=task.answer,
            answer=answer,
            correct=score(answer, task),
            status=str(out.get("status") or "error"),
            llm_calls=int(out.get("llm_calls") or 0),
            input_tokens=int(usage.get("input_tokens", 0) or 0),
            output_tokens=int(usage.get("output_tokens", 0) or 0),
            cached_tokens=int(usage.get("cached_tokens", 0) or 0),
            latency=latency,
            error=str(out.get("error") or ""),
        )
        progress.update(bar, advance=1, description=f"{loop}/{task.id}")
        done.append(result)
        if log_lines and len(done) * 10 // len(jobs) > (len(done) - 1) * 10 // len(jobs):
            elapsed = (datetime.now(timezone.utc) - started).total_seconds()
            progress.console.print(f"eval: {len(done)}/{len(jobs)} runs done ({elapsed:.0f} s)")
        return result

    with progress:
        bar = progress.add_task("", total=len(jobs))
        results = await asyncio.gather(*(run(loop, task, bar) for loop, task in jobs))
    meta = {
        "title": "loopgraphs evaluation",
        "model": describe_model(model),
        "date": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
        "loops": loop_names,
        "suites": suite_names,
        "limit": limit,
        "items": {suite: len(items) for suite, items in tasks.items()},
        "seed": seed,
        "concurrency": concurrency,
        "loop_options": {k: v for k, v in options.items() if v},
        "tools": [tool.name for tool in tools],
    }
    return EvalReport(results=list(results), loops=loop_names, suites=suite_names, meta=meta)


def evaluate(
    model: Any,
    loops: str | Sequence[str] = "all",
    suites: str | Sequence[str] = "all",
    *,
    limit: int | None = None,
    concurrency: int = 4,
    loop_options: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = DEFAULT_SEED,
    console: Console | None = None,
    show_progress: bool = True,
) -> EvalReport:
    """Run every loop on every task of the suites and score the answers.

    Args:
        model: The chat model every loop uses.
        loops: Loop names (a list, a comma-separated string, or ``"all"``).
        suites: Suite names (a list, a comma-separated string, or ``"all"``).
        limit: Items per suite (the first ``limit`` of each); None: every item.
        concurrency: Runs in flight at once (an ``asyncio.Semaphore`` around ``ainvoke``).
        loop_options: Keyword options per loop name, e.g. ``{"react": {"max_iterations": 5}}``.
        seed: Seed of the suites.
        console: Where the progress bar is drawn.
        show_progress: Draw a progress bar.

    Returns:
        The report; runs that raised are recorded with status ``"error"``.

    Raises:
        ValueError: An unknown loop or suite name, or a bad ``limit``/``concurrency``.
    """
    return asyncio.run(
        aevaluate(
            model,
            loops,
            suites,
            limit=limit,
            concurrency=concurrency,
            loop_options=loop_options,
            seed=seed,
            console=console,
            show_progress=show_progress,
        )
    )


def write_report(report: EvalReport, out: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and ``accuracy.png`` into ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    markdown = folder / "results.md"
    markdown.write_text(report.markdown(), encoding="utf-8")
    return {
        "json": report.to_json(folder / "results.json"),
        "markdown": markdown,
        "chart": report.chart(folder / "accuracy.png"),
    }


def run_cli_eval(args: Any, model: Any, console: Console) -> int:
    """The ``loopgraphs eval`` command: run, print the table, write the three files."""
    from loopgraphs.cli import CliError

    try:
        report = evaluate(
            model,
            args.loops,
            args.suite,
            limit=args.limit,
            concurrency=args.concurrency,
            console=console,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    console.print(report.table())
    try:
        paths = write_report(report, args.out)
    except RuntimeError as exc:
        raise CliError(str(exc)) from exc
    console.print("wrote " + ", ".join(str(path) for path in paths.values()))
    return 0


__all__ = [
    "DEFAULT_SEED",
    "MULTIHOP_TEMPLATES",
    "SUITES",
    "EvalReport",
    "RunResult",
    "Summary",
    "Task",
    "aevaluate",
    "evaluate",
    "make_suite",
    "normalise",
    "run_cli_eval",
    "score",
    "write_report",
]
