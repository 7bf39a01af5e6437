"""Task suites, generated deterministically from the bundled knowledge base.

Three suites, each generated from a seed (``random.Random(seed)``), so the same seed always
gives the same tasks:

* ``arithmetic``: multi-step integer arithmetic where the calculator helps; the answer is
  the exact integer.
* ``multihop``: two-hop questions over the fictional knowledge base, e.g. "In which place
  was the founder of Quillmark Instruments born?"; the answer is read from the facts.
* ``verify``: a claim about one fact, true or false, e.g. "Claim: Quillmark Instruments
  was founded in the year 1921. Is this true? If false, give the correct value."; the
  answer is ``"true"`` or the correct value.

The suites never hold an item whose expected answer already appears in its question (an
organisation founded by its own chief executive, a false claim about "Greywillow
Shipping" whose correct industry is "shipping"), so an answer that echoes the question
cannot score.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from loopgraphs.eval.scoring import contains_phrase, normalise
from loopgraphs.eval.task import Task
from loopgraphs.toolkits import load_knowledge_base
from loopgraphs.toolkits.knowledge import render_fact

SUITES: tuple[str, ...] = ("arithmetic", "multihop", "verify")
DEFAULT_SEED = 20250101
SUITE_SIZE = 40

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
    """Multi-step integer arithmetic; every answer is an exact integer.

    Args:
        seed: Seed of the generator.
        size: Number of tasks (fewer when the knowledge base holds fewer).

    Returns:
        The tasks, with ids numbered from 0.
    """
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
    """Two-hop questions whose answers are read from the knowledge base.

    Args:
        seed: Seed of the generator.
        size: Number of tasks (fewer when the knowledge base holds fewer).

    Returns:
        The tasks, with ids numbered from 0.
    """
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
    """Claims about single facts; the answer is ``"true"`` or the correct value.

    Every other claim is false, with a value of the same relation taken from another entity,
    so always answering "true" scores 50%.

    Args:
        seed: Seed of the generator.
        size: Number of tasks (fewer when the knowledge base holds fewer).

    Returns:
        The tasks, with ids numbered from 0.
    """
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

    Args:
        name: One of ``SUITES``.
        seed: Seed of the generator.
        size: Number of tasks.

    Returns:
        The suite's tasks.

    Raises:
        ValueError: ``name`` is not one of ``SUITES``.
    """
    if name not in SUITE_BUILDERS:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}")
    return SUITE_BUILDERS[name](seed, size)
