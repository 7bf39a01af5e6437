"""Scoring: whether a loop's answer is correct for a task.

Rules, applied by ``score`` to the loop's ``answer``:

1. Both texts are normalised (``normalise``): Unicode-folded and case-folded, accents
   dropped, punctuation removed, the articles "a", "an" and "the" dropped, whitespace
   collapsed, and numbers written canonically (``"1,234.0"`` becomes ``"1234"``).
2. A prediction is correct when it equals the expected answer (or an alias) after
   normalisation, or when it has at most ``SHORT_PREDICTION_WORDS`` (30) words and
   contains the normalised expected answer as a whole word or phrase ("The answer is
   11,297." matches ``11297``; "112970" does not).
3. ``verify`` items (and ``verify-classic`` ones) first read the prediction's verdict,
   ignoring its questions (sentences ending in "?") and the sentences of 3 or more words
   it copies from the task: it says *true* when it holds one of "true", "yes", "correct",
   "right", "accurate" (not as in "the correct answer") and none of the negations "false",
   "no", "not", "incorrect", "wrong", "untrue", "inaccurate" (any length). A true claim is
   answered correctly by a true verdict only. A false claim is answered correctly by a
   prediction that gives the correct value (rule 2) without a true verdict.

``score`` is the ``"default"`` scorer of an evaluation. ``SCORERS`` names the others
(``"exact"``, ``"normalised"``, ``"contains"``); any callable ``(answer, expected, run)``
returning a bool or a float is a scorer too, and ``from_evaluator`` turns an openevals or
agentevals evaluator into one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Literal

from loopgraphs.eval.task import base_suite

if TYPE_CHECKING:
    from loopgraphs.eval.report import RunResult
    from loopgraphs.eval.task import Task

Expected = str | list[str]
"""What a row expects: one answer, or a list of acceptable answers."""

Scorer = Callable[[str, Expected, "RunResult"], "bool | float"]
"""A scorer: ``(answer, expected, run) -> bool | float``; True or 1.0 is a correct answer."""

SHORT_PREDICTION_WORDS = 30
ECHO_WORDS = 3  # a sentence this long found in the question is an echo, not a verdict

ARTICLES = frozenset({"a", "an", "the"})
TRUE_WORDS = frozenset({"true", "yes", "correct", "right", "accurate"})
NEGATION_WORDS = frozenset({"false", "no", "not", "incorrect", "wrong", "untrue", "inaccurate"})
QUALIFIERS = frozenset({"correct", "right", "accurate"})
QUALIFIED_NOUNS = frozenset(
    {"answer", "value", "one", "year", "number", "name", "place", "result", "response"}
)

_TOKEN = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)|\w+")
_NUMBER = re.compile(r"-?[\d,]+(?:\.\d+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?\n])")


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
    """Normalise an answer for comparison (rule 1 of the module docstring).

    Args:
        text: Any answer or question.

    Returns:
        The folded words, separated by single spaces.

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
    """Whether normalised ``phrase`` occurs in normalised ``text`` as whole words.

    Args:
        text: A normalised text.
        phrase: A normalised phrase; an empty one is never contained.

    Returns:
        True when the phrase's words appear together in the text.
    """
    return bool(phrase) and f" {phrase} " in f" {text} "


def verdict_is_true(prediction: str, question: str = "") -> bool:
    """Whether a prediction asserts that a claim is true (rule 3 of the module docstring).

    Args:
        prediction: The loop's answer.
        question: The task's text; sentences of the prediction that repeat a part of it,
            and sentences that are questions, are not read.

    Returns:
        True for an affirmative verdict without any negation.
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
    """Exact match after normalisation, or a whole-phrase match in a short prediction.

    Args:
        prediction: The loop's answer.
        expected: The accepted answers.

    Returns:
        True when rule 2 of the module docstring accepts the prediction.
    """
    said = normalise(prediction)
    short = len(str(prediction).split()) <= SHORT_PREDICTION_WORDS
    for answer in expected:
        wanted = normalise(answer)
        if wanted and (said == wanted or (short and contains_phrase(said, wanted))):
            return True
    return False


def score(prediction: str, task: Task) -> bool:
    """Whether ``prediction`` answers ``task`` correctly (see the module docstring).

    Args:
        prediction: The loop's answer; None or empty is never correct.
        task: The task with its expected answer and aliases.

    Returns:
        True for a correct answer.
    """
    prediction = prediction or ""
    expected = (task.answer, *task.aliases)
    if base_suite(task.suite) == "verify":
        verdict = verdict_is_true(prediction, task.question)
        if normalise(task.answer) == "true":
            return verdict
        return not verdict and matches(prediction, expected)
    return matches(prediction, expected)


def expected_of(task: Task) -> Expected:
    """The answers a task accepts, as its row gave them.

    Args:
        task: The task.

    Returns:
        Its answer, or the list of its answer and aliases when it has aliases.
    """
    return [task.answer, *task.aliases] if task.aliases else task.answer


def _answers(expected: Expected) -> list[str]:
    return [expected] if isinstance(expected, str) else [str(item) for item in expected]


def exact(answer: str, expected: Expected, run: RunResult | None = None) -> bool:
    """Scorer ``"exact"``: the answer equals an expected answer, surrounding spaces aside.

    Args:
        answer: The loop's answer.
        expected: One answer or a list of acceptable answers.
        run: The run (not read).

    Returns:
        True on a match.
    """
    return any(answer.strip() == wanted.strip() for wanted in _answers(expected))


def normalised(answer: str, expected: Expected, run: RunResult | None = None) -> bool:
    """Scorer ``"normalised"``: equal after ``normalise`` (case, accents, punctuation,
    articles and the way numbers are written do not count).

    Args:
        answer: The loop's answer.
        expected: One answer or a list of acceptable answers.
        run: The run (not read).

    Returns:
        True on a match; an expected answer that normalises to nothing never matches.
    """
    said = normalise(answer)
    return any(said == wanted for wanted in map(normalise, _answers(expected)) if wanted)


def contains(answer: str, expected: Expected, run: RunResult | None = None) -> bool:
    """Scorer ``"contains"``: the normalised answer holds an expected answer as whole
    words, whatever its length ("It is Paris, in France." contains "paris").

    Args:
        answer: The loop's answer.
        expected: One answer or a list of acceptable answers.
        run: The run (not read).

    Returns:
        True when an expected answer is contained.
    """
    said = normalise(answer)
    return any(contains_phrase(said, normalise(wanted)) for wanted in _answers(expected))


SCORERS: dict[str, Scorer] = {"exact": exact, "normalised": normalised, "contains": contains}
"""The built-in scorers besides ``"default"`` (``score``), by name."""

TaskScorer = Callable[[str, "Task", "RunResult"], float]
"""A scorer as the runner calls it: the task instead of its expected answers."""


def default_scorer(answer: str, task: Task, run: RunResult) -> float:
    """Scorer ``"default"``: ``score`` (rules 1 to 3 of the module docstring) as 1.0 or 0.0."""
    return float(score(answer, task))


def resolve_scorer(scorer: str | Scorer | None) -> TaskScorer:
    """The scorer an evaluation applies to each run.

    Args:
        scorer: None or ``"default"`` (``score``), a name of ``SCORERS``, or a callable
            ``(answer, expected, run) -> bool | float``.

    Returns:
        A function of ``(answer, task, run)`` giving the score as a float.

    Raises:
        ValueError: An unknown scorer name.
        TypeError: ``scorer`` is neither a name nor a callable.
    """
    if scorer is None or scorer == "default":
        return default_scorer
    if isinstance(scorer, str):
        if scorer not in SCORERS:
            known = ", ".join(["default", *SCORERS])
            raise ValueError(f"unknown scorer {scorer!r}; choose from {known}, or a callable")
        scorer = SCORERS[scorer]
    if not callable(scorer):
        raise TypeError(f"a scorer is a name or a callable; got {type(scorer).__name__}")
    chosen = scorer

    def scored(answer: str, task: Task, run: RunResult) -> float:
        value = chosen(answer, expected_of(task), run)
        if not isinstance(value, (bool, int, float)):
            raise TypeError(
                f"the scorer {getattr(chosen, '__name__', chosen)!r} returned "
                f"{type(value).__name__}; it must return a bool or a float"
            )
        return float(value)

    return scored


def from_evaluator(
    evaluator: Callable[..., object],
    *,
    outputs: Literal["answer", "messages"] = "answer",
    reference: str | None = None,
) -> Scorer:
    """A scorer that asks an openevals or agentevals evaluator.

    Such an evaluator is called as ``evaluator(outputs=..., reference_outputs=...)`` and
    returns a result (or a list of results) whose ``"score"`` is a bool or a number,
    e.g. ``openevals.exact.exact_match`` or
    ``agentevals.trajectory.match.create_trajectory_match_evaluator(...)``.

    Args:
        evaluator: The evaluator.
        outputs: What it judges: the run's ``"answer"``, or its ``"messages"`` (the run's
            transcript, for trajectory evaluators).
        reference: A metadata key of the row holding the reference outputs (e.g. a
            reference trajectory); None: the row's expected answer.

    Returns:
        The scorer.
    """

    def scorer(answer: str, expected: Expected, run: RunResult) -> bool | float:
        judged = run.messages if outputs == "messages" else answer
        wanted = expected if reference is None else run.metadata[reference]
        result = evaluator(outputs=judged, reference_outputs=wanted)
        first = result[0] if isinstance(result, list) else result
        if not isinstance(first, Mapping) or "score" not in first:
            raise TypeError(f"the evaluator returned {first!r}, not a result with a score")
        value = first["score"]
        return value if isinstance(value, bool) else float(value)

    scorer.__name__ = getattr(evaluator, "__name__", type(evaluator).__name__)
    return scorer
