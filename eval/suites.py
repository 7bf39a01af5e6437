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

``multihop`` and ``verify`` ask each relation as users do, in one of several phrasings
(``PHRASINGS``), taken in turn item by item: the classic one above, a possessive
("Where was Quillmark Instruments' founder born?"), an imperative ("Name the place where
the founder of ... was born."), two sentences ("Someone founded Quillmark Instruments. In
which place was that person born?") and a clause ("In which place was the person who
founded ... born?"). The phrasing is the task's ``metadata["phrasing"]``. Their
``-classic`` variants (``multihop-classic``, ``verify-classic``, see ``SUITE_VARIANTS``)
hold the same items, with the same answers, all in the classic phrasing: the suites as
they were before, to compare with.

The suites never hold an item whose expected answer already appears in its question (an
organisation founded by its own chief executive, a false claim about "Greywillow
Shipping" whose correct industry is "shipping"), so an answer that echoes the question
cannot score.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from loopgraphs.eval.scoring import contains_phrase, normalise
from loopgraphs.eval.task import CLASSIC_SUFFIX, Task
from loopgraphs.toolkits import load_knowledge_base
from loopgraphs.toolkits.knowledge import render_fact

SUITES: tuple[str, ...] = ("arithmetic", "multihop", "verify")
"""The bundled suites: what ``"all"`` runs."""

SUITE_VARIANTS: tuple[str, ...] = ("multihop-classic", "verify-classic")
"""Suites asked by name only: ``multihop`` and ``verify`` in the classic phrasing alone."""

SUITE_NAMES: tuple[str, ...] = (*SUITES, *SUITE_VARIANTS)
"""Every suite name ``make_suite`` takes."""

PHRASINGS: tuple[str, ...] = ("classic", "possessive", "imperative", "two_sentences", "clause")
"""How a ``multihop`` or ``verify`` item is phrased, taken in turn (item ``i`` has
phrasing ``i % 5``)."""
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
"""Two-hop question templates: ``(first relation, second relation, question)``, in the
classic phrasing."""

MULTIHOP_PHRASINGS: dict[tuple[str, str], tuple[str, str, str, str]] = {
    ("founded_by", "born_in"): (
        "In which place was {owner} founder born?",
        "Name the place where the founder of {name} was born.",
        "Someone founded {name}. In which place was that person born?",
        "In which place was the person who founded {name} born?",
    ),
    ("founded_by", "profession"): (
        "What is the profession of {owner} founder?",
        "Name the profession of the founder of {name}.",
        "{name} was founded by someone. What is that person's profession?",
        "What is the profession of the person who founded {name}?",
    ),
    ("founded_by", "born_year"): (
        "In which year was {owner} founder born?",
        "Give the year in which the founder of {name} was born.",
        "Someone founded {name}. In which year was that person born?",
        "In which year was the person that founded {name} born?",
    ),
    ("headquartered_in", "country"): (
        "In which country are {owner} headquarters?",
        "Name the country where {name} is headquartered.",
        "{name} is headquartered in a city. In which country is that city?",
        "In which country lies the city that {name} is headquartered in?",
    ),
    ("headquartered_in", "river"): (
        "On which river lies the city of {owner} headquarters?",
        "Name the river on which the city where {name} is headquartered lies.",
        "{name} is headquartered in a city. On which river does that city lie?",
        "Which river does the city that {name} is headquartered in lie on?",
    ),
    ("headquartered_in", "mayor"): (
        "Who is the mayor of the city of {owner} headquarters?",
        "Name the mayor of the city where {name} is headquartered.",
        "{name} is headquartered in a city. Who is the mayor of that city?",
        "Who is the person that is mayor of the city where {name} is headquartered?",
    ),
    ("ceo", "born_in"): (
        "In which place was {owner} chief executive born?",
        "Name the place where the chief executive of {name} was born.",
        "{name} has a chief executive. In which place was that person born?",
        "In which place was the person who is chief executive of {name} born?",
    ),
    ("born_in", "country"): (
        "In which country is {owner} birthplace?",
        "Name the country in which {name} was born.",
        "{name} was born in a town. In which country is that town?",
        "In which country lies the town where {name} was born?",
    ),
    ("born_in", "river"): (
        "On which river lies {owner} birthplace?",
        "Name the river on which the birthplace of {name} lies.",
        "{name} was born in a town. On which river does that town lie?",
        "On which river lies the town that {name} was born in?",
    ),
    ("works_for", "headquartered_in"): (
        "Where is {owner} employer headquartered?",
        "Name the city where the employer of {name} is headquartered.",
        "{name} works for an organisation. Where is that organisation headquartered?",
        "Where is the organisation that {name} works for headquartered?",
    ),
    ("works_for", "founded_by"): (
        "Who founded {owner} employer?",
        "Name the founder of the organisation that {name} works for.",
        "{name} works for an organisation. Who founded that organisation?",
        "Who was the person that founded the organisation {name} works for?",
    ),
    ("mentor", "profession"): (
        "What is the profession of {owner} mentor?",
        "Name the profession of the mentor of {name}.",
        "{name} was mentored by someone. What is that person's profession?",
        "What is the profession of the person who mentored {name}?",
    ),
    ("mentor", "born_in"): (
        "In which place was {owner} mentor born?",
        "Name the place where the mentor of {name} was born.",
        "{name} was mentored by someone. In which place was that person born?",
        "In which place was the person that mentored {name} born?",
    ),
    ("spouse", "profession"): (
        "What is the profession of {owner} spouse?",
        "Name the profession of the spouse of {name}.",
        "{name} is married to someone. What is that person's profession?",
        "What is the profession of the person that {name} is married to?",
    ),
    ("mayor", "profession"): (
        "What is the profession of {owner} mayor?",
        "Name the profession of the mayor of {name}.",
        "{name} has a mayor. What is the profession of that mayor?",
        "What is the profession of the person who is mayor of {name}?",
    ),
    ("mayor", "born_year"): (
        "In which year was {owner} mayor born?",
        "Give the year in which the mayor of {name} was born.",
        "{name} has a mayor. In which year was that mayor born?",
        "In which year was the person who is mayor of {name} born?",
    ),
}
"""The other phrasings of each two-hop question (``PHRASINGS[1:]``), by its relations:
``{name}`` is the entity asked about, ``{owner}`` its possessive ("Quillmark
Instruments'")."""

RELATION_NOUNS: dict[str, str] = {
    "profession": "profession",
    "born_in": "birthplace",
    "born_year": "year of birth",
    "works_for": "employer",
    "spouse": "spouse",
    "mentor": "mentor",
    "country": "country",
    "population": "population",
    "founded_year": "founding year",
    "river": "river",
    "mayor": "mayor",
    "industry": "industry",
    "founded_by": "founder",
    "headquartered_in": "headquarters",
    "ceo": "chief executive",
}
"""What a fact's value is called, for the phrasings of a ``verify`` claim other than the
classic one."""

VERIFY_PHRASINGS: dict[str, str] = {
    "possessive": "Claim: {owner} {noun} is {object}. Is this true? If false, give the "
    "correct value.",
    "imperative": "Tell me whether the {noun} of {subject} is {object}: answer true, or "
    "give the correct value.",
    "two_sentences": "Consider {subject}. Is the {noun} {object}? If not, give the correct value.",
    "clause": "Is it true that {claim}? If not, give the correct value.",
}
"""The other phrasings of a ``verify`` claim: ``{claim}`` is the classic sentence
without its full stop, ``{noun}`` the relation's name (``RELATION_NOUNS``)."""


def possessive(name: str) -> str:
    """A name as an owner: "Quillmark Instruments'", "Tobiah Grenvaux's"."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def phrasing_of(index: int, classic: bool) -> str:
    """The phrasing of a suite's ``index``-th item (always the classic one in a
    ``-classic`` variant)."""
    return PHRASINGS[0] if classic else PHRASINGS[index % len(PHRASINGS)]


def multihop_question(first: str, second: str, name: str, phrasing: str) -> str:
    """A two-hop question about ``name`` (its ``first`` relation's ``second``) in one of
    ``PHRASINGS``."""
    if phrasing == PHRASINGS[0]:
        template = next(t for f, s, t in MULTIHOP_TEMPLATES if (f, s) == (first, second))
    else:
        template = MULTIHOP_PHRASINGS[first, second][PHRASINGS.index(phrasing) - 1]
    return template.format(name=name, owner=possessive(name))


def verify_question(subject: str, relation: str, value: str, phrasing: str) -> str:
    """The question checking the claim that ``subject``'s ``relation`` is ``value``, in one
    of ``PHRASINGS``."""
    claim = render_fact(subject, relation, value)
    if phrasing == PHRASINGS[0]:
        return VERIFY_TEMPLATE.format(claim=claim)
    return VERIFY_PHRASINGS[phrasing].format(
        claim=claim.rstrip("."),
        subject=subject,
        owner=possessive(subject),
        noun=RELATION_NOUNS[relation],
        object=value,
    )


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


def multihop_suite(
    seed: int = DEFAULT_SEED, size: int = SUITE_SIZE, *, classic: bool = False
) -> list[Task]:
    """Two-hop questions whose answers are read from the knowledge base.

    Args:
        seed: Seed of the generator.
        size: Number of tasks (fewer when the knowledge base holds fewer).
        classic: Every question in the classic phrasing (the suite ``multihop-classic``);
            otherwise item ``i`` is asked in phrasing ``PHRASINGS[i % 5]``. The items and
            their answers are the same either way.

    Returns:
        The tasks, with ids numbered from 0, their phrasing in ``metadata["phrasing"]``.
    """
    facts = _facts()
    candidates: list[tuple[str, str, str, str]] = []
    for name, own in facts.items():
        for first, second, template in MULTIHOP_TEMPLATES:
            middle = own.get(first)
            answer = facts.get(middle or "", {}).get(second)
            question = template.format(name=name)
            # skip questions that hold their own answer (an organisation founded by its CEO)
            if answer is not None and not contains_phrase(normalise(question), normalise(answer)):
                candidates.append((name, first, second, answer))
    rng = random.Random(seed)
    chosen = rng.sample(candidates, min(size, len(candidates)))
    suite = f"multihop{CLASSIC_SUFFIX}" if classic else "multihop"
    tasks = []
    for index, (name, first, second, answer) in enumerate(chosen):
        phrasing = phrasing_of(index, classic)
        question = multihop_question(first, second, name, phrasing)
        metadata = {"phrasing": phrasing}
        tasks.append(Task(f"{suite}-{index:03d}", suite, question, answer, metadata=metadata))
    return tasks


def verify_suite(
    seed: int = DEFAULT_SEED, size: int = SUITE_SIZE, *, classic: bool = False
) -> list[Task]:
    """Claims about single facts; the answer is ``"true"`` or the correct value.

    Every other claim is false, with a value of the same relation taken from another entity,
    so always answering "true" scores 50%.

    Args:
        seed: Seed of the generator.
        size: Number of tasks (fewer when the knowledge base holds fewer).
        classic: Every claim in the classic phrasing (the suite ``verify-classic``);
            otherwise the phrasings in turn, as for ``multihop_suite``'s questions.

    Returns:
        The tasks, numbered and phrased as ``multihop_suite``'s.
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
    suite = f"verify{CLASSIC_SUFFIX}" if classic else "verify"
    tasks: list[Task] = []
    for subject, relation, value in rng.sample(triples, len(triples)):
        others = [v for v in values[relation] if v != value]
        if others and len(tasks) % 2:  # every other claim is false
            claimed, answer = rng.choice(others), value
            claim = render_fact(subject, relation, claimed)
            if contains_phrase(normalise(claim), normalise(value)):
                continue  # the correct value is written in the claim (a company's name)
        else:
            claimed, answer = value, "true"
        phrasing = phrasing_of(len(tasks), classic)
        question = verify_question(subject, relation, claimed, phrasing)
        metadata = {"phrasing": phrasing}
        tasks.append(Task(f"{suite}-{len(tasks):03d}", suite, question, answer, metadata=metadata))
        if len(tasks) == size:
            break
    return tasks


SUITE_BUILDERS: dict[str, Callable[[int, int], list[Task]]] = {
    "arithmetic": arithmetic_suite,
    "multihop": multihop_suite,
    "verify": verify_suite,
    "multihop-classic": partial(multihop_suite, classic=True),
    "verify-classic": partial(verify_suite, classic=True),
}


def make_suite(name: str, seed: int = DEFAULT_SEED, size: int = SUITE_SIZE) -> list[Task]:
    """Generate one suite by name; the same seed always gives the same tasks.

    Args:
        name: One of ``SUITE_NAMES`` (``SUITES`` and their ``-classic`` variants).
        seed: Seed of the generator.
        size: Number of tasks.

    Returns:
        The suite's tasks.

    Raises:
        ValueError: ``name`` is not one of ``SUITE_NAMES``.
    """
    if name not in SUITE_BUILDERS:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITE_NAMES)}")
    return SUITE_BUILDERS[name](seed, size)
